import EditLogCore
import Foundation
import GRDB
import Synchronization

/// The append-only event log in one SQLite file (WAL). One facade over the database, as GRDB's
/// `DatabaseQueue` is: every write goes through `write`, in one IMMEDIATE transaction, so a
/// command either lands whole or not at all, also under `kill -9`.
/// Opened with `readers` (`open(at:readers:)`), the facade is GRDB's `DatabasePool` instead: reads from
/// several threads at once, each on a WAL reader connection of its own (at most `readers`).
public final class EventStore: Sendable {
    public let path: String
    /// A `DatabaseQueue` (one connection), or a read-only `DatabasePool` (`open(at:readers:)`).
    let database: any DatabaseWriter
    public let logId: String
    public let clock: any LogClock
    public let ids: any IDGenerator
    /// Head and stream versions of this process's last write, while no other connection writes.
    let appendCache = AppendCache()
    /// Stream-version entries this store's write transactions copied since it was opened: 0 when a transaction's
    /// cost does not grow with the log's streams (`StreamVersions`).
    public var streamVersionsCopied: Int { appendCache.copiedVersions.value }
    /// The gate writes pass before they commit (`setCommitGate`).
    let commitGate = Mutex<CommitGate?>(nil)

    public static let formatVersion = 1

    /// WAL is set once when the file is created (it persists in the file). Opening never asks for it again:
    /// GRDB makes WAL stick with a throwaway CREATE/DROP TABLE, which would change the file on every open.
    static func configuration(readonly: Bool, create: Bool = false) -> Configuration {
        _ = SQLiteSetup.applied
        var config = Configuration()
        config.journalMode = create ? .wal : .default
        config.busyMode = .timeout(60)
        config.readonly = readonly
        config.label = "EditLog"
        let trace = ProcessInfo.processInfo.environment["EDITLOG_TRACE_SQL"] != nil
        config.prepareDatabase { db in
            if trace { db.trace { FileHandle.standardError.write(Data("sql: \($0)\n".utf8)) } }
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            if !readonly { for pragma in writerSettings { try db.execute(sql: pragma) } }
        }
        return config
    }

    /// Settings of a writing connection (the benchmark's floors use them too):
    /// - a 16 MiB page cache instead of SQLite's 2 MiB: the decider's point reads, an import's duplicate checks and
    ///   the index updates touch pages all over a large log, and the default sent them to pread/pwrite;
    /// - a WAL checkpoint every 10,000 pages (about 40 MiB) instead of 1,000: one transaction per session rewrites
    ///   the same index pages over and over, and each checkpoint wrote them to the file again and fsynced
    ///   (synchronous=NORMAL: a commit itself never fsyncs, a checkpoint does).
    /// - `secure_delete = FAST` instead of the system SQLite's ON (Debian builds it with SECURE_DELETE): a freed page
    ///   is no longer written out as zeros, while deleted content inside a page still is. A log deletes no event; what
    ///   it frees is projection rows, which its events hold anyway (appends, imports and a rebuild's drop of the
    ///   projection tables are faster: `tools/BENCH-RESULTS.md`).
    /// The first two are bounded: 16 MiB more memory per writing connection, at most about 40 MiB of WAL between checkpoints.
    public static let writerSettings = ["PRAGMA cache_size = -\(writerCacheKiB)", "PRAGMA wal_autocheckpoint = 10000", "PRAGMA secure_delete = FAST"]
    /// The page cache of a writing connection, in KiB.
    public static let writerCacheKiB = 16_384

    private init(path: String, database: any DatabaseWriter, logId: String, clock: any LogClock, ids: any IDGenerator) {
        self.path = path; self.database = database; self.logId = logId; self.clock = clock; self.ids = ids
    }

    /// Creates a new log file. Fails if the file exists.
    public static func create(at path: String, logId: String? = nil, clock: any LogClock = SystemClock(), ids: (any IDGenerator)? = nil) throws(EditLogError) -> EventStore {
        if FileManager.default.fileExists(atPath: path) {
            throw EditLogError(.conflict, "\(path) already exists; EditLog never overwrites a log")
        }
        let ids = ids ?? UUIDv7Generator(clock: clock)
        let id = logId ?? ids.next().lowercasedString
        do {
            let q = try DatabaseQueue(path: path, configuration: configuration(readonly: false, create: true))
            try q.write { db in
                try db.execute(sql: "PRAGMA application_id = \(StoreMigrations.applicationId)")
            }
            try StoreMigrations.migrator.migrate(q)
            try q.write { db in
                // Nothing here that the chain does not cover: the log id is in every event's origin, and the
                // creation time is the first event's recording time.
                try db.execute(sql: "INSERT INTO log_meta(key, value) VALUES ('log_id', ?), ('format', ?)",
                               arguments: [id, String(formatVersion)])
            }
            return EventStore(path: path, database: q, logId: id, clock: clock, ids: ids)
        } catch {
            try? FileManager.default.removeItem(atPath: path)
            try? FileManager.default.removeItem(atPath: path + "-wal")
            try? FileManager.default.removeItem(atPath: path + "-shm")
            var e = EditLogError.wrapping(error, at: path)
            e.message = "cannot create the log: " + e.message
            throw e
        }
    }

    /// Opens an existing log, refusing files that are not EditLog logs or were written by a newer version.
    /// With `readers` > 0, read-only, as GRDB's `DatabasePool` of at most that many WAL readers: its reads may run
    /// on several threads at once (a server's), and a read waits for a reader only while all of them read.
    public static func open(at path: String, readonly: Bool = false, readers: Int = 0, clock: any LogClock = SystemClock(),
                            ids: (any IDGenerator)? = nil) throws(EditLogError) -> EventStore {
        guard FileManager.default.fileExists(atPath: path) else {
            throw EditLogError(.notFound, "no log at \(path); create one with `editlog init`")
        }
        let readonly = readonly || readers > 0
        do {
            let q: any DatabaseWriter
            if readers > 0 {
                var config = configuration(readonly: true)
                config.maximumReaderCount = readers
                q = try DatabasePool(path: path, configuration: config)
            } else {
                q = try DatabaseQueue(path: path, configuration: configuration(readonly: readonly))
            }
            let (appId, superseded, complete, logId, format) = try q.read { db in
                let appId = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
                let m = StoreMigrations.migrator
                let hasMeta = try db.tableExists("log_meta")
                return (appId, try m.hasBeenSuperseded(db), try m.hasCompletedMigrations(db),
                        hasMeta ? try String.fetchOne(db, sql: "SELECT value FROM log_meta WHERE key = 'log_id'") : nil,
                        hasMeta ? try String.fetchOne(db, sql: "SELECT value FROM log_meta WHERE key = 'format'").flatMap { Int($0) } : nil)
            }
            guard appId == StoreMigrations.applicationId, let logId else {
                throw EditLogError(.corrupt, "not an EditLog log (SQLite application_id is \(appId))", at: path)
            }
            if (format ?? 0) > formatVersion {
                throw EditLogError(.unsupported, "this log was written by a newer EditLog (format \(format ?? 0)); this build reads format \(formatVersion). Upgrade editlog.", at: path)
            }
            if superseded {
                throw EditLogError(.unsupported, "this log was migrated by a newer EditLog (it has store migrations this build does not know). Upgrade editlog.", at: path)
            }
            if !complete {
                if readonly {
                    // A log of an earlier version, read where it may not be written (an auditor's copy): fine when
                    // every migration it lacks only adds what its reads never need.
                    let m = StoreMigrations.migrator
                    let pending = Set(m.migrations).subtracting(try q.read { try m.appliedIdentifiers($0) })
                    if !pending.isSubset(of: StoreMigrations.readableWhilePending) {
                        throw EditLogError(.unsupported, "this log was written by an earlier EditLog and needs a migration (\(pending.sorted().joined(separator: ", "))); "
                                           + "open it once read-write (any writing command, e.g. `editlog rebuild`)", at: path)
                    }
                } else {
                    try StoreMigrations.migrator.migrate(q)
                }
            }
            let generator = ids ?? UUIDv7Generator(clock: clock)
            if let v7 = generator as? UUIDv7Generator, let newest = try q.read({ db in
                try Data.fetchOne(db, sql: "SELECT id FROM events ORDER BY id DESC LIMIT 1")  // the unique index: one seek
            }), newest.count == 16 {
                v7.advance(past: newest.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) })
            }
            return EventStore(path: path, database: q, logId: logId, clock: clock, ids: generator)
        } catch {
            throw EditLogError.wrapping(error, at: path)
        }
    }

    /// The DDL the migrations create (events, blobs, log_meta, their triggers and indexes), as `sqlite_master` holds it.
    /// `verify` compares a log's definitions with it: a dropped constraint or a neutered trigger is tampering too.
    /// With `applied` (the log's own `appliedMigrations`), only those migrations': a log of an earlier version read
    /// without being migrated (`StoreMigrations.readableWhilePending`) is checked against what it should hold.
    public static func expectedDefinitions(applied: Set<String>? = nil) throws -> [String: String] {
        let q = try DatabaseQueue()
        let m = StoreMigrations.migrator
        if let applied, let last = m.migrations.last(where: applied.contains) {
            try m.migrate(q, upTo: last)
        } else {
            try m.migrate(q)
        }
        return try q.read { db in try definitions(db) }
    }

    /// The identifiers of the store migrations a log has had.
    public static func appliedMigrations(_ db: Database) throws -> Set<String> {
        try StoreMigrations.migrator.appliedIdentifiers(db)
    }

    /// `sqlite_master` definitions (type and name to SQL) of the store's own objects (`.store`) or of the
    /// projections (`.projections`, every object on a `p_` table or on the change index, `derivedTables`).
    public enum DefinitionSet: Sendable { case store, projections }

    /// Tables derived from the events besides the `p_*` ones: the projection's change index (`ChangeIndex`).
    public static let derivedTables = ["change_index"]

    public static func definitions(_ db: Database, _ set: DefinitionSet = .store) throws -> [String: String] {
        let derived = derivedTables.map { "'\($0)'" }.joined(separator: ", ")
        let filter = set == .store ? "tbl_name NOT LIKE 'p\\_%' ESCAPE '\\' AND tbl_name NOT IN (\(derived)) AND name NOT LIKE 'sqlite\\_stat%' ESCAPE '\\'"
                                   : "(tbl_name LIKE 'p\\_%' ESCAPE '\\' OR tbl_name IN (\(derived)))"
        var out: [String: String] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT type, name, sql FROM sqlite_master WHERE \(filter)") {
            out["\(row[0] as String) \(row[1] as String)"] = (row[2] as String?) ?? ""
        }
        return out
    }

    /// The id of the log in `db` (nil for a database that is not a log).
    public static func logId(in db: Database) throws -> String? {
        guard try db.tableExists("log_meta") else { return nil }
        return try String.fetchOne(db, sql: "SELECT value FROM log_meta WHERE key = 'log_id'")
    }

    /// Removes `<path>.partial-<pid>` files left by an `init` that was killed (their process is gone).
    public static func removeStalePartials(of path: String) {
        let dir = (path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent
        let prefix = (path as NSString).lastPathComponent + ".partial-"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] where name.hasPrefix(prefix) {
            let rest = name.dropFirst(prefix.count).prefix { $0.isNumber }
            guard let pid = Int32(rest), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
            try? FileManager.default.removeItem(atPath: (dir as NSString).appendingPathComponent(name))
        }
    }

    /// One atomic write: an IMMEDIATE transaction, so concurrent writers queue (busy timeout) instead of failing.
    /// Every error comes out as an `EditLogError` (`wrapping`).
    public func write<T>(_ body: (Database, inout Appender) throws -> T) throws(EditLogError) -> T {
        try write(owning: { db, appender in
            var appender = consume appender
            let result = try body(db, &appender)
            return (result, appender)
        })
    }

    /// `write` for a unit of work that holds the transaction's appender (`WriteUnit`): `body` takes it and gives it
    /// back at the end, moved rather than copied (a copy would share the stream versions the appender took from
    /// `AppendCache`, and its first append would copy them all).
    /// `gated`: the write passes the commit gate, if one is set (`setCommitGate`).
    /// Inside a `group` (on its thread), the write is a savepoint of the group's transaction instead: its events are
    /// visible to the group's next writes, a failure rolls back this write alone, and the gate waits for the group's end.
    public func write<T>(gated: Bool = true, owning body: (Database, consuming Appender) throws -> (result: T, appender: Appender)) throws(EditLogError) -> T {
        do {
            // Reentrant only so that a group's writes reach its open transaction; outside a group it is the plain write.
            return try database.unsafeReentrantWrite { db in
                // Inside a group: a savepoint of its transaction, the gate passed at the group's end. What it appended
                // becomes the cached state at once, valid for the group's next write (`data_version` does not move
                // for this connection's own changes); a failed savepoint, or a group that rolls back, drops it.
                let grouped = db.isInsideTransaction
                var result: T?
                var snapshot: AppendCache.Snapshot?
                let step = { () throws -> Database.TransactionCompletion in
                    let start = try Appender(db: db, store: self)
                    let startHead = start.headPosition
                    // Moved, not copied: a copy alive at the body's first append would share the cached stream
                    // versions, and copy-on-write would then copy every stream's entry in every transaction.
                    let (r, appender) = try body(db, consume start)
                    if gated && !grouped { try self.passGate(db, after: startHead, head: appender.headPosition) }
                    result = r
                    snapshot = appender.snapshot
                    return .commit
                }
                do {
                    if grouped { try db.inSavepoint(step) } else { try db.inTransaction(.immediate, step) }
                } catch {
                    appendCache.drop()
                    throw error
                }
                // Committed: our own commit leaves data_version as it was, so the snapshot stays valid until
                // another connection writes.
                if let snapshot { appendCache.store(snapshot) }
                return result!
            }
        } catch {
            throw EditLogError.wrapping(error, at: path)
        }
    }

    /// Group commit: `body`'s writes of this store (`write`, `writeUnit`, `savepoint`, on this thread) share one
    /// IMMEDIATE transaction, each as a savepoint of it, and commit once at the end. The commit gate, if set, is
    /// passed once for every event the group appended, in position order (a hub node appends them in one call). A
    /// write that throws rolls back its own savepoint only (its caller sees the error; `body` goes on); `body`
    /// throwing, or the gate refusing, rolls back the whole group. Reads of this handle inside see the group's writes.
    public func group<T>(_ body: () throws -> T) throws(EditLogError) -> T {
        do {
            return try database.unsafeReentrantWrite { db in
                // A group inside a group is part of it.
                if db.isInsideTransaction { return try body() }
                var result: T?
                do {
                    try db.inTransaction(.immediate) {
                        let start = try Self.headPosition(db)
                        result = try body()
                        try passGate(db, after: start, head: try Self.headPosition(db))
                        return .commit
                    }
                } catch {
                    appendCache.drop()
                    throw error
                }
                return result!
            }
        } catch {
            throw EditLogError.wrapping(error, at: path)
        }
    }

    /// Runs `body` as one unit inside a group: its writes are undone together when it throws (the group goes on).
    /// Outside a group, `body` runs as it is (each of its writes its own transaction).
    public func savepoint<T>(_ body: () throws -> T) throws -> T {
        try database.unsafeReentrantWrite { db in
            guard db.isInsideTransaction else { return try body() }
            var result: T?
            do {
                try db.inSavepoint {
                    result = try body()
                    return .commit
                }
            } catch {
                appendCache.drop()
                throw error
            }
            return result!
        }
    }

    /// The log's last position as `db` sees it (one seek of the primary key).
    static func headPosition(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT position FROM events ORDER BY position DESC LIMIT 1") ?? 0
    }

    /// A read transaction (a consistent snapshot), rolled back at the end. Every error comes out as an `EditLogError`.
    ///
    /// Not GRDB's `read`: on a read-write connection it wraps each read in `PRAGMA query_only = 1` and `= 0`, and
    /// SQLite's flag pragmas expire every prepared statement of the connection, so every read compiled its cached
    /// statements again (in a sync's profile, most of it GRDB's authorizer walking the columns of `SELECT *` on a
    /// feature table). Rolling back keeps the read from leaving a write behind.
    public func read<T>(_ body: (Database) throws -> T) throws(EditLogError) -> T {
        do {
            // Reentrant for a read inside a group, which sees the group's writes (a savepoint rolled back at the end).
            return try database.unsafeReentrantRead { db in
                var result: T?
                let step = { () throws -> Database.TransactionCompletion in
                    result = try body(db)
                    return .rollback
                }
                if db.isInsideTransaction { try db.inSavepoint(step) } else { try db.inTransaction(.deferred, step) }
                return result!
            }
        } catch {
            throw EditLogError.wrapping(error, at: path)
        }
    }

    /// Runs `body` with a second, read-only connection to the log in a read transaction, so one thread can read the
    /// events while the store's own connection writes elsewhere (a rebuild reads events there and writes projections
    /// here). Called inside a write of this store, the snapshot is the log as last committed: the writer's own
    /// uncommitted changes are not in it. The connection is closed when `body` returns.
    public func withSecondReader<T>(_ body: (Database) throws -> T) throws -> T {
        let q = try DatabaseQueue(path: path, configuration: Self.configuration(readonly: true))
        defer { try? q.close() }
        return try q.read(body)
    }

    /// Sets this connection's WAL auto-checkpoint interval in pages (0: this connection never checkpoints on commit).
    public func setAutoCheckpoint(pages: Int) throws(EditLogError) {
        do { try database.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_autocheckpoint = \(max(0, pages))") } } catch {
            throw EditLogError.wrapping(error, at: path)
        }
    }


    /// A PASSIVE checkpoint on this connection: copies what it can of the WAL into the database file without waiting
    /// for readers or writers (they go on meanwhile).
    public func checkpointPassive() throws(EditLogError) {
        do { try database.writeWithoutTransaction { _ = try $0.checkpoint(.passive) } } catch { throw EditLogError.wrapping(error, at: path) }
    }

    /// Closes the connection; the store cannot be used afterwards.
    public func close() throws(EditLogError) {
        do { try database.close() } catch { throw EditLogError.wrapping(error, at: path) }
    }
}
