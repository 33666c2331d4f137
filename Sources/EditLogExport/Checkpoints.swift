import EditLogCore
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

/// One checkpoint: the projection tables as a rebuild of events 1...position gives them.
public struct Checkpoint: Sendable, Equatable {
    public var position: Int64
    public var path: String
}

/// Projection checkpoints of a log, in a sidecar folder `<log>.checkpoints/`: one SQLite file per checkpoint,
/// `<position, 12 digits>.sqlite`, holding the `p_*` tables exactly (definitions and rows) and a one-row
/// `checkpoint` table: position, log id, the hash of the event at that position, and `Projections.digest`.
/// Derived data like the projections: never in the hash-chained log, safe to delete at any time.
/// A checkpoint is used only when its log id and event hash match the log and its tables match its digest.
public struct CheckpointStore: Sendable {
    public let directory: String
    public let logId: String

    public init(logPath: String, logId: String) {
        directory = logPath + ".checkpoints"
        self.logId = logId
    }

    static func fileName(_ position: Int64) -> String {
        let digits = String(position)
        return String(repeating: "0", count: max(0, 12 - digits.count)) + digits + ".sqlite"
    }

    /// The checkpoint files present, by position.
    public func list() throws -> [Checkpoint] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.compactMap { name -> Checkpoint? in
            guard name.hasSuffix(".sqlite"), let p = Int64(name.dropLast(7)), p > 0 else { return nil }
            return Checkpoint(position: p, path: directory + "/" + name)
        }.sorted { $0.position < $1.position }
    }

    static func openFile(_ path: String, readonly: Bool) throws -> DatabaseQueue {
        _ = SQLiteSetup.applied
        var config = Configuration()
        config.readonly = readonly
        return try DatabaseQueue(path: path, configuration: config)
    }

    /// Checks an open checkpoint file against the log (position, log id, the event's hash) and its own digest:
    /// nil when usable, else why not.
    func check(_ c: Checkpoint, _ db: Database, log: Database, rows: Bool = true) throws -> String? {
        guard try db.tableExists("checkpoint"),
              let meta = try Row.fetchOne(db, sql: "SELECT position, log_id, event_hash, digest FROM checkpoint") else {
            return "has no checkpoint row"
        }
        guard (meta[0] as Int64) == c.position else { return "names position \(meta[0] as Int64), not \(c.position)" }
        guard (meta[1] as String) == logId else { return "belongs to log \(meta[1] as String)" }
        let hash = try Data.fetchOne(log, sql: "SELECT hash FROM events WHERE position = ?", arguments: [c.position])
        guard let hash, hash == (meta[2] as Data) else { return "the log's event \(c.position) is not the one the checkpoint was made after" }
        if rows, try Projections.digest(db).digest != (meta[3] as String) { return "its tables do not match its digest" }
        return nil
    }

    /// Checks a checkpoint where it is: nil when usable, else why not.
    public func check(_ c: Checkpoint, log: Database) throws -> String? {
        let file: DatabaseQueue
        do { file = try Self.openFile(c.path, readonly: true) } catch { return "cannot be opened (\(error))" }
        defer { try? file.close() }
        do { return try file.read { db in try check(c, db, log: log) } } catch { return "cannot be read (\(error))" }
    }

    /// Copies a checkpoint's file to `path` (a replay's scratch state), checks the copy, and drops its `checkpoint`
    /// table: nil when the copy holds the projection tables after event `c.position`, else why not (the caller
    /// removes the copy).
    public func copy(_ c: Checkpoint, log: Database, to path: String) throws -> String? {
        // With its fingerprint, the copy's bytes are checked as they are copied; without one, every row is.
        let recorded = Self.recordedHash(of: c.path)
        do {
            let copied = try Self.hashFile(c.path, copyingTo: path)
            if let recorded, recorded != copied { return "its bytes changed since it was written (SHA-256 \(copied), recorded \(recorded))" }
        } catch {
            return "cannot be copied (\(error))"
        }
        let state: DatabaseQueue
        do { state = try Replay.openScratch(path) } catch { return "cannot be opened (\(error))" }
        defer { try? state.close() }
        do {
            return try state.writeWithoutTransaction { db -> String? in
                if let problem = try check(c, db, log: log, rows: recorded == nil) { return problem }
                try db.execute(sql: "DROP TABLE checkpoint")
                return nil
            }
        } catch {
            return "cannot be read (\(error))"
        }
    }

    /// Writes a checkpoint of `state` (the projection tables after event `position` of `log`): a copy of its file
    /// (no transaction open) with the `checkpoint` row added.
    func write(_ state: DatabaseQueue, position: Int64, log: Database) throws -> Checkpoint {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/" + Self.fileName(position)
        let partial = path + ".partial-\(getpid())"
        Replay.removeScratch(partial)
        let digest = try state.read { db in try Projections.digest(db).digest }
        guard let hash = try Data.fetchOne(log, sql: "SELECT hash FROM events WHERE position = ?", arguments: [position]) else {
            throw EditLogError(.notFound, "no event at position \(position)")
        }
        do {
            try FileManager.default.copyItem(atPath: state.path, toPath: partial)
            let file = try Self.openFile(partial, readonly: false)
            do {
                try file.write { db in
                    try db.execute(sql: "CREATE TABLE checkpoint (position INTEGER NOT NULL, log_id TEXT NOT NULL, event_hash BLOB NOT NULL, digest TEXT NOT NULL)")
                    try db.execute(sql: "INSERT INTO checkpoint VALUES (?, ?, ?, ?)", arguments: [position, logId, hash, digest])
                }
                try file.close()
            } catch {
                try? file.close()
                throw error
            }
        } catch {
            Replay.removeScratch(partial)
            throw error
        }
        // The checkpoint, then its fingerprint: its hash, and the file's identity once in place (a crash between
        // leaves a checkpoint without one, which is checked row by row, never trusted blindly).
        let fileHash: String
        do { fileHash = try Self.hashFile(partial) } catch {
            Replay.removeScratch(partial)
            throw EditLogError.wrapping(error, at: partial)
        }
        try? FileManager.default.removeItem(atPath: Self.sidecar(path))
        if rename(partial, path) != 0 {
            throw EditLogError(.io, "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        try Self.writeFingerprint(fileHash, of: path)
        return Checkpoint(position: position, path: path)
    }

    /// Makes the missing checkpoints at every multiple of `every` up to the log's last event, incrementally:
    /// from the newest usable checkpoint below the first missing one, one pass over the events after it, the state
    /// in a scratch file beside the checkpoints. Returns the checkpoints written.
    @discardableResult
    public func create(log: Database, every: Int64) throws -> [Checkpoint] {
        guard every > 0 else { throw EditLogError(.invalidInput, "--every must be a positive number of events") }
        let head = try EventReading.count(log)
        guard head >= every else { return [] }
        let present = Set(try list().map(\.position))
        let wanted = stride(from: every, through: head, by: Int(every)).map { Int64($0) }
        guard let firstMissing = wanted.first(where: { !present.contains($0) }) else { return [] }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let scratch = directory + "/building-\(getpid()).state"
        Replay.removeScratch(scratch)
        defer { Replay.removeScratch(scratch) }
        var start: Int64 = 0
        for c in try list().reversed() where c.position < firstMissing {
            if try copy(c, log: log, to: scratch) == nil { start = c.position; break }
            Replay.removeScratch(scratch)
        }
        let state = try Replay.openScratch(scratch)
        defer { try? state.close() }
        var written: [Checkpoint] = []
        var at = start
        for p in wanted where p >= firstMissing {
            try state.write { db in try Replay.apply(log, after: at, through: p, into: db) }
            at = p
            if !present.contains(p) { written.append(try write(state, position: p, log: log)) }
        }
        return written
    }

    /// Checks every checkpoint (log id, event hash, digest): the problems found, one line each.
    public func verify(log: Database) throws -> [String] {
        var problems: [String] = []
        for c in try list() {
            if let p = try check(c, log: log) { problems.append("\(c.path): \(p)") }
        }
        return problems
    }
}
