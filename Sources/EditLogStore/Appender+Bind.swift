import EditLogCore
import Foundation
import GRDB
import GRDBSQLite

/// The event INSERT bound and stepped through SQLite's C API: the hot path of every append (profiled at about a
/// tenth of `record` in GRDB's argument boxing), with the same statement and the same constraint handling.
extension Appender {
    /// SQLite copies the bytes before the call returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// Inserts the row; false when a UNIQUE constraint fired (the caller finds out which), throws any other error.
    static func insertRow(_ statement: Statement, _ v: EventHash.Values, hash: [UInt8], db: Database) throws -> Bool {
        let stmt = statement.sqliteStatement
        defer { sqlite3_reset(stmt); sqlite3_clear_bindings(stmt) }
        func text(_ i: Int32, _ s: String?) {
            guard var t = s else { sqlite3_bind_null(stmt, i); return }
            t.withUTF8 { b in
                _ = sqlite3_bind_text(stmt, i, UnsafeRawPointer(b.baseAddress ?? UnsafePointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self),
                                      Int32(b.count), transient)
            }
        }
        func blob(_ i: Int32, _ bytes: UnsafeRawBufferPointer) {
            _ = sqlite3_bind_blob(stmt, i, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, Int32(bytes.count), transient)
        }
        sqlite3_bind_int64(stmt, 1, v.position)
        withUnsafeBytes(of: v.id.uuid) { blob(2, $0) }
        text(3, v.stream)
        sqlite3_bind_int64(stmt, 4, v.streamVersion)
        text(5, v.type)
        v.payload.withUnsafeBufferPointer { b in
            _ = sqlite3_bind_text(stmt, 6, UnsafeRawPointer(b.baseAddress ?? UnsafePointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self),
                                  Int32(b.count), transient)
        }
        text(7, v.actor)
        text(8, v.device)
        text(9, v.session)
        text(10, v.cause)
        text(11, v.clientTime)
        text(12, v.recordedTime)
        text(13, v.originLog)
        sqlite3_bind_int64(stmt, 14, v.originPosition)
        if let h = v.originHash { h.withUnsafeBytes { blob(15, $0) } } else { sqlite3_bind_null(stmt, 15) }
        hash.withUnsafeBytes { blob(16, $0) }
        let rc = sqlite3_step(stmt)
        if rc == SQLITE_DONE { return true }
        let extended = sqlite3_extended_errcode(db.sqliteConnection)
        if extended == 2067 /* SQLITE_CONSTRAINT_UNIQUE */ { return false }
        throw DatabaseError(resultCode: ResultCode(rawValue: extended), message: String(cString: sqlite3_errmsg(db.sqliteConnection)),
                            sql: statement.sql)
    }
}
