"""PostgreSQL store down mid-load, then back: requests that need the store get 503 with
Retry-After while it is down, store=false generation goes on, nothing blocks, and all works
again without a restart; the same for connections killed by pg_terminate_backend."""
import glob
import os
import subprocess
import threading
import time

from common import Server, check, log, response_body, stream_response

FINISHED = ("", "response.completed", "response.incomplete")


class Postgres:
    """A throwaway cluster on a Unix socket (as the postgres user when root: PostgreSQL refuses
    to run as root)."""

    def __init__(self, dir):
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
        check(bins, "PostgreSQL server binaries not found (scripts/setup.sh installs postgresql)")
        self.bin = bins[-1]
        self.dir = dir
        os.makedirs(dir, exist_ok=True)
        self.run = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
        self.user = "postgres" if os.getuid() == 0 else os.environ.get("USER", "postgres")
        if os.getuid() == 0:
            os.chmod(dir, 0o755)
            subprocess.run(["chown", "postgres", dir], check=True)
        subprocess.run([*self.run, f"{self.bin}/initdb", "-D", f"{dir}/data", "-U", self.user, "--auth=trust", "-E",
                        "UTF8"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        self.pg_ctl = [*self.run, f"{self.bin}/pg_ctl", "-D", f"{dir}/data"]
        # faults.sh stops a cluster left running by a failure.
        with open(os.path.join(os.path.dirname(dir), "pg_ctl"), "w") as f:
            f.write(" ".join(self.pg_ctl) + ' "$@"\n')
        self.start()
        subprocess.run([*self.run, f"{self.bin}/createdb", "-h", dir, "-p", "5432", "-U", self.user, "gptoss"],
                       check=True)
        self.uri = f"postgresql://{self.user}@/gptoss?host={dir}&port=5432"

    def start(self):
        subprocess.run([*self.pg_ctl, "start", "-w", "-l", f"{self.dir}/server.log", "-o",
                        f"-k {self.dir} -c listen_addresses='' -p 5432"], check=True, stdout=subprocess.DEVNULL)

    def stop(self):
        subprocess.run([*self.pg_ctl, "stop", "-m", "fast"], check=True, stdout=subprocess.DEVNULL)

    def sql(self, text):
        return subprocess.run([*self.run, f"{self.bin}/psql", "-h", self.dir, "-p", "5432", "-U", self.user, "-d",
                               "gptoss", "-At", "-c", text], check=True, capture_output=True, text=True).stdout


class Load:
    """Clients in a loop: store=true streaming and plain, store=false plain, and GETs of
    stored ids; every outcome with its time and how long it took."""

    def __init__(self, server):
        self.server = server
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.outcomes = []  # (kind, start, seconds, status, detail)
        self.stored = []
        self.threads = [threading.Thread(target=self.client, args=(kind, i), daemon=True)
                        for i, kind in enumerate(["stream", "plain", "nostore", "nostore", "get"])]
        for t in self.threads:
            t.start()

    def client(self, kind, i):
        while not self.stop.is_set():
            t0 = time.monotonic()
            detail = ""
            if kind == "stream":
                status, events = stream_response(self.server, response_body(24, seed=i))
                last = events[-1] if events else {}
                detail = last.get("type") or last.get("error", {}).get("code", "")
                if detail == "response.completed":
                    with self.lock:
                        self.stored.append(last["response"]["id"])
            elif kind == "get":
                with self.lock:
                    rid = self.stored[-1] if self.stored else None
                if rid is None:
                    time.sleep(0.05)
                    continue
                status, headers, body = self.server.request("GET", f"/v1/responses/{rid}", timeout=60)
                detail = headers.get("retry-after", "") if status == 503 else ""
            else:
                status, headers, body = self.server.request(
                    "POST", "/v1/responses", response_body(24, store=(kind == "plain"), stream=False, seed=i), timeout=60)
                if status == 200 and kind == "plain":
                    with self.lock:
                        self.stored.append(body["id"])
                detail = headers.get("retry-after", "") if status == 503 else ""
                if status not in (200, 503):
                    detail = str(body)[:300]
            with self.lock:
                self.outcomes.append((kind, t0, time.monotonic() - t0, status, detail))
            if status != 200:
                time.sleep(0.1)  # as a client honouring Retry-After would, a little

    def between(self, t0, t1):
        with self.lock:
            return [o for o in self.outcomes if t0 <= o[1] and o[1] + o[2] <= t1]

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(60)


def summary(outcomes):
    counts = {}
    for kind, _, _, status, _ in outcomes:
        counts[f"{kind}:{status}"] = counts.get(f"{kind}:{status}", 0) + 1
    return counts


def run(tmp, long):
    outage = 30 if long else 5
    pg = Postgres(os.path.join(tmp, "pg", "cluster"))
    dir = os.path.join(tmp, "postgres")
    server = Server(dir, ["--store", pg.uri, "--max-running", "8"])
    load = Load(server)
    try:
        deadline = time.monotonic() + 60
        while len(load.stored) < 3 or not any(o[0] == "nostore" for o in load.outcomes):
            check(time.monotonic() < deadline, f"no load in 60 s: {summary(load.outcomes)}")
            time.sleep(0.1)
        t_down = time.monotonic()
        pg.stop()
        time.sleep(outage)
        t_up = time.monotonic()
        pg.start()
        time.sleep(3)
        t_kill = time.monotonic()
        killed = pg.sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                        "WHERE datname = 'gptoss' AND pid <> pg_backend_pid()").strip()
        time.sleep(3)
        t_end = time.monotonic()
    finally:
        load.finish()
    before, during = load.between(0, t_down), load.between(t_down + 0.5, t_up)
    after, terminated = load.between(t_up + 2, t_kill), load.between(t_kill, t_end)
    slowest = max(o[2] for o in load.outcomes)
    for name, part in [("before", before), ("during", during), ("after", after), ("terminated", terminated)]:
        log(f"{name}: {summary(part)}")
    check(before and all(o[3] == 200 for o in before), f"failures before the outage: {summary(before)}")
    check(slowest < 20, f"a request took {slowest:.1f} s (something blocked on the store)")
    for kind, _, _, status, detail in during:
        if kind == "nostore":
            check(status == 200, f"store=false failed while the store was down: {status} {detail}")
        elif kind == "stream":
            check(status == 503 or detail == "response.failed", f"a stored stream while down: {status} {detail}")
        else:
            check(status == 503 and detail == "5", f"{kind} while the store was down: {status} {detail!r}")
    check(any(o[0] != "nostore" and o[3] == 503 for o in during), "no store request was refused during the outage")
    check(any(o[0] == "nostore" and o[3] == 200 for o in during), "no store=false request ran during the outage")
    check(after and all(o[3] == 200 and o[4] in FINISHED for o in after),
          f"failures after the store came back: {summary(after)}")
    check(terminated and all(o[3] == 200 and o[4] in FINISHED for o in terminated),
          f"failures after pg_terminate_backend ({killed} connections): {summary(terminated)}")
    log(f"{outage} s outage: store requests 503 + Retry-After, store=false went on, slowest request {slowest:.1f} s; "
        f"{killed} connections terminated without a failed request")
    server.stop()
    pg.stop()
