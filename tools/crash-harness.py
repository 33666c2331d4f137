#!/usr/bin/env python3
"""Crash-safety harness for EditLog (issue 3, "Crash safety").

Runs the real `editlog` binary on realistic work and kills it with SIGKILL at random moments,
then checks that nothing committed was lost, nothing was half-applied, and that re-running the
interrupted command finishes the work without duplicates.

    python3 tools/crash-harness.py --short            # >= 50 kills (CI), a few minutes with a debug build
    python3 tools/crash-harness.py --long             # >= 1,000 kills
    python3 tools/crash-harness.py --kills 200 --seed 9 --editlog .build/release/editlog

Python 3.11, standard library only.  Deterministic schedule from --seed (which scenario runs
when, which script, the kill delay as a fraction of the command's measured typical duration;
the wall-clock moment a kill lands naturally varies from run to run).

Scenarios (each is one class in SCENARIO_CLASSES; a new command or input is one more entry):

  record   `editlog record LOG SCRIPT --json` of a generated script of hundreds of sessions
           (tools/gen-workload.py) on a log that grows script by script (reset to the
           fixture baseline every --chain scripts).  When the killed run left events behind,
           the same script is recorded uninterrupted on a copy of the pre-kill log: the
           events must be exactly that run's (count, types, streams, versions, sessions,
           causes, payloads).
  rebuild  `editlog rebuild LOG` on the current record log.
  init     `editlog init LOG ... --data` with a generated baseline of --trees trees plus the
           fixture Species/Neighborhoods/Trees/Inspections (compared with one uninterrupted
           reference init).

Kill timing (seeded): 70 % uniform over the command's measured typical duration; 30 % aimed
at its end (the commit, the checkpoint on close, init's link into place): a uniform offset
after the moment the command starts writing its WAL (record, rebuild) or the partial log
file starts growing (init's checkpoint), over the measured time from there to exit.  Only
attempts where the process was still running when SIGKILL arrived count as kills; the
others are checked the same way and retried later.  Wall-clock timing makes the exact
moments vary from run to run; the seed fixes the scripts, the order and the offsets.

After every kill (and after every attempt whose command finished before the signal):
  * `editlog verify LOG --json` exits 0 (for init: the log either does not exist or verifies);
  * every event of earlier, successful commands is still there: same positions, ids, hashes;
  * all or nothing: the log holds the pre-kill events plus either none or all of the killed
    command's events, and then exactly the reference sequence (types, streams, versions,
    sessions, causes, payloads);
  * no session half-committed: `editlog sessions --json` shows the script's sessions either
    not at all or all of them closed with the reference's committed/canceled counts, and no
    open session anywhere (the generated workloads close every session they open);
  * re-running the interrupted command finishes the work without duplicates: `record` exits 0
    and the log is exactly pre + full; a third `record` prints "already recorded" and adds
    nothing; `rebuild` exits 0 with the events unchanged; `init` exits 0 (or, if the killed
    init had already completed, 67 "already exists" with the log unchanged); `verify` passes
    afterwards (projections equal a rebuild).

Prints `crash-harness: N kills survived, F failed` and `N passed, F failed`; exits 1 if any
check failed, naming the seed and iteration (the failing log is kept and its path printed).
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import importlib.util
import json
import os
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLS = Path(__file__).resolve().parent


def load_gen():
    spec = importlib.util.spec_from_file_location("gen_workload", TOOLS / "gen-workload.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


gen = load_gen()

EXIT_CONFLICT = 67


class CheckFailed(Exception):
    pass


def fail(msg: str):
    raise CheckFailed(msg)


# ------------------------------------------------------------------------------------------
# Small helpers
# ------------------------------------------------------------------------------------------

class Runner:
    def __init__(self, editlog: str):
        self.editlog = editlog

    def run(self, args: list[str], timeout: float = 900) -> subprocess.CompletedProcess:
        return subprocess.run([self.editlog] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)

    def timed(self, args: list[str]) -> tuple[subprocess.CompletedProcess, float]:
        t0 = time.monotonic()
        p = self.run(args)
        return p, time.monotonic() - t0

    def run_watched(self, args: list[str], trigger) -> tuple[int, float, float | None, str]:
        """Runs the command to completion, polling `trigger()` (true once the command reached the
        phase kills are aimed at). Returns (exit code, duration, seconds until the trigger or None, stderr)."""
        t0 = time.monotonic()
        p = subprocess.Popen([self.editlog] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        t_wal = None
        while p.poll() is None and t_wal is None:
            if trigger():
                t_wal = time.monotonic() - t0
                break
            time.sleep(0.0005)
        out, err = p.communicate()
        self.last_stdout = out
        return p.returncode, time.monotonic() - t0, t_wal, err

    def run_and_kill(self, args: list[str], delay: float | None = None, trigger=None,
                     after: float = 0.0) -> tuple[bool, int | None, float, str]:
        """Starts the command and sends SIGKILL either `delay` seconds after the start, or (when
        `trigger` is given) `after` seconds after `trigger()` first returned true (e.g. the command
        began writing its WAL: the commit / checkpoint phase). Returns (killed, exit code if it
        finished first, elapsed, what the kill was timed on)."""
        t0 = time.monotonic()
        p = subprocess.Popen([self.editlog] + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = None if trigger else t0 + delay
        while True:
            rc = p.poll()
            if rc is not None:
                return False, rc, time.monotonic() - t0, "phase" if trigger else "start"
            now = time.monotonic()
            if deadline is None:
                if trigger():
                    deadline = time.monotonic() + after
                else:
                    time.sleep(0.0005)
                    continue
            if now >= deadline:
                break
            time.sleep(min(0.0005, max(0.0, deadline - now)))
        p.send_signal(signal.SIGKILL)
        rc = p.wait()
        # rc == -9: the signal killed it; any other code: it exited just before.
        return rc == -signal.SIGKILL, (None if rc == -signal.SIGKILL else rc), time.monotonic() - t0, ("phase" if trigger else "start")

    def verify(self, db: str) -> dict:
        p = self.run(["verify", db, "--json"])
        try:
            r = json.loads(p.stdout) if p.stdout.strip() else {}
        except json.JSONDecodeError:
            r = {}
        if p.returncode != 0 or not r.get("ok"):
            fail(f"verify {os.path.basename(db)} exited {p.returncode}: firstBadPosition={r.get('firstBadPosition')} "
                 f"problems={r.get('problems')} stderr={p.stderr.strip()[:400]}")
        return r


def wal_written(paths) -> bool:
    for f in paths:
        try:
            if os.stat(f).st_size > 0:
                return True
        except FileNotFoundError:
            pass
    return False


def db_files(db: str) -> list[str]:
    return [db + s for s in ("", "-wal", "-shm") if os.path.exists(db + s)]


def copy_db(src: str, dst: str):
    for s in ("", "-wal", "-shm"):
        if os.path.exists(dst + s):
            os.remove(dst + s)
    for s in ("", "-wal"):
        if os.path.exists(src + s):
            shutil.copyfile(src + s, dst + s)


def remove_db(db: str):
    for f in db_files(db):
        os.remove(f)


EVENT_KEY_COLS = "position, type, stream, stream_version, session, cause, payload, actor, device, client_time"


def snapshot(db: str) -> list[tuple]:
    """(position, id, hash) of every event, straight from SQLite (read-only)."""
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return c.execute("SELECT position, id, hash FROM events ORDER BY position").fetchall()
    finally:
        c.close()


def event_content(db: str, after: int = 0) -> list[tuple]:
    """The content of events after `after` that does not depend on time or random ids."""
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return c.execute(f"SELECT {EVENT_KEY_COLS} FROM events WHERE position > ? ORDER BY position", (after,)).fetchall()
    finally:
        c.close()


def describe_diff(got: list[tuple], want: list[tuple]) -> str:
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return f"first difference at event #{i + 1}: got {str(g)[:200]} want {str(w)[:200]}"
    return f"lengths differ: got {len(got)} want {len(want)}"


def median(xs: list[float], default: float) -> float:
    return statistics.median(xs[-9:]) if xs else default


# ------------------------------------------------------------------------------------------
# Scenarios
# ------------------------------------------------------------------------------------------

class Context:
    def __init__(self, args, work: str, runner: Runner, fx):
        self.args = args
        self.work = work
        self.runner = runner
        self.fx = fx
        self.log_lines: list[str] = []

    def note(self, msg: str):
        if self.args.verbose:
            print(msg, flush=True)


class ChainLog:
    """The log `record` and `rebuild` work on: the fixture baseline plus generated scripts."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.template = os.path.join(ctx.work, "template.db")
        self.db = os.path.join(ctx.work, "chain.db")
        self.ref = os.path.join(ctx.work, "ref.db")
        self.scripts_dir = os.path.join(ctx.work, "scripts")
        os.makedirs(self.scripts_dir, exist_ok=True)
        p = ctx.runner.run(gen.init_args(ctx.fx, self.template))
        if p.returncode != 0:
            raise SystemExit(f"crash-harness: cannot create the baseline log: {p.stderr.strip()}")
        self.next_index = 0
        self.reset()

    def reset(self, check: bool = True):
        if check and os.path.exists(self.db):
            self.cross_check_log_json()
        copy_db(self.template, self.db)
        self.scripts_in_chain = 0
        self.known = snapshot(self.db)

    def cross_check_log_json(self):
        """`editlog log --json` agrees with SQLite on every committed event (position, id, hash)."""
        p = self.ctx.runner.run(["log", self.db, "--json"])
        if p.returncode != 0:
            fail(f"log --json exited {p.returncode}: {p.stderr.strip()[:300]}")
        rows = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
        got = [(r["position"], r["id"].replace("-", "").lower(), r["hash"]) for r in rows]
        want = [(pos, bytes(i).hex(), bytes(h).hex()) for pos, i, h in self.known]
        if got != want:
            fail(f"log --json disagrees with the committed events: {describe_diff(got, want)}")

    def check_known_prefix(self, now: list[tuple]):
        k = len(self.known)
        if now[:k] != self.known:
            lost = next((i for i, (a, b) in enumerate(zip(now, self.known)) if a != b), min(len(now), k))
            fail(f"events of earlier successful commands changed or vanished: {k} known, {len(now)} now; "
                 f"first difference at position {lost + 1}")

    def new_script(self) -> tuple[str, dict]:
        i = self.next_index
        self.next_index += 1
        text, st = gen.generate_script(self.ctx.fx, self.ctx.args.seed, i, self.ctx.args.sessions)
        path = os.path.join(self.scripts_dir, f"wl-s{self.ctx.args.seed}-{i:03d}.ndjson")
        with open(path, "w") as f:
            f.write(text)
        st["sha256"] = hashlib.sha256(text.encode()).hexdigest()
        st["index"] = i
        return path, st


class Scenario:
    """One kind of work to kill. Subclasses set `name`, the kill weights, and implement
    `trigger(db)` (when the phase worth aiming kills at begins), `typical()` and `iterate()`."""
    name = "?"
    weight_short = 0
    weight_long = 0
    # Share of kills aimed at the end of the command (`trigger`: the commit, checkpoint and exit)
    # rather than uniform over its typical duration: the window after the commit is a few
    # milliseconds of a run, so uniform timing alone almost never kills a committed command.
    phase_share = 0.3

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.durations: list[float] = []   # uninterrupted runs
        self.windows: list[float] = []     # trigger -> exit, uninterrupted runs
        self.timed_on = {"start": 0, "phase": 0}
        self.rng = random.Random(f"crash-harness:{ctx.args.seed}:{self.name}")

    def trigger(self, db: str):
        """A fresh predicate: true once the command began writing its WAL (the commit of the
        transaction, which SQLite keeps in memory until then, and the checkpoint on close)."""
        return lambda: wal_written([db + "-wal"])

    def typical(self) -> float:
        raise NotImplementedError

    def full_run(self, args: list[str], db: str) -> tuple[int, str, str, float]:
        """An uninterrupted run, measured (duration and WAL window) for later kill timing."""
        rc, dt, t_wal, err = self.ctx.runner.run_watched(args, self.trigger(db))
        if rc == 0:
            self.durations.append(dt)
            if t_wal is not None:
                self.windows.append(dt - t_wal)
        return rc, self.ctx.runner.last_stdout, err, dt

    def kill(self, args: list[str], db: str) -> dict:
        r = self.rng
        if self.windows and r.random() < self.phase_share:
            w = median(self.windows, 0.05)
            offset = r.uniform(0.0, w)
            killed, rc, elapsed, on = self.ctx.runner.run_and_kill(args, trigger=self.trigger(db), after=offset)
            info = {"delay": offset, "on": "phase", "window": w}
        else:
            delay = r.uniform(0.0, self.typical())
            killed, rc, elapsed, on = self.ctx.runner.run_and_kill(args, delay=delay)
            info = {"delay": delay, "on": "start", "window": self.typical()}
        info.update(killed=killed, rc=rc, elapsed=elapsed)
        if killed:
            self.timed_on[info["on"]] += 1
        if not killed and rc != 0:
            fail(f"{self.name} finished before the kill with exit {rc}")
        return info

    def iterate(self, it: int) -> dict:
        raise NotImplementedError


class RecordScenario(Scenario):
    name = "record"
    weight_short = 36
    weight_long = 700

    def __init__(self, ctx, chain: ChainLog):
        super().__init__(ctx)
        self.chain = chain
        self.outcomes = {"none": 0, "all": 0}

    def typical(self) -> float:
        return median(self.durations, 0.6)

    def reference(self, pre_db: str, script: str, pre_n: int) -> tuple[int, list[tuple]]:
        """Records the script uninterrupted on a copy of the pre-kill log: full count and content."""
        ref = self.chain.ref
        copy_db(pre_db, ref)
        rc, out, err, _ = self.full_run(["record", ref, script, "--json"], ref)
        if rc != 0:
            fail(f"reference record of {os.path.basename(script)} exited {rc}: {err.strip()[:400]}")
        full = json.loads(out)["events"]
        events = event_content(ref, pre_n)
        if len(events) != full:
            fail(f"reference run reported {full} events but the log holds {len(events)} new ones")
        return full, events

    def iterate(self, it: int) -> dict:
        ctx, chain, run = self.ctx, self.chain, self.ctx.runner
        if chain.scripts_in_chain >= ctx.args.chain:
            chain.reset()
        db = chain.db
        pre = snapshot(db)
        chain.check_known_prefix(pre)
        if len(pre) != len(chain.known):
            fail(f"log has {len(pre)} events before the command, {len(chain.known)} expected")
        pre_n = len(pre)
        script, st = chain.new_script()
        pre_db = os.path.join(ctx.work, "pre.db")
        copy_db(db, pre_db)
        if not self.durations:
            self.reference(pre_db, script, pre_n)   # calibrate the kill timing
        info = self.kill(["record", db, script, "--json"], db)
        info["script"] = os.path.basename(script)
        # 1. verify
        run.verify(db)
        # 2. earlier events intact
        now = snapshot(db)
        chain.check_known_prefix(now)
        # 3. all or nothing
        added = len(now) - pre_n
        full = ref_events = None
        if added == 0:
            outcome = "none"
        else:
            full, ref_events = self.reference(pre_db, script, pre_n)
            if added != full:
                fail(f"script half-applied: {added} of {full} events present after the kill")
            got = event_content(db, pre_n)
            if got != ref_events:
                fail(f"the killed record committed {added} events that differ from an uninterrupted run: {describe_diff(got, ref_events)}")
            outcome = "all"
        if not info["killed"] and outcome != "all":
            fail("record exited 0 but its events are not in the log")
        info["outcome"] = outcome
        if info["killed"]:
            self.outcomes[outcome] += 1
        # 4. sessions: none or all of the script's, all closed; nothing open anywhere
        self.check_sessions(db, st, outcome)
        # 5. re-run finishes the work without duplicates
        rc, out, err, _ = self.full_run(["record", db, script, "--json"], db) if outcome == "none" else \
            (lambda p: (p.returncode, p.stdout, p.stderr, 0))(run.run(["record", db, script, "--json"]))
        if rc != 0:
            fail(f"re-running record exited {rc}: {err.strip()[:400]}")
        r = json.loads(out)
        if outcome == "none":
            if r.get("alreadyRecordedAt") is not None or not r.get("events"):
                fail(f"re-run after an uncommitted kill recorded nothing: {r}")
            full = r["events"]
        elif r.get("alreadyRecordedAt") is None or r.get("events") != 0:
            fail(f"re-run after a committed kill was not a no-op: {r}")
        after = snapshot(db)
        chain.check_known_prefix(after)
        if len(after) != pre_n + full:
            fail(f"after the re-run the log has {len(after)} events, want {pre_n} + {full}")
        if ref_events is not None:
            got = event_content(db, pre_n)
            if got != ref_events:
                fail(f"after the re-run the script's events differ from the reference: {describe_diff(got, ref_events)}")
        last = event_content(db, len(after) - 1)[0]
        lp = json.loads(last[6])
        if last[1] != "ScriptRecorded" or lp.get("sha256") != st["sha256"] or lp.get("lines") != st["lines"]:
            fail(f"the last event is not this script's ScriptRecorded: {str(last)[:300]}")
        # 6. a third run is a no-op that says so
        p = run.run(["record", db, script])
        if p.returncode != 0 or "already recorded" not in p.stdout.lower():
            fail(f"third record exited {p.returncode} without 'already recorded': {p.stdout.strip()[:200]} {p.stderr.strip()[:200]}")
        if snapshot(db) != after:
            fail("third record changed the log")
        # 7. verify again (projections equal a rebuild) and the sessions
        run.verify(db)
        self.check_sessions(db, st, "all")
        chain.known = after
        chain.scripts_in_chain += 1
        return info

    def check_sessions(self, db: str, st: dict, outcome: str):
        p = self.ctx.runner.run(["sessions", db, "--json"])
        if p.returncode != 0:
            fail(f"sessions --json exited {p.returncode}: {p.stderr.strip()[:300]}")
        sessions = json.loads(p.stdout)
        open_ = [s["id"] for s in sessions if s.get("status") == "open"]
        if open_:
            fail(f"sessions left open (half-committed script?): {open_[:5]}")
        prefix = f"wl-s{self.ctx.args.seed}-{st['index']:03d}-"
        mine = [s for s in sessions if s["id"].startswith(prefix)]
        if outcome == "none":
            if mine:
                fail(f"{len(mine)} sessions of an unrecorded script are visible: {[s['id'] for s in mine[:5]]}")
            return
        committed = sum(1 for s in mine if s["status"] == "committed")
        canceled = sum(1 for s in mine if s["status"] == "canceled")
        if len(mine) != st["sessions"] or committed != st["finished"] or canceled != st["canceled"]:
            fail(f"script sessions: {len(mine)} present ({committed} committed, {canceled} canceled), "
                 f"want {st['sessions']} ({st['finished']} committed, {st['canceled']} canceled)")


class RebuildScenario(Scenario):
    name = "rebuild"
    weight_short = 10
    weight_long = 200

    def __init__(self, ctx, chain: ChainLog):
        super().__init__(ctx)
        self.chain = chain
        self.sizes: list[int] = []

    def typical(self) -> float:
        # Rebuild time grows with the log: scale the recent durations per event.
        rates = [d / n for d, n in zip(self.durations, self.sizes)]
        return median(rates, 1e-4) * len(self.chain.known)

    def full_run(self, args, db):
        n = len(self.chain.known)
        r = super().full_run(args, db)
        if r[0] == 0:
            self.sizes.append(n)
        return r

    def iterate(self, it: int) -> dict:
        run, chain = self.ctx.runner, self.chain
        db = chain.db
        pre = snapshot(db)
        chain.check_known_prefix(pre)
        if len(pre) != len(chain.known):
            fail(f"log has {len(pre)} events before rebuild, {len(chain.known)} expected")
        if not self.durations:   # calibrate once on a copy
            copy_db(db, chain.ref)
            rc, _, err, _ = self.full_run(["rebuild", chain.ref], chain.ref)
            if rc != 0:
                fail(f"reference rebuild exited {rc}: {err.strip()[:300]}")
        info = self.kill(["rebuild", db], db)
        info["events"] = len(pre)
        run.verify(db)
        if snapshot(db) != pre:
            fail("events changed across a killed rebuild")
        rc, _, err, _ = self.full_run(["rebuild", db], db)
        if rc != 0:
            fail(f"re-running rebuild exited {rc}: {err.strip()[:300]}")
        run.verify(db)
        if snapshot(db) != pre:
            fail("events changed across the re-run rebuild")
        return info


class InitScenario(Scenario):
    name = "init"
    weight_short = 4
    weight_long = 100

    def __init__(self, ctx, chain=None):
        super().__init__(ctx)
        self.dir = os.path.join(ctx.work, "init")
        os.makedirs(self.dir)
        self.trees = os.path.join(self.dir, "Trees-big.json")
        fs = gen.generate_baseline_trees(ctx.fx, ctx.args.seed, ctx.args.trees)
        with open(self.trees, "w") as f:
            json.dump(fs, f, separators=(",", ":"))
        self.db = os.path.join(self.dir, "log.db")
        self.partials_left = 0
        self.outcomes = {"absent": 0, "complete": 0}
        # Reference: one uninterrupted init.
        ref = os.path.join(self.dir, "ref.db")
        rc, _, err, dt = self.full_run(self.args(ref), ref)
        if rc != 0:
            raise SystemExit(f"crash-harness: reference init failed ({rc}): {err.strip()[:400]}")
        self.ref_events = event_content(ref)
        self.expected = len(self.ref_events)
        remove_db(ref)
        ctx.note(f"init reference: {self.expected} events in {dt:.2f}s")

    def trigger(self, db: str):
        """init builds the log under DB.partial-N in one transaction (which SQLite spills to the
        WAL long before the commit), closes it (the checkpoint copies the WAL into the file and
        removes it) and links it into place as DB. Aim at that end: true once the partial file
        grows (the checkpoint has begun) or the log exists."""
        def f():
            if os.path.exists(db):
                return True
            for p in glob.glob(db + ".partial-*"):
                if not p.endswith(("-wal", "-shm", "-journal")):
                    try:
                        if os.stat(p).st_size > 256 * 1024:
                            return True
                    except FileNotFoundError:
                        pass
            return False
        return f

    def args(self, db: str) -> list[str]:
        fx = self.ctx.fx
        b = fx.path / "baseline"
        return ["init", db, "--service", str(fx.path / "service.json"), "--webmap", str(fx.path / "webmap.json"),
                "--rules", str(fx.path / "rules.json"), "--data", str(b / "Species.json"), str(b / "Neighborhoods.json"),
                str(b / "Trees.json"), f"Trees={self.trees}", str(b / "Inspections.json")]

    def typical(self) -> float:
        return median(self.durations, 5.0)

    def check_complete(self, what: str):
        self.ctx.runner.verify(self.db)
        got = event_content(self.db)
        if got != self.ref_events:
            fail(f"{what}: the log differs from an uninterrupted init: {describe_diff(got, self.ref_events)}")

    def iterate(self, it: int) -> dict:
        run = self.ctx.runner
        if os.path.exists(self.db):
            fail("init target exists before the command")
        info = self.kill(self.args(self.db), self.db)
        exists = os.path.exists(self.db)
        info["outcome"] = "complete" if exists else "absent"
        if info["killed"]:
            self.outcomes[info["outcome"]] += 1
        if not info["killed"] and not exists:
            fail("init exited 0 but the log does not exist")
        if exists:
            self.check_complete("after the kill")
            before = snapshot(self.db)
            p = run.run(self.args(self.db))
            if p.returncode != EXIT_CONFLICT:
                fail(f"re-running init over a complete log exited {p.returncode} (want {EXIT_CONFLICT}, never overwrite): {p.stderr.strip()[:300]}")
            if snapshot(self.db) != before:
                fail("re-running init changed the existing log")
        else:
            rc, _, err, _ = self.full_run(self.args(self.db), self.db)
            if rc != 0:
                fail(f"re-running init exited {rc}: {err.strip()[:400]}")
            self.check_complete("after the re-run")
        partials = glob.glob(self.db + ".partial-*")
        # Files a killed init leaves behind (a process killed with -9 cannot remove them).
        self.partials_left += len([f for f in partials if not f.endswith(("-wal", "-shm"))])
        info["partials"] = len(partials)
        for f in partials:
            os.remove(f)
        remove_db(self.db)
        return info


SCENARIO_CLASSES = {"record": RecordScenario, "rebuild": RebuildScenario, "init": InitScenario}


# ------------------------------------------------------------------------------------------

def default_editlog() -> str:
    return str(ROOT / ".build" / "debug" / "editlog")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Kill editlog with SIGKILL at random moments and check the log.",
                                 epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--short", action="store_true", help=">= 50 kills (the CI mode; default)")
    mode.add_argument("--long", action="store_true", help=">= 1,000 kills")
    mode.add_argument("--kills", type=int, help="at least this many kills, split like --short")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--editlog", default=default_editlog(), help="the binary (default .build/debug/editlog)")
    ap.add_argument("--fixtures", default=str(gen.DEFAULT_FIXTURES))
    ap.add_argument("--sessions", type=int, help="sessions per generated script (short 200, long 300)")
    ap.add_argument("--chain", type=int, help="scripts per log before it is reset to the baseline (short 4, long 8)")
    ap.add_argument("--trees", type=int, help="trees in the generated init baseline (short 20000, long 50000)")
    ap.add_argument("--only", help="comma-separated scenarios to run (record,rebuild,init)")
    ap.add_argument("--jobs", type=int, default=2, help="lanes run in parallel: 2 (default) or 1")
    ap.add_argument("--keep-going", action="store_true", help="continue after a failed check")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--verbose", "-v", action="store_true")
    a = ap.parse_args(argv)
    long_mode = bool(a.long)
    a.sessions = a.sessions or (300 if long_mode else 200)
    a.chain = a.chain or (8 if long_mode else 4)
    a.trees = a.trees if a.trees is not None else (50000 if long_mode else 20000)

    if not os.access(a.editlog, os.X_OK):
        print(f"crash-harness: no executable at {a.editlog}; build it with `swift build --product editlog`", file=sys.stderr)
        return 2
    t_start = time.monotonic()
    work = tempfile.mkdtemp(prefix="editlog-crash-")
    # Run a private copy: another `swift build` may replace the binary while the harness runs.
    binary = os.path.join(work, "editlog")
    shutil.copy2(a.editlog, binary)
    with open(binary, "rb") as f:
        bin_sha = hashlib.sha256(f.read()).hexdigest()[:16]
    fx = gen.Fixtures(Path(a.fixtures))
    ctx = Context(a, work, Runner(binary), fx)
    print(f"crash-harness: seed {a.seed}, binary {a.editlog} (sha256 {bin_sha}…), work dir {work}", flush=True)

    only = set(a.only.split(",")) if a.only else None
    names = [n for n in ("record", "rebuild", "init") if only is None or n in only]
    if not names:
        print("crash-harness: no scenario selected", file=sys.stderr)
        return 2
    # Kill quotas per scenario.
    weights = {n: (SCENARIO_CLASSES[n].weight_long if long_mode else SCENARIO_CLASSES[n].weight_short) for n in names}
    target = 1000 if long_mode else (a.kills or 50)
    total_w = sum(weights.values())
    quota = {n: max(1, round(target * w / total_w)) for n, w in weights.items()}
    while sum(quota.values()) < target:
        quota[max(quota, key=lambda n: weights[n])] += 1
    # Lanes: the record/rebuild log and the init runs are independent; with --jobs 2 they run in
    # parallel (each lane is sequential and seeded on its own).
    lanes = [[n for n in ("record", "rebuild") if n in names], [n for n in ("init",) if n in names]]
    lanes = [l for l in lanes if l]

    lock = threading.Lock()
    stop = threading.Event()
    scenarios: dict[str, Scenario] = {}
    kills = {n: 0 for n in names}
    not_killed = {n: 0 for n in names}
    failures: list[str] = []
    counter = [0]

    def lane(members: list[str]):
        lrng = random.Random(f"crash-harness:{a.seed}:lane:{','.join(members)}")
        chain = ChainLog(ctx) if ("record" in members or "rebuild" in members) else None
        local = {}
        for n in members:
            t0 = time.monotonic()
            local[n] = SCENARIO_CLASSES[n](ctx, chain) if chain is not None else SCENARIO_CLASSES[n](ctx)
            ctx.note(f"prepared {n} in {time.monotonic() - t0:.1f}s")
        with lock:
            scenarios.update(local)
        plan = [n for n in members for _ in range(quota[n])]
        lrng.shuffle(plan)
        while plan and not stop.is_set():
            name = plan.pop(0)
            s = local[name]
            with lock:
                counter[0] += 1
                it = counter[0]
            t0 = time.monotonic()
            try:
                info = s.iterate(it)
            except CheckFailed as e:
                keep = os.path.join(work, f"failed-{it}")
                os.makedirs(keep, exist_ok=True)
                for db in {getattr(s, "db", None), chain.db if chain else None} - {None}:
                    for f in db_files(db):
                        shutil.copy2(f, keep)
                msg = f"crash-harness: FAIL seed={a.seed} iteration={it} scenario={name}: {e} (log kept in {keep})"
                print(msg, file=sys.stderr, flush=True)
                with lock:
                    failures.append(msg)
                if not a.keep_going:
                    stop.set()
                    break
                if chain is not None:   # start from a clean state after a failure
                    chain.reset(check=False)
                elif os.path.exists(getattr(s, "db", "")):
                    remove_db(s.db)
                continue
            with lock:
                if info["killed"]:
                    kills[name] += 1
                else:
                    not_killed[name] += 1
                total = sum(kills.values())
            if not info["killed"]:
                plan.insert(lrng.randrange(len(plan) + 1), name)   # try again later: only kills count
            ctx.note(f"[{it:4d}] {name:7s} {'KILL' if info['killed'] else 'done'} {info['delay']:.3f}s after {info['on']} "
                     f"(window {info['window']:.3f}s) outcome={info.get('outcome', '-')} {time.monotonic() - t0:.1f}s")
            if not a.verbose and it % 10 == 0:
                print(f"  ... {total} kills, {time.monotonic() - t_start:.0f}s", flush=True)

    def guarded(members):
        try:
            lane(members)
        except BaseException as e:   # a harness error, not a finding: report and stop
            import traceback
            traceback.print_exc()
            with lock:
                failures.append(f"crash-harness: ERROR seed={a.seed} lane={members}: {e!r}")
            stop.set()

    if a.jobs > 1:
        threads = [threading.Thread(target=guarded, args=(m,)) for m in lanes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        for m in lanes:
            guarded(m)
    it = counter[0]

    elapsed = time.monotonic() - t_start
    survived = sum(kills.values())
    nf = len(failures)
    parts = []
    for n, s in sorted(scenarios.items(), key=lambda kv: names.index(kv[0])):
        extra = ""
        if isinstance(s, RecordScenario):
            extra = f"; committed before the kill {s.outcomes['all']}, rolled back {s.outcomes['none']}"
        elif isinstance(s, InitScenario):
            extra = (f"; log complete {s.outcomes['complete']}, absent {s.outcomes['absent']}; "
                     f"stale .partial files left by killed inits: {s.partials_left}")
        parts.append(f"  {n}: {kills[n]} kills ({s.timed_on['start']} timed from the start, {s.timed_on['phase']} aimed at the commit), "
                     f"{not_killed[n]} finished before the signal (retried){extra}")
    print("\n".join(parts))
    print(f"crash-harness: seed {a.seed}, {it} iterations in {elapsed:.0f}s "
          f"(sessions/script {a.sessions}, scripts/log {a.chain}, init trees {a.trees})")
    print(f"crash-harness: {survived} kills survived, {nf} failed")
    print(f"{survived} passed, {nf} failed")
    if nf == 0 and not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"crash-harness: work dir kept: {work}")
    return 1 if nf else 0


if __name__ == "__main__":
    sys.exit(main())
