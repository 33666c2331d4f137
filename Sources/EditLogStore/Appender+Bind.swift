import EditLogCore
import Foundation
import GRDB
import GRDBSQLite

/// The event INSERT bound and stepped through SQLite's C API: the hot path of every append (GRDB's argument boxing
/// showed in `record`'s profile), with the same statement and the same constraint handling.
extension Appender {
    /// Inserts the row; false when a UNIQUE constraint fired (the caller finds out which), throws any other error.
    /// Texts and blobs are bound from `arena` (no copy by SQLite), which is reset with the statement.
    static func insertRow(_ statement: Statement, _ v: EventHash.Values, hash: [UInt8], db: Database, arena: BindArena) throws -> Bool {
        try insertRow(statement, position: v.position, id: v.id, stream: v.stream, streamVersion: v.streamVersion, type: v.type, payload: v.payload,
                      actor: v.actor, device: v.device, session: v.session, cause: v.cause, clientTime: v.clientTime, recordedTime: v.recordedTime,
                      originLog: v.originLog, originPosition: v.originPosition, originHash: v.originHash, hash: hash, db: db, arena: arena)
    }

    /// `insertRow(_:_:hash:db:arena:)` for an event of another log (`event`: its id, texts, times and origin), at this
    /// log's `position`, `streamVersion` and `hash`.
    static func insertRow(_ statement: Statement, event e: RecordedEvent, position: Int64, streamVersion: Int64, payload: [UInt8], hash: [UInt8],
                          db: Database, arena: BindArena) throws -> Bool {
        try insertRow(statement, position: position, id: e.id, stream: e.stream, streamVersion: streamVersion, type: e.type, payload: payload,
                      actor: e.actor, device: e.device, session: e.session, cause: e.cause, clientTime: e.clientTime, recordedTime: e.recordedTime,
                      originLog: e.origin.logId, originPosition: e.origin.position, originHash: e.origin.hash, hash: hash, db: db, arena: arena)
    }

    /// `insertRow(_:_:hash:db:arena:)` with each column given.
    static func insertRow(_ statement: Statement, position: Int64, id: UUID, stream: String, streamVersion: Int64, type: String, payload: [UInt8],
                          actor: String, device: String, session: String?, cause: String, clientTime: String?, recordedTime: String,
                          originLog: String, originPosition: Int64, originHash: [UInt8]?, hash: [UInt8], db: Database, arena: BindArena) throws -> Bool {
        let stmt = statement.sqliteStatement
        defer { sqlite3_reset(stmt); sqlite3_clear_bindings(stmt); arena.reset() }
        let b = RawBindings(stmt, arena: arena)
        b.bind(1, position)
        withUnsafeBytes(of: id.uuid) { b.bind(2, blob: $0) }
        b.bind(3, stream)
        b.bind(4, streamVersion)
        b.bind(5, type)
        payload.withUnsafeBufferPointer { b.bind(6, utf8: $0) }
        b.bind(7, actor)
        b.bind(8, device)
        b.bind(9, session)
        b.bind(10, cause)
        b.bind(11, clientTime)
        b.bind(12, recordedTime)
        b.bind(13, originLog)
        b.bind(14, originPosition)
        if let h = originHash { h.withUnsafeBytes { b.bind(15, blob: $0) } } else { sqlite3_bind_null(stmt, 15) }
        hash.withUnsafeBytes { b.bind(16, blob: $0) }
        let rc = sqlite3_step(stmt)
        if rc == SQLITE_DONE { return true }
        let extended = sqlite3_extended_errcode(db.sqliteConnection)
        if extended == 2067 /* SQLITE_CONSTRAINT_UNIQUE */ { return false }
        throw DatabaseError(resultCode: ResultCode(rawValue: extended), message: String(cString: sqlite3_errmsg(db.sqliteConnection)),
                            sql: statement.sql)
    }
}
