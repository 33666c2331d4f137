import EditLogCore
import Foundation
import GRDB
import GRDBSQLite

extension EventReading {
    /// The position of the event with this id, or nil: stepped through SQLite's C API on a cached statement.
    public static func position(ofEventId id: UUID, _ db: Database) throws -> Int64? {
        try row(ofEventId: id, sql: "SELECT position FROM events WHERE id = ?", db) { sqlite3_column_int64($0, 0) }
    }

    /// Where the event with this id was first recorded (its own log, position and hash there: an event recorded
    /// here has its own), or nil when this log does not hold it. An import asks it for every event its id filter
    /// cannot rule out, to skip the ones this log already holds and refuse another event under a held id.
    public static func origin(ofEventId id: UUID, _ db: Database) throws -> EventOrigin? {
        try row(ofEventId: id, sql: "SELECT origin_log, origin_position, COALESCE(origin_hash, hash) FROM events WHERE id = ?", db) { stmt in
            let n = Int(sqlite3_column_bytes(stmt, 2))
            return EventOrigin(logId: sqlite3_column_text(stmt, 0).map { String(cString: $0) } ?? "", position: sqlite3_column_int64(stmt, 1),
                               hash: n == 0 ? [] : [UInt8](UnsafeRawBufferPointer(start: sqlite3_column_blob(stmt, 2), count: n)))
        }
    }

    /// Steps `sql` (one `?`: the id's 16 bytes) on a cached statement and reads its one row with `read`, or nil.
    private static func row<T>(ofEventId id: UUID, sql: String, _ db: Database, _ read: (OpaquePointer) -> T) throws -> T? {
        let statement = try db.cachedStatement(sql: sql)
        let stmt = statement.sqliteStatement
        defer { sqlite3_reset(stmt); sqlite3_clear_bindings(stmt) }
        withUnsafeBytes(of: id.uuid) { RawBindings(stmt).bind(1, blob: $0) }
        let rc = sqlite3_step(stmt)
        if rc == SQLITE_DONE { return nil }
        guard rc == SQLITE_ROW else { throw RawBindings.lastError(on: db.sqliteConnection, sql: statement.sql) }
        return read(stmt)
    }
}
