import EditLogCore
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

/// What a replay did.
public struct ReplayOutcome: Sendable {
    /// Events 1...position were replayed.
    public var position: Int64
    /// The checkpoint the replay started from (0: from scratch).
    public var checkpoint: Int64
    /// `Projections.digest` of the replayed tables (every layer), when asked for (it reads every row again).
    public var digest: String?
    /// With `--by client`: events in the prefix whose client time is after the requested time.
    public var laterClientEvents: Int64 = 0
    /// Checkpoints that were present but could not be used (wrong log, changed bytes), with the reason.
    public var skippedCheckpoints: [String] = []
}

/// Materializes the projection tables as they were after event P.
public enum Replay {
    /// The position a moment names. A time selects the prefix up to the last position whose time (recorded,
    /// or client falling back to recorded) is at or before it; 0 when no event is. With `range`, the last such
    /// position in it (`MomentIndex` knows which block of positions holds it).
    public static func position(_ db: Database, _ point: LogMoment, by clock: EventClock, within range: ClosedRange<Int64>? = nil) throws -> Int64 {
        switch point {
        case .position(let p):
            return p
        case .time(let t):
            guard let range else {
                return try Int64.fetchOne(db, sql: "SELECT COALESCE(MAX(position), 0) FROM events WHERE \(clock.column) <= ?", arguments: [t]) ?? 0
            }
            return try Int64.fetchOne(db, sql: "SELECT COALESCE(MAX(position), 0) FROM events WHERE position BETWEEN ? AND ? AND \(clock.column) <= ?",
                                      arguments: [range.lowerBound, range.upperBound, t]) ?? 0
        }
    }

    /// The earliest time on `clock` of the events after `position` (stored form), nil when there are none: over the
    /// whole log, the earliest moment a replay by time can answer (the feature service's `startArchivingMoment`). Not
    /// the first event's: on the client clock a later event can carry an earlier time (an offline edit, a bundle), and
    /// `position(_:_:by:)` answers for every moment at or after the earliest.
    public static func startTime(_ db: Database, by clock: EventClock, after position: Int64 = 0) throws -> String? {
        try String.fetchOne(db, sql: "SELECT MIN(\(clock.column)) FROM events WHERE position > ?", arguments: [position])
    }

    /// Events at or before `position` whose client time (or recorded time) is after `time`.
    public static func laterClientEvents(_ db: Database, through position: Int64, time: String) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT COUNT(*) FROM events WHERE position <= ? AND COALESCE(client_time, recorded_time) > ?", arguments: [position, time]) ?? 0
    }

    /// The schema that applied after event `position` (this log's newest `SchemaDefined` at or before it).
    public static func schema(_ db: Database, atOrBefore position: Int64) throws -> ServiceSchema? {
        guard let e = try schemaEvent(db, atOrBefore: position) else { return nil }
        guard let defs = try e.body.schemaDefinitions else { throw e.corrupt("is not a schema event") }
        do { return try defs.decode() } catch {
            throw EditLogError(.corrupt, "the schema event cannot be decoded: \(error.message)", at: "position \(e.position)")
        }
    }

    /// This log's newest `SchemaDefined` event at or before `position` (its payload holds the service documents as given).
    public static func schemaEvent(_ db: Database, atOrBefore position: Int64) throws -> RecordedEvent? {
        try EventReading.ownSchemaEvent(db, atOrBefore: position)
    }

    /// Applies events `after+1 ... through` of `source` to `target`, whose projection tables hold the state
    /// after event `after` (empty when `after` is 0), with the same `Projector` a rebuild uses: `events` when the
    /// caller read them already (`events(_:after:through:)`), else read here. `progress` gets (events applied,
    /// events to apply) every 10,000 positions and at the end.
    public static func apply(_ source: Database, after: Int64, through: Int64, into target: Database, events given: [RecordedEvent]? = nil,
                             progress: ((Int64, Int64) -> Void)? = nil) throws {
        let projector = Projector(schema: after > 0 ? try schema(source, atOrBefore: after) : nil, logId: try EventStore.logId(in: source))
        // A merge decision is recorded just before its imported event: one at `after` still applies to the next.
        if let last = try event(source, at: after) { try projector.resume(after: last) }
        let total = through - after
        try projector.writingAside(to: target, readingFrom: source) {
            func one(_ e: RecordedEvent) throws {
                try projector.apply(e, target)
                if let progress, e.position % 10_000 == 0 { progress(e.position - after, total) }
            }
            if let given {
                for e in given { try one(e) }
            } else {
                try forEachEvent(source, after: after, through: through, one)
            }
            try projector.flush(target)
        }
        progress?(total, total)
    }

    /// Events `after+1 ... through` as a projector reads them (`forProjection`).
    static func forEachEvent(_ source: Database, after: Int64, through: Int64, _ body: (RecordedEvent) throws -> Void) throws {
        try EventReading.forEach(source, after: after, where: "position <= ?", arguments: [through], forProjection: true, body)
    }

    /// The event at `position`, as a projector reads it (nil at 0).
    static func event(_ source: Database, at position: Int64) throws -> RecordedEvent? {
        position > 0 ? try EventReading.first(source, where: "position = ?", arguments: [position]) : nil
    }

    /// A scratch SQLite file for a replay's state (derived data, removed or renamed afterwards): no journal, no
    /// fsync, a 16 MiB page cache. The state lives on disk so a replay's memory does not grow with the dataset.
    public static func openScratch(_ path: String) throws -> DatabaseQueue {
        _ = SQLiteSetup.applied
        var config = Configuration()
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -16384")
        }
        return try DatabaseQueue(path: path, configuration: config)
    }

    /// A replayed state opened read-only, for readers of a state that no longer changes.
    public static func openReadOnly(_ path: String) throws -> DatabaseQueue {
        _ = SQLiteSetup.applied
        var config = Configuration()
        config.readonly = true
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA cache_size = -16384") }
        return try DatabaseQueue(path: path, configuration: config)
    }

    public static func removeScratch(_ path: String) {
        for s in ["", "-journal", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + s) }
    }

    /// `.notFound` unless the log has an event at `position` (a state after it can be made).
    static func requireEvent(_ source: Database, at position: Int64) throws {
        let head = try EventReading.count(source)
        guard position >= 1 else { throw EditLogError(.notFound, "no event at or before that moment (the log starts at position 1)") }
        guard position <= head else { throw EditLogError(.notFound, "position \(position) is beyond the log's last event (\(head))") }
    }

    /// Replays events 1...`position` of the log `source` into a new SQLite file at `path` (replaced when present):
    /// a copy of the nearest usable checkpoint at or before `position` when `checkpoints` is given (its file, checked
    /// against the log and its digest), then the events after it. Returns the open state and what was done; the
    /// caller closes it and removes (or renames) the file.
    public static func materialize(_ source: Database, through position: Int64, file path: String, checkpoints: CheckpointStore?,
                                   digest wantDigest: Bool = true, progress: ((Int64, Int64) -> Void)? = nil) throws -> (DatabaseQueue, ReplayOutcome) {
        try requireEvent(source, at: position)
        var start: Int64 = 0
        var skipped: [String] = []
        removeScratch(path)
        if let checkpoints {
            for c in try checkpoints.list().reversed() where c.position <= position {
                if let problem = try checkpoints.copy(c, log: source, to: path) {
                    skipped.append("\(c.path): \(problem)")
                    removeScratch(path)
                    continue
                }
                start = c.position
                break
            }
        }
        let state = try openScratch(path)
        do {
            try state.write { db in try apply(source, after: start, through: position, into: db, progress: progress) }
            let digest = wantDigest ? try state.read { db in try Projections.digest(db).digest } : nil
            return (state, ReplayOutcome(position: position, checkpoint: start, digest: digest, skippedCheckpoints: skipped))
        } catch {
            try? state.close()
            removeScratch(path)
            throw error
        }
    }
}
