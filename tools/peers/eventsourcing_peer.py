#!/usr/bin/env python3
"""The peer of `tools/bench --peers`: the Python `eventsourcing` library (pinned in requirements.txt)
with its SQLite persistence (PERSISTENCE_MODULE=eventsourcing.sqlite, a file database, an application
recorder with its notification log), appending the events described by a spec that editlog-bench wrote
from the log it just measured:

    {"scenario": "append-bulk", "types": ["FeatureEdited", ...],
     "transactions": [[[stream, version, type, payloadBytes], ...], ...]}

One aggregate per stream (EditLog's streams: one per feature, plus its own system streams), optimistic
versions (eventsourcing's unique (originator_id, originator_version)), one `Application.save` (one SQLite
transaction) per transaction of the spec, each event carrying its EditLog type name and a string payload
of the same byte size as the EditLog event's payload. Streams whose first event in the spec is not their
first (features of the base log) get their aggregate created and saved first, untimed. Aggregates stay in
memory (no repository reads): the peer does not re-read state as EditLog's validation does.

Durability: the same settings as an EditLog log, WAL (eventsourcing's default for files) and
synchronous=NORMAL (set on each connection; `--synchronous FULL` gives SQLite's default).

Prints one line: PEER-RESULT {"seconds": ..., "cpuSeconds": ..., "events": ..., ...}
"""
import argparse
import importlib.metadata
import json
import os
import random
import sqlite3
import string
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", required=True, help="the JSON spec editlog-bench wrote")
    ap.add_argument("--db", required=True, help="the SQLite file to create (removed first)")
    ap.add_argument("--synchronous", default="NORMAL", choices=["OFF", "NORMAL", "FULL"],
                    help="PRAGMA synchronous on every connection (default NORMAL, as an EditLog log)")
    args = ap.parse_args()

    with open(args.spec, encoding="utf-8") as f:
        spec = json.load(f)
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.remove(args.db + suffix)
        except FileNotFoundError:
            pass

    from eventsourcing import sqlite as es_sqlite
    from eventsourcing.application import Application
    from eventsourcing.domain import Aggregate, event

    create_connection = es_sqlite.SQLiteConnectionPool._create_connection

    def with_synchronous(self):
        conn = create_connection(self)
        conn._sqlite_conn.execute(f"PRAGMA synchronous = {args.synchronous}")
        return conn

    es_sqlite.SQLiteConnectionPool._create_connection = with_synchronous

    class Feature(Aggregate):
        @event("Created")
        def __init__(self, kind: str, data: str):
            pass

        @event("Changed")
        def change(self, kind: str, data: str):
            pass

    app = Application(env={
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": args.db,
        "IS_SNAPSHOTTING_ENABLED": "n",
    })

    types = spec["types"]
    transactions = spec["transactions"]
    rng = random.Random(4)
    longest = max((e[3] for t in transactions for e in t), default=0)
    filler = "".join(rng.choice(string.ascii_letters + string.digits + " ,:{}\"") for _ in range(longest + 1))

    # Streams that existed before the timed events: their aggregates first, untimed.
    aggregates = {}
    existing = []
    for txn in transactions:
        for s, v, _t, _n in txn:
            if s not in aggregates:
                aggregates[s] = None
                if v > 1:
                    existing.append(s)
    aggregates = {}
    for i in range(0, len(existing), 5000):
        chunk = []
        for s in existing[i:i + 5000]:
            a = Feature(kind="Existing", data="")
            aggregates[s] = a
            chunk.append(a)
        app.save(*chunk)
    before = app.recorder.max_notification_id() or 0

    events = 0
    payload_bytes = 0
    w0, c0 = time.perf_counter(), time.process_time()
    for txn in transactions:
        touched = {}
        for s, _v, t, n in txn:
            a = aggregates.get(s)
            if a is None:
                a = Feature(kind=types[t], data=filler[:n])
                aggregates[s] = a
            else:
                a.change(kind=types[t], data=filler[:n])
            touched[s] = a
            payload_bytes += n
        app.save(*touched.values())
        events += len(txn)
    seconds, cpu = time.perf_counter() - w0, time.process_time() - c0

    after = app.recorder.max_notification_id() or 0
    if after - before != events:
        print(f"eventsourcing_peer: notification log grew by {after - before}, expected {events}", file=sys.stderr)
        return 1
    app.close()
    result = {
        "peer": "eventsourcing", "version": importlib.metadata.version("eventsourcing"),
        "python": sys.version.split()[0], "sqlite": sqlite3.sqlite_version, "synchronous": args.synchronous,
        "seconds": seconds, "cpuSeconds": cpu, "events": events, "transactions": len(transactions),
        "payloadBytes": payload_bytes, "streams": len(aggregates), "preexistingStreams": len(existing),
    }
    print("PEER-RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
