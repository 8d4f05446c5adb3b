"""The SQLite store's file system full (a small tmpfs): requests that must store get a clear
error (503 with Retry-After, or response.failed on a stream that had begun), store=false goes
on, stored responses stay readable, the file passes integrity_check, and all works again once
space is back, without a restart. Read-only: refused at start with the reason."""
import os
import subprocess

from common import Server, check, log, response_body, sqlite_integrity, stream_response


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
    status, headers, body = server.request("POST", "/v1/responses", response_body(8, stream=False))
    check(status == 503 and headers.get("retry-after") and body["error"]["code"] == "store_unavailable",
          f"{what}: store=true answered {status} {body}")
    message = body["error"]["message"]
    status, events = stream_response(server, response_body(8))
    check(status == 200 and events[-1]["type"] == "response.failed" and "stored" in events[-1]["response"]["error"]["message"],
          f"{what}: a stored stream ended with {events[-1:]}")
    status, _, body = server.request("POST", "/v1/responses", response_body(8, store=False, stream=False))
    check(status == 200, f"{what}: store=false answered {status} {body}")
    return message


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
            refusals = 0
            # The WAL may have room for a few more commits before SQLite meets the full disk.
            for _ in range(50):
                status, _, body = server.request("POST", "/v1/responses", response_body(8, stream=False))
                if status != 200:
                    break
                ids.append(body["id"])
            message = expect_refused(server, "disk full")
            refusals += 1
            expect_working_reads = [server.request("GET", f"/v1/responses/{rid}")[0] for rid in ids]
            check(all(s == 200 for s in expect_working_reads), f"stored responses unreadable on a full disk: {expect_working_reads}")
            os.remove(os.path.join(mnt, "filler"))
            ids.append(expect_working(server, ids, "space back"))
            log(f"round {round_no}: full disk: 503 ({message[:90]}...), streams failed clearly, reads went on; "
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
