import EditLogCore
import Foundation
import GRDB
import GRDBSQLite

/// The event INSERT bound and stepped through SQLite's C API: the hot path of every append (profiled at about a
/// tenth of `record` in GRDB's argument boxing), with the same statement and the same constraint handling.
extension Appender {
    /// Inserts the row; false when a UNIQUE constraint fired (the caller finds out which), throws any other error.
    /// Texts and blobs are bound from `arena` (no copy by SQLite), which is reset with the statement.
    static func insertRow(_ statement: Statement, _ v: EventHash.Values, hash: [UInt8], db: Database, arena: BindArena) throws -> Bool {
        let stmt = statement.sqliteStatement
        defer { sqlite3_reset(stmt); sqlite3_clear_bindings(stmt); arena.reset() }
        let b = RawBindings(stmt, arena: arena)
        b.bind(1, v.position)
        withUnsafeBytes(of: v.id.uuid) { b.bind(2, blob: $0) }
        b.bind(3, v.stream)
        b.bind(4, v.streamVersion)
        b.bind(5, v.type)
        v.payload.withUnsafeBufferPointer { b.bind(6, utf8: $0) }
        b.bind(7, v.actor)
        b.bind(8, v.device)
        b.bind(9, v.session)
        b.bind(10, v.cause)
        b.bind(11, v.clientTime)
        b.bind(12, v.recordedTime)
        b.bind(13, v.originLog)
        b.bind(14, v.originPosition)
        if let h = v.originHash { h.withUnsafeBytes { b.bind(15, blob: $0) } } else { sqlite3_bind_null(stmt, 15) }
        hash.withUnsafeBytes { b.bind(16, blob: $0) }
        let rc = sqlite3_step(stmt)
        if rc == SQLITE_DONE { return true }
        let extended = sqlite3_extended_errcode(db.sqliteConnection)
        if extended == 2067 /* SQLITE_CONSTRAINT_UNIQUE */ { return false }
        throw DatabaseError(resultCode: ResultCode(rawValue: extended), message: String(cString: sqlite3_errmsg(db.sqliteConnection)),
                            sql: statement.sql)
    }
}
