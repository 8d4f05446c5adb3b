"""Soak: clients mixing every endpoint (streaming and not, tools, json_schema, previous_response_id
chains, deletes, input items, cancellations, resets) against one gptoss-server for a duration,
every answer checked; RSS, open descriptors, store size, latency percentiles and error counts
reported each interval; growth after the warm-up beyond a threshold is a leak (a failure)."""
import argparse
import json
import os
import random
import socket
import struct
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import MODEL_NAME, Server, check, kill_leftovers, response_body, stream_response  # noqa: E402

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False}}}]
TERMINAL = ("response.completed", "response.incomplete", "response.failed")


def schema_valid(value):
    """SCHEMA, checked by hand (the soak needs no validator library)."""
    return (isinstance(value, dict) and set(value) == {"name", "age"} and isinstance(value["name"], str)
            and isinstance(value["age"], int) and not isinstance(value["age"], bool))


class Soak:
    def __init__(self, server, seed):
        self.server = server
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.latencies = []
        self.counts = {}
        self.failures = []
        self.stored = []

    def record(self, kind, seconds, ok, detail=""):
        with self.lock:
            self.latencies.append(seconds)
            key = f"{kind}:{'ok' if ok else 'error'}"
            self.counts[key] = self.counts.get(key, 0) + 1
            if not ok:
                self.failures.append(f"{kind}: {detail}"[:500])

    def take_stored(self, rng):
        with self.lock:
            return rng.choice(self.stored) if self.stored else None

    # Each step: one request and its checks; returns (ok, detail).
    def stream_stored(self, rng):
        status, events = stream_response(self.server, response_body(rng.choice([8, 32, 96]), seed=rng.randrange(1 << 30)))
        if status != 200 or not events:
            return False, f"status {status} {events[:1]}"
        types = [e["type"] for e in events]
        seqs = [e.get("sequence_number") for e in events]
        if types[0] != "response.created" or types[-1] not in TERMINAL[:2] or seqs != sorted(seqs):
            return False, f"malformed stream {types[:2]}...{types[-2:]}"
        final = events[-1]["response"]
        status, _, stored = self.server.request("GET", f"/v1/responses/{final['id']}")
        if status != 200 or stored != final:
            return False, f"stored {final['id']} ({status}) differs from what was streamed"
        with self.lock:
            self.stored.append(final["id"])
        return True, ""

    def chain(self, rng):
        previous = self.take_stored(rng)
        body = response_body(16, stream=False, seed=rng.randrange(1 << 30), text="And then?")
        if previous:
            body["previous_response_id"] = previous
        status, _, r = self.server.request("POST", "/v1/responses", body)
        if status == 400 and previous and "not found" in str(r):
            return True, ""  # deleted meanwhile by another client
        if status != 200 or r.get("previous_response_id") != previous:
            return False, f"{status} {str(r)[:200]}"
        status, _, items = self.server.request("GET", f"/v1/responses/{r['id']}/input_items?order=asc&limit=100")
        with self.lock:  # only now: another client may delete it from here on
            self.stored.append(r["id"])
        return status == 200 and items["object"] == "list" and items["data"], f"input_items {status}"

    def json_schema(self, rng):
        body = response_body(200, stream=False, store=False, seed=rng.randrange(1 << 30), text="A person.")
        body["text"] = {"format": {"type": "json_schema", "name": "person", "schema": SCHEMA, "strict": True}}
        status, _, r = self.server.request("POST", "/v1/responses", body)
        if status != 200:
            return False, f"{status} {str(r)[:200]}"
        texts = [c["text"] for item in r["output"] if item["type"] == "message" for c in item["content"]]
        if r["status"] != "completed" or not texts:
            return False, f"json_schema status {r['status']}"
        try:
            return schema_valid(json.loads(texts[-1])), f"not schema-valid: {texts[-1][:200]}"
        except ValueError:
            return False, f"not JSON: {texts[-1][:200]}"

    def chat_tools(self, rng):
        stream = rng.random() < 0.5
        body = {"model": MODEL_NAME, "messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": TOOLS,
                "tool_choice": "required", "max_tokens": 120, "seed": rng.randrange(1 << 30), "stream": stream}
        if not stream:
            status, _, r = self.server.request("POST", "/v1/chat/completions", body)
            if status != 200:
                return False, f"{status} {str(r)[:200]}"
            calls = r["choices"][0]["message"].get("tool_calls") or []
            ok = r["choices"][0]["finish_reason"] == "tool_calls" and calls and "city" in json.loads(calls[0]["function"]["arguments"])
            return ok, f"tool call {str(r['choices'][0])[:200]}"
        conn = self.server.connection()
        try:
            conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
            res = conn.getresponse()
            text = res.read().decode()
        finally:
            conn.close()
        frames = [line[6:] for line in text.split("\n") if line.startswith("data: ")]
        if res.status != 200 or not frames or frames[-1] != "[DONE]":
            return False, f"chat stream {res.status} {text[-200:]}"
        # A model may call several tools at once: each call's arguments stream under its index.
        args = {}
        for f in frames[:-1]:
            for ch in json.loads(f)["choices"]:
                for tc in ch["delta"].get("tool_calls") or []:
                    args[tc["index"]] = args.get(tc["index"], "") + tc["function"].get("arguments", "")
        calls = [json.loads(args[i]) for i in sorted(args)]
        return bool(calls) and all("city" in c for c in calls), f"streamed arguments {args}"

    def completions(self, rng):
        status, _, r = self.server.request("POST", "/v1/completions", {"model": MODEL_NAME, "prompt": "Once",
                                                                       "max_tokens": rng.choice([4, 32]), "seed": 1})
        return status == 200 and r["choices"][0]["finish_reason"] in ("length", "stop"), f"{status}"

    def delete(self, rng):
        rid = self.take_stored(rng)
        if not rid:
            return True, ""
        with self.lock:
            if rid in self.stored:
                self.stored.remove(rid)
        status, _, r = self.server.request("DELETE", f"/v1/responses/{rid}")
        if status == 404:
            return True, ""  # another client deleted it first
        gone, _, _ = self.server.request("GET", f"/v1/responses/{rid}")
        return status == 200 and r.get("deleted") and gone == 404, f"delete {status}, then GET {gone}"

    def cancel(self, rng):
        """A client that goes away mid-stream, by FIN or by RST."""
        s = socket.create_connection(("127.0.0.1", self.server.port))
        data = json.dumps(response_body(400, seed=rng.randrange(1 << 30))).encode()
        s.sendall(b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  + f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
        s.recv(4096)
        if rng.random() < 0.5:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
        return True, ""

    def small(self, rng):
        path = rng.choice(["/health", "/v1/models", "/metrics", f"/v1/models/{MODEL_NAME}"])
        status, _, _ = self.server.request("GET", path)
        return status == 200, f"GET {path}: {status}"

    def worker(self, seed, stop):
        rng = random.Random(seed)
        steps = [(self.stream_stored, 4), (self.chain, 3), (self.json_schema, 1), (self.chat_tools, 2),
                 (self.completions, 2), (self.delete, 1), (self.cancel, 1), (self.small, 2)]
        while not stop.is_set():
            step = rng.choices([s for s, _ in steps], [w for _, w in steps])[0]
            t0 = time.monotonic()
            try:
                ok, detail = step(rng)
            except Exception as e:  # noqa: BLE001 - every failure is counted and shown
                ok, detail = False, f"{type(e).__name__}: {e}"
            self.record(step.__name__, time.monotonic() - t0, bool(ok), detail)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))] if values else 0.0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("seconds", type=float)
    p.add_argument("--clients", type=int, default=6)
    p.add_argument("--interval", type=float, default=60)
    p.add_argument("--server-args", default="")
    p.add_argument("--leak-mib", type=float, default=64, help="anonymous RSS growth after the warm-up that is a leak")
    p.add_argument("--timeout", type=float, default=60, help="seconds a client waits for an answer")
    a = p.parse_args()
    common.TIMEOUT[0] = a.timeout
    seed = int(os.environ.get("FAULTS_SEED", random.randrange(1 << 30)))
    print(f"soak: {a.seconds:.0f} s, {a.clients} clients, seed {seed} (FAULTS_SEED={seed} repeats it)", flush=True)
    dir = tempfile.mkdtemp(prefix="soak-", dir=os.environ.get("GPTOSS_TEST_TMP", "/tmp"))
    store = os.path.join(dir, "responses.sqlite3")
    server = Server(dir, ["--store", store, "--context", "4096", *a.server_args.split()])
    soak = Soak(server, seed)
    stop = threading.Event()
    threads = [threading.Thread(target=soak.worker, args=(seed + i, stop), daemon=True) for i in range(a.clients)]
    for t in threads:
        t.start()
    samples = []
    try:
        try:
            sample(a, server, soak, samples, store)
        finally:
            stop.set()
            for t in threads:
                t.join(120)
        finish(a, server, soak, samples)
    except BaseException:
        kill_leftovers()  # a failed soak leaves no server behind
        raise


def sample(a, server, soak, samples, store):
    """Every interval until the duration is over: the figures, printed."""
    start = time.monotonic()
    while time.monotonic() - start < a.seconds:
        time.sleep(min(a.interval, max(0.1, a.seconds - (time.monotonic() - start))))
        check(server.proc.poll() is None, f"gptoss-server exited:\n{server.stderr()[-2000:]}")
        with soak.lock:
            lat, soak.latencies = soak.latencies, []
            counts = dict(soak.counts)
        size = sum(os.path.getsize(store + s) for s in ("", "-wal") if os.path.exists(store + s))
        figures = (time.monotonic() - start, server.rss_anon_kib() / 1024, server.open_fds(), size / 1024,
                   server.rss_kib() / 1024)
        samples.append(figures)
        errors = sum(v for k, v in counts.items() if k.endswith(":error"))
        print(f"  t={figures[0]:5.0f} s  rss {figures[4]:7.1f} MiB (anon {figures[1]:7.1f})  fds {figures[2]:4d}  "
              f"store {figures[3]:6.0f} KiB  "
              f"requests {len(lat):5d}  p50 {percentile(lat, 50):6.3f} s  p99 {percentile(lat, 99):6.3f} s  "
              f"errors {errors}", flush=True)


def finish(a, server, soak, samples):
    print(f"  counts: {json.dumps(soak.counts, sort_keys=True)}", flush=True)
    for f in soak.failures[:10]:
        print(f"  failure: {f}", flush=True)
    check(not soak.failures, f"{len(soak.failures)} answers failed their checks")
    warm = samples[len(samples) // 3] if len(samples) >= 3 else samples[0]
    last = samples[-1]
    rising = all(b[1] >= a_[1] for a_, b in zip(samples[len(samples) // 3:], samples[len(samples) // 3 + 1:]))
    check(not (rising and last[1] - warm[1] > a.leak_mib),
          f"anonymous RSS rose monotonically by {last[1] - warm[1]:.0f} MiB after the warm-up (a leak)")
    check(last[2] <= warm[2] + 32, f"open descriptors rose from {warm[2]} to {last[2]} after the warm-up (a leak)")
    server.stop(120)
    print(f"soak ok: anonymous RSS {warm[1]:.0f} -> {last[1]:.0f} MiB after the warm-up, fds {warm[2]} -> {last[2]}",
          flush=True)


if __name__ == "__main__":
    main()
