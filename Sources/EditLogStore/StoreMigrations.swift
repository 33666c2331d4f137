import GRDB

/// The store's migrations. Shipped migrations are never edited: a change is a new migration.
enum StoreMigrations {
    /// SQLite `application_id` of an EditLog log ('EDLG').
    static let applicationId: Int32 = 0x4544_4C47

    /// Migrations a log may lack and still be opened read-only (read where it may not be written): each only adds a
    /// table that no read of a log without it needs (a log before `v3-blob-chunks` holds no chunked blob), an index
    /// only writes use, or an index whose reads scan the table without it (`v5-baseline-index`).
    static let readableWhilePending: Set<String> = ["v3-blob-chunks", "v4-cascade-index", "v5-baseline-index"]

    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("v1-events") { db in
            try db.execute(sql: """
                CREATE TABLE log_meta (
                    key   TEXT PRIMARY KEY NOT NULL,
                    value TEXT NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE events (
                    position        INTEGER PRIMARY KEY,
                    id              BLOB    NOT NULL UNIQUE,
                    stream          TEXT    NOT NULL,
                    stream_version  INTEGER NOT NULL,
                    type            TEXT    NOT NULL,
                    payload         TEXT    NOT NULL,
                    actor           TEXT    NOT NULL,
                    device          TEXT    NOT NULL,
                    session         TEXT,
                    cause           TEXT    NOT NULL,
                    client_time     TEXT,
                    recorded_time   TEXT    NOT NULL,
                    origin_log      TEXT    NOT NULL,
                    origin_position INTEGER NOT NULL,
                    origin_hash     BLOB,
                    hash            BLOB    NOT NULL,
                    UNIQUE (stream, stream_version)
                );
                CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
                BEGIN SELECT RAISE(ABORT, 'events are append-only: UPDATE is not allowed'); END;
                CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
                BEGIN SELECT RAISE(ABORT, 'events are append-only: DELETE is not allowed'); END;
                CREATE TABLE blobs (
                    sha256 BLOB PRIMARY KEY NOT NULL,
                    size   INTEGER NOT NULL,
                    data   BLOB NOT NULL
                ) WITHOUT ROWID;
                CREATE TRIGGER blobs_append_only_update BEFORE UPDATE ON blobs
                BEGIN SELECT RAISE(ABORT, 'blobs are content-addressed: UPDATE is not allowed'); END;
                CREATE TRIGGER blobs_append_only_delete BEFORE DELETE ON blobs
                BEGIN SELECT RAISE(ABORT, 'blobs are content-addressed: DELETE is not allowed'); END;
                """)
        }
        // What `bundle export --peer` sent to whom, so the next `--since last-export:<peer>` starts there. Not part of
        // the chain: a record of deliveries, like the checkpoints; losing it only means the next export says --since.
        m.registerMigration("v2-bundle-exports") { db in
            try db.execute(sql: """
                CREATE TABLE bundle_exports (
                    id            INTEGER PRIMARY KEY,
                    peer          TEXT    NOT NULL,
                    from_position INTEGER NOT NULL,
                    to_position   INTEGER NOT NULL,
                    bundle_sha256 TEXT    NOT NULL,
                    created_at    TEXT    NOT NULL
                );
                CREATE INDEX bundle_exports_peer ON bundle_exports(peer, id);
                """)
        }
        // Attachments larger than `BlobStorage.inlineLimit`: their `blobs` row holds the size and empty `data`, their
        // bytes are here in `BlobStorage.chunkBytes` pieces numbered from 0, so that no import, export or verify holds
        // a whole large attachment (SQLite cannot write a row of a WITHOUT ROWID table piece by piece).
        m.registerMigration("v3-blob-chunks") { db in
            try db.execute(sql: """
                CREATE TABLE blob_chunks (
                    sha256 BLOB    NOT NULL,
                    seq    INTEGER NOT NULL,
                    data   BLOB    NOT NULL,
                    PRIMARY KEY (sha256, seq)
                );
                CREATE TRIGGER blob_chunks_append_only_update BEFORE UPDATE ON blob_chunks
                BEGIN SELECT RAISE(ABORT, 'blobs are content-addressed: UPDATE is not allowed'); END;
                CREATE TRIGGER blob_chunks_append_only_delete BEFORE DELETE ON blob_chunks
                BEGIN SELECT RAISE(ABORT, 'blobs are content-addressed: DELETE is not allowed'); END;
                """)
        }
        // The deletes a parent's delete took along (cause `cascade:<GlobalID>`), by parent: an import that revives a
        // parent, or deletes again one it kept, finds each of them whatever key the record has held since
        // (`Importer.cascadedStreams`). Partial: only cascaded deletes are in it, so another event's append costs one
        // comparison. Queries must repeat its WHERE term for SQLite to use it.
        m.registerMigration("v4-cascade-index") { db in
            try db.execute(sql: "CREATE INDEX events_cascade ON events(cause) WHERE cause GLOB 'cascade:*'")
        }
        // The events of the data a log was made from (its schema and baseline, its own or imported), by position: the
        // end of the baseline (`EventReading.baselineEnd`, read by every report and sync) is one index lookup instead
        // of a scan of the whole log. Partial, as `events_cascade`; `baselineTerm` repeats its WHERE term.
        m.registerMigration("v5-baseline-index") { db in
            try db.execute(sql: "CREATE INDEX events_baseline ON events(position) WHERE type IN ('SchemaDefined', 'FeatureBaselined')")
        }
        return m
    }
}
