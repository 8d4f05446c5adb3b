"""What every fault scenario shares: a gptoss-server process of its own on loopback, HTTP and
Server-Sent Events clients on the standard library (so a scenario controls every byte and
every socket), and the checks' failure type."""
import http.client
import json
import os
import re
import signal
import subprocess
import threading
import time

BIN = os.environ["GPTOSS_SERVER_BIN"]
MODEL = os.environ["GPTOSS_TEST_MODEL"]
TOKENIZER = os.environ["GPTOSS_TEST_TOKENIZER"]
TMP = os.environ.get("GPTOSS_TEST_TMP", "/tmp")
MODEL_NAME = os.path.basename(MODEL.rstrip("/"))
# Seconds a client waits for an answer (the soak raises it for a big model on a CPU).
TIMEOUT = [60.0]


class Failure(AssertionError):
    pass


def check(cond, message):
    if not cond:
        raise Failure(message)


def log(message):
    print(f"  {message}", flush=True)


STARTED = []  # every server a scenario started, so that none outlives a failed one


def kill_leftovers():
    while STARTED:
        server = STARTED.pop()
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()


class Server:
    """gptoss-server on 127.0.0.1 with a port of its choosing; stderr and the log file in `dir`."""

    def __init__(self, dir, args, env=None, wait_ready=True, preexec=None):
        self.dir = dir
        os.makedirs(dir, exist_ok=True)
        self.log_path = os.path.join(dir, "server.log")
        self.err_path = os.path.join(dir, "server.err")
        self.err = open(self.err_path, "w")
        self.proc = subprocess.Popen(
            [BIN, "--model", MODEL, "--tokenizer", TOKENIZER, "--host", "127.0.0.1", "--port", "0",
             "--log-file", self.log_path, *args],
            stdout=subprocess.DEVNULL, stderr=self.err, env={**os.environ, **(env or {})},
            preexec_fn=preexec)
        self.pid = self.proc.pid
        STARTED.append(self)
        self.port = None
        if wait_ready:
            self.wait_ready()

    def stderr(self):
        with open(self.err_path) as f:
            return f.read()

    def wait_ready(self, seconds=60):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            text = self.stderr()
            m = re.search(r"ready on http://127\.0\.0\.1:(\d+)", text)
            if m:
                self.port = int(m.group(1))
                return
            if self.proc.poll() is not None:
                raise Failure(f"gptoss-server exited with {self.proc.returncode}:\n{text}")
            time.sleep(0.05)
        raise Failure(f"gptoss-server not ready in {seconds} s:\n{self.stderr()}")

    def signal(self, sig):
        os.kill(self.pid, sig)

    def wait(self, seconds):
        try:
            return self.proc.wait(seconds)
        except subprocess.TimeoutExpired:
            raise Failure(f"gptoss-server still running {seconds} s later")

    def stop(self, seconds=30):
        """SIGTERM; the exit status must be 0."""
        if self.proc.poll() is None:
            self.signal(signal.SIGTERM)
        status = self.wait(seconds)
        self.err.close()
        check(status == 0, f"gptoss-server exited with {status} after SIGTERM:\n{self.stderr()[-2000:]}")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.err.close()

    def rss_kib(self):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def rss_anon_kib(self):
        """Anonymous memory only: what a leak grows. VmRSS also counts the pages of the mapped
        weights, which grow as more experts are read (the 20b)."""
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
        return 0

    def open_fds(self):
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def threads(self):
        return len(os.listdir(f"/proc/{self.pid}/task"))

    def cpu_seconds(self):
        """User + system CPU time the server used so far."""
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def connection(self, timeout=None):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout or TIMEOUT[0])

    def request(self, method, path, body=None, timeout=None, headers=None):
        """(status, headers dict with lower-case names, parsed JSON or text)."""
        conn = self.connection(timeout)
        try:
            data = None if body is None else json.dumps(body)
            conn.request(method, path, data, {"Content-Type": "application/json", **(headers or {})})
            res = conn.getresponse()
            text = res.read().decode("utf-8", "replace")
            hdrs = {k.lower(): v for k, v in res.getheaders()}
            try:
                return res.status, hdrs, json.loads(text)
            except ValueError:
                return res.status, hdrs, text
        finally:
            conn.close()

    def metrics(self):
        _, _, text = self.request("GET", "/metrics")
        out = {}
        for line in text.splitlines():
            m = re.match(r"^(\w+) ([0-9.e+-]+)$", line)
            if m:
                out[m.group(1)] = float(m.group(2))
        return out


def response_body(max_tokens, store=True, stream=True, seed=1, text="Tell me a long story.", **extra):
    return {"model": MODEL_NAME, "input": text, "max_output_tokens": max_tokens, "store": store,
            "stream": stream, "seed": seed, "temperature": 1.0, **extra}


def read_sse(res, on_event=None):
    """Events of a Responses stream (dicts) until it ends; on_event(event) as each arrives.
    Raises on a malformed frame."""
    events = []
    name = None
    while True:
        line = res.readline()
        if not line:
            return events
        line = line.decode("utf-8").rstrip("\n")
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            event = json.loads(line[6:])
            check(name is None or event.get("type") == name, f"event name {name} != type {event.get('type')}")
            events.append(event)
            if on_event:
                on_event(event)
            name = None
        else:
            check(line == "", f"malformed SSE line {line[:200]!r}")


def stream_response(server, body, on_event=None, timeout=None, on_sent=None):
    """(status, events) of one streamed /v1/responses request; events stop where the stream
    stopped (a crash cuts them). on_sent() runs once the request is on the connection."""
    conn = server.connection(timeout)
    events = []
    try:
        conn.request("POST", "/v1/responses", json.dumps(body), {"Content-Type": "application/json"})
        if on_sent:
            on_sent()
        res = conn.getresponse()
        if res.status != 200:
            return res.status, [json.loads(res.read() or b"null")]
        try:
            read_sse(res, lambda e: (events.append(e), on_event and on_event(e)))
        except (OSError, http.client.HTTPException, ValueError):
            pass  # the connection was cut: the events so far are what the client saw
        return res.status, events
    except (OSError, http.client.HTTPException) as e:
        return None, [{"type": "connection_error", "error": str(e)}]
    finally:
        conn.close()


def run_threads(n, fn):
    """Runs fn(i) on n threads; returns their results (an exception is re-raised)."""
    results = [None] * n
    errors = []

    def body(i):
        try:
            results[i] = fn(i)
        except BaseException as e:  # noqa: BLE001 - reported on the main thread
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def sqlite_integrity(path):
    import sqlite3

    db = sqlite3.connect(path)
    try:
        return db.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        db.close()
