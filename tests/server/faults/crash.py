"""kill -9 in the middle of 16 streaming clients (Responses API, store=true), then a restart on
the same SQLite store: what a client saw completed is stored whole and continues a
conversation; what the crash cut is absent or not complete; the file passes integrity_check."""
import json
import os
import random
import signal
import sqlite3
import threading
import time

from common import Server, check, log, response_body, sqlite_integrity, stream_response

CLIENTS = 16
FINISHED = ("response.completed", "response.incomplete")


def one_round(dir, store, rng, round_no):
    server = Server(dir, ["--store", store, "--max-running", str(CLIENTS), "--context", "2048"])
    lock = threading.Lock()
    completed = {}  # id -> the response of its response.completed (or .incomplete) event
    started = {}  # id -> the events the client saw
    in_flight = set()
    killed = threading.Event()
    seeds = [rng.randrange(1 << 30) for _ in range(CLIENTS)]

    def client(i):
        crng = random.Random(seeds[i])
        while not killed.is_set():
            body = response_body(crng.choice([8, 30, 120, 400]), seed=crng.randrange(1 << 30))
            current = {}

            def on_event(e):
                with lock:
                    if e["type"] == "response.created":
                        current["id"] = e["response"]["id"]
                        started[current["id"]] = []
                        in_flight.add(current["id"])
                    if "id" in current:
                        started[current["id"]].append(e)
                    # A finished response: completed, or incomplete at its token limit (the
                    # random model rarely stops on its own); both are stored.
                    if e["type"] in FINISHED:
                        completed[current["id"]] = e["response"]
                        in_flight.discard(current["id"])

            status, events = stream_response(server, body, on_event)
            if status is None or killed.is_set():
                return
            check(status == 200, f"client {i}: status {status}: {events}")
            check(events and events[-1]["type"] in ("response.completed", "response.incomplete", "response.failed"),
                  f"client {i}: a stream ended without a terminal event: {[e['type'] for e in events][-3:]}")

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 120
    while True:
        with lock:
            if len(completed) >= CLIENTS and len(in_flight) >= CLIENTS // 2:
                break
        check(time.monotonic() < deadline, f"no load to crash in 120 s: {len(completed)} completed")
        check(server.proc.poll() is None, f"gptoss-server exited early:\n{server.stderr()[-2000:]}")
        time.sleep(0.005)
    server.signal(signal.SIGKILL)
    killed.set()
    server.proc.wait()
    for t in threads:
        t.join(30)
    cut = {rid for rid in started if rid not in completed}
    log(f"round {round_no}: SIGKILL with {len(completed)} responses completed and {len(cut)} streams cut")

    # The store as the crash left it, before the server opens it again.
    check(sqlite_integrity(store) == "ok", f"PRAGMA integrity_check: {sqlite_integrity(store)}")
    db = sqlite3.connect(store)
    rows = {rid: json.loads(resp) for rid, resp in db.execute("SELECT id, response FROM responses")}
    db.close()
    for rid, resp in rows.items():
        check(resp.get("status") in ("completed", "incomplete", "failed"),
              f"{rid} stored with status {resp.get('status')!r}")

    server = Server(dir, ["--store", store, "--context", "2048"])
    try:
        for rid, resp in completed.items():
            status, _, body = server.request("GET", f"/v1/responses/{rid}")
            check(status == 200, f"{rid} was completed on its stream but GET answers {status}: {body}")
            check(body == resp, f"{rid}: stored differs from streamed:\n{json.dumps(body)[:600]}\n{json.dumps(resp)[:600]}")
        for rid in list(completed)[:8]:
            status, _, body = server.request("POST", "/v1/responses", {
                **response_body(4, store=False, stream=False), "previous_response_id": rid, "input": "Go on."})
            check(status == 200 and body["status"] in ("completed", "incomplete"),
                  f"previous_response_id={rid} after the restart: {status} {body}")
        stored_unseen = 0
        for rid in cut:
            status, _, body = server.request("GET", f"/v1/responses/{rid}")
            if status == 404:
                continue
            check(status == 200, f"cut {rid}: GET answers {status}: {body}")
            # The store commits before response.completed is written, so a crash between the
            # two leaves a whole response the client did not see end: whole, never partial.
            check(body["status"] in ("completed", "incomplete"), f"cut {rid} stored as {body['status']}")
            check(body.get("usage") is not None, f"cut {rid} stored without usage: {body}")
            stored_unseen += 1
        log(f"round {round_no}: {len(completed)} retrievable and equal to their streams, 8 continued; "
            f"{len(cut) - stored_unseen} cut ones absent, {stored_unseen} stored whole before their last event")
    finally:
        server.stop()


def run(tmp, long):
    seed = int(os.environ.get("FAULTS_SEED", random.randrange(1 << 30)))
    log(f"seed {seed} (FAULTS_SEED={seed} repeats the clients' requests)")
    rng = random.Random(seed)
    dir = os.path.join(tmp, "crash")
    store = os.path.join(dir, "responses.sqlite3")
    for round_no in range(1, (4 if long else 2) + 1):
        one_round(dir, store, rng, round_no)
