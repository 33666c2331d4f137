#!/usr/bin/env python3
"""Tamper harness for EditLog (issue 3, "Tampering").

Builds one demo log (`editlog demo --db`), checkpoints its WAL, then on fresh copies changes
single bytes and checks that `editlog verify` notices and names the position, or that SQLite
refuses the file.

    python3 tools/tamper.py --short                  # 60 SQL + 60 file trials + the extra cases (CI)
    python3 tools/tamper.py --trials 200 --seed 3     # the default: 200 + 200
    python3 tools/tamper.py --editlog .build/release/editlog

Python 3.11, standard library only; deterministic from --seed (which rows, columns, bytes, bits,
offsets).

SQL mode (Python's sqlite3 on the copy): drop the append-only triggers, change ONE byte of ONE
column of ONE random row of `events` (any non-NULL column: one character of a text changed to
another printable one, one bit of a blob or of an integer flipped) or of `blobs` (mostly `data`,
one bit), re-create the triggers or not (both must be caught), then `editlog verify COPY --json`
must exit non-zero and, for an events change, name the changed row's position as
firstBadPosition (an earlier one is reported as "earlier", a later one or none fails).
Extra cases, each with and without the triggers re-created: delete the last event (also with
--expect-head), swap two payloads, delete a middle event, swap two events' positions, change a
projection row; then one-character changes of the SchemaDefined event at position 1 (which
`editlog` must decode before it can check anything), the append-only UPDATE trigger replaced by
a same-named no-op (`WHEN 0`), each log_meta value, and (informational, not counted)
truncate + `editlog rebuild`, which by design only `--expect-head` can notice.

File mode: flip one random byte at a random offset of the database file; `verify` must exit
non-zero, or SQLite must refuse the file (iterdump fails), or the logical content is unchanged
(iterdump of copy == original; excluded).  Anything else is a MISS (listed with offset, page,
the b-tree that owns the page and the first changed dump line).  Damage that leaves every table
row unchanged but breaks an index (integrity_check fails, quick_check may not) is reported on
its own line.

Prints `tamper: detection rate X% (detected D of C changes; E without logical change excluded)`
and `N passed, F failed`; exits 1 on any MISS or a position not named.
"""

from __future__ import annotations

import argparse
import importlib.util
import hashlib
import json
import os
import random
import shutil
import sqlite3
import string
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRIGGERS = ["events_append_only_update", "events_append_only_delete", "blobs_append_only_update", "blobs_append_only_delete",
            "blob_chunks_append_only_update", "blob_chunks_append_only_delete"]
# An attachment past the store's inline limit (4 MiB), so the log holds one blob in chunks (`blob_chunks`) too.
BIG_ATTACHMENT = 4 * 1024 * 1024 + 300_000
EVENT_COLUMNS = ["position", "id", "stream", "stream_version", "type", "payload", "actor", "device", "session", "cause",
                 "client_time", "recorded_time", "origin_log", "origin_position", "origin_hash", "hash"]
PRINTABLE = [c for c in string.printable if c not in "\t\n\r\x0b\x0c"]


def load_gen():
    """tools/gen-workload.py (its file name is not a module name)."""
    spec = importlib.util.spec_from_file_location("gen_workload", ROOT / "tools" / "gen-workload.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run(cmd: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)


class Verifier:
    def __init__(self, editlog: str, expect_head: str | None = None):
        self.editlog = editlog
        self.head = expect_head

    def __call__(self, db: str, expect_head: bool = False) -> dict:
        args = [self.editlog, "verify", db, "--json"] + (["--expect-head", self.head] if expect_head and self.head else [])
        p = run(args)
        try:
            report = json.loads(p.stdout) if p.stdout.strip() else None
        except json.JSONDecodeError:
            report = None
        return {"rc": p.returncode, "report": report, "stderr": p.stderr.strip(),
                "firstBad": (report or {}).get("firstBadPosition"),
                "problem": ((report or {}).get("problems") or [p.stderr.strip()])[0][:160] if (report or p.stderr.strip()) else ""}


def crashed(rc: int) -> bool:
    """A signal (negative code from subprocess) rather than an exit status."""
    return rc < 0


def connect(path: str) -> sqlite3.Connection:
    c = sqlite3.connect(path)
    c.isolation_level = None
    return c


def mutate_text(s: str, rng: random.Random) -> str:
    ascii_idx = [i for i, ch in enumerate(s) if ch in PRINTABLE]
    i = rng.choice(ascii_idx) if ascii_idx else rng.randrange(len(s))
    new = rng.choice([c for c in PRINTABLE if c != s[i]])
    return s[:i] + new + s[i + 1:]


def mutate_blob(b: bytes, rng: random.Random) -> bytes:
    a = bytearray(b)
    i = rng.randrange(len(a))
    a[i] ^= 1 << rng.randrange(8)
    return bytes(a)


def mutate_int(v: int, rng: random.Random) -> int:
    return v ^ (1 << rng.randrange(20))


def mutate(v, rng):
    if isinstance(v, str):
        return mutate_text(v, rng)
    if isinstance(v, bytes):
        return mutate_blob(v, rng)
    if isinstance(v, int):
        return mutate_int(v, rng)
    if isinstance(v, float):
        return v + 1.0
    raise TypeError(type(v))


def describe(v) -> str:
    if isinstance(v, bytes):
        return v.hex()[:40]
    return repr(v)[:60]


def dump_lines(path: str) -> list[str] | None:
    """iterdump of a copy, or None when SQLite refuses it."""
    try:
        c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        # Invalid UTF-8 (a flipped byte inside a text value) is a logical change, not a refusal.
        c.text_factory = lambda b: b.decode("utf-8", "surrogateescape")
        try:
            return list(c.iterdump())
        finally:
            c.close()
    except (sqlite3.DatabaseError, UnicodeDecodeError):   # e.g. "malformed database schema (<bad UTF-8>)"
        return None


def dump_diff(a: list[str], b: list[str]) -> str:
    """The first changed dump line, shown around the first differing character."""
    before, after = set(a), set(b)
    removed = [l for l in a if l not in after]
    added = [l for l in b if l not in before]
    if len(removed) == 1 and len(added) == 1:
        x, y = removed[0], added[0]
        i = next((k for k in range(min(len(x), len(y))) if x[k] != y[k]), min(len(x), len(y)))
        lo = max(0, i - 50)
        return f"{x[lo:i + 30]!r} -> {y[lo:i + 30]!r} (in: {x[:60]!r}…)"
    return f"{len(removed)} dump lines removed, {len(added)} added; first removed {removed[0][:120]!r}" if removed else \
        f"{len(added)} dump lines added; first {added[0][:120]!r}"


def integrity(path: str) -> str:
    try:
        c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            r = [row[0] for row in c.execute("PRAGMA integrity_check")]
        finally:
            c.close()
        return "ok" if r == ["ok"] else "; ".join(r[:2])[:200]
    except sqlite3.DatabaseError as e:
        return f"error: {e}"


class Harness:
    def __init__(self, args, work: str, editlog: str):
        self.args = args
        self.work = work
        self.rng = random.Random(f"tamper:{args.seed}")
        self.base = os.path.join(work, "demo.db")
        self.editlog = editlog
        self.results: list[dict] = []

    # -- setup ----------------------------------------------------------------------------

    def build(self):
        p = run([self.editlog, "demo", "--db", self.base, "--fixtures", self.args.fixtures, "--json"])
        if p.returncode != 0:
            raise SystemExit(f"tamper: editlog demo failed ({p.returncode}): {p.stderr.strip()[:400]}")
        self.add_big_attachment()
        c = connect(self.base)
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        c.close()
        for s in ("-wal", "-shm"):
            if os.path.exists(self.base + s):
                os.remove(self.base + s)
        v = Verifier(self.editlog)(self.base)
        if v["rc"] != 0:
            raise SystemExit(f"tamper: the untouched demo log does not verify: {v}")
        self.verify = Verifier(self.editlog, v["report"]["headHash"])
        self.head = v["report"]["headHash"]
        with open(self.base, "rb") as f:
            self.base_bytes = f.read()
        self.base_dump = dump_lines(self.base)
        c = sqlite3.connect(f"file:{self.base}?mode=ro", uri=True)
        self.n_events = c.execute("SELECT MAX(position) FROM events").fetchone()[0]
        self.n_blobs = c.execute("SELECT COUNT(*) FROM blobs").fetchone()[0]
        self.page_size = c.execute("PRAGMA page_size").fetchone()[0]
        self.page_owner = {}
        try:
            for name, pageno, ptype in c.execute("SELECT name, pageno, pagetype FROM dbstat"):
                self.page_owner[pageno] = f"{name} ({ptype})"
        except sqlite3.DatabaseError:
            pass
        self.trigger_sql = dict(c.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").fetchall())
        self.projection_tables = [r[0] for r in c.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'p\\_%' ESCAPE '\\' ORDER BY name")]
        c.close()
        print(f"tamper: demo log {len(self.base_bytes)} bytes, {self.n_events} events, {self.n_blobs} blobs, "
              f"{len(self.base_bytes) // self.page_size} pages; head {self.head[:16]}…", flush=True)

    def add_big_attachment(self):
        """A tree with a photo larger than the inline limit: its bytes are stored in chunks."""
        script = os.path.join(self.work, "big-attachment.ndjson")
        with open(script, "w") as f:
            f.write(load_gen().big_attachment_script(f"tamper:{self.args.seed}:big", BIG_ATTACHMENT,
                                                     "{7A3E0C11-5B2D-4E8F-9A61-00000000B16A}", "{7A3E0C11-5B2D-4E8F-9A61-00000000B16B}"))
        p = run([self.editlog, "record", self.base, script, "--actor", "surveyor"])
        if p.returncode != 0:
            raise SystemExit(f"tamper: recording the large attachment failed ({p.returncode}): {p.stderr.strip()[:400]}")
        os.remove(script)

    def copy(self, name: str) -> str:
        path = os.path.join(self.work, name)
        for s in ("", "-wal", "-shm"):
            if os.path.exists(path + s):
                os.remove(path + s)
        shutil.copyfile(self.base, path)
        return path

    # -- SQL mode -------------------------------------------------------------------------

    def drop_triggers(self, c):
        for t in TRIGGERS:
            c.execute(f"DROP TRIGGER IF EXISTS {t}")

    def recreate_triggers(self, c):
        for t in TRIGGERS:
            c.execute(self.trigger_sql[t])

    def sql_change(self, c, rng) -> dict:
        """One byte of one column of one row (events or blobs)."""
        if rng.random() < 0.85:
            for _ in range(100):
                pos = rng.randint(1, self.n_events)
                col = rng.choice(EVENT_COLUMNS)
                old = c.execute(f"SELECT {col} FROM events WHERE position = ?", (pos,)).fetchone()[0]
                if old is None or (isinstance(old, (str, bytes)) and len(old) == 0):
                    continue
                new = mutate(old, rng)
                try:
                    c.execute(f"UPDATE events SET {col} = ? WHERE position = ?", (new, pos))
                except sqlite3.IntegrityError:
                    continue   # e.g. a position or stream version that collides: pick another change
                return {"table": "events", "position": pos, "column": col, "old": describe(old), "new": describe(new),
                        "expect": pos}
            raise RuntimeError("no mutable events cell found")
        if rng.random() < 0.3:
            # A chunk of the large attachment: its bytes, its number or the blob it belongs to.
            rows = c.execute("SELECT sha256, seq FROM blob_chunks ORDER BY sha256, seq").fetchall()
            key, seq = rng.choice(rows)
            r = rng.random()
            col = "data" if r < 0.8 else ("seq" if r < 0.9 else "sha256")
            old = c.execute(f"SELECT {col} FROM blob_chunks WHERE sha256 = ? AND seq = ?", (key, seq)).fetchone()[0]
            new = mutate(old, rng)
            try:
                c.execute(f"UPDATE blob_chunks SET {col} = ? WHERE sha256 = ? AND seq = ?", (new, key, seq))
            except sqlite3.IntegrityError:
                new = old  # a number another chunk has: the change is the chunk's bytes instead
                col = "data"
                old = c.execute("SELECT data FROM blob_chunks WHERE sha256 = ? AND seq = ?", (key, seq)).fetchone()[0]
                new = mutate(old, rng)
                c.execute("UPDATE blob_chunks SET data = ? WHERE sha256 = ? AND seq = ?", (new, key, seq))
            return {"table": "blobs", "key": f"{key.hex()[:16]} chunk {seq}", "column": col, "old": describe(old),
                    "new": describe(new), "expect": None}
        rows = c.execute("SELECT rowid_key FROM (SELECT sha256 AS rowid_key FROM blobs) ORDER BY rowid_key").fetchall()
        key = rng.choice(rows)[0]
        r = rng.random()
        col = "data" if r < 0.8 else ("size" if r < 0.9 else "sha256")
        old = c.execute(f"SELECT {col} FROM blobs WHERE sha256 = ?", (key,)).fetchone()[0]
        # A blob stored in chunks has empty `data`: the change gives it a byte.
        new = mutate(old, rng) if old != b"" else bytes([rng.randrange(256)])
        c.execute(f"UPDATE blobs SET {col} = ? WHERE sha256 = ?", (new, key))
        return {"table": "blobs", "key": key.hex()[:16], "column": col, "old": describe(old), "new": describe(new), "expect": None}

    def sql_trial(self, i: int):
        rng = random.Random(f"tamper:{self.args.seed}:sql:{i}")
        path = self.copy("sql.db")
        c = connect(path)
        self.drop_triggers(c)
        change = self.sql_change(c, rng)
        recreate = rng.random() < 0.5
        if recreate:
            self.recreate_triggers(c)
        c.close()
        self.judge_sql(f"sql#{i}", path, change, recreate)

    def judge_sql(self, name: str, path: str, change: dict, recreate: bool, expect_head: bool = False,
                  informational: bool = False):
        v = self.verify(path, expect_head=expect_head)
        res = {"mode": "sql", "name": name, "change": change, "triggers": "re-created" if recreate else "dropped",
               "rc": v["rc"], "firstBad": v["firstBad"], "problem": v["problem"], "informational": informational}
        if v["rc"] == 0:
            res["verdict"] = "passes verify (informational)" if informational else "MISSED"
        elif crashed(v["rc"]):
            res["verdict"] = "detected (verify crashed)"
        else:
            res["verdict"] = "detected"
        exp = change.get("expect")
        if v["rc"] != 0 and change.get("table") == "events" and exp is not None:
            fb = v["firstBad"]
            if fb is None:
                res["position"] = "not named"
            elif fb == exp:
                res["position"] = "exact"
            elif fb < exp:
                res["position"] = "earlier"
            else:
                res["position"] = "later"
        self.results.append(res)
        if self.args.verbose or res["verdict"] == "MISSED" or res.get("position") in ("not named", "later") or crashed(v["rc"]):
            print(f"  {name}: {self.fmt_change(change)} triggers {res['triggers']}: verify exit {v['rc']} "
                  f"firstBad={v['firstBad']} -> {res['verdict']}{' / position ' + res['position'] if 'position' in res else ''}"
                  f" ({v['problem'][:100]})", flush=True)

    @staticmethod
    def fmt_change(ch: dict) -> str:
        if ch.get("table") == "events" and "position" in ch:
            return f"events[{ch['position']}].{ch['column']} {ch['old']} -> {ch['new']}"
        if ch.get("table") == "blobs":
            return f"blobs[{ch['key']}].{ch['column']} {ch['old'][:20]} -> {ch['new'][:20]}"
        return ch.get("what", str(ch))

    def extra_cases(self):
        rng = random.Random(f"tamper:{self.args.seed}:extra")
        n = self.n_events
        for recreate in (True, False):
            tag = "re" if recreate else "dropped"
            # Delete the last event.
            path = self.copy("extra.db")
            c = connect(path)
            self.drop_triggers(c)
            c.execute("DELETE FROM events WHERE position = ?", (n,))
            if recreate:
                self.recreate_triggers(c)
            c.close()
            self.judge_sql(f"delete-last/{tag}", path, {"what": f"delete the last event ({n})", "table": "events-delete-last"}, recreate)
            self.judge_sql(f"delete-last/{tag}/expect-head", path, {"what": f"delete the last event ({n}), --expect-head", "table": "events-delete-last"},
                           recreate, expect_head=True)
            # Delete a middle event.
            path = self.copy("extra.db")
            pos = rng.randint(2, n - 1)
            c = connect(path)
            self.drop_triggers(c)
            c.execute("DELETE FROM events WHERE position = ?", (pos,))
            if recreate:
                self.recreate_triggers(c)
            c.close()
            self.judge_sql(f"delete-middle/{tag}", path, {"what": f"delete event {pos}", "table": "events", "expect": pos}, recreate)
            # Swap two payloads.
            path = self.copy("extra.db")
            c = connect(path)
            self.drop_triggers(c)
            while True:
                a, b = sorted(rng.sample(range(2, n + 1), 2))
                pa = c.execute("SELECT payload FROM events WHERE position = ?", (a,)).fetchone()[0]
                pb = c.execute("SELECT payload FROM events WHERE position = ?", (b,)).fetchone()[0]
                if pa != pb:
                    break
            c.execute("UPDATE events SET payload = ? WHERE position = ?", (pb, a))
            c.execute("UPDATE events SET payload = ? WHERE position = ?", (pa, b))
            if recreate:
                self.recreate_triggers(c)
            c.close()
            self.judge_sql(f"swap-payloads/{tag}", path, {"what": f"swap the payloads of {a} and {b}", "table": "events", "expect": a}, recreate)
            # Swap two whole rows' contents but keep positions (re-ordering two events).
            path = self.copy("extra.db")
            c = connect(path)
            self.drop_triggers(c)
            a = rng.randint(2, n - 1)
            cols = [x for x in EVENT_COLUMNS if x != "position"]
            ra = c.execute(f"SELECT {', '.join(cols)} FROM events WHERE position = ?", (a,)).fetchone()
            rb = c.execute(f"SELECT {', '.join(cols)} FROM events WHERE position = ?", (a + 1,)).fetchone()
            c.execute("UPDATE events SET position = -1 WHERE position = ?", (a,))
            c.execute("UPDATE events SET position = ? WHERE position = ?", (a, a + 1))
            c.execute("UPDATE events SET position = ? WHERE position = -1", (a + 1,))
            if recreate:
                self.recreate_triggers(c)
            c.close()
            self.judge_sql(f"reorder/{tag}", path, {"what": f"swap the positions of events {a} and {a + 1}", "table": "events", "expect": a}, recreate)
            # Change one byte of a projection row (projections must equal a rebuild).
            path = self.copy("extra.db")
            c = connect(path)
            for _ in range(100):
                t = rng.choice(self.projection_tables)
                cols = [r[1] for r in c.execute(f'PRAGMA table_info("{t}")')]
                rows = c.execute(f'SELECT rowid, * FROM "{t}"').fetchall()
                if not rows:
                    continue
                row = rng.choice(rows)
                choices = [(i, v) for i, v in enumerate(row[1:]) if v is not None and not (isinstance(v, (str, bytes)) and not v)]
                ci, old = rng.choice(choices)
                try:
                    c.execute(f'UPDATE "{t}" SET "{cols[ci]}" = ? WHERE rowid = ?', (mutate(old, rng), row[0]))
                except sqlite3.IntegrityError:
                    continue
                break
            c.close()
            self.judge_sql(f"projection/{tag}", path, {"what": f"{t}.{cols[ci]} of one row ({describe(old)})", "table": "projection"}, recreate)
        # The SchemaDefined event (position 1), which `editlog` decodes to open a log at all: random
        # one-character changes of its payload (1 in ~670 of the random trials would hit it) and a
        # targeted one that keeps the JSON valid but renames a layer.
        for k in range(5):
            path = self.copy("extra.db")
            c = connect(path)
            self.drop_triggers(c)
            old = c.execute("SELECT payload FROM events WHERE position = 1").fetchone()[0]
            if k == 0:
                new = old.replace('"name":"Trees"', '"name":"Treez"', 1)
                what = 'events[1].payload (SchemaDefined): layer name "Trees" -> "Treez" (valid JSON)'
            else:
                new = mutate_text(old, rng)
                i = next(j for j in range(len(old)) if old[j] != new[j])
                what = f"events[1].payload (SchemaDefined): char {i} {old[i]!r} -> {new[i]!r} (…{old[max(0, i - 25):i + 10]}…)"
            c.execute("UPDATE events SET payload = ? WHERE position = 1", (new,))
            if recreate_all := (k % 2 == 0):
                self.recreate_triggers(c)
            c.close()
            self.judge_sql(f"schema-event#{k}", path, {"what": what, "table": "events", "expect": 1}, recreate_all)
        # A trigger replaced by a no-op of the same name (the events stay untouched, so only the
        # trigger's definition tells): the append-only guarantee is gone.
        path = self.copy("extra.db")
        c = connect(path)
        c.execute("DROP TRIGGER events_append_only_update")
        c.execute("CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events WHEN 0 "
                  "BEGIN SELECT RAISE(ABORT, 'events are append-only: UPDATE is not allowed'); END")
        c.close()
        self.judge_sql("neutered-trigger", path, {"what": "events_append_only_update re-created with WHEN 0 (a no-op)", "table": "triggers"}, True)
        # log_meta values (not hashed into the chain; the file's identity), and an added key.
        path = self.copy("extra.db")
        c = connect(path)
        c.execute("INSERT INTO log_meta (key, value) VALUES ('created', '2000-01-01T00:00:00.000Z')")
        c.close()
        self.judge_sql("log_meta.added", path, {"what": "log_meta gains a key", "table": "log_meta"}, True)
        for key in ("log_id", "format"):
            path = self.copy("extra.db")
            c = connect(path)
            old = c.execute("SELECT value FROM log_meta WHERE key = ?", (key,)).fetchone()[0]
            new = mutate_text(old, rng) if key != "format" else str(int(old) + 1)
            c.execute("UPDATE log_meta SET value = ? WHERE key = ?", (new, key))
            c.close()
            self.judge_sql(f"log_meta.{key}", path, {"what": f"log_meta.{key} {old!r} -> {new!r}", "table": "log_meta"}, True)
        # Informational: truncate and rebuild the projections — only --expect-head can notice.
        path = self.copy("extra.db")
        c = connect(path)
        self.drop_triggers(c)
        c.execute("DELETE FROM events WHERE position = ?", (n,))
        self.recreate_triggers(c)
        c.close()
        p = run([self.editlog, "rebuild", path])
        self.judge_sql("truncate+rebuild", path, {"what": f"delete event {n} and `editlog rebuild` (no --expect-head)", "table": "truncate"},
                       True, informational=True)
        self.judge_sql("truncate+rebuild/expect-head", path, {"what": f"delete event {n} and `editlog rebuild`, --expect-head", "table": "truncate"},
                       True, expect_head=True)

    # -- File mode ------------------------------------------------------------------------

    def file_trial(self, i: int):
        rng = random.Random(f"tamper:{self.args.seed}:file:{i}")
        data = bytearray(self.base_bytes)
        off = rng.randrange(len(data))
        old = data[off]
        data[off] ^= rng.randint(1, 255)
        new = data[off]
        a = os.path.join(self.work, "file-a.db")
        b = os.path.join(self.work, "file-b.db")
        for p in (a, b):
            for s in ("", "-wal", "-shm"):
                if os.path.exists(p + s):
                    os.remove(p + s)
            with open(p, "wb") as f:
                f.write(data)
        v = self.verify(a)
        page = off // self.page_size + 1
        owner = "header" if off < 100 else self.page_owner.get(page, "free or unknown page")
        res = {"mode": "file", "name": f"file#{i}", "offset": off, "page": page, "owner": owner,
               "old": old, "new": new, "rc": v["rc"], "firstBad": v["firstBad"], "problem": v["problem"]}
        dump = dump_lines(b)
        if dump is None:
            res["logical"] = "refused"
            res["verdict"] = "refused by SQLite"
        elif dump == self.base_dump:
            res["logical"] = "unchanged"
            res["integrity"] = integrity(b)
            res["verdict"] = "no logical change"
        else:
            res["logical"] = "changed"
            res["diff"] = dump_diff(self.base_dump, dump)
            res["verdict"] = "MISSED" if v["rc"] == 0 else ("detected (verify crashed)" if crashed(v["rc"]) else "detected")
        if crashed(v["rc"]):
            res["crash"] = True
        self.results.append(res)
        if self.args.verbose or res["verdict"] == "MISSED" or res.get("crash"):
            print(f"  file#{i}: offset {off} (page {page}, {owner}) {old:#04x}->{new:#04x}: verify exit {v['rc']} "
                  f"firstBad={v['firstBad']} -> {res['verdict']} ({v['problem'][:100]})"
                  + (f"\n      changed: {res['diff']}" if res["verdict"] == "MISSED" else ""), flush=True)

    # -- report ---------------------------------------------------------------------------

    def report(self, elapsed: float) -> int:
        R = self.results
        counted = [r for r in R if not r.get("informational")]
        sql = [r for r in counted if r["mode"] == "sql"]
        files = [r for r in counted if r["mode"] == "file"]
        excluded = [r for r in files if r["verdict"] == "no logical change"]
        changes = [r for r in counted if r["verdict"] != "no logical change"]
        by_verify = [r for r in changes if r["verdict"].startswith("detected")]
        refused = [r for r in changes if r["verdict"] == "refused by SQLite"]
        missed = [r for r in changes if r["verdict"] == "MISSED"]
        pos_bad = [r for r in counted if r.get("position") in ("not named", "later")]
        crashes = [r for r in R if crashed(r["rc"])]

        print(f"SQL mode: {len(sql)} changes ({sum(1 for r in sql if r['name'].startswith('sql#'))} random single-byte, "
              f"{sum(1 for r in sql if not r['name'].startswith('sql#'))} extra cases): "
              f"{sum(1 for r in sql if r['verdict'].startswith('detected'))} detected by verify, "
              f"{sum(1 for r in sql if r['verdict'] == 'MISSED')} MISSED")
        ev = [r for r in sql if "position" in r]
        pc = Counter(r["position"] for r in ev)
        print(f"  events changes naming the position: exact {pc['exact']}, earlier {pc['earlier']}, "
              f"later {pc['later']}, not named {pc['not named']} (of {len(ev)})")
        cols = Counter(r["change"].get("column") for r in sql if r["name"].startswith("sql#"))
        print(f"  columns changed: {', '.join(f'{k} {v}' for k, v in sorted(cols.items(), key=lambda kv: str(kv[0])))}")
        trig = Counter(r["triggers"] for r in sql)
        print(f"  triggers re-created {trig['re-created']}, left dropped {trig['dropped']}")
        for r in sql:
            if not r["name"].startswith("sql#"):
                print(f"  {r['name']}: {r['change'].get('what', self.fmt_change(r['change']))}: exit {r['rc']}, firstBad {r['firstBad']} "
                      f"-> {r['verdict']}{' / ' + r['position'] if 'position' in r else ''} ({r['problem'][:90]})")
        for r in R:
            if r.get("informational"):
                print(f"  [info] {r['name']}: exit {r['rc']} -> {'passes verify' if r['rc'] == 0 else 'detected'} ({r['problem'][:90]})")
        refused_v = Counter("verify exit 0" if r["rc"] == 0 else f"verify exit {r['rc']}" for r in refused)
        print(f"File mode: {len(files)} flips: {sum(1 for r in files if r['verdict'].startswith('detected'))} detected by verify, "
              f"{len(refused)} refused by SQLite ({', '.join(f'{k}: {v}' for k, v in sorted(refused_v.items()))}), "
              f"{len(excluded)} without logical change (excluded), {sum(1 for r in files if r['verdict'] == 'MISSED')} MISSED")
        idx = [r for r in excluded if r.get("integrity") != "ok"]
        if idx:
            caught = sum(1 for r in idx if r["rc"] != 0)
            print(f"  of the excluded, {len(idx)} damaged only an index or unused structure (integrity_check fails, rows unchanged); "
                  f"verify flagged {caught}:")
            for r in idx[:10]:
                print(f"    offset {r['offset']} page {r['page']} ({r['owner']}): integrity_check {r['integrity'][:90]!r}; verify exit {r['rc']}")
        flagged_excluded = sum(1 for r in excluded if r["rc"] != 0)
        if excluded:
            print(f"  of the excluded, verify flagged {flagged_excluded} anyway")
        if crashes:
            print(f"verify CRASHED (killed by a signal) on {len(crashes)} inputs:")
            for r in crashes[:10]:
                print(f"    {r['name']}: signal {-r['rc']} {r.get('offset', '')} {r.get('owner', '')}")
        if missed:
            print(f"MISSED ({len(missed)}):")
            for r in missed:
                if r["mode"] == "file":
                    print(f"    {r['name']}: offset {r['offset']} page {r['page']} ({r['owner']}) {r['old']:#04x}->{r['new']:#04x}: "
                          f"{r['diff']}")
                else:
                    print(f"    {r['name']}: {r['change'].get('what', self.fmt_change(r['change']))} (triggers {r['triggers']})")
        if pos_bad:
            print(f"POSITION NOT NAMED ({len(pos_bad)}):")
            for r in pos_bad:
                print(f"    {r['name']}: {r['change'].get('what', self.fmt_change(r['change']))}: firstBad {r['firstBad']} "
                      f"(want {r['change'].get('expect')}); {r['problem'][:120]}")
        detected = len(by_verify) + len(refused)
        rate = 100.0 * detected / len(changes) if changes else 100.0
        print(f"tamper: seed {self.args.seed}, {len(R)} trials in {elapsed:.0f}s")
        print(f"tamper: detection rate {rate:.1f}% (detected {detected} of {len(changes)} changes; "
              f"{len(excluded)} without logical change excluded)")
        failed = {id(r) for r in missed} | {id(r) for r in pos_bad}
        print(f"{len(counted) - len(failed)} passed, {len(failed)} failed")
        return 1 if failed else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Change single bytes of an EditLog log and check that verify notices.",
                                 epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=200, help="trials per mode (SQL and file); default 200")
    ap.add_argument("--short", action="store_true", help="60 trials per mode (CI)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--editlog", default=str(ROOT / ".build" / "debug" / "editlog"))
    ap.add_argument("--fixtures", default=str(ROOT / "Fixtures" / "trees-of-portland"))
    ap.add_argument("--only", choices=["sql", "file", "extra"], help="run one part only")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--verbose", "-v", action="store_true")
    a = ap.parse_args(argv)
    if a.short:
        a.trials = 60
    if not os.access(a.editlog, os.X_OK):
        print(f"tamper: no executable at {a.editlog}; build it with `swift build --product editlog`", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    work = tempfile.mkdtemp(prefix="editlog-tamper-")
    binary = os.path.join(work, "editlog")
    shutil.copy2(a.editlog, binary)   # a concurrent `swift build` may replace the original
    with open(binary, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()[:16]
    print(f"tamper: seed {a.seed}, binary {a.editlog} (sha256 {sha}…), work dir {work}", flush=True)
    h = Harness(a, work, binary)
    h.build()
    if a.only in (None, "sql"):
        for i in range(a.trials):
            h.sql_trial(i)
    if a.only in (None, "extra"):
        h.extra_cases()
    if a.only in (None, "file"):
        for i in range(a.trials):
            h.file_trial(i)
    rc = h.report(time.monotonic() - t0)
    if a.keep or rc:
        print(f"tamper: work dir kept: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
