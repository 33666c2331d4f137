#!/usr/bin/env python3
"""Concurrency soak for EditLog (issue 3, "Concurrency").

Several writers record into the SAME log at once while a reader runs `history`, `show` and
`query` throughout; afterwards the log and everything the reader saw are checked.

    python3 tools/concurrency-soak.py --short          # 15 s (the CI mode)
    python3 tools/concurrency-soak.py                  # 60 s
    python3 tools/concurrency-soak.py --seconds 300 --writers 4 --seed 7 --editlog .build/release/editlog

Python 3.11, standard library only.  The script plan of every writer is seeded (--seed); which
writer wins which tree, and so which edits conflict, depends on real timing.

Setup: a fresh log (`editlog init` of the Trees of Portland fixtures) in a temporary directory and
a private copy of the binary (another `swift build` may replace it meanwhile).  A seeded POOL of
20 baseline trees is shared by all writers, so they collide.

Writers (threads, each running `editlog record LOG SCRIPT --json` again and again; own actor
`soak-wN`, device `soak-dev-N`, explicit unique `session` id, `actor`, `device` and `at` on every
line).  Every session stages values unique to it: `PlantedBy` = its session id (`soak-w2-00017`)
and `DBH` = 100 + writer*100/writers + counter*0.001 (inside the DBHRange domain 0..200).
  commit  edit + set DBH + set PlantedBy + finish             (~78 %)
  cancel  edit + set DBH + set PlantedBy + cancel             (~10 %): its values must never show
  open    edit + set DBH + set PlantedBy, no finish           (~12 %, at most one held per writer)
          (each writer's first script is an open and its second a cancel)
  close   a later script of the same writer: {"op":"finish"|"cancel","session":ID} (70/30) after
          holding the session 0.5..3 s.  While it is open, other writers' `edit` of that tree
          must fail with exit 67 and "open session"; the writer counts the conflict and retries
          the same kind of edit (a new session id) on another tree in its next script, as a
          user would.  Sessions still held when the time is up stay open.

Reader (one thread): cycles `history LOG G --json`, `show LOG G --json`, `query LOG --layer
Trees --json` over the pool trees, keeping every PlantedBy/DBH/Editor/EditDate it sees per tree
with the monotonic and wall-clock window of the call.

Checks (each one line of the report; any failure makes the exit code 1):
  * writers: every non-zero exit is the expected 67 "open session" conflict (others are printed);
  * conflicts are genuine: the session the message names is another writer's held (open-only)
    session on that tree, open during the failed call; every conflict is retried on another tree;
  * readers: every call exits 0 with valid JSON;
  * `editlog log --json`: event ids unique, positions 1..N gap-free, per stream the
    streamVersions are 1..k in position order;
  * every `record` that exited 0 has exactly its events (types, stream, session, staged values,
    positions firstPosition..lastPosition as it reported) and its ScriptRecorded event (sha256,
    name, lines); a failed `record` left nothing (its session id and sha256 appear nowhere);
    every event after the baseline belongs to exactly one successful record;
  * `editlog sessions --json`: each session committed / canceled / open as the writers did it;
  * the reader never saw half a session: each tree's PlantedBy, DBH, Editor and EditDate seen
    together are exactly the baseline or exactly one committed session's values (never a
    canceled, still-open or failed session's value, never a mix of two sessions);
  * the reader never saw a value before its session committed (call end >= the committing
    record's start and >= the SessionCommitted recordedTime), and never a stale one (a later
    commit on that tree whose record had returned before the call started);
  * history entries are the tree's committed sessions in order (a prefix of the final
    timeline), each at its SessionCommitted position with the staged old/new values;
  * each query is one snapshot (a single cut of the commit order across the pool trees);
  * the final state of every pool tree is its last committed session; `editlog verify` passes.

Prints a summary and, on its own last line, `N passed, F failed`.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import hashlib
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "Fixtures" / "trees-of-portland"

EXIT_CONFLICT = 67
TREES_LAYER = 0
POOL_SIZE = 20
P_CANCEL = 0.10
P_OPEN = 0.12
P_CLOSE_FINISH = 0.70
HOLD_RANGE = (0.5, 3.0)
CALL_TIMEOUT = 180.0          # the log's busy timeout is 60 s; anything near this is a hang
CLOCK_SLACK = 0.002           # recordedTime has millisecond resolution
WATCHED = ("PlantedBy", "DBH", "Editor", "EditDate")
OPEN_SESSION_RE = re.compile(r"open session (\S+)")


def default_editlog() -> str:
    return str(ROOT / ".build" / "debug" / "editlog")


def now_iso() -> str:
    t = dt.datetime.now(dt.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def parse_iso(s: str) -> float:
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def dbh_key(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return round(float(v), 3)


# ------------------------------------------------------------------------------------------
# Running editlog
# ------------------------------------------------------------------------------------------

@dataclass
class Call:
    args: list[str]
    rc: int = -1
    out: str = ""
    err: str = ""
    t0: float = 0.0   # monotonic, just before the process was started
    t1: float = 0.0   # monotonic, just after it exited
    w0: float = 0.0   # wall clock (time.time) at the same moments
    w1: float = 0.0


class Runner:
    def __init__(self, editlog: str):
        self.editlog = editlog

    def call(self, args: list[str], timeout: float = CALL_TIMEOUT) -> Call:
        c = Call(args)
        c.w0, c.t0 = time.time(), time.monotonic()
        try:
            p = subprocess.run([self.editlog] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, timeout=timeout)
            c.rc, c.out, c.err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            c.rc = -999
            c.out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            c.err = f"timed out after {timeout:.0f} s (killed)"
        c.t1, c.w1 = time.monotonic(), time.time()
        return c


# ------------------------------------------------------------------------------------------
# Writers
# ------------------------------------------------------------------------------------------

@dataclass
class Attempt:
    writer: int
    seq: int
    kind: str                  # commit | cancel | open | close-finish | close-cancel
    session: str
    tree: str
    planted: str | None
    dbh: float | None
    script: str
    sha256: str = ""
    lines: int = 0
    retry_of: "Attempt | None" = None
    call: Call | None = None
    result: dict | None = None
    outcome: str = ""          # ok | conflict | error

    @property
    def actor(self) -> str:
        return f"soak-w{self.writer}"


class Writer:
    def __init__(self, soak: "Soak", w: int):
        self.soak = soak
        self.w = w
        self.rng = random.Random(f"concurrency-soak:{soak.a.seed}:writer:{w}")
        self.actor = f"soak-w{w}"
        self.device = f"soak-dev-{w}"
        self.seq = 0
        self.held: Attempt | None = None
        self.held_until = 0.0
        self.retry: tuple[str, set[str], Attempt] | None = None   # (kind, trees to avoid, the conflicted attempt)
        self.attempts: list[Attempt] = []
        self.width = 100.0 / soak.a.writers

    def dbh(self, seq: int) -> float:
        if (seq + 1) * 0.001 >= self.width:
            raise RuntimeError(f"writer {self.w} ran out of unique DBH values (seq {seq})")
        return round(100.0 + self.w * self.width + seq * 0.001, 3)

    def choose_tree(self, avoid: set[str]) -> str:
        own = {self.held.tree} if self.held else set()
        choices = [g for g in self.soak.pool if g not in avoid and g not in own]
        if not choices:
            choices = [g for g in self.soak.pool if g not in own]
        return self.rng.choice(choices)

    def plan(self) -> Attempt:
        self.seq += 1
        seq = self.seq
        name = f"w{self.w}-{seq:05d}.ndjson"
        if self.held is not None and time.monotonic() >= self.held_until:
            h = self.held
            kind = "close-finish" if self.rng.random() < P_CLOSE_FINISH else "close-cancel"
            return Attempt(self.w, seq, kind, h.session, h.tree, None, None, name)
        retry_of = None
        if self.retry is not None:
            kind, avoid, retry_of = self.retry
            self.retry = None
        elif seq <= 2:
            # Every writer starts by holding a session open, then cancels one, so even a short run
            # on a slow machine collides and exercises both paths.
            kind, avoid = ("open" if seq == 1 else "cancel"), set()
        else:
            r = self.rng.random()
            kind = "cancel" if r < P_CANCEL else ("open" if r < P_CANCEL + P_OPEN and self.held is None else "commit")
            avoid = set()
        if kind == "open" and self.held is not None:
            kind = "commit"
        sid = f"soak-w{self.w}-{seq:05d}"
        a = Attempt(self.w, seq, kind, sid, self.choose_tree(avoid), sid, self.dbh(seq), name)
        a.retry_of = retry_of
        return a

    def script(self, a: Attempt) -> bytes:
        def line(op: str, **kw) -> str:
            d = {"op": op, "actor": self.actor, "device": self.device, "at": now_iso(), "session": a.session}
            d.update(kw)
            return json.dumps(d, separators=(",", ":"))
        if a.kind.startswith("close-"):
            lines = [line("finish" if a.kind == "close-finish" else "cancel")]
        else:
            lines = [line("edit", layer="Trees", globalId=a.tree),
                     line("set", field="DBH", value=a.dbh),
                     line("set", field="PlantedBy", value=a.planted)]
            if a.kind == "commit":
                lines.append(line("finish"))
            elif a.kind == "cancel":
                lines.append(line("cancel"))
        return ("\n".join(lines) + "\n").encode()

    def run(self):
        s = self.soak
        try:
            while not s.stop.is_set() and time.monotonic() < s.deadline:
                a = self.plan()
                data = self.script(a)
                path = os.path.join(s.scripts_dir, a.script)
                with open(path, "wb") as f:
                    f.write(data)
                a.sha256 = hashlib.sha256(data).hexdigest()
                a.lines = data.count(b"\n")
                a.call = s.runner.call(["record", s.db, path, "--json"])
                self.attempts.append(a)
                self.handle(a)
        except Exception as e:  # a bug in the tool itself: report it as a failure, never hang
            s.tool_errors.append(f"writer {self.w}: {type(e).__name__}: {e}")

    def handle(self, a: Attempt):
        c = a.call
        if c.rc == 0:
            try:
                a.result = json.loads(c.out)
            except json.JSONDecodeError:
                a.result = None
            a.outcome = "ok"
            if a.kind == "open":
                self.held = a
                self.held_until = time.monotonic() + self.rng.uniform(*HOLD_RANGE)
            elif a.kind.startswith("close-"):
                self.held = None
            return
        if c.rc == EXIT_CONFLICT and "open session" in c.err.lower() and not a.kind.startswith("close-"):
            a.outcome = "conflict"
            avoid = {a.tree}
            if a.retry_of is not None:
                avoid |= self.retry_avoid(a.retry_of)
            if len(avoid) >= len(self.soak.pool) - 1:
                avoid = {a.tree}
            self.retry = (a.kind, avoid, a)
            return
        a.outcome = "error"
        self.soak.report_error(f"writer {self.w} {a.script} ({a.kind}, tree {a.tree}): exit {c.rc}: {c.err.strip()[:600]}")
        if a.kind.startswith("close-"):
            self.held = None    # do not try to close it again; the checks will name it

    def retry_avoid(self, a: Attempt) -> set[str]:
        out = set()
        while a is not None:
            out.add(a.tree)
            a = a.retry_of
        return out


# ------------------------------------------------------------------------------------------
# Reader
# ------------------------------------------------------------------------------------------

@dataclass
class Observation:
    kind: str                          # history | show | query
    call: Call
    states: dict = field(default_factory=dict)    # tree -> (PlantedBy, DBH, Editor, EditDate)
    history: list = field(default_factory=list)   # for history: entries of PlantedBy/DBH
    tree: str | None = None


class Reader:
    def __init__(self, soak: "Soak", r: int):
        self.soak = soak
        self.r = r
        self.rng = random.Random(f"concurrency-soak:{soak.a.seed}:reader:{r}")
        self.obs: list[Observation] = []
        self.counts = collections.Counter()

    def run(self):
        s = self.soak
        kinds = ("history", "show", "query")
        i = self.r
        try:
            while not s.stop.is_set() and not s.writers_done.is_set():
                kind = kinds[i % 3]
                i += 1
                g = self.rng.choice(s.pool)
                if kind == "query":
                    c = s.runner.call(["query", s.db, "--layer", "Trees", "--json"])
                else:
                    c = s.runner.call([kind, s.db, g, "--json"])
                self.counts[kind] += 1
                o = Observation(kind, c, tree=None if kind == "query" else g)
                if c.rc != 0:
                    s.report_error(f"reader {kind} {'' if kind == 'query' else g}: exit {c.rc}: {c.err.strip()[:600]}")
                    self.counts["failed"] += 1
                    continue
                try:
                    doc = json.loads(c.out)
                    self.parse(o, doc)
                except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as e:
                    s.report_error(f"reader {kind}: unreadable output ({type(e).__name__}: {e}): {c.out[:300]!r}")
                    self.counts["failed"] += 1
                    continue
                self.obs.append(o)
        except Exception as e:
            s.tool_errors.append(f"reader {self.r}: {type(e).__name__}: {e}")

    def parse(self, o: Observation, doc: dict):
        pool = self.soak.pool_set

        def state(attrs: dict):
            return tuple(attrs.get(k) for k in WATCHED)
        if o.kind == "show":
            if doc["globalId"] != o.tree:
                raise KeyError(f"show returned {doc['globalId']} for {o.tree}")
            o.states[o.tree] = state(doc["attributes"])
        elif o.kind == "query":
            for f in doc["features"]:
                g = f["attributes"].get("GlobalID")
                if g in pool:
                    o.states[g] = state(f["attributes"])
        else:
            if doc["globalId"] != o.tree:
                raise KeyError(f"history returned {doc['globalId']} for {o.tree}")
            for e in doc["entries"]:
                if e["field"] in ("PlantedBy", "DBH"):
                    o.history.append(e)


# ------------------------------------------------------------------------------------------
# The soak
# ------------------------------------------------------------------------------------------

@dataclass
class Commit:
    index: int
    position: int
    session: str | None
    planted: object
    dbh: object
    editor: object
    edit_date: object
    recorded: float          # wall clock of the SessionCommitted recordedTime (-inf for the baseline)
    lower: float             # monotonic: the committing record started (-inf for the baseline)
    upper: float             # monotonic: the committing record returned (-inf for the baseline)

    def state(self):
        return (self.planted, self.dbh, self.editor, self.edit_date)

    def matches(self, st) -> bool:
        p, d, e, t = st
        return p == self.planted and dbh_key(d) == dbh_key(self.dbh) and e == self.editor and t == self.edit_date


class Checks:
    def __init__(self):
        self.results: list[tuple[str, list[str], str]] = []

    def add(self, name: str, violations: list[str], detail: str = ""):
        self.results.append((name, violations, detail))

    @property
    def failed(self) -> int:
        return sum(1 for _, v, _ in self.results if v)

    @property
    def passed(self) -> int:
        return sum(1 for _, v, _ in self.results if not v)


class Soak:
    def __init__(self, a):
        self.a = a
        self.stop = threading.Event()
        self.writers_done = threading.Event()
        self.errors: list[str] = []
        self.tool_errors: list[str] = []
        self.lock = threading.Lock()

    def report_error(self, msg: str):
        with self.lock:
            self.errors.append(msg)
        if self.a.verbose:
            print(f"concurrency-soak: {msg}", file=sys.stderr, flush=True)

    # -- setup ------------------------------------------------------------------------------

    def setup(self):
        a = self.a
        self.work = a.workdir or tempfile.mkdtemp(prefix="editlog-soak-")
        os.makedirs(self.work, exist_ok=True)
        self.scripts_dir = os.path.join(self.work, "scripts")
        os.makedirs(self.scripts_dir, exist_ok=True)
        binary = os.path.join(self.work, "editlog")
        shutil.copy2(a.editlog, binary)
        with open(binary, "rb") as f:
            self.bin_sha = hashlib.sha256(f.read()).hexdigest()[:16]
        self.runner = Runner(binary)
        self.db = os.path.join(self.work, "soak.editlog")
        fx = Path(a.fixtures)
        data = sorted(str(p) for p in (fx / "baseline").glob("*.json"))
        args = ["init", self.db, "--service", str(fx / "service.json"), "--webmap", str(fx / "webmap.json"),
                "--rules", str(fx / "rules.json")]
        for d in data:
            args += ["--data", d]
        c = self.runner.call(args + ["--json"])
        if c.rc != 0:
            raise SystemExit(f"concurrency-soak: init failed (exit {c.rc}): {c.err.strip()}")
        c = self.runner.call(["log", self.db, "--json"])
        if c.rc != 0:
            raise SystemExit(f"concurrency-soak: log after init failed (exit {c.rc}): {c.err.strip()}")
        self.init_events = [json.loads(l) for l in c.out.splitlines() if l.strip()]
        trees = json.loads((fx / "baseline" / "Trees.json").read_text())["features"]
        self.baseline = {f["attributes"]["GlobalID"]: f["attributes"] for f in trees}
        rng = random.Random(f"concurrency-soak:{a.seed}:pool")
        self.pool = rng.sample(sorted(self.baseline), min(POOL_SIZE, len(self.baseline)))
        self.pool_set = set(self.pool)

    # -- run --------------------------------------------------------------------------------

    def run(self):
        a = self.a
        self.writers = [Writer(self, w) for w in range(a.writers)]
        self.readers = [Reader(self, r) for r in range(a.readers)]
        self.t_start = time.monotonic()
        self.deadline = self.t_start + a.seconds
        wt = [threading.Thread(target=w.run, name=f"writer-{w.w}", daemon=True) for w in self.writers]
        rt = [threading.Thread(target=r.run, name=f"reader-{r.r}", daemon=True) for r in self.readers]
        for t in rt + wt:
            t.start()
        last = time.monotonic()
        while any(t.is_alive() for t in wt):
            for t in wt:
                t.join(timeout=0.5)
            if a.verbose and time.monotonic() - last >= 5:
                last = time.monotonic()
                n = sum(len(w.attempts) for w in self.writers)
                print(f"concurrency-soak: {last - self.t_start:5.1f} s, {n} records, "
                      f"{sum(len(r.obs) for r in self.readers)} reads", file=sys.stderr, flush=True)
        self.writers_done.set()
        for t in rt:
            t.join()
        self.t_end = time.monotonic()

    # -- analysis ---------------------------------------------------------------------------

    def analyse(self) -> Checks:
        ck = Checks()
        attempts = [x for w in self.writers for x in w.attempts]
        ok = [x for x in attempts if x.outcome == "ok"]
        conflicts = [x for x in attempts if x.outcome == "conflict"]
        errored = [x for x in attempts if x.outcome == "error"]
        self.attempts_all, self.ok, self.conflicts, self.errored = attempts, ok, conflicts, errored

        # ---- final state of the log
        c = self.runner.call(["log", self.db, "--json"])
        events, bad_lines = [], []
        if c.rc != 0:
            bad_lines.append(f"`editlog log --json` exited {c.rc}: {c.err.strip()[:400]}")
        for n, l in enumerate(c.out.splitlines(), 1):
            if l.strip():
                try:
                    events.append(json.loads(l))
                except json.JSONDecodeError as e:
                    bad_lines.append(f"log line {n} is not JSON ({e})")
        self.events = events
        ck.add("`editlog log --json` readable", bad_lines)

        c = self.runner.call(["sessions", self.db, "--json"])
        sessions = {}
        sess_err = []
        if c.rc != 0:
            sess_err.append(f"`editlog sessions --json` exited {c.rc}: {c.err.strip()[:400]}")
        else:
            try:
                sessions = {s["id"]: s for s in json.loads(c.out)}
            except (json.JSONDecodeError, KeyError, TypeError) as e:
                sess_err.append(f"`editlog sessions --json` unreadable: {e}")

        # ---- writers' exit codes
        v = [f"{x.script} ({x.kind}, writer {x.writer}, tree {x.tree}): exit {x.call.rc}: {x.call.err.strip()[:600]}"
             for x in errored]
        v += [f"tool error: {e}" for e in self.tool_errors]
        ck.add("writers: no non-zero exit other than 67 \"open session\"", v,
               f"{len(ok)} recorded, {len(conflicts)} conflicts, {len(errored)} other failures")

        # ---- readers' exit codes
        rerr = [e for e in self.errors if e.startswith("reader")]
        ncalls = sum(sum(v for k, v in r.counts.items() if k != "failed") for r in self.readers)
        ck.add("readers: every history/show/query call exits 0 with JSON", rerr, f"{ncalls} calls")

        # ---- progress (the soak actually exercised what it claims)
        prog = []
        for w in self.writers:
            kinds = collections.Counter(x.kind for x in w.attempts if x.outcome == "ok")
            if kinds["commit"] == 0:
                prog.append(f"writer {w.w} recorded no committed session")
        rc = collections.Counter()
        for r in self.readers:
            rc.update(r.counts)
        for k in ("history", "show", "query"):
            if rc[k] == 0:
                prog.append(f"the reader made no {k} call")
        if not conflicts:
            prog.append("no writer ever hit an open session (no conflict to retry); run longer")
        if not any(x.kind == "cancel" for x in ok):
            prog.append("no canceled session recorded")
        ck.add("progress: every writer committed, conflicts happened, reader ran all three commands", prog)

        # ---- conflicts: genuine, and retried on another tree
        by_session = {}
        for x in attempts:
            if not x.kind.startswith("close-"):
                by_session.setdefault(x.session, x)
        closes = {x.session: x for x in ok if x.kind.startswith("close-")}
        gv = []
        for x in conflicts:
            m = OPEN_SESSION_RE.search(x.call.err)
            if not m:
                gv.append(f"{x.script}: conflict message does not name the session: {x.call.err.strip()[:300]}")
                continue
            sid = m.group(1).rstrip(";,.)")
            holder = by_session.get(sid)
            if holder is None:
                gv.append(f"{x.script}: conflict names unknown session {sid}: {x.call.err.strip()[:300]}")
                continue
            if holder.kind != "open" or holder.outcome != "ok":
                gv.append(f"{x.script}: conflict names session {sid}, which is a {holder.kind} session ({holder.outcome}), "
                          f"never visibly open: {x.call.err.strip()[:300]}")
                continue
            if holder.tree != x.tree:
                gv.append(f"{x.script}: conflict on {x.tree} names session {sid} of tree {holder.tree}")
            if holder.writer == x.writer:
                gv.append(f"{x.script}: conflict with the writer's own session {sid}")
            if holder.call.t0 > x.call.t1:
                gv.append(f"{x.script}: conflict names session {sid}, which was opened only after the failed call")
            cl = closes.get(sid)
            if cl is not None and cl.call.t1 < x.call.t0:
                gv.append(f"{x.script}: conflict names session {sid}, which had been closed before the failed call started")
        ck.add("conflicts: exit 67 naming another writer's open session on that tree, open at the time", gv,
               f"{len(conflicts)} conflicts")

        retried = [x for x in attempts if x.retry_of is not None]
        retried_of = {id(x.retry_of): x for x in retried}
        rv = []
        n_unretried = 0
        for x in conflicts:
            r = retried_of.get(id(x))
            if r is None:
                w = self.writers[x.writer]
                i = next(k for k, a in enumerate(w.attempts) if a is x)
                # Time was up before the retry: nothing followed the conflict but the closing of a held session,
                # which `plan` puts before a pending retry once its hold is over.
                if all(a.kind.startswith("close-") for a in w.attempts[i + 1:]):
                    n_unretried += 1
                else:
                    rv.append(f"{x.script}: conflict not retried")
                continue
            if r.tree == x.tree:
                rv.append(f"{x.script}: retried on the same tree {x.tree} ({r.script})")
            if r.kind != x.kind:
                rv.append(f"{x.script}: retry {r.script} is a {r.kind}, not a {x.kind}")
        self.retried = retried
        self.retry_ok = [x for x in retried if x.outcome == "ok"]
        ck.add("conflicts retried on another tree", rv,
               f"{len(retried)} retried, {len(self.retry_ok)} succeeded, {n_unretried} left when time was up")

        # ---- event ids unique, positions gap-free, stream versions 1..k
        ids = collections.Counter(e.get("id") for e in events)
        dup = [f"event id {i} appears {n} times" for i, n in ids.items() if n > 1]
        ck.add("event ids unique", dup[:20] + ([f"... {len(dup) - 20} more"] if len(dup) > 20 else []),
               f"{len(events)} events")
        pv = []
        for i, e in enumerate(events, 1):
            if e.get("position") != i:
                pv.append(f"line {i} of the log has position {e.get('position')}")
                if len(pv) >= 20:
                    break
        ck.add("positions 1..N gap-free", pv, f"N = {len(events)}")
        sv, seen = [], {}
        for e in events:
            s = e.get("stream")
            want = seen.get(s, 0) + 1
            if e.get("streamVersion") != want:
                sv.append(f"position {e.get('position')}: stream {s} version {e.get('streamVersion')}, expected {want}")
            seen[s] = e.get("streamVersion") if isinstance(e.get("streamVersion"), int) else want
        ck.add("stream versions strictly increasing 1..k per stream", sv[:20], f"{len(seen)} streams")

        # ---- every successful record present exactly once, failed ones absent, nothing invented
        by_pos = {e.get("position"): e for e in events}
        ev = []
        owner = {}
        n_init = len(self.init_events)
        for e in self.init_events:
            f = by_pos.get(e["position"])
            if f is None or f.get("id") != e.get("id") or f.get("hash") != e.get("hash"):
                ev.append(f"baseline event at position {e['position']} changed or missing")
            owner[e["position"]] = "init"
        expected_types = {
            "commit": ["SessionStarted", "AttributeStaged", "AttributeStaged", "SessionCommitted"],
            "cancel": ["SessionStarted", "AttributeStaged", "AttributeStaged", "SessionCanceled"],
            "open": ["SessionStarted", "AttributeStaged", "AttributeStaged"],
            "close-finish": ["SessionCommitted"],
            "close-cancel": ["SessionCanceled"],
        }
        script_events = collections.Counter()
        for e in events:
            if e.get("type") == "ScriptRecorded":
                script_events[(e.get("payload") or {}).get("sha256")] += 1
        self.derived = 0
        for x in ok:
            r = x.result or {}
            fp, lp, n = r.get("firstPosition"), r.get("lastPosition"), r.get("events")
            tag = f"{x.script} ({x.kind}, {x.session})"
            if not isinstance(fp, int) or not isinstance(lp, int) or lp - fp + 1 != n:
                ev.append(f"{tag}: record --json output inconsistent: {x.call.out.strip()[:300]}")
                continue
            rng_ev = [by_pos.get(p) for p in range(fp, lp + 1)]
            if any(e is None for e in rng_ev):
                ev.append(f"{tag}: events {fp}..{lp} it reported are not all in the log")
                continue
            for p in range(fp, lp + 1):
                if p in owner:
                    ev.append(f"{tag}: position {p} also belongs to {owner[p]}")
                owner[p] = x.script
            body, last = rng_ev[:-1], rng_ev[-1]
            types = [e["type"] for e in body if e["type"] != "FeatureDerived"]
            self.derived += len(body) - len(types)
            if types != expected_types[x.kind]:
                ev.append(f"{tag}: event types {[e['type'] for e in rng_ev]}, expected {expected_types[x.kind]} + ScriptRecorded")
            stream = f"{TREES_LAYER}:{x.tree}"
            for e in body:
                if e["type"] == "FeatureDerived":
                    if not str(e.get("cause", "")).startswith("rule:"):
                        ev.append(f"{tag}: FeatureDerived at {e['position']} with cause {e.get('cause')}")
                    continue
                if e.get("session") != x.session or e.get("stream") != stream or e.get("actor") != x.actor:
                    ev.append(f"{tag}: event {e['position']} has session {e.get('session')}, stream {e.get('stream')}, "
                              f"actor {e.get('actor')}")
                if e["type"] == "AttributeStaged":
                    pl = e.get("payload") or {}
                    want = {"DBH": x.dbh, "PlantedBy": x.planted}.get(pl.get("field"), object())
                    got = pl.get("value")
                    if (dbh_key(got) != dbh_key(want)) if pl.get("field") == "DBH" else (got != want):
                        ev.append(f"{tag}: staged {pl.get('field')} = {got!r}, expected {want!r}")
            pl = last.get("payload") or {}
            if last.get("type") != "ScriptRecorded" or last.get("stream") != "$scripts":
                ev.append(f"{tag}: last event {last.get('position')} is {last.get('type')}, not ScriptRecorded")
            elif pl.get("sha256") != x.sha256 or pl.get("name") != x.script or pl.get("lines") != x.lines:
                ev.append(f"{tag}: ScriptRecorded payload {pl}, expected sha256 {x.sha256}, name {x.script}, lines {x.lines}")
            if script_events[x.sha256] != 1:
                ev.append(f"{tag}: {script_events[x.sha256]} ScriptRecorded events for its sha256")
            want_c = 1 if x.kind in ("commit", "close-finish") else 0
            want_x = 1 if x.kind in ("cancel", "close-cancel") else 0
            if r.get("committed") != want_c or r.get("canceled") != want_x or r.get("alreadyRecordedAt") is not None:
                ev.append(f"{tag}: record reported {r}")
        for e in events:
            if e.get("position") not in owner:
                ev.append(f"position {e.get('position')} ({e.get('type')}, session {e.get('session')}) "
                          f"belongs to no successful record")
        sess_count = collections.Counter((e.get("session"), e.get("type")) for e in events if e.get("session"))
        for x in ok:
            if x.kind in ("commit", "cancel", "open") and sess_count[(x.session, "SessionStarted")] != 1:
                ev.append(f"{x.session}: {sess_count[(x.session, 'SessionStarted')]} SessionStarted events")
        ck.add("every successful record's events (and its ScriptRecorded) present exactly once, nothing else",
               ev[:30] + ([f"... {len(ev) - 30} more"] if len(ev) > 30 else []),
               f"{len(ok)} records, {len(events) - n_init} events after the {n_init} of init")

        fv = []
        logged_sessions = {e.get("session") for e in events if e.get("session")}
        for x in attempts:
            if x.outcome == "ok":
                continue
            if not x.kind.startswith("close-") and x.session in logged_sessions:
                fv.append(f"{x.script} exited {x.call.rc} but its session {x.session} is in the log")
            if script_events[x.sha256]:
                fv.append(f"{x.script} exited {x.call.rc} but its ScriptRecorded event is in the log")
        ck.add("a failed record leaves nothing behind", fv, f"{len(attempts) - len(ok)} failed records")

        # ---- session statuses
        expect_status = {}
        for x in ok:
            if x.kind == "commit":
                expect_status[x.session] = "committed"
            elif x.kind == "cancel":
                expect_status[x.session] = "canceled"
            elif x.kind == "open":
                expect_status.setdefault(x.session, "open")
        for x in ok:
            if x.kind == "close-finish":
                expect_status[x.session] = "committed"
            elif x.kind == "close-cancel":
                expect_status[x.session] = "canceled"
        self.expect_status = expect_status
        for sid, want in sorted(expect_status.items()):
            got = sessions.get(sid, {}).get("status")
            if got != want:
                sess_err.append(f"session {sid}: status {got}, expected {want}")
        for sid in sessions:
            if sid not in expect_status:
                sess_err.append(f"session {sid} ({sessions[sid].get('status')}) was never recorded successfully")
        ck.add("`editlog sessions`: every session committed / canceled / open as recorded", sess_err[:30],
               ", ".join(f"{k} {v}" for k, v in sorted(collections.Counter(expect_status.values()).items())))

        # ---- per-tree commit timelines
        committer = {}
        for x in ok:
            if x.kind in ("commit", "close-finish"):
                committer[x.session] = x
        plan = {x.session: x for x in attempts if not x.kind.startswith("close-")}
        timeline = {g: [] for g in self.pool}
        commits_ev = [e for e in events if e.get("type") == "SessionCommitted"]
        for g in self.pool:
            b = self.baseline[g]
            bpos = next((e["position"] for e in self.init_events if e.get("stream") == f"{TREES_LAYER}:{g}"), 0)
            timeline[g].append(Commit(0, bpos, None, b.get("PlantedBy"), b.get("DBH"), b.get("Editor"), b.get("EditDate"),
                                      -math.inf, -math.inf, -math.inf))
        tv = []
        for e in commits_ev:
            sid = e.get("session")
            x = committer.get(sid)
            p = plan.get(sid)
            if x is None or p is None:
                tv.append(f"SessionCommitted at {e.get('position')} for session {sid} no successful record committed")
                continue
            tl = timeline[p.tree]
            tl.append(Commit(len(tl), e["position"], sid, p.planted, p.dbh, p.actor,
                             int(round(parse_iso(e["recordedTime"]) * 1000)), parse_iso(e["recordedTime"]),
                             x.call.t0, x.call.t1))
        self.timeline = timeline
        planted_of = {x.planted: x for x in attempts if x.planted is not None}
        dbh_of = {dbh_key(x.dbh): x for x in attempts if x.dbh is not None}

        def describe(g, st) -> str:
            """Why a seen state matches no commit: which sessions its values came from."""
            parts = []
            p, d, e, t = st
            for label, val, src in (("PlantedBy", p, planted_of.get(p)), ("DBH", d, dbh_of.get(dbh_key(d)))):
                if src is None:
                    base = self.baseline[g].get(label)
                    parts.append(f"{label}={val!r} ({'baseline' if (dbh_key(val) == dbh_key(base) if label == 'DBH' else val == base) else 'unknown'})")
                else:
                    status = expect_status.get(src.session, "never recorded (the record failed)")
                    where = "" if src.tree == g else f" of tree {src.tree}"
                    parts.append(f"{label}={val!r} (session {src.session}{where}, {status})")
            parts.append(f"Editor={e!r}, EditDate={t!r}")
            return "; ".join(parts)

        def locate(g, st) -> Commit | None:
            for cm in timeline[g]:
                if cm.matches(st):
                    return cm
            return None

        half, early, stale = [], [], []
        n_values = 0

        def check_state(o: Observation, g: str, st) -> Commit | None:
            cm = locate(g, st)
            where = f"{o.kind} at +{o.call.t0 - self.t_start:.3f}..{o.call.t1 - self.t_start:.3f} s, tree {g}"
            if cm is None:
                half.append(f"{where}: {describe(g, st)}")
                return None
            if cm.index > 0:
                if o.call.t1 < cm.lower or o.call.w1 + CLOCK_SLACK < cm.recorded:
                    early.append(f"{where}: saw session {cm.session} (position {cm.position}) before it committed "
                                 f"(call ended +{o.call.t1 - self.t_start:.3f} s, record started "
                                 f"+{cm.lower - self.t_start:.3f} s, recordedTime {cm.recorded - o.call.w1:+.3f} s after the call)")
            tl = timeline[g]
            if cm.index + 1 < len(tl) and tl[cm.index + 1].upper < o.call.t0:
                nxt = tl[cm.index + 1]
                stale.append(f"{where}: saw {cm.session or 'the baseline'} but session {nxt.session} (position "
                             f"{nxt.position}) had been recorded {o.call.t0 - nxt.upper:.3f} s before the call started")
            return cm

        hist_v, snap_v = [], []
        n_obs = 0
        for r in self.readers:
            for o in r.obs:
                n_obs += 1
                if o.kind in ("show", "query"):
                    cut = {}
                    for g, st in o.states.items():
                        n_values += 1
                        cm = check_state(o, g, st)
                        if cm is not None:
                            cut[g] = cm
                    if o.kind == "query":
                        missing = self.pool_set - set(o.states)
                        if missing:
                            snap_v.append(f"query at +{o.call.t0 - self.t_start:.3f} s lacks pool trees {sorted(missing)[:3]}")
                        if cut:
                            lo = max(cm.position for cm in cut.values())
                            hi_g = min(cut, key=lambda g: (timeline[g][cut[g].index + 1].position
                                                           if cut[g].index + 1 < len(timeline[g]) else math.inf))
                            nxt = timeline[hi_g][cut[hi_g].index + 1] if cut[hi_g].index + 1 < len(timeline[hi_g]) else None
                            if nxt is not None and nxt.position < lo:
                                lo_g = max(cut, key=lambda g: cut[g].position)
                                snap_v.append(f"query at +{o.call.t0 - self.t_start:.3f} s is no snapshot: it shows commit "
                                              f"{lo} on {lo_g} but not commit {nxt.position} on {hi_g}")
                else:
                    g = o.tree
                    tl = timeline[g]
                    soak_entries = [e for e in o.history if e.get("cause") != "baseline"]
                    n_values += len(o.history)
                    seq_sessions = []
                    for e in soak_entries:
                        sid = e.get("session")
                        if not seq_sessions or seq_sessions[-1] != sid:
                            seq_sessions.append(sid)
                    committed_seq = [cm.session for cm in tl[1:]]
                    where = f"history at +{o.call.t0 - self.t_start:.3f}..{o.call.t1 - self.t_start:.3f} s, tree {g}"
                    if seq_sessions != committed_seq[:len(seq_sessions)]:
                        bad = [s for s in seq_sessions if s not in committed_seq]
                        if bad:
                            for s in bad:
                                src = plan.get(s)
                                half.append(f"{where}: entry of session {s} "
                                            f"({expect_status.get(s, 'never recorded') if src else 'unknown'})")
                        else:
                            hist_v.append(f"{where}: sessions {seq_sessions} are not a prefix of the committed order")
                        continue
                    by_sid = {cm.session: cm for cm in tl[1:]}
                    for e in soak_entries:
                        cm = by_sid.get(e.get("session"))
                        if cm is None:
                            continue
                        prev = tl[cm.index - 1]
                        f = e["field"]
                        want_new = cm.planted if f == "PlantedBy" else cm.dbh
                        want_old = prev.planted if f == "PlantedBy" else prev.dbh
                        eq = (lambda u, v: dbh_key(u) == dbh_key(v)) if f == "DBH" else (lambda u, v: u == v)
                        if e.get("position") != cm.position or not eq(e.get("new"), want_new) or not eq(e.get("old"), want_old):
                            hist_v.append(f"{where}: entry {f} {e.get('old')!r} -> {e.get('new')!r} at {e.get('position')} "
                                          f"(session {cm.session}); expected {want_old!r} -> {want_new!r} at {cm.position}")
                    if len(soak_entries) != 2 * len(seq_sessions):
                        hist_v.append(f"{where}: {len(soak_entries)} PlantedBy/DBH entries for {len(seq_sessions)} sessions")
                    last = tl[len(seq_sessions)]
                    # Reuse the visibility checks with the last session history showed.
                    fake = Observation("history", o.call)
                    check_state(fake, g, last.state())
        self.n_values, self.n_obs = n_values, n_obs

        def cap(v):
            return v[:30] + ([f"... {len(v) - 30} more"] if len(v) > 30 else [])
        ck.add("readers never saw half a session (canceled, open, failed or mixed values)", cap(half),
               f"{n_values} values in {n_obs} calls")
        ck.add("readers never saw a value before its session committed", cap(early))
        ck.add("readers never saw a stale value (a commit whose record had returned is visible)", cap(stale))
        ck.add("history = the tree's committed sessions in order, at their SessionCommitted positions", cap(hist_v + tv))
        ck.add("each query is one snapshot of the commit order", cap(snap_v))

        # ---- final state and verify
        fs = []
        for g in self.pool:
            c = self.runner.call(["show", self.db, g, "--json"])
            if c.rc != 0:
                fs.append(f"show {g} exited {c.rc}: {c.err.strip()[:300]}")
                continue
            attrs = json.loads(c.out)["attributes"]
            st = tuple(attrs.get(k) for k in WATCHED)
            if not timeline[g][-1].matches(st):
                fs.append(f"{g}: final state {describe(g, st)}; expected session {timeline[g][-1].session}")
        ck.add("final state of every pool tree = its last committed session", fs)

        c = self.runner.call(["verify", self.db, "--json"])
        vv = []
        try:
            rep = json.loads(c.out) if c.out.strip() else {}
        except json.JSONDecodeError:
            rep = {}
        if c.rc != 0 or not rep.get("ok"):
            vv.append(f"verify exited {c.rc}: firstBadPosition={rep.get('firstBadPosition')} problems={rep.get('problems')} "
                      f"{c.err.strip()[:400]}")
        ck.add("`editlog verify` passes", vv, f"head {str(rep.get('headHash'))[:16]}…" if rep.get("headHash") else "")
        return ck

    # -- report -----------------------------------------------------------------------------

    def report(self, ck: Checks, elapsed: float):
        a = self.a
        print(f"concurrency-soak: seed {a.seed}, {a.writers} writers, {a.readers} reader(s), {a.seconds:g} s "
              f"(writers ran {self.t_end - self.t_start:.1f} s), pool {len(self.pool)} trees")
        print(f"  binary {a.editlog} (sha256 {self.bin_sha}…), work dir {self.work}")
        for w in self.writers:
            k = collections.Counter(x.kind for x in w.attempts if x.outcome == "ok")
            nconf = sum(1 for x in w.attempts if x.outcome == "conflict")
            nerr = sum(1 for x in w.attempts if x.outcome == "error")
            print(f"  writer {w.w}: {sum(k.values())} scripts recorded (commit {k['commit']}, cancel {k['cancel']}, "
                  f"open {k['open']}, close {k['close-finish']} finish / {k['close-cancel']} cancel), "
                  f"{nconf} conflicts, {nerr} other failures")
        durs = sorted(x.call.t1 - x.call.t0 for x in self.attempts_all)
        if durs:
            print(f"  record calls: {len(durs)} in total, {len(durs) / max(self.t_end - self.t_start, 1e-9):.1f}/s, "
                  f"median {durs[len(durs) // 2] * 1000:.0f} ms, max {durs[-1] * 1000:.0f} ms")
        st = collections.Counter(self.expect_status.values())
        print(f"  events: {len(self.events)} ({len(self.init_events)} from init, {len(self.events) - len(self.init_events)} "
              f"recorded; {self.derived} rule-derived); sessions committed {st['committed']}, canceled {st['canceled']}, "
              f"left open {st['open']}")
        print(f"  conflicts: {len(self.conflicts)} seen (exit 67 \"open session\"), {len(self.retried)} retried on "
              f"another tree, {len(self.retry_ok)} of those recorded")
        rc = collections.Counter()
        for r in self.readers:
            rc.update(r.counts)
        print(f"  reader calls: {rc['history'] + rc['show'] + rc['query']} (history {rc['history']}, show {rc['show']}, "
              f"query {rc['query']}; failed {rc['failed']}), {self.n_values} values checked")
        nviol = sum(len(v) for _, v, _ in ck.results)
        print(f"  violations: {nviol}")
        for name, v, detail in ck.results:
            print(f"  [{'FAIL' if v else 'ok'}] {name}{f' ({detail})' if detail else ''}")
            for line in v:
                print(f"         {line}")
        print(f"  total {elapsed:.1f} s")
        print(f"{ck.passed} passed, {ck.failed} failed")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Concurrent writers and a reader on one EditLog log; check what everyone saw.",
                                 epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0, help="how long the writers record (default 60)")
    ap.add_argument("--short", action="store_true", help="15 seconds (the CI mode)")
    ap.add_argument("--writers", type=int, default=4, help="writer processes recording at once (default 4)")
    ap.add_argument("--readers", type=int, default=1, help="reader loops (default 1)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--editlog", default=default_editlog(), help="the binary (default .build/debug/editlog)")
    ap.add_argument("--fixtures", default=str(FIXTURES))
    ap.add_argument("--workdir", help="work directory (default: a new temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory even when every check passes")
    ap.add_argument("--verbose", "-v", action="store_true")
    a = ap.parse_args(argv)
    if a.short:
        a.seconds = 15.0
    if not 1 <= a.writers <= 50 or a.readers < 1 or a.seconds <= 0:
        ap.error("need 1..50 writers, >= 1 reader and a positive duration")
    if not os.access(a.editlog, os.X_OK):
        print(f"concurrency-soak: no executable at {a.editlog}; build it with `swift build --product editlog`", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    s = Soak(a)
    s.setup()
    if a.verbose:
        print(f"concurrency-soak: work dir {s.work}, pool {len(s.pool)} trees", file=sys.stderr, flush=True)
    try:
        s.run()
    except KeyboardInterrupt:
        s.stop.set()
        print(f"concurrency-soak: interrupted; work dir kept in {s.work}", file=sys.stderr)
        return 130
    ck = s.analyse()
    s.report(ck, time.monotonic() - t0)
    if ck.failed == 0 and not a.keep and not a.workdir:
        shutil.rmtree(s.work, ignore_errors=True)
    elif ck.failed:
        print(f"concurrency-soak: FAILED (seed {a.seed}); the log and scripts are kept in {s.work}", file=sys.stderr)
    return 0 if ck.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
