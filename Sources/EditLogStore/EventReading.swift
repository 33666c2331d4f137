import EditLogCore
import Foundation
import GRDB
import GRDBSQLite

/// Reading events back. Rows decode without Codable (the replay hot path).
public enum EventReading {
    public static let columns = """
        position, id, stream, stream_version, type, payload, actor, device, session, cause,
        client_time, recorded_time, origin_log, origin_position, origin_hash, hash
        """

    /// Calls `body` for each event in position order, from `after` on, streaming (never materializing the log).
    /// Rows are read straight from SQLite's column buffers (the replay hot path: no `Row`, no boxing).
    /// With `cached`, the statement is prepared once per connection (for a query run once per event, e.g. the
    /// importer's per-feature history); `body` must then not run the same query again while it is stepped.
    /// With `forProjection`, events are decoded for a `Projector` (`decode(_:forProjection:)`).
    public static func forEach(_ db: Database, after: Int64 = 0, where clause: String? = nil, arguments: StatementArguments = [],
                               cached: Bool = false, forProjection: Bool = false, _ body: (RecordedEvent) throws -> Void) throws {
        try forEach(db, after: after, where: clause, arguments: arguments, cached: cached, forProjection: forProjection, until: nil, body) { _ in }
    }

    /// The events of one stream (and of `clause`, if given) after `after`, in order, read along the stream's index:
    /// its versions grow with positions, so no sort is needed (ordered by position, SQLite sorts every selected row,
    /// payloads and all, in memory first: a long stream's whole size).
    public static func forEach(_ db: Database, inStream stream: String, after: Int64 = 0, where clause: String? = nil, arguments: StatementArguments = [],
                               _ body: (RecordedEvent) throws -> Void) throws {
        var args: StatementArguments = [stream, after]
        args += arguments
        try step(db, sql: inStreamSQL(clause), arguments: args) { row in
            try body(try decode(row))
            return true
        }
    }

    /// The statement of `forEach(_:inStream:…)`: a stream, a position, then `clause`'s parameters.
    static func inStreamSQL(_ clause: String?) -> String {
        "SELECT \(columns) FROM events WHERE stream = ? AND position > ?\(clause.map { " AND (\($0))" } ?? "") ORDER BY stream_version"
    }

    /// `forEach` that stops at the first event `until` selects: `stopped` gets it after the statement is done with
    /// (not passed to `body`), so the caller may change the schema before it reads on from there.
    public static func forEach(_ db: Database, after: Int64 = 0, where clause: String? = nil, arguments: StatementArguments = [],
                               cached: Bool = false, forProjection: Bool = false, until: ((RecordedEvent) -> Bool)?,
                               _ body: (RecordedEvent) throws -> Void, stopped: (RecordedEvent) throws -> Void) throws {
        let sql = "SELECT \(columns) FROM events WHERE position > ?\(clause.map { " AND (\($0))" } ?? "") ORDER BY position"
        var args: StatementArguments = [after]
        args += arguments
        var held: RecordedEvent?
        try step(db, sql: sql, arguments: args, cached: cached) { row in
            let e = try decode(row, forProjection: forProjection)
            if let until, until(e) { held = e; return false }
            try body(e)
            return true
        }
        if let held { try stopped(held) }
    }

    /// Steps a statement over `columns`, handing each row to `body` until it returns false. With `cached`, the
    /// statement comes from the connection's cache (and is reset after), so `body` must not run the same SQL.
    public static func step(_ db: Database, sql: String, arguments: StatementArguments, cached: Bool = false,
                            _ body: (StatementEventColumns) throws -> Bool) throws {
        let statement = cached ? try db.cachedStatement(sql: sql) : try db.makeStatement(sql: sql)
        try statement.setArguments(arguments)
        let stmt = statement.sqliteStatement
        defer { if cached { sqlite3_reset(stmt) } }
        let row = StatementEventColumns(stmt)
        while true {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw DatabaseError(resultCode: ResultCode(rawValue: rc), message: String(cString: sqlite3_errmsg(db.sqliteConnection))) }
            if try !body(row) { break }
        }
    }

    /// Decodes the current row of a statement over `columns`; `forProjection` leaves the hash, the origin hash and
    /// the stream empty, as no projection reads them (two allocations fewer per event in a rebuild).
    public static func decode(_ row: StatementEventColumns, forProjection: Bool = false) throws -> RecordedEvent {
        let position = row.integer(.position)
        func text(_ c: EventHash.Column) throws -> String {
            guard let b = row.bytes(c) else { throw EditLogError(.corrupt, "\(c.name) is NULL", at: "position \(position)") }
            return String(decoding: b, as: UTF8.self)
        }
        func optionalText(_ c: EventHash.Column) -> String? { row.bytes(c).map { String(decoding: $0, as: UTF8.self) } }
        guard let idBytes = row.bytes(.id), idBytes.count == 16 else {
            throw EditLogError(.corrupt, "event id is not 16 bytes", at: "position \(position)")
        }
        let id = UUID(uuid: idBytes.loadUnaligned(as: uuid_t.self))
        guard let payloadBytes = row.bytes(.payload) else { throw EditLogError(.corrupt, "payload is NULL", at: "position \(position)") }
        let payload: JSONValue
        do { payload = try JSONParser.parse(buffer: payloadBytes.bindMemory(to: UInt8.self)) } catch {
            throw EditLogError(.corrupt, "payload is not valid JSON (\(error.description))", at: "position \(position)")
        }
        guard let hashBytes = row.bytes(.hash) else { throw EditLogError(.corrupt, "hash is NULL", at: "position \(position)") }
        let hash = forProjection ? [] : [UInt8](hashBytes)
        let originHash = forProjection ? nil : row.bytes(.originHash).map { [UInt8]($0) }
        return RecordedEvent(
            position: position, id: id, stream: forProjection ? "" : try text(.stream), streamVersion: row.integer(.streamVersion), type: try text(.type),
            payload: payload, actor: try text(.actor), device: try text(.device), session: optionalText(.session), cause: try text(.cause),
            clientTime: optionalText(.clientTime), recordedTime: try text(.recordedTime),
            origin: EventOrigin(logId: try text(.originLog), position: row.integer(.originPosition), hash: originHash ?? hash), hash: hash)
    }

    /// The first (or, with `newest`, the last) event matching `clause`.
    public static func first(_ db: Database, where clause: String, arguments: StatementArguments = [], newest: Bool = false) throws -> RecordedEvent? {
        let sql = "SELECT \(columns) FROM events WHERE \(clause) ORDER BY position\(newest ? " DESC" : "") LIMIT 1"
        var found: RecordedEvent?
        try step(db, sql: sql, arguments: arguments) { found = try decode($0); return false }
        return found
    }

    public static func count(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT COALESCE(MAX(position), 0) FROM events") ?? 0
    }

    public static func blob(_ db: Database, sha256: String) throws -> [UInt8]? {
        guard let key = Hex.decode(sha256), key.count == 32 else { return nil }
        return try BlobReading.whole(db, sha256: key)
    }
}

/// The current row of a `SELECT \(EventReading.columns)` statement as the hash encoding's source: SQLite's
/// own column buffers, no `Row`, no `String`, no payload parsing (verify's hot path).
public struct StatementEventColumns: EventHash.Source {
    public let statement: OpaquePointer

    public init(_ statement: OpaquePointer) { self.statement = statement }

    @inline(__always)
    public func integer(_ column: EventHash.Column) -> Int64 { sqlite3_column_int64(statement, column.rawValue) }

    @inline(__always)
    public func withBytes<R>(_ column: EventHash.Column, _ body: (UnsafeRawBufferPointer?) -> R) -> R {
        body(bytes(column))
    }

    /// The column's bytes (text as UTF-8), nil for NULL. Valid until the statement steps again.
    @inline(__always)
    public func bytes(_ column: EventHash.Column) -> UnsafeRawBufferPointer? {
        let i = column.rawValue
        guard sqlite3_column_type(statement, i) != SQLITE_NULL else { return nil }
        let p = sqlite3_column_blob(statement, i)  // text columns come back as their UTF-8 bytes
        return UnsafeRawBufferPointer(start: p, count: Int(sqlite3_column_bytes(statement, i)))
    }
}
