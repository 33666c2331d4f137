import EditLogCore
import Foundation
import GRDB
import GRDBSQLite

extension EventReading {
    /// The position of the event with this id, or nil: stepped through SQLite's C API on a cached statement (an
    /// import asks it for every event it reads, to skip the ones this log already holds).
    public static func position(ofEventId id: UUID, _ db: Database) throws -> Int64? {
        let statement = try db.cachedStatement(sql: "SELECT position FROM events WHERE id = ?")
        let stmt = statement.sqliteStatement
        defer { sqlite3_reset(stmt); sqlite3_clear_bindings(stmt) }
        withUnsafeBytes(of: id.uuid) { RawBindings(stmt).bind(1, blob: $0) }
        let rc = sqlite3_step(stmt)
        if rc == SQLITE_DONE { return nil }
        guard rc == SQLITE_ROW else { throw RawBindings.lastError(on: db.sqliteConnection, sql: statement.sql) }
        return sqlite3_column_int64(stmt, 0)
    }
}
