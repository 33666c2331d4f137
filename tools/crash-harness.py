#!/usr/bin/env python3
"""Crash-safety harness for EditLog (issue 3, "Crash safety").

Runs the real `editlog` binary on realistic work and kills it with SIGKILL at random moments,
then checks that nothing committed was lost, nothing was half-applied, and that re-running the
interrupted command finishes the work without duplicates.

    python3 tools/crash-harness.py --short            # >= 66 kills (CI), a few minutes with a debug build
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
  export   `editlog bundle export LOG --out F --since last-export:hub --peer hub` of the record
           log: the peer's mark never moves past a bundle that is not in place (F absent and
           nothing recorded, or F complete, `bundle verify` passing, and what was recorded
           naming its range and SHA-256); re-running finishes it; the peer's exports follow
           each other without a gap or an overlap.
  import   `editlog bundle import LOG BUNDLE --policy last-in-wins|manual` of device A's bundle
           into device B's log (both from the fixtures, each with a generated script of its
           own, so the import merges: conflicts, decisions, derived values, blobs): none or all
           of it, exactly as an uninterrupted import (compared with one per policy); re-running
           finishes it and a third run imports nothing.
  schema   `editlog schema LOG apply --service F` of the fixture service with a field (Trees.Notes) added, on a
           log of --trees generated trees, so the Trees projection table is reshaped in the transaction that
           records the SchemaChanged: none or all of it (no event, no column, the old schema in `schema --json`;
           or the event exactly as an uninterrupted apply's, the column and the field); re-running finishes
           it and a third run writes nothing.

Kill timing (seeded): 70 % uniform over the command's measured typical duration; 30 % aimed
at its end (the commit, the checkpoint on close, init's link into place): a uniform offset
after the moment the command starts writing its WAL (record, rebuild, import), the partial
log file starts growing (init's checkpoint) or the bundle is renamed into place (export, half
of its kills: the peer's row follows within milliseconds), over the measured time from there
to exit.  Only attempts where the process was still running when SIGKILL arrived count as
kills; the others are checked the same way and retried later.  Wall-clock timing makes the exact
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
# Kills of --short (CI); --long makes 1,000.
SHORT_KILLS = 66


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


def bundle_export_rows(db: str, peer: str) -> list[tuple]:
    """The `bundle_exports` rows recorded for `peer` (what `--since last-export:<peer>` continues after)."""
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return c.execute("SELECT from_position, to_position, bundle_sha256 FROM bundle_exports WHERE peer = ? ORDER BY id",
                         (peer,)).fetchall()
    finally:
        c.close()


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class ExportScenario(Scenario):
    """`editlog bundle export LOG --out F --since last-export:hub --peer hub` (`--since 0` the first
    time) of the record log (which grows script by script and is reset with it). A peer's mark must
    never move past a bundle that is not in place: after a kill, either F is absent (a `.partial` may
    stay) and no export was recorded, or F is complete (`bundle verify` passes, the range follows the
    peer's last export) and the export recorded for it, if any, names F's range and SHA-256.
    Re-running finishes it; the peer's exports then cover the log without a gap or an overlap."""
    name = "export"
    weight_short = 8
    weight_long = 100
    # The window worth aiming at (the rename into place, then the peer's row) is a few milliseconds.
    phase_share = 0.5
    peer = "hub"

    def __init__(self, ctx, chain: ChainLog):
        super().__init__(ctx)
        self.chain = chain
        self.dir = os.path.join(ctx.work, "exports")
        os.makedirs(self.dir, exist_ok=True)
        self.outcomes = {"absent": 0, "complete": 0, "recorded": 0}
        self.partials_left = 0

    def trigger(self, db: str):
        # Aimed at the end: once the bundle is renamed into place (the peer's row follows it).
        out = self.out
        return lambda: os.path.exists(out)

    def typical(self) -> float:
        return median(self.durations, 0.3)

    def args(self, db: str, force: bool = False) -> list[str]:
        # The first export to the peer names its start (`last-export:` needs one recorded).
        since = f"last-export:{self.peer}" if bundle_export_rows(db, self.peer) else "0"
        a = ["bundle", "export", db, "--out", self.out, "--since", since, "--peer", self.peer, "--json"]
        return a + (["--force"] if force else [])

    def check_bundle(self, expect_from: int, expect_to: int):
        p = self.ctx.runner.run(["bundle", "verify", self.out, "--json"])
        try:
            r = json.loads(p.stdout) if p.stdout.strip() else {}
        except json.JSONDecodeError:
            r = {}
        if p.returncode != 0:
            fail(f"bundle verify of the exported file exited {p.returncode}: {p.stderr.strip()[:300]}")
        m = r.get("manifest") or {}
        if (m.get("fromPosition"), m.get("toPosition")) != (expect_from, expect_to):
            fail(f"the bundle holds positions {m.get('fromPosition')}...{m.get('toPosition')}, want {expect_from}...{expect_to}")

    def check_rows(self, rows: list[tuple]):
        """The peer's recorded exports follow each other from position 0, without a gap or an overlap."""
        at = 0
        for f, t, _ in rows:
            if f != at:
                fail(f"the peer's recorded exports leave a gap or overlap: one starts after {f}, the previous ended at {at}: {rows}")
            at = t

    def iterate(self, it: int) -> dict:
        run, chain = self.ctx.runner, self.chain
        db = chain.db
        self.out = os.path.join(self.dir, f"export-{it}.bundle")
        pre = snapshot(db)
        chain.check_known_prefix(pre)
        rows_before = bundle_export_rows(db, self.peer)
        self.check_rows(rows_before)
        expect_from = rows_before[-1][1] if rows_before else 0
        expect_to = len(pre)
        if expect_to <= expect_from:   # nothing new since the last export: the record lane adds more first
            chain.reset()
            pre = snapshot(db)
            rows_before, expect_from, expect_to = [], 0, len(pre)
        if not self.durations:   # calibrate on a copy
            copy_db(db, chain.ref)
            rc, _, err, _ = self.full_run(self.args(chain.ref), chain.ref)
            if rc != 0:
                fail(f"reference export exited {rc}: {err.strip()[:300]}")
            os.remove(self.out)
        info = self.kill(self.args(db), db)
        # The log's events are untouched, and it verifies.
        run.verify(db)
        if snapshot(db) != pre:
            fail("events changed across a killed export")
        rows = bundle_export_rows(db, self.peer)
        if rows[:len(rows_before)] != rows_before or len(rows) > len(rows_before) + 1:
            fail(f"the peer's recorded exports changed: before {rows_before}, after {rows}")
        new = rows[len(rows_before):]
        exists = os.path.exists(self.out)
        if new and not exists:
            fail(f"the export was recorded for the peer ({new[0]}) but its bundle is not in place")
        if exists:
            self.check_bundle(expect_from, expect_to)
            if new and (new[0][0], new[0][1], new[0][2]) != (expect_from, expect_to, file_sha256(self.out)):
                fail(f"the recorded export {new[0]} does not name the bundle in place ({expect_from}...{expect_to})")
        outcome = "recorded" if new else ("complete" if exists else "absent")
        info["outcome"] = outcome
        if info["killed"]:
            self.outcomes[outcome] += 1
        if not info["killed"] and outcome != "recorded":
            fail("export exited 0 but did not record the export for the peer")
        partials = glob.glob(self.out + ".partial*")
        self.partials_left += len(partials)
        for f in partials:
            os.remove(f)
        # Re-running finishes the work: the same range again (the peer's mark did not move), recorded.
        if outcome != "recorded":
            rc, _, err, _ = self.full_run(self.args(db, force=exists), db)
            if rc != 0:
                fail(f"re-running the export exited {rc}: {err.strip()[:300]}")
            self.check_bundle(expect_from, expect_to)
            rows = bundle_export_rows(db, self.peer)
            if rows[:len(rows_before)] != rows_before or len(rows) != len(rows_before) + 1 \
                    or rows[-1] != (expect_from, expect_to, file_sha256(self.out)):
                fail(f"after the re-run the peer's exports are {rows[len(rows_before):]}, want one of {expect_from}...{expect_to}")
        self.check_rows(rows)
        if snapshot(db) != pre:
            fail("events changed across the re-run export")
        os.remove(self.out)
        return info


class ImportScenario(Scenario):
    """`editlog bundle import LOG BUNDLE --policy P` of device A's bundle into device B's log, both made from the
    fixtures and each holding a script of its own (so the import merges: conflicts, decisions, values derived
    again, attachment blobs). One transaction: after a kill the log holds either none of the import or all of
    it, exactly as an uninterrupted import (the same events at the same positions: the imported ones with their
    ids and payloads, and the decisions and derived values between them); it verifies (definitions and indexes
    included); re-running finishes it, and a further run imports nothing. Every other pair of kills creates some
    indexes after the events (`--index-deferral always`), as a large import does."""
    name = "import"
    weight_short = 8
    weight_long = 100
    policies = ("last-in-wins", "manual")
    deferrals = ("always", "auto")

    def __init__(self, ctx, chain=None):
        super().__init__(ctx)
        run = ctx.runner
        self.dir = os.path.join(ctx.work, "import")
        os.makedirs(self.dir)
        logs = {}
        for name, index in (("a", 1001), ("b", 2001)):
            db = os.path.join(self.dir, f"{name}.db")
            p = run.run(gen.init_args(ctx.fx, db))
            if p.returncode != 0:
                raise SystemExit(f"crash-harness: cannot create device {name}'s log: {p.stderr.strip()[:300]}")
            text, _ = gen.generate_script(ctx.fx, ctx.args.seed, index, ctx.args.sessions)
            script = os.path.join(self.dir, f"{name}.ndjson")
            with open(script, "w") as f:
                f.write(text)
            p = run.run(["record", db, script, "--json"])
            if p.returncode != 0:
                raise SystemExit(f"crash-harness: cannot record device {name}'s script: {p.stderr.strip()[:300]}")
            if name == "a":
                self.record_big_attachment(run, db, ctx.args.seed)
            logs[name] = db
        self.template = logs["b"]
        self.bundle = os.path.join(self.dir, "a.bundle")
        p = run.run(["bundle", "export", logs["a"], "--out", self.bundle, "--json"])
        if p.returncode != 0:
            raise SystemExit(f"crash-harness: cannot export device a's bundle: {p.stderr.strip()[:300]}")
        self.bundle_events = json.loads(p.stdout)["manifest"]["eventCount"]
        self.db = os.path.join(self.dir, "log.db")
        self.ref = os.path.join(self.dir, "ref.db")
        self.pre = snapshot(self.template)
        self.log_id = self.read_log_id(self.template)
        self.references: dict[str, tuple[dict, list[tuple], tuple]] = {}
        self.outcomes = {"none": 0, "all": 0}

    # Past the store's inline limit (4 MiB): the import stores it in chunks (`blob_chunks`), so kills land there too.
    BIG_ATTACHMENT = 6 * 1024 * 1024 + 4321

    def record_big_attachment(self, run, db: str, seed: int):
        script = os.path.join(self.dir, "a-big.ndjson")
        with open(script, "w") as f:
            f.write(gen.big_attachment_script(f"crash:{seed}:big", self.BIG_ATTACHMENT,
                                              "{7A3E0C11-5B2D-4E8F-9A61-00000000C16A}", "{7A3E0C11-5B2D-4E8F-9A61-00000000C16B}"))
        p = run.run(["record", db, script, "--actor", "surveyor", "--json"])
        if p.returncode != 0:
            raise SystemExit(f"crash-harness: cannot record device a's large attachment: {p.stderr.strip()[:300]}")

    @staticmethod
    def read_log_id(db: str) -> str:
        c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return c.execute("SELECT origin_log FROM events WHERE position = 1").fetchone()[0]
        finally:
            c.close()

    def content(self, db: str) -> tuple[list[tuple], tuple]:
        """The import's events after the pre-import log: imported ones by position, id, type, stream, version and
        payload; the log's own (decisions, derived values) by position, type and stream (their payloads hold
        fresh ids and times). And the number of blobs, of blob chunks and of their bytes."""
        c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            rows = c.execute("SELECT position, id, type, stream, stream_version, payload, origin_log FROM events WHERE position > ? "
                             "ORDER BY position", (len(self.pre),)).fetchall()
            blobs = c.execute("SELECT (SELECT count(*) FROM blobs), (SELECT count(*) FROM blob_chunks), "
                              "(SELECT COALESCE(SUM(length(data)), 0) FROM blob_chunks)").fetchone()
        finally:
            c.close()
        out = [(r[0], bytes(r[1]).hex(), r[2], r[3], r[4], r[5]) if r[6] != self.log_id else (r[0], r[2], r[3]) for r in rows]
        return out, blobs

    def args(self, db: str, policy: str, deferral: str = "auto") -> list[str]:
        return ["bundle", "import", db, self.bundle, "--policy", policy, "--actor", "crash-harness", "--device", "harness",
                "--index-deferral", deferral, "--json"]

    def reference(self, policy: str) -> tuple[dict, list[tuple], tuple]:
        if policy not in self.references:
            copy_db(self.template, self.ref)
            rc, out, err, _ = self.full_run(self.args(self.ref, policy), self.ref)
            if rc != 0:
                fail(f"reference import ({policy}) exited {rc}: {err.strip()[:400]}")
            r = json.loads(out)
            events, blobs = self.content(self.ref)
            if r["imported"] != self.bundle_events or len(events) != r["imported"] + r["decisions"] + r["derived"]:
                fail(f"reference import ({policy}) reported {r['imported']} imported, {r['decisions']} decisions, {r['derived']} derived; "
                     f"the log holds {len(events)} new events")
            self.references[policy] = (r, events, blobs)
            remove_db(self.ref)
        return self.references[policy]

    def typical(self) -> float:
        return median(self.durations, 1.0)

    def check_all(self, what: str, policy: str):
        _, want, want_blobs = self.reference(policy)
        got, blobs = self.content(self.db)
        if got != want:
            fail(f"{what}: the imported events differ from an uninterrupted import: {describe_diff(got, want)}")
        if blobs != want_blobs:
            fail(f"{what}: the log holds (blobs, chunks, chunk bytes) {blobs}, an uninterrupted import {want_blobs}")

    def iterate(self, it: int) -> dict:
        run = self.ctx.runner
        policy = self.policies[it % len(self.policies)]
        # Every other pair of kills drops the indexes a large import creates after its events (`--index-deferral
        # always`; this bundle is too small for `auto` to): a kill may land in the drop, the events or the
        # re-creation, and the uninterrupted reference is imported without.
        deferral = self.deferrals[(it // len(self.policies)) % len(self.deferrals)]
        ref_report, _, _ = self.reference(policy)
        full = ref_report["imported"] + ref_report["decisions"] + ref_report["derived"]
        copy_db(self.template, self.db)
        info = self.kill(self.args(self.db, policy, deferral), self.db)
        info["policy"] = policy
        info["deferral"] = deferral
        # 1. verify (chain and projections); 2. the log's own events intact
        run.verify(self.db)
        now = snapshot(self.db)
        if now[:len(self.pre)] != self.pre:
            fail("events the log held before the import changed or vanished")
        # 3. all or nothing
        added = len(now) - len(self.pre)
        if added == 0:
            outcome = "none"
        elif added == full:
            outcome = "all"
            self.check_all("after the kill", policy)
        else:
            fail(f"import half-applied: {added} of {full} events present after the kill")
        if not info["killed"] and outcome != "all":
            fail("import exited 0 but its events are not in the log")
        info["outcome"] = outcome
        if info["killed"]:
            self.outcomes[outcome] += 1
        # 4. re-running finishes the work: everything (after an uncommitted kill) or nothing (after a committed one)
        p = run.run(self.args(self.db, policy, deferral))
        if p.returncode != 0:
            fail(f"re-running the import exited {p.returncode}: {p.stderr.strip()[:400]}")
        r = json.loads(p.stdout)
        want_imported = ref_report["imported"] if outcome == "none" else 0
        if r["imported"] != want_imported or r["alreadyPresent"] != self.bundle_events - want_imported:
            fail(f"re-run after a kill ({outcome}) imported {r['imported']} ({r['alreadyPresent']} already present), want {want_imported}")
        self.check_all("after the re-run", policy)
        after = snapshot(self.db)
        # 5. a further run adds nothing; the log verifies and has no session left open
        p = run.run(self.args(self.db, policy))
        if p.returncode != 0 or json.loads(p.stdout)["imported"] != 0 or snapshot(self.db) != after:
            fail(f"a third import was not a no-op (exit {p.returncode}): {p.stdout.strip()[:200]} {p.stderr.strip()[:200]}")
        run.verify(self.db)
        p = run.run(["sessions", self.db, "--json"])
        if p.returncode != 0:
            fail(f"sessions --json exited {p.returncode}: {p.stderr.strip()[:300]}")
        open_ = [s["id"] for s in json.loads(p.stdout) if s.get("status") == "open"]
        if open_:
            fail(f"sessions left open after the import: {open_[:5]}")
        remove_db(self.db)
        return info


class SchemaScenario(Scenario):
    """`editlog schema LOG apply --service CHANGED` on a log of --trees generated trees (the init baseline): the
    fixture service with a `Notes` field added to Trees, so the Trees projection table is reshaped (copied into a
    new table) in the transaction that records the `SchemaChanged` event.  After a kill: `verify` passes, and either
    none of the change is there (no new event, no Notes column, the schema in force the old one) or all of it (one
    `SchemaChanged` exactly as an uninterrupted apply's, the column, `schema --json` listing the field); re-running
    the apply finishes it (or, when it was complete, writes nothing), and a third writes nothing."""
    name = "schema"
    weight_short = 4
    weight_long = 100

    def __init__(self, ctx, chain=None):
        super().__init__(ctx)
        self.dir = os.path.join(ctx.work, "schema")
        os.makedirs(self.dir)
        self.outcomes = {"none": 0, "all": 0}
        fx = ctx.fx
        with open(fx.path / "service.json") as f:
            service = json.load(f)
        for layer in service["layers"]:
            if layer["name"] == "Trees":
                layer["fields"].append({"name": "Notes", "type": "esriFieldTypeString", "alias": "Notes", "length": 200,
                                        "nullable": True, "editable": True})
        self.changed = os.path.join(self.dir, "service-notes.json")
        with open(self.changed, "w") as f:
            json.dump(service, f)
        trees = os.path.join(self.dir, "Trees-big.json")
        with open(trees, "w") as f:
            json.dump(gen.generate_baseline_trees(fx, ctx.args.seed, ctx.args.trees), f, separators=(",", ":"))
        b = fx.path / "baseline"
        self.template = os.path.join(self.dir, "template.db")
        p = ctx.runner.run(["init", self.template, "--service", str(fx.path / "service.json"), "--webmap", str(fx.path / "webmap.json"),
                            "--rules", str(fx.path / "rules.json"), "--data", str(b / "Species.json"), str(b / "Neighborhoods.json"),
                            str(b / "Trees.json"), f"Trees={trees}", str(b / "Inspections.json")])
        if p.returncode != 0:
            raise SystemExit(f"crash-harness: cannot create the schema scenario's log: {p.stderr.strip()[:400]}")
        self.pre = snapshot(self.template)
        self.db = os.path.join(self.dir, "log.db")
        ref = os.path.join(self.dir, "ref.db")
        copy_db(self.template, ref)
        rc, _, err, dt = self.full_run(self.args(ref), ref)
        if rc != 0:
            raise SystemExit(f"crash-harness: reference schema apply failed ({rc}): {err.strip()[:400]}")
        self.ref_events = event_content(ref, after=len(self.pre))
        if [e[1] for e in self.ref_events] != ["SchemaChanged"]:
            raise SystemExit(f"crash-harness: the reference apply recorded {[e[1] for e in self.ref_events]}, not one SchemaChanged")
        remove_db(ref)
        ctx.note(f"schema reference: one SchemaChanged over {len(self.pre)} events in {dt:.2f}s")

    def args(self, db: str) -> list[str]:
        return ["schema", db, "apply", "--service", self.changed, "--actor", "crash-harness"]

    def typical(self) -> float:
        return median(self.durations, 3.0)

    def state(self, what: str) -> str:
        """'none' or 'all', checked: verify, the events, the Trees table's columns and `schema --json` agree."""
        self.ctx.runner.verify(self.db)
        now = snapshot(self.db)
        if now[:len(self.pre)] != self.pre:
            fail(f"{what}: the log's events before the apply changed or vanished")
        added = event_content(self.db, after=len(self.pre))
        c = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            column = any(r[1] == "Notes" for r in c.execute("PRAGMA table_info(p_layer_0)"))
        finally:
            c.close()
        p = self.ctx.runner.run(["schema", self.db, "--json"])
        if p.returncode != 0:
            fail(f"{what}: schema --json exited {p.returncode}: {p.stderr.strip()[:300]}")
        try:
            layers = json.loads(p.stdout).get("layers", [])
        except json.JSONDecodeError:
            fail(f"{what}: schema --json is not JSON: {p.stdout[:200]}")
        shown = any(f.get("name") == "Notes" for l in layers if l.get("name") == "Trees" for f in l.get("fields", []))
        if not added:
            if column or shown:
                fail(f"{what}: no SchemaChanged, but the Trees table has Notes ({column}) or the schema shows it ({shown}): half applied")
            return "none"
        if added != self.ref_events:
            fail(f"{what}: the change differs from an uninterrupted apply: {describe_diff(added, self.ref_events)}")
        if not column or not shown:
            fail(f"{what}: SchemaChanged recorded, but the Trees table has Notes: {column}, the schema shows it: {shown}: half applied")
        return "all"

    def iterate(self, it: int) -> dict:
        run = self.ctx.runner
        copy_db(self.template, self.db)
        info = self.kill(self.args(self.db), self.db)
        info["outcome"] = self.state("after the kill")
        if info["killed"]:
            self.outcomes[info["outcome"]] += 1
        if not info["killed"] and info["outcome"] != "all":
            fail("schema apply exited 0 but the change is not there")
        p = run.run(self.args(self.db))
        if p.returncode != 0:
            fail(f"re-running schema apply exited {p.returncode}: {p.stderr.strip()[:300]}")
        if self.state("after the re-run") != "all":
            fail("re-running schema apply did not finish the change")
        before = snapshot(self.db)
        p = run.run(self.args(self.db))
        if p.returncode != 0 or snapshot(self.db) != before:
            fail(f"a third schema apply exited {p.returncode} or wrote events: {p.stderr.strip()[:300]}")
        remove_db(self.db)
        return info


SCENARIO_CLASSES = {"record": RecordScenario, "rebuild": RebuildScenario, "init": InitScenario,
                    "export": ExportScenario, "import": ImportScenario, "schema": SchemaScenario}
# The scenarios that work on the record log (`ChainLog`), in one lane.
CHAIN_LANE = ("record", "rebuild", "export")


# ------------------------------------------------------------------------------------------

def default_editlog() -> str:
    return str(ROOT / ".build" / "debug" / "editlog")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Kill editlog with SIGKILL at random moments and check the log.",
                                 epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--short", action="store_true", help=f">= {SHORT_KILLS} kills (the CI mode; default)")
    mode.add_argument("--long", action="store_true", help=">= 1,000 kills")
    mode.add_argument("--kills", type=int, help="at least this many kills, split like --short")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--editlog", default=default_editlog(), help="the binary (default .build/debug/editlog)")
    ap.add_argument("--fixtures", default=str(gen.DEFAULT_FIXTURES))
    ap.add_argument("--sessions", type=int, help="sessions per generated script (short 200, long 300)")
    ap.add_argument("--chain", type=int, help="scripts per log before it is reset to the baseline (short 4, long 8)")
    ap.add_argument("--trees", type=int, help="trees in the generated init baseline (short 20000, long 50000)")
    ap.add_argument("--only", help="comma-separated scenarios to run (record,rebuild,export,init,import,schema)")
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
    names = [n for n in ("record", "rebuild", "export", "init", "import", "schema") if only is None or n in only]
    if not names:
        print("crash-harness: no scenario selected", file=sys.stderr)
        return 2
    # Kill quotas per scenario.
    weights = {n: (SCENARIO_CLASSES[n].weight_long if long_mode else SCENARIO_CLASSES[n].weight_short) for n in names}
    target = 1000 if long_mode else (a.kills or SHORT_KILLS)
    total_w = sum(weights.values())
    quota = {n: max(1, round(target * w / total_w)) for n, w in weights.items()}
    while sum(quota.values()) < target:
        quota[max(quota, key=lambda n: weights[n])] += 1
    # Lanes: the record/rebuild/export log and the init and import runs are independent; with --jobs 2
    # they run in parallel (each lane is sequential and seeded on its own).
    lanes = [[n for n in CHAIN_LANE if n in names], [n for n in ("init", "import", "schema") if n in names]]
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
        chain = ChainLog(ctx) if any(n in CHAIN_LANE for n in members) else None
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
        elif isinstance(s, (ImportScenario, SchemaScenario)):
            extra = f"; committed before the kill {s.outcomes['all']}, rolled back {s.outcomes['none']}"
        elif isinstance(s, ExportScenario):
            extra = (f"; bundle in place and recorded for the peer {s.outcomes['recorded']}, in place but not recorded "
                     f"{s.outcomes['complete']}, absent {s.outcomes['absent']}; stale .partial files: {s.partials_left}")
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
