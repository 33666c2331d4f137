#!/usr/bin/env python3
"""Load and faults for a hub on PostgreSQL (issue 46): simulated devices against serve nodes on one store.

    python3 tools/hub-load.py --postgres postgres://postgres@127.0.0.1:5432/postgres --short      # CI: 40 devices, 20 s
    python3 tools/hub-load.py --postgres URL --pg-restart 'CMD'                                   # full: 200 devices, 120 s
    python3 tools/hub-load.py --engine sqlite                                                     # the same load on one SQLite serve

Python 3.11, standard library only; loopback only; bounded in time. --postgres names a server and a role that may
create databases: the tool makes a scratch database (dropped at the end with psql when it is installed), runs
`editlog hub init` on it from the Trees of Portland fixtures, and starts --nodes `editlog serve postgres://… --cache
DIR` processes on free ports (`--engine sqlite`: one `editlog serve LOG`, the same fixtures).

Devices (asyncio tasks, each one HTTP/1.1 keep-alive connection at a time, a token of its own) loop until the time is
up, with 0-40 ms between requests:
  * applyEdits (60 %): an update of PlantedBy to a value unique to the edit ("dN-K"), half on the device's own tree
    (added at its start) and half on one of 20 baseline trees all devices share;
  * query (40 %): 50 trees' OBJECTID and PlantedBy;
  * extractChanges every 3 s from the generation the last one reached.
A device sends each request to the next node in turn (as a load balancer would) and skips a node it cannot connect to. An edit whose answer
says success is acknowledged; one whose connection broke is not (it may or may not be in the store).
Catch-up lag: after one acknowledged edit in ten, the device asks another node for that tree until the value shows
there (polled every 2 ms); the time from the acknowledgement is the lag (it includes one query).

Faults (PostgreSQL only; their times scale with --seconds): node 1 gets SIGKILL at 35 % of the time and is started
again 3 s later with the same cache; with --pg-restart the PostgreSQL server is restarted at 65 % (the command is run
by the shell; .ci/run passes its pg_ctl restart). The outage run (--pg-stop CMD --pg-start CMD, instead of those):
PostgreSQL stopped at 30 %, the last node sent SIGTERM at 55 %, PostgreSQL and that node started again at 75 %.

Asserted (any failure: exit 1):
  * every acknowledged edit is in the store exactly once (its unique value in exactly one SessionCommitted);
  * positions are 1..N with no gap (`editlog log --json`), and `editlog verify` of the store passes;
  * each node's local copy, once the load stops, is at the store's head with its hash, and `editlog verify` of the
    local copy's file passes (its chain and its projections equal a rebuild from its events);
  * no request got a 5xx other than while a node was down or the server restarting, except 503 (ArcGIS's "try
    again", sent when a node sheds load: a full queue, a bounded wait for its lock or its store) for at most 20 % of
    the edits outside the faults; and devices made progress after each fault (acknowledged edits after it);
  * in the outage run, while PostgreSQL is stopped: every query is answered (200) from a local copy with an
    X-EditLog-Stale-Seconds header that grows; applyEdits and extractChanges are answered 503 within 15 s; the node
    sent SIGTERM ends within 5 s.
Reported: edits/s, p50/p99 of applyEdits and query, catch-up lag p50/p99, errors, and one JSON line (--json FILE).

Open loop (--open-loop [--rate R | --sweep R1,R2,…], no faults): field syncs arrive at a fixed rate, each its own task
started at its scheduled time (a closed loop at saturation measures queueing, not capacity). A sync is one `where`
query of 50 trees, one `objectIds` query, one applyEdits of 10 updates and one extractChanges (ids only); each request
is timed from when it should have started. Reported per rate: p50/p99 of each request and of the whole sync, and CPU
milliseconds per acknowledged edit of each node, of PostgreSQL and of the generator, read from /proc. The same checks
follow (every acknowledged edit stored once, gap-free, local copies verified).
"""

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "Fixtures", "trees-of-portland")
SERVICE = "hubload"
# A request unanswered this long is a failure (a node that hangs), not a wait.
REQUEST_TIMEOUT = 30


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pct(values, p):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


class HTTP:
    """One keep-alive HTTP/1.1 connection to a node (reopened after an error)."""

    def __init__(self, port):
        self.port = port
        self.reader = self.writer = None
        self.headers = {}

    async def close(self):
        if self.writer:
            self.writer.close()
            try:
                await self.writer.wait_closed()
            except Exception:
                pass
        self.reader = self.writer = None

    async def request(self, path, form):
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        body = urllib.parse.urlencode(form).encode()
        head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nUser-Agent: hub-load\r\n"
                f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(body)}\r\n\r\n")
        try:
            self.writer.write(head.encode() + body)
            await self.writer.drain()
            status_line = await self.reader.readline()
            if not status_line:
                raise ConnectionError("closed")
            status = int(status_line.split()[1])
            headers = {}
            while True:
                line = await self.reader.readline()
                if line in (b"\r\n", b""):
                    break
                k, _, v = line.decode().partition(":")
                headers[k.strip().lower()] = v.strip()
            self.headers = headers
            if "content-length" in headers:
                data = await self.reader.readexactly(int(headers["content-length"]))
            elif headers.get("transfer-encoding", "").lower() == "chunked":
                data = b""
                while True:
                    size = int((await self.reader.readline()).strip(), 16)
                    if size == 0:
                        await self.reader.readline()
                        break
                    data += await self.reader.readexactly(size)
                    await self.reader.readline()
            else:
                data = await self.reader.read()
                await self.close()
            return status, data
        except Exception:
            await self.close()
            raise


class Run:
    def __init__(self, a):
        self.a = a
        self.tmp = tempfile.mkdtemp(prefix="editlog-hub-load-")
        self.editlog = os.path.join(self.tmp, "editlog")
        shutil.copy(a.editlog, self.editlog)
        self.nodes = []          # [{port, cache, proc}]
        self.down = set()        # node indexes down now
        self.fault_windows = []  # (start, end) monotonic: 5xx allowed inside
        self.acked = []          # (value, gid, t_ack)
        self.edit_ms, self.query_ms, self.lag_ms = [], [], []
        self.errors = {}
        self.unacked = 0
        self.edits_outside_faults = 0
        self.shed_outside_faults = 0
        self.failures = []
        self.url = None
        self.log_path = None
        self.outage = None       # (start, end) monotonic of --pg-stop … --pg-start
        # While PostgreSQL is stopped: [(op, status, ms, stale header or None)]
        self.during_outage = []

    def fail(self, msg):
        self.failures.append(msg)
        print("FAIL:", msg, flush=True)

    def err(self, kind):
        self.errors[kind] = self.errors.get(kind, 0) + 1

    def run_cli(self, *args, check=True):
        r = subprocess.run([self.editlog, *args], capture_output=True, text=True)
        if check and r.returncode != 0:
            raise SystemExit(f"editlog {' '.join(args[:2])} failed ({r.returncode}): {r.stderr.strip()[:400]}")
        return r

    # -- setup ----------------------------------------------------------------

    def inputs(self):
        return (["--service", f"{FIX}/service.json", "--webmap", f"{FIX}/webmap.json", "--rules", f"{FIX}/rules.json", "--data"]
                + [f"{FIX}/baseline/{n}.json" for n in ("Species", "Neighborhoods", "Trees", "Inspections")])

    def psql(self, sql):
        admin = self.a.postgres
        if shutil.which("psql") is None:
            return False
        r = subprocess.run(["psql", admin, "-v", "ON_ERROR_STOP=1", "-c", sql], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"psql: {r.stderr.strip()[:300]}")
        return True

    def setup(self):
        with open(os.path.join(self.tmp, "tokens"), "w") as f:
            for d in range(self.a.devices):
                f.write(f"tok-device-{d:05d} device{d}\n")
        if self.a.engine == "postgres":
            self.db = "editlog_load_" + uuid.uuid4().hex[:12]
            if not self.psql(f"CREATE DATABASE {self.db}"):
                raise SystemExit("psql is needed to create the scratch database")
            base = self.a.postgres.rsplit("/", 1)[0]
            self.url = f"{base}/{self.db}"
            self.run_cli("hub", "init", self.url, *self.inputs())
            for i in range(self.a.nodes):
                self.nodes.append({"port": free_port(), "cache": os.path.join(self.tmp, f"cache{i}"), "proc": None})
        else:
            self.log_path = os.path.join(self.tmp, "hub.editlog")
            self.run_cli("init", self.log_path, *self.inputs())
            self.nodes.append({"port": free_port(), "cache": None, "proc": None})
        for i in range(len(self.nodes)):
            self.start_node(i)
        with open(f"{FIX}/baseline/Trees.json") as f:
            self.trees = [ft["attributes"]["GlobalID"] for ft in json.load(f)["features"]]
        self.shared = self.trees[:20]

    def start_node(self, i):
        n = self.nodes[i]
        target = self.url if self.a.engine == "postgres" else self.log_path
        args = [self.editlog, "serve", target, "--port", str(n["port"]), "--name", SERVICE, "--token-file", os.path.join(self.tmp, "tokens")]
        if n["cache"]:
            args += ["--cache", n["cache"]]
        out = open(os.path.join(self.tmp, f"node{i}.log"), "ab")
        n["proc"] = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", n["port"]), timeout=0.5):
                    self.down.discard(i)
                    return
            except OSError:
                if n["proc"].poll() is not None:
                    raise SystemExit(f"node {i} exited: see {self.tmp}/node{i}.log")
                time.sleep(0.05)
        raise SystemExit(f"node {i} did not listen within 60 s")

    # -- devices ----------------------------------------------------------------

    def path(self, op):
        return f"/arcgis/rest/services/{SERVICE}/FeatureServer/{op}"

    async def call(self, dev, op, form):
        """One request through the device's node (as a load balancer spreads them: the next node each request); on a
        connection failure, the next node (at most one round)."""
        for _ in range(len(self.nodes)):
            http = dev["http"][dev["node"]]
            try:
                t0 = time.monotonic()
                status, data = await asyncio.wait_for(http.request(self.path(op), form), REQUEST_TIMEOUT)
                if self.outage and self.outage[0] + 1 <= t0 and (self.outage[1] is None or time.monotonic() < self.outage[1]):
                    self.during_outage.append((op, status, (time.monotonic() - t0) * 1000, http.headers.get("x-editlog-stale-seconds")))
                return status, data
            except asyncio.TimeoutError:
                await http.close()
                self.fail(f"{op} got no answer from node {dev['node']} within {REQUEST_TIMEOUT} s")
                raise ConnectionError("timeout")
            except ConnectionRefusedError:
                # Never sent: the next node gets it.
                self.err("connect")
                dev["node"] = (dev["node"] + 1) % len(self.nodes)
                await asyncio.sleep(0.05)
            except (OSError, ConnectionError, asyncio.IncompleteReadError, ValueError, IndexError):
                # Sent, and the connection broke before the answer: the node may have stored it. Sending it again
                # would be a second edit (applyEdits has no idempotency key), so it is unacknowledged.
                self.err("connect")
                dev["node"] = (dev["node"] + 1) % len(self.nodes)
                raise ConnectionError("the connection broke after the request was sent")
        raise ConnectionError("no node answers")

    def overlaps_fault(self, t0):
        """Whether a request sent at t0 and answered now overlapped a fault (it may have met it at either end)."""
        return self.in_fault(t0) or self.in_fault(time.monotonic())

    def in_fault(self, t):
        in_outage = self.outage is not None and self.outage[0] <= t and (self.outage[1] is None or t <= self.outage[1] + 3)
        return in_outage or any(s <= t <= e for s, e in self.fault_windows) or bool(self.down)

    async def edit(self, dev, gid, value):
        form = {"f": "json", "token": dev["token"], "useGlobalIds": "true", "rollbackOnFailure": "true",
                "updates": json.dumps([{"attributes": {"GlobalID": gid, "PlantedBy": value}}])}
        t0 = time.monotonic()
        try:
            status, data = await self.call(dev, "0/applyEdits", form)
        except ConnectionError:
            self.unacked += 1
            return False
        ms = (time.monotonic() - t0) * 1000
        if not self.overlaps_fault(t0):
            self.edits_outside_faults += 1
        if status == 503 and not self.overlaps_fault(t0):
            # Shed: ArcGIS's "try again" (Retry-After) from a node whose queue or lock wait is full, or whose store
            # did not answer in time. Allowed, counted, and bounded in check().
            self.err("503 shed")
            self.shed_outside_faults += 1
            self.unacked += 1
            return False
        if status >= 500:
            self.err("5xx")
            if not self.overlaps_fault(t0):
                self.fail(f"applyEdits answered HTTP {status} outside a fault: {data[:200]!r}")
            self.unacked += 1
            return False
        try:
            answer = json.loads(data)
            ok = answer["updateResults"][0]["success"] is True
        except Exception:
            self.err("applyEdits error")
            self.unacked += 1
            if not self.overlaps_fault(t0):
                self.errors.setdefault("samples", []).append(data[:200].decode(errors="replace"))
            return False
        if not ok:
            self.err("applyEdits refused")
            self.unacked += 1
            return False
        self.edit_ms.append(ms)
        self.acked.append((value, gid, time.monotonic()))
        return True

    async def add_own_tree(self, dev):
        gid = "{" + str(uuid.UUID(int=random.getrandbits(128), version=4)).upper() + "}"
        value = f"d{dev['id']}-0"
        form = {"f": "json", "token": dev["token"], "useGlobalIds": "true",
                "adds": json.dumps([{"geometry": {"x": -122.6 + dev["id"] * 1e-5, "y": 45.52, "spatialReference": {"wkid": 4326}},
                                     "attributes": {"GlobalID": gid, "PlantedBy": value, "DBH": 3}}])}
        for _ in range(20):
            try:
                status, data = await self.call(dev, "0/applyEdits", form)
                if status == 200 and json.loads(data)["addResults"][0]["success"]:
                    return gid
            except Exception:
                pass
            await asyncio.sleep(0.2)
        raise SystemExit(f"device {dev['id']} could not add its tree")

    async def query(self, dev):
        form = {"f": "json", "token": dev["token"], "where": "1=1", "outFields": "OBJECTID,PlantedBy", "resultRecordCount": "50"}
        t0 = time.monotonic()
        try:
            status, data = await self.call(dev, "0/query", form)
        except ConnectionError:
            return
        if status >= 500:
            self.err("5xx")
            if not self.overlaps_fault(t0):
                self.fail(f"query answered HTTP {status} outside a fault")
            return
        self.query_ms.append((time.monotonic() - t0) * 1000)

    async def extract(self, dev):
        try:
            status, data = await self.call(dev, "extractChanges", {
                "f": "json", "token": dev["token"], "layers": "[0]", "serverGens": f"[{dev['gen']}]", "returnInserts": "true",
                "returnUpdates": "true", "returnDeletes": "true", "returnIdsOnly": "true", "dataFormat": "json"})
            if status == 200:
                gens = json.loads(data).get("layerServerGens") or []
                if gens:
                    dev["gen"] = max(g.get("serverGen", 0) for g in gens)
        except Exception:
            self.err("extractChanges")

    async def lag_probe(self, dev, gid, value, t_ack, node):
        other = HTTP(self.nodes[node]["port"])
        form = {"f": "json", "token": dev["token"], "where": f"GlobalID = '{gid}'", "outFields": "PlantedBy"}
        try:
            while time.monotonic() - t_ack < 10:
                try:
                    status, data = await asyncio.wait_for(other.request(self.path("0/query"), form), REQUEST_TIMEOUT)
                    feats = json.loads(data).get("features", []) if status == 200 else []
                    if feats and feats[0]["attributes"].get("PlantedBy") is not None:
                        seen = feats[0]["attributes"]["PlantedBy"]
                        if seen == value or seen.startswith(f"d{dev['id']}-") and int(seen.split("-")[1]) > int(value.split("-")[1]):
                            self.lag_ms.append((time.monotonic() - t_ack) * 1000)
                            return
                except Exception:
                    return
                await asyncio.sleep(0.002)
        finally:
            await other.close()

    async def device(self, d, end, ready):
        dev = {"id": d, "token": f"tok-device-{d:05d}", "node": d % len(self.nodes), "gen": 0, "k": 0}
        dev["http"] = [HTTP(n["port"]) for n in self.nodes]
        rnd = random.Random(self.a.seed * 100003 + d)
        own = await self.add_own_tree(dev)
        ready.append(d)
        next_extract = time.monotonic() + rnd.uniform(0, 3)
        probes = []
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= next_extract:
                await self.extract(dev)
                next_extract = now + 3
            elif rnd.random() < 0.6:
                dev["k"] += 1
                gid = own if rnd.random() < 0.5 else rnd.choice(self.shared)
                value = f"d{d}-{dev['k']}"
                if await self.edit(dev, gid, value) and len(self.nodes) > 1 and gid == own and dev["k"] % 10 == 0 and not self.down:
                    other = (dev["node"] + 1) % len(self.nodes)
                    probes.append(asyncio.create_task(self.lag_probe(dev, gid, value, time.monotonic(), other)))
            else:
                await self.query(dev)
            dev["node"] = (dev["node"] + 1) % len(self.nodes)
            await asyncio.sleep(rnd.uniform(0, 0.04))
        for p in probes:
            await p
        for h in dev["http"]:
            await h.close()

    # -- faults ----------------------------------------------------------------

    async def faults(self, start, seconds):
        if self.a.engine != "postgres" or self.a.no_faults:
            return
        await asyncio.sleep(seconds * 0.35)
        t = time.monotonic()
        self.down.add(0)
        self.nodes[0]["proc"].send_signal(signal.SIGKILL)
        self.nodes[0]["proc"].wait()
        print(f"fault: node 0 killed (SIGKILL) at {t - start:.1f} s", flush=True)
        self.acked_at_kill = len(self.acked)
        await asyncio.sleep(3)
        await asyncio.get_running_loop().run_in_executor(None, self.start_node, 0)
        self.fault_windows.append((t, time.monotonic() + 1))
        print(f"fault: node 0 started again at {time.monotonic() - start:.1f} s", flush=True)
        if self.a.pg_restart:
            await asyncio.sleep(max(0, start + seconds * 0.65 - time.monotonic()))
            t = time.monotonic()
            # The fault starts now: a 503 answered while the command runs is inside it (its end is set after).
            self.fault_windows.append((t, float("inf")))
            # Output to a file, not a pipe: the restarted server inherits it and never closes it.
            with open(os.path.join(self.tmp, "pg-restart.log"), "w+") as out:
                r = await asyncio.get_running_loop().run_in_executor(
                    None, lambda: subprocess.run(self.a.pg_restart, shell=True, stdin=subprocess.DEVNULL, stdout=out, stderr=out))
                out.seek(0)
                r.stderr = out.read()
            # A call begun during the restart may wait out its timeout (8 s) on a connection the restart broke.
            self.fault_windows[-1] = (t, time.monotonic() + 10)
            self.acked_at_pg = len(self.acked)
            print(f"fault: PostgreSQL restarted at {t - start:.1f} s ({time.monotonic() - t:.1f} s; exit {r.returncode})", flush=True)
            if r.returncode != 0:
                self.fail(f"--pg-restart failed: {r.stderr.strip()[:300]}")

    async def pg_outage(self, start, seconds):
        """--pg-stop/--pg-start: PostgreSQL stopped at 30 % of the time under the load; node 1 gets SIGTERM at 55 %
        (it must end within 5 s); PostgreSQL started again at 75 % and node 1 with it. Checked: reads answered from
        the local copies with their staleness, writes and extractChanges answered (503) within 15 s."""
        loop = asyncio.get_running_loop()

        def shell(cmd, name):
            with open(os.path.join(self.tmp, f"{name}.log"), "w+") as out:
                r = subprocess.run(cmd, shell=True, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
                out.seek(0)
                if r.returncode != 0:
                    self.fail(f"--{name} failed ({r.returncode}): {out.read().strip()[:300]}")

        await asyncio.sleep(seconds * 0.30)
        t = time.monotonic()
        self.outage = (t, None)
        await loop.run_in_executor(None, shell, self.a.pg_stop, "pg-stop")
        print(f"fault: PostgreSQL stopped at {t - start:.1f} s", flush=True)
        # Probes of our own, 2 s into the outage, to every node: a query, an applyEdits and an extractChanges each,
        # so the checks do not hang on what the devices' loops happened to send.
        await asyncio.sleep(2)
        for node in self.nodes:
            http = HTTP(node["port"])
            tok = "tok-device-00000"
            for op, form in (("0/query", {"f": "json", "token": tok, "where": "1=1", "outFields": "OBJECTID", "resultRecordCount": "5"}),
                             ("0/applyEdits", {"f": "json", "token": tok, "useGlobalIds": "true",
                                               "updates": json.dumps([{"attributes": {"GlobalID": self.shared[0], "PlantedBy": "outage-probe"}}])}),
                             ("extractChanges", {"f": "json", "token": tok, "layers": "[0]", "serverGens": "[1]", "returnIdsOnly": "true"})):
                t0 = time.monotonic()
                try:
                    status, _ = await asyncio.wait_for(http.request(self.path(op), form), REQUEST_TIMEOUT)
                    self.during_outage.append((op, status, (time.monotonic() - t0) * 1000, http.headers.get("x-editlog-stale-seconds")))
                except Exception as e:
                    self.fail(f"the outage probe {op} got no answer: {e!r}")
            await http.close()
        await asyncio.sleep(max(0, start + seconds * 0.55 - time.monotonic()))
        i = len(self.nodes) - 1
        self.down.add(i)
        t_term = time.monotonic()
        self.nodes[i]["proc"].send_signal(signal.SIGTERM)
        try:
            await loop.run_in_executor(None, lambda: self.nodes[i]["proc"].wait(timeout=30))
            self.term_seconds = time.monotonic() - t_term
        except subprocess.TimeoutExpired:
            self.term_seconds = None
            self.nodes[i]["proc"].kill()
            self.nodes[i]["proc"].wait()
        print(f"fault: node {i} got SIGTERM with PostgreSQL stopped: "
              + (f"ended in {self.term_seconds:.1f} s" if self.term_seconds is not None else "still alive after 30 s (killed)"), flush=True)
        if self.term_seconds is None or self.term_seconds > 5:
            self.fail(f"node {i} did not end within 5 s of SIGTERM while PostgreSQL was stopped")
        await asyncio.sleep(max(0, start + seconds * 0.75 - time.monotonic()))
        await loop.run_in_executor(None, shell, self.a.pg_start, "pg-start")
        self.outage = (self.outage[0], time.monotonic())
        print(f"fault: PostgreSQL started again at {time.monotonic() - start:.1f} s", flush=True)
        self.acked_at_pg = len(self.acked)
        await loop.run_in_executor(None, self.start_node, i)
        self.fault_windows.append((t_term, time.monotonic() + 1))

    def check_outage(self):
        if self.outage is None:
            return
        by_op = {}
        for op, status, ms, stale in self.during_outage:
            by_op.setdefault(op.split("/")[-1], []).append((status, ms, stale))
        reads = by_op.get("query", [])
        writes = by_op.get("applyEdits", [])
        extracts = by_op.get("extractChanges", [])
        print(f"outage: {len(reads)} queries ({sum(1 for s, _, _ in reads if s == 200)} answered 200), {len(writes)} applyEdits "
              f"({sum(1 for s, _, _ in writes if s == 503)} answered 503, slowest {max([m for _, m, _ in writes], default=0):.0f} ms), "
              f"{len(extracts)} extractChanges ({sum(1 for s, _, _ in extracts if s == 503)} answered 503, slowest "
              f"{max([m for _, m, _ in extracts], default=0):.0f} ms)", flush=True)
        if not reads or any(s != 200 for s, _, _ in reads):
            self.fail(f"queries while PostgreSQL was stopped: {[s for s, _, _ in reads][:20]} (all should be answered from the local copy)")
        if any(st is None for _, _, st in reads):
            self.fail("a query answered while PostgreSQL was stopped has no X-EditLog-Stale-Seconds header")
        stale = [float(st) for _, _, st in reads if st is not None]
        if stale and max(stale) < 1:
            self.fail(f"the staleness never grew while PostgreSQL was stopped (at most {max(stale)} s)")
        for name, answers in (("applyEdits", writes), ("extractChanges", extracts)):
            if not answers:
                self.fail(f"no {name} was sent while PostgreSQL was stopped")
            slow = [m for _, m, _ in answers if m > 15000]
            if slow:
                self.fail(f"{len(slow)} {name} answers took over 15 s while PostgreSQL was stopped (slowest {max(slow):.0f} ms)")
            wrong = [s for s, _, _ in answers if s not in (200, 503)]
            if wrong:
                self.fail(f"{name} answered {wrong[:5]} while PostgreSQL was stopped (503 expected)")
            if not any(s == 503 for s, _, _ in answers):
                self.fail(f"no {name} got 503 while PostgreSQL was stopped")

    async def load(self):
        seconds = self.a.seconds
        ready = []
        start = time.monotonic()
        end = start + seconds
        tasks = [asyncio.create_task(self.device(d, end, ready)) for d in range(self.a.devices)]
        fault = asyncio.create_task(self.pg_outage(start, seconds) if self.a.pg_stop else self.faults(start, seconds))
        # Bounded: every device stops by the end plus the request timeout (and the lag probes' 10 s).
        done, pending = await asyncio.wait([*tasks, fault], timeout=seconds + REQUEST_TIMEOUT * 2 + 30)
        for t in pending:
            t.cancel()
        if pending:
            self.fail(f"{len(pending)} devices or faults did not finish in time")
        for t in done:
            if t.exception() is not None:
                self.fail(f"a device failed: {t.exception()!r}")
        self.elapsed = time.monotonic() - start

    # -- open loop ---------------------------------------------------------------

    def cpu_seconds(self):
        """CPU seconds (user + system) so far of each node, of every PostgreSQL server process, and of this generator,
        from /proc (the PostgreSQL figure counts live processes only: a backend that ended takes its CPU with it)."""
        tick = os.sysconf("SC_CLK_TCK")

        def of(pid):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    parts = f.read().rsplit(")", 1)[1].split()
                return (int(parts[11]) + int(parts[12])) / tick
            except (OSError, IndexError, ValueError):
                return 0.0
        pg = 0.0
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    with open(f"/proc/{pid}/comm") as f:
                        if f.read().strip().startswith("postgres"):
                            pg += of(pid)
                except OSError:
                    pass
        t = os.times()
        return {"nodes": [of(n["proc"].pid) for n in self.nodes], "postgres": pg, "generator": t.user + t.system}

    async def sync_once(self, k, scheduled, dev, stats):
        """One field sync, begun at `scheduled` (monotonic): a `where` query of 50 trees, an `objectIds` query of the 10
        it edits, one applyEdits of 10 updates, and an extractChanges (ids only) since the device's last generation.
        Each request is timed from when it should have started: the first from `scheduled`, the next from the end of
        the one before (a sync that starts late counts its wait)."""
        http = HTTP(self.nodes[k % len(self.nodes)]["port"])
        picks = [self.trees[(dev["id"] * 10 + i) % len(self.trees)] for i in range(10)]
        t = scheduled

        async def one(op, form, name):
            nonlocal t
            try:
                status, data = await asyncio.wait_for(http.request(self.path(op), form), REQUEST_TIMEOUT)
            except Exception:
                stats["errors"][name] = stats["errors"].get(name, 0) + 1
                await http.close()
                return None
            now = time.monotonic()
            stats[name].append((now - t) * 1000)
            t = now
            if status != 200 or data.startswith(b'{"error"'):
                stats["errors"][name] = stats["errors"].get(name, 0) + 1
                return None
            return json.loads(data)

        try:
            tok = dev["token"]
            await one("0/query", {"f": "json", "token": tok, "where": "1=1", "outFields": "OBJECTID,GlobalID,PlantedBy", "resultRecordCount": "50"}, "query")
            where = "GlobalID IN (" + ",".join(f"'{g}'" for g in picks) + ")"
            await one("0/query", {"f": "json", "token": tok, "where": where, "returnIdsOnly": "true"}, "objectIds")
            # Unique over the whole run (a sweep's rates start `k` again), so the store check finds each value once.
            values = [f"o{self.open_runs}-{k}-{i}" for i in range(10)]
            answer = await one("0/applyEdits", {"f": "json", "token": tok, "useGlobalIds": "true", "rollbackOnFailure": "true",
                                                "updates": json.dumps([{"attributes": {"GlobalID": g, "PlantedBy": v}} for g, v in zip(picks, values)])}, "applyEdits")
            if answer and all(r.get("success") for r in answer.get("updateResults", [])):
                stats["acked"] += 10
                now = time.monotonic()
                self.acked += [(v, g, now) for v, g in zip(values, picks)]
            changes = await one("extractChanges", {"f": "json", "token": tok, "layers": "[0]", "serverGens": f"[{dev['gen']}]",
                                                   "returnInserts": "true", "returnUpdates": "true", "returnDeletes": "true",
                                                   "returnIdsOnly": "true", "dataFormat": "json"}, "extractChanges")
            if changes:
                gens = changes.get("layerServerGens") or []
                if gens:
                    dev["gen"] = max(g.get("serverGen", 0) for g in gens)
            stats["sync"].append((time.monotonic() - scheduled) * 1000)
        finally:
            await http.close()

    async def open_loop(self, rate, seconds):
        """Syncs arriving at `rate` per second for `seconds` (one device after another), each its own task started at
        its scheduled time whatever the others are doing. Returns the figures."""
        self.open_runs = getattr(self, "open_runs", 0) + 1
        devices = [{"id": d, "token": f"tok-device-{d:05d}", "gen": 0} for d in range(self.a.devices)]
        stats = {"query": [], "objectIds": [], "applyEdits": [], "extractChanges": [], "sync": [], "errors": {}, "acked": 0}
        cpu0 = self.cpu_seconds()
        start = time.monotonic() + 0.5
        n = int(rate * seconds)
        tasks = []
        for k in range(n):
            scheduled = start + k / rate
            delay = scheduled - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(self.sync_once(k, scheduled, devices[k % len(devices)], stats)))
        await asyncio.wait(tasks, timeout=REQUEST_TIMEOUT * 4 + 10)
        elapsed = time.monotonic() - start
        cpu1 = self.cpu_seconds()
        acked = max(1, stats["acked"])
        node_cpu = [b - a for a, b in zip(cpu0["nodes"], cpu1["nodes"])]
        fig = {"rate": rate, "seconds": round(elapsed, 1), "syncs": n, "completed": len(stats["sync"]), "acknowledgedEdits": stats["acked"],
               "errors": stats["errors"]}
        for name in ("query", "objectIds", "applyEdits", "extractChanges", "sync"):
            fig[name + "P50"] = pct(stats[name], 50)
            fig[name + "P99"] = pct(stats[name], 99)
        fig["cpuMsPerEditNodes"] = [round(c * 1000 / acked, 2) for c in node_cpu]
        fig["cpuMsPerEditPostgres"] = round((cpu1["postgres"] - cpu0["postgres"]) * 1000 / acked, 2)
        fig["cpuMsPerEditServer"] = round((sum(node_cpu) + cpu1["postgres"] - cpu0["postgres"]) * 1000 / acked, 2)
        fig["cpuMsPerEditGenerator"] = round((cpu1["generator"] - cpu0["generator"]) * 1000 / acked, 2)
        for k, v in list(fig.items()):
            if isinstance(v, float):
                fig[k] = round(v, 1)
        return fig

    def node_figures(self, acked):
        """What each hub node measured itself (its `editlog: node figures` line at SIGTERM): the store's serial section
        (the head lock's time held by its appends), the catch-up lag from a commit's notification to the local
        copy's commit, and its CPU per event decided and per event followed. The serial section per acknowledged edit
        adds every node's time held."""
        out = {}
        figs, writers = [], []
        for i in range(len(self.nodes)):
            last = None
            with open(os.path.join(self.tmp, f"node{i}.log"), errors="replace") as f:
                for line in f:
                    if line.startswith("editlog: node figures "):
                        last = json.loads(line[len("editlog: node figures "):])
                    if line.startswith("editlog: writer figures "):
                        writers.append(json.loads(line[len("editlog: writer figures "):]))
            if last:
                figs.append(last)
        # Group commit: the requests each node's writer loop committed per transaction (per append on a hub node).
        if writers:
            out["writeRequestsPerGroupNodes"] = [round(w["requests"] / w["groups"], 2) if w["groups"] else None for w in writers]
            out["largestGroupNodes"] = [w["largest"] for w in writers]
        if not figs:
            return out
        held = sum(f["headLockMs"] for f in figs)
        out["headLockMsPerEdit"] = round(held / max(1, acked), 3)
        out["headLockMsPerAppendP50Nodes"] = [f["headLockP50"] for f in figs]
        out["headLockMsPerAppendP99Nodes"] = [f["headLockP99"] for f in figs]
        out["headLockAppends"] = sum(f["headLockAppends"] for f in figs)
        out["lagP50Nodes"] = [f["lagP50"] for f in figs]
        out["lagP99Nodes"] = [f["lagP99"] for f in figs]
        out["redecidedNodes"] = [f["redecided"] for f in figs]
        # A node's CPU to follow another node's event against its CPU to decide one of its own (redone decisions
        # included), on the threads that write its local copy.
        if all("decideCpuMsPerEvent" in f for f in figs):
            out["decideCpuMsPerEventNodes"] = [f["decideCpuMsPerEvent"] for f in figs]
            out["followCpuMsPerEventNodes"] = [f["followCpuMsPerEvent"] for f in figs]
            out["followToDecideNodes"] = [round(f["followCpuMsPerEvent"] / f["decideCpuMsPerEvent"], 2) if f["decideCpuMsPerEvent"] else None for f in figs]
        return out

    async def sweep(self, rates, seconds, goals):
        """The open loop at each rate in turn; the highest rate whose p99s all hold `goals` and every sync completed."""
        best, figures = None, []
        for rate in rates:
            fig = await self.open_loop(rate, seconds)
            held = fig["completed"] == fig["syncs"] and not fig["errors"] and all(
                fig.get(name + "P99") is not None and fig[name + "P99"] <= limit for name, limit in goals.items())
            fig["held"] = held
            figures.append(fig)
            print(json.dumps(fig), flush=True)
            if held:
                best = rate
            else:
                break
            await asyncio.sleep(2)
        return best, figures

    # -- checks ----------------------------------------------------------------

    def check(self):
        target = self.url if self.a.engine == "postgres" else self.log_path
        # Stop the nodes first (SIGTERM): the replicas are then quiet files.
        time.sleep(1.5)
        for n in self.nodes:
            n["proc"].send_signal(signal.SIGTERM)
        for n in self.nodes:
            try:
                n["proc"].wait(timeout=20)
            except subprocess.TimeoutExpired:
                n["proc"].kill()
        v = json.loads(self.run_cli("verify", target, "--json", check=False).stdout or "{}")
        if not v.get("ok"):
            self.fail(f"verify of the store: {v}")
        extra = ["--cache", os.path.join(self.tmp, "check-cache")] if self.a.engine == "postgres" else []
        r = self.run_cli("log", target, "--json", *extra)
        positions, committed = [], {}
        for line in r.stdout.splitlines():
            e = json.loads(line)
            positions.append(e["position"])
            if e["type"] == "SessionCommitted":
                pb = ((e.get("payload") or {}).get("changes") or {}).get("PlantedBy")
                value = pb.get("new") if isinstance(pb, dict) else None
                if value is not None:
                    committed[value] = committed.get(value, 0) + 1
        if positions != list(range(1, len(positions) + 1)):
            self.fail("positions are not 1..N without a gap")
        missing = [v for v, _, _ in self.acked if committed.get(v, 0) != 1]
        if missing:
            self.fail(f"{len(missing)} acknowledged edits are not in the store exactly once, e.g. {missing[:5]} "
                      f"(counts {[committed.get(m, 0) for m in missing[:5]]})")
        self.events = len(positions)
        if self.a.engine == "postgres":
            for i, n in enumerate(self.nodes):
                files = [f for f in os.listdir(n["cache"]) if f.endswith(".editlog")]
                if len(files) != 1:
                    self.fail(f"node {i}: no local copy file in {n['cache']}")
                    continue
                rv = json.loads(self.run_cli("verify", os.path.join(n["cache"], files[0]), "--json", check=False).stdout or "{}")
                if not rv.get("ok"):
                    self.fail(f"node {i}: verify of its local copy (chain and projections against a rebuild): {rv}")
                elif rv.get("headHash") != v.get("headHash") or rv.get("events") != v.get("events"):
                    self.fail(f"node {i}: local copy at {rv.get('events')} events, the store at {v.get('events')}")
            self.check_outage()
            if self.shed_outside_faults > 0.2 * max(1, self.edits_outside_faults):
                self.fail(f"{self.shed_outside_faults} of {self.edits_outside_faults} edits outside the faults were shed (503): over 20 %")
            for name, mark in (("node kill", getattr(self, "acked_at_kill", None)), ("PostgreSQL restart", getattr(self, "acked_at_pg", None))):
                if mark is not None and len(self.acked) <= mark:
                    self.fail(f"no edit was acknowledged after the {name}")

    def cleanup(self):
        for n in self.nodes:
            if n["proc"] and n["proc"].poll() is None:
                n["proc"].kill()
        if self.a.engine == "postgres" and not self.a.keep:
            try:
                self.psql(f"DROP DATABASE IF EXISTS {self.db} WITH (FORCE)")
            except SystemExit as e:
                print("cleanup:", e)
        if not self.a.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--engine", choices=["postgres", "sqlite"], default="postgres")
    p.add_argument("--postgres", default=os.environ.get("EDITLOG_TEST_POSTGRES"), help="server and role that may create databases")
    p.add_argument("--pg-restart", help="shell command that restarts the PostgreSQL server (a fault at 65 %% of the time)")
    p.add_argument("--pg-stop", help="shell command that stops the PostgreSQL server: with --pg-start, the outage run instead of the other faults")
    p.add_argument("--pg-start", help="shell command that starts it again")
    p.add_argument("--open-loop", action="store_true", help="field syncs arriving at --rate per second (no faults): latencies from the scheduled time, CPU per acknowledged edit from /proc")
    p.add_argument("--rate", type=float, default=16.7, help="syncs per second of --open-loop (16.7: 1,000 devices syncing once a minute)")
    p.add_argument("--sweep", help="with --open-loop: comma-separated rates, tried in order until a p99 goal fails (applyEdits 250 ms, query 50 ms, extractChanges 100 ms)")
    p.add_argument("--short", action="store_true", help="CI mode: 40 devices, 20 s")
    p.add_argument("--devices", type=int)
    p.add_argument("--seconds", type=float)
    p.add_argument("--nodes", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--no-faults", action="store_true")
    p.add_argument("--editlog", default=os.path.join(ROOT, ".build", "debug", "editlog"))
    p.add_argument("--json", help="append the figures as one JSON line to this file")
    p.add_argument("--keep", action="store_true", help="keep the scratch database and directory")
    a = p.parse_args()
    a.devices = a.devices or (40 if a.short else 200)
    a.seconds = a.seconds or (20 if a.short else 120)
    if a.engine == "sqlite":
        a.nodes = 1
    elif not a.postgres:
        raise SystemExit("--postgres URL (or EDITLOG_TEST_POSTGRES) is needed for --engine postgres")
    if bool(a.pg_stop) != bool(a.pg_start):
        raise SystemExit("--pg-stop and --pg-start go together")
    if not os.path.exists(a.editlog):
        raise SystemExit(f"no editlog binary at {a.editlog}: swift build first")
    random.seed(a.seed)
    # A SIGTERM (a timeout) still stops the nodes and drops the scratch database.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if a.open_loop:
        a.no_faults = True
        run = Run(a)
        try:
            run.setup()
            print(f"{a.engine}: open loop, {a.devices} devices, {a.nodes} node(s), {a.seconds:.0f} s per rate", flush=True)
            if a.sweep:
                goals = {"applyEdits": 250, "query": 50, "extractChanges": 100}
                best, figures = asyncio.run(run.sweep([float(r) for r in a.sweep.split(",")], a.seconds, goals))
                result = {"engine": a.engine, "nodes": a.nodes, "sweep": figures, "highestRateHeld": best}
            else:
                result = {"engine": a.engine, "nodes": a.nodes, **asyncio.run(run.open_loop(a.rate, a.seconds))}
            run.elapsed = a.seconds
            run.check()
            if not a.sweep:
                result.update(run.node_figures(result["acknowledgedEdits"]))
        finally:
            run.cleanup()
        print(json.dumps(result), flush=True)
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps(result) + "\n")
        print(f"{0 if run.failures else 1} passed, {len(run.failures)} failed")
        sys.exit(1 if run.failures else 0)
    run = Run(a)
    try:
        run.setup()
        print(f"{a.engine}: {a.devices} devices, {a.nodes} node(s), {a.seconds:.0f} s", flush=True)
        asyncio.run(run.load())
        run.check()
    finally:
        run.cleanup()
    fig = {
        "engine": a.engine, "nodes": a.nodes, "devices": a.devices, "seconds": round(run.elapsed, 1),
        "acknowledged": len(run.acked), "editsPerSecond": round(len(run.acked) / run.elapsed, 1), "unacknowledged": run.unacked,
        "applyEditsP50": pct(run.edit_ms, 50), "applyEditsP99": pct(run.edit_ms, 99),
        "queryP50": pct(run.query_ms, 50), "queryP99": pct(run.query_ms, 99), "queries": len(run.query_ms),
        "lagP50": pct(run.lag_ms, 50), "lagP99": pct(run.lag_ms, 99), "lagSamples": len(run.lag_ms),
        "events": getattr(run, "events", None), "errors": {k: v for k, v in run.errors.items() if k != "samples"},
        "faults": not a.no_faults and a.engine == "postgres", "pgRestart": bool(a.pg_restart), "pgOutage": bool(a.pg_stop),
        "sigtermSeconds": getattr(run, "term_seconds", None),
    }
    for k, v in fig.items():
        if isinstance(v, float):
            fig[k] = round(v, 1)
    print(json.dumps(fig), flush=True)
    if run.errors.get("samples"):
        print("error samples:", run.errors["samples"][:3])
    if a.json:
        with open(a.json, "a") as f:
            f.write(json.dumps(fig) + "\n")
    print(f"{0 if run.failures else 1} passed, {len(run.failures)} failed")
    sys.exit(1 if run.failures else 0)


if __name__ == "__main__":
    main()
