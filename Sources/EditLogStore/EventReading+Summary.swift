import EditLogCore
import Foundation
import GRDB

/// Reads of the events table the facade answers with: one stream's events, the end of the baseline, an event's
/// recorded time, the features changed since a position, counts by type, and where an import would append.
extension EventReading {
    /// Calls `body` for each event of one stream, in position order.
    public static func forEach(_ db: Database, stream: String, _ body: (RecordedEvent) throws -> Void) throws {
        try forEach(db, inStream: stream, body)
    }

    /// The WHERE term of the partial index `events_baseline` (`v5-baseline-index`), as its definition spells it: SQLite
    /// uses the index only for a query that repeats it (not with the types as bound parameters).
    static let baselineTerm = "type IN ('\(EventType.schemaDefined.rawValue)', '\(EventType.featureBaselined.rawValue)')"

    /// The position of the last event of the data the log was made from (its schema and baseline); 0 when it has none.
    /// One lookup in `events_baseline` (a log opened read-only before its first read-write open since that index came
    /// scans instead).
    public static func baselineEnd(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT MAX(position) FROM events WHERE \(baselineTerm)") ?? 0
    }

    /// The recorded time of the event at `position`, or nil when the log has none there.
    public static func recordedTime(_ db: Database, position: Int64) throws -> String? {
        try String.fetchOne(db, sql: "SELECT recorded_time FROM events WHERE position = ?", arguments: [position])
    }

    /// The features with an event after `position` other than those of the given causes and types, each once, in
    /// the order of its first such event (system streams, `$…`, are not features).
    public static func changedFeatures(_ db: Database, after position: Int64, excludingCauses causes: Set<String>,
                                       excludingTypes types: Set<EventType>) throws -> [(layer: Int, globalId: String)] {
        var seen = Set<String>()
        // A cursor, not every row at once: after a large pull most rows are excluded (sync-pull sessions).
        let rows = try Row.fetchCursor(db, sql: "SELECT stream, cause, type FROM events WHERE position > ? AND stream NOT LIKE '$%' ORDER BY position", arguments: [position])
        var out: [(layer: Int, globalId: String)] = []
        while let r = try rows.next() {
            let stream: String = r[0], cause: String = r[1], type: String = r[2]
            if causes.contains(cause) || EventType(rawValue: type).map(types.contains) == true { continue }
            guard let f = StreamName.parseFeature(stream), seen.insert(stream).inserted else { continue }
            out.append(f)
        }
        return out
    }

    /// Those of `streams` with an event after `position`: one lookup per stream in the (stream, stream_version) index.
    public static func streams(_ db: Database, among streams: some Sequence<String>, withEventsAfter position: Int64) throws -> Set<String> {
        let stmt = try db.cachedStatement(sql: "SELECT 1 FROM events WHERE stream = ? AND position > ? LIMIT 1")
        var out = Set<String>()
        for s in streams where !out.contains(s) {
            if try Int64.fetchOne(stmt, arguments: [s, position]) != nil { out.insert(s) }
        }
        return out
    }

    /// How many events the log holds of each type.
    public static func countsByType(_ db: Database) throws -> [(type: String, count: Int64)] {
        try Row.fetchAll(db, sql: "SELECT type, COUNT(*) FROM events GROUP BY type").map { (type: $0[0], count: $0[1]) }
    }

    /// A guesser of where an import appends events (`ChainGuesser`), from the log's last event and every stream's
    /// version; nil when the log is empty or holds more than `streamLimit` streams (their versions are held in memory
    /// for the whole import).
    public static func chainGuesser(_ db: Database, streamLimit: Int) throws -> ChainGuesser? {
        guard let head = try Row.fetchOne(db, sql: "SELECT position, hash FROM events ORDER BY position DESC LIMIT 1") else { return nil }
        var versions: [String: Int64] = [:]
        let rows = try Row.fetchCursor(db, sql: "SELECT stream, MAX(stream_version) FROM events GROUP BY stream LIMIT ?", arguments: [streamLimit + 1])
        while let row = try rows.next() { versions[row[0]] = row[1] }
        guard versions.count <= streamLimit else { return nil }
        return ChainGuesser(position: head[0], hash: [UInt8](head[1] as Data), streamVersions: versions)
    }
}

extension BlobReading {
    /// The bytes of every stored blob together.
    public static func totalBytes(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT COALESCE(SUM(size), 0) FROM blobs") ?? 0
    }
}
