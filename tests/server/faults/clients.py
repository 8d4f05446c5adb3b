"""Clients misbehaving: slow readers that stop reading a stream, 1,000 idle keep-alive
connections, slowloris request lines and headers (cut off at --header-timeout), connection
resets at every phase of a request, pipelined requests. The server keeps serving well-behaved clients throughout,
ends the generations of clients that are gone, and gives back its threads, descriptors and
memory."""
import json
import os
import re
import resource
import socket
import struct
import threading
import time

from common import MODEL_NAME, Server, check, log

COMPLETION = {"model": MODEL_NAME, "prompt": "Talk.", "max_tokens": 8, "seed": 1}
HEADER_TIMEOUT = 3  # seconds: the server's --header-timeout here


def raw_request(method, path, body=None, keep_alive=True):
    data = b"" if body is None else json.dumps(body).encode()
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    head += f"Content-Length: {len(data)}\r\n" + ("" if keep_alive else "Connection: close\r\n") + "\r\n"
    return head.encode() + data


def connect(server, rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect(("127.0.0.1", server.port))
    return s


def reset(s):
    """Closes with RST (SO_LINGER 0) instead of FIN."""
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def served(server, what, bound=5.0):
    """A well-behaved request: answered 200 within `bound` seconds."""
    t0 = time.monotonic()
    status, _, body = server.request("POST", "/v1/completions", COMPLETION, timeout=bound + 30)
    elapsed = time.monotonic() - t0
    check(status == 200, f"{what}: a well-behaved request got {status} {body}")
    check(elapsed < bound, f"{what}: a well-behaved request took {elapsed:.1f} s (bound {bound} s)")
    return elapsed


def wait_idle(server, what, seconds=20):
    """Every generation ended (running and queued back to 0)."""
    deadline = time.monotonic() + seconds
    while True:
        m = server.metrics()
        if m.get("gptoss_running_sequences", 0) == 0 and m.get("gptoss_queue_length", 0) == 0:
            return
        check(time.monotonic() < deadline, f"{what}: generations still running {seconds} s later: {m}")
        time.sleep(0.1)


def wait_fds(server, baseline, what, seconds=15):
    deadline = time.monotonic() + seconds
    while server.open_fds() > baseline + 2:
        check(time.monotonic() < deadline, f"{what}: {server.open_fds()} descriptors open, {baseline} before")
        time.sleep(0.1)


def slow_readers(server):
    baseline_rss = server.rss_kib()
    slow = []
    for i in range(4):
        s = connect(server, rcvbuf=4096)
        body = {"model": MODEL_NAME, "prompt": "Talk.", "max_tokens": 1800, "seed": i, "stream": True,
                "logprobs": 20}
        s.sendall(raw_request("POST", "/v1/completions", body))
        slow.append(s)  # never read
    peak = 0
    worst = 0.0
    t0 = time.monotonic()
    while time.monotonic() - t0 < 8:
        worst = max(worst, served(server, "while 4 clients stop reading"))
        peak = max(peak, server.rss_kib())
    # Each generation ends: completed into the socket buffers, or cancelled once a write has
    # waited --write-timeout for the client.
    wait_idle(server, "clients that stopped reading", 120)
    ended = time.monotonic() - t0
    for s in slow:
        s.close()
    growth = (peak - baseline_rss) / 1024
    check(growth < 256, f"RSS grew by {growth:.0f} MiB while clients stopped reading")
    log(f"4 streams never read: others served (slowest {worst:.2f} s), their generations ended after {ended:.0f} s "
        f"while the clients held on, RSS +{growth:.0f} MiB at the peak")


def idle_connections(server, count):
    """Half the connections never send a byte, half stay open after one request; both hold a
    server thread until --keep-alive-timeout. Opened within that time, they are all open at
    once, they cost the server no CPU while they wait, and each request among them must be
    answered at once."""
    fds0, threads0 = server.open_fds(), server.threads()
    socks = []
    t0 = time.monotonic()
    slowest = 0.0
    for i in range(count):
        s = connect(server)
        if i % 2:
            t1 = time.monotonic()
            s.sendall(raw_request("GET", "/health"))
            check(b"200 OK" in s.recv(65536), "/health among idle connections")
            slowest = max(slowest, time.monotonic() - t1)
        socks.append(s)
    opened = time.monotonic() - t0
    fds, threads = server.open_fds(), server.threads()
    cpu0, t1 = server.cpu_seconds(), time.monotonic()
    time.sleep(1.0)
    cores = (server.cpu_seconds() - cpu0) / (time.monotonic() - t1)
    check(cores < 0.05, f"{count} idle connections kept the server busy: {cores:.2f} of a core")
    worst = max(served(server, f"{count} idle connections open", bound=2.0) for _ in range(5))
    check(slowest < 2.0, f"a /health among {count} idle connections waited {slowest:.1f} s for a thread")
    check(fds >= fds0 + count * 9 // 10, f"the {count} connections were not open at once ({fds} descriptors)")
    for s in socks:
        s.close()
    wait_fds(server, fds0, f"after closing {count} idle connections", 30)
    log(f"{count} idle connections opened in {opened:.1f} s (slowest /health among them {slowest:.3f} s), "
        f"server CPU while they waited {cores:.3f} of a core, others served (slowest {worst:.2f} s); "
        f"server fds {fds0} -> {fds}, threads {threads0} -> {threads}; "
        f"descriptors back to {server.open_fds()} after they closed")


def slowloris(server, count):
    """Clients trickling a byte every 0.5 s (each read within --read-timeout), half into a header
    and half into the request line: others are served meanwhile, and at --header-timeout each
    gets a 408 and its connection is closed."""
    fds0 = server.open_fds()
    t0 = time.monotonic()
    socks = []
    for i in range(count):
        s = connect(server)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " if i % 2 else b"POST /v1/compl")
        s.setblocking(False)
        socks.append(s)
    answers = {s: b"" for s in socks}
    closed_at = {}
    stop = threading.Event()

    def trickle():
        while not stop.is_set() and len(closed_at) < len(socks):
            for s in socks:
                if s in closed_at:
                    continue
                try:
                    while data := s.recv(4096):
                        answers[s] += data
                    closed_at[s] = time.monotonic() - t0  # b"": the server closed it
                except BlockingIOError:
                    try:
                        s.send(b"x")
                    except OSError:
                        pass
                except OSError:
                    closed_at[s] = time.monotonic() - t0
            time.sleep(0.5)

    t = threading.Thread(target=trickle, daemon=True)
    t.start()
    try:
        worst = max(served(server, f"{count} slowloris connections") for _ in range(5))
        t.join(HEADER_TIMEOUT + 10)
    finally:
        stop.set()
        t.join()
    check(len(closed_at) == count, f"{count - len(closed_at)} of {count} slowloris connections still open "
          f"{time.monotonic() - t0:.1f} s after they began (--header-timeout {HEADER_TIMEOUT})")
    latest = max(closed_at.values())
    check(latest < HEADER_TIMEOUT + 3, f"the last slowloris connection closed after {latest:.1f} s "
          f"(--header-timeout {HEADER_TIMEOUT})")
    timed_out = sum(a.startswith(b"HTTP/1.1 408 ") and b'"request_timeout"' in a for a in answers.values())
    check(timed_out == count, f"{timed_out} of {count} slowloris connections answered 408 request_timeout; "
          f"one answer: {next(iter(answers.values()))[:300]!r}")
    for s in socks:
        s.close()
    wait_fds(server, fds0, "after the slowloris connections closed", 30)
    log(f"{count} slowloris connections (a byte every 0.5 s, into a header or the request line): "
        f"others served (slowest {worst:.2f} s); "
        f"each answered 408 and closed by {latest:.1f} s (--header-timeout {HEADER_TIMEOUT})")


def resets(server):
    fds0 = server.open_fds()
    stream = {"model": MODEL_NAME, "prompt": "Talk.", "max_tokens": 1500, "seed": 3, "stream": True}
    plain = {**stream, "stream": False}
    phases = {
        "after connecting": lambda s: None,
        "mid-headers": lambda s: s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Le"),
        "mid-body": lambda s: s.sendall(raw_request("POST", "/v1/completions", plain)[:-10]),
        "after the request (plain)": lambda s: (s.sendall(raw_request("POST", "/v1/completions", plain)), time.sleep(0.3)),
        "mid-stream": lambda s: (s.sendall(raw_request("POST", "/v1/completions", stream)), s.recv(4096), time.sleep(0.2)),
    }
    for name, before in phases.items():
        for _ in range(3):
            s = connect(server)
            before(s)
            reset(s)
        wait_idle(server, f"reset {name}", 20)
        served(server, f"after resets {name}")
    wait_fds(server, fds0, "after the resets", 30)
    log(f"resets {', '.join(phases)} (3 each): generations cancelled, server serving, descriptors back to {server.open_fds()}")


def pipelined(server):
    """Three requests in one write on one connection: each is answered, in order, and the
    connection closes after the third (it asks to). The server goes on."""
    s = connect(server)
    s.settimeout(60)
    t0 = time.monotonic()
    s.sendall(raw_request("GET", "/health") + raw_request("POST", "/v1/completions", COMPLETION) +
              raw_request("GET", "/v1/models", keep_alive=False))
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    closed_after = time.monotonic() - t0
    s.close()
    statuses = re.findall(rb"HTTP/1\.1 (\d+)", data)
    check(statuses == [b"200"] * 3, f"pipelined: {len(statuses)} answers: {data[:600]!r}")
    markers = [data.find(m) for m in (b'"status":"ok"', b'"object":"text_completion"', b'"object":"list"')]
    check(-1 not in markers and markers == sorted(markers), f"pipelined: answers out of place: {data[:600]!r}")
    check(closed_after < 5, f"pipelined: the connection stayed open {closed_after:.1f} s after its last request")
    served(server, "after pipelined requests")
    log(f"3 pipelined requests on one connection: {len(statuses)} answered in order, the connection closed "
        f"after {closed_after:.1f} s")


def run(tmp, long):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    dir = os.path.join(tmp, "clients")
    server = Server(dir, ["--store", os.path.join(dir, "r.sqlite3"), "--max-running", "8", "--context", "2048",
                          "--write-timeout", "2", "--read-timeout", "2", "--keep-alive-timeout", "5",
                          "--header-timeout", str(HEADER_TIMEOUT)])
    try:
        pipelined(server)
        resets(server)
        slow_readers(server)
        idle_connections(server, 1000)
        slowloris(server, 50 if not long else 200)
        served(server, "at the end")
    finally:
        server.stop()
