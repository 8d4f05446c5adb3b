"""The SQLite store's file system full (a small tmpfs): requests that must store get a clear
503 with Retry-After before anything is generated, store=false goes on, stored responses stay
readable, the file passes integrity_check, and all works again once space is back, without a
restart. Read-only: refused at start with the reason."""
import os
import subprocess
import time

from common import Server, check, log, response_body, sqlite_integrity, stream_response

# What /metrics counts of every generation the scheduler admits (server/metrics.cpp).
TOKEN_COUNTERS = ("gptoss_prompt_tokens_total", "gptoss_generated_tokens_total")


def fill(path):
    """Writes `path` until the file system is full."""
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
        except OSError:
            pass


def expect_refused(server, what):
    """store=true, streamed or not, is refused before generating (the store's ping sees the
    full file system): the token counters stand still and the answer comes at once. store=false
    goes on, and its tokens are counted (so the counters would have shown a generation)."""
    before = server.metrics()
    start = time.monotonic()
    status, headers, body = server.request("POST", "/v1/responses", response_body(64, stream=False))
    seconds = time.monotonic() - start
    check(status == 503 and headers.get("retry-after") and body["error"]["code"] == "store_unavailable",
          f"{what}: store=true answered {status} {body}")
    message = body["error"]["message"]
    check("bytes reserved" in message, f"{what}: the refusal does not give the free space and reserve: {message}")
    status, events = stream_response(server, response_body(64))
    check(status == 503 and events[0]["error"]["code"] == "store_unavailable",
          f"{what}: a stored stream answered {status} {events[-1:]}")
    after = server.metrics()
    for name in TOKEN_COUNTERS:
        check(after[name] == before[name],
              f"{what}: refused store=true requests were generated first: {name} {before[name]:g} -> {after[name]:g}")
    check(seconds < 1.0, f"{what}: the refusal took {seconds:.2f} s")
    status, _, body = server.request("POST", "/v1/responses", response_body(8, store=False, stream=False))
    check(status == 200, f"{what}: store=false answered {status} {body}")
    unstored = server.metrics()
    check(all(unstored[name] > after[name] for name in TOKEN_COUNTERS),
          f"{what}: a store=false generation moved no token counter: {[(n, unstored[n]) for n in TOKEN_COUNTERS]}")
    return message, seconds


def expect_working(server, ids, what):
    for rid in ids:
        status, _, body = server.request("GET", f"/v1/responses/{rid}")
        check(status == 200, f"{what}: GET {rid} answered {status} {body}")
    status, _, body = server.request("POST", "/v1/responses", response_body(8, stream=False))
    check(status == 200 and body["status"] in ("completed", "incomplete"), f"{what}: store=true answered {status} {body}")
    return body["id"]


def run(tmp, long):
    dir = os.path.join(tmp, "disk")
    mnt = os.path.join(dir, "fs")
    os.makedirs(mnt, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt], capture_output=True).returncode != 0:
        log("SKIPPED: cannot mount a tmpfs here (not root, or no CAP_SYS_ADMIN)")
        return
    try:
        store = os.path.join(mnt, "responses.sqlite3")
        server = Server(dir, ["--store", store])
        ids = [expect_working(server, [], "at first") for _ in range(3)]
        for round_no in range(1, (3 if long else 1) + 1):
            fill(os.path.join(mnt, "filler"))
            message, seconds = expect_refused(server, "disk full")
            expect_working_reads = [server.request("GET", f"/v1/responses/{rid}")[0] for rid in ids]
            check(all(s == 200 for s in expect_working_reads), f"stored responses unreadable on a full disk: {expect_working_reads}")
            os.remove(os.path.join(mnt, "filler"))
            ids.append(expect_working(server, ids, "space back"))
            log(f"round {round_no}: full disk: 503 in {seconds * 1000:.0f} ms, no token generated ({message}), "
                f"streams too, reads went on; "
                f"space back: stores again, {len(ids)} responses readable")

        server.stop()
        check(sqlite_integrity(store) == "ok", f"PRAGMA integrity_check: {sqlite_integrity(store)}")
        log("integrity_check: ok")

        # A file system cannot be remounted read-only under a process writing to it (EBUSY), so
        # read-only is met at start: a clear refusal, then a normal start once writable.
        subprocess.run(["mount", "-o", "remount,ro", mnt], check=True)
        refused = Server(dir, ["--store", store], wait_ready=False)
        status = refused.wait(60)
        text = refused.stderr()
        check(status == 1 and "readonly" in text.replace("-", "").replace(" ", "").lower(),
              f"a read-only store at start: exit {status}:\n{text[-1000:]}")
        subprocess.run(["mount", "-o", "remount,rw", mnt], check=True)
        server = Server(dir, ["--store", store])
        expect_working(server, ids, "writable again")
        server.stop()
        log(f"read-only at start: exit 1 ({text.strip().splitlines()[-1][:120]}); writable again: "
            f"serves, {len(ids)} responses readable")
    finally:
        subprocess.run(["umount", "-l", mnt], capture_output=True)
