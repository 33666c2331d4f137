import Foundation
import GRDB
import GRDBSQLite

/// Parameters of a prepared statement bound through SQLite's C API, for the write hot paths (projection rows
/// in `record` and `rebuild`): GRDB's `StatementArguments` boxes every value and validates the count first, a
/// large part of the projector's row writes. Same statements, same SQLite types.
public struct RawBindings {
    let stmt: OpaquePointer
    /// Where texts and blobs are copied to be bound without SQLite's own copy (`BindArena`); nil: SQLite copies them.
    let arena: BindArena?
    /// SQLite copies the bytes before the bind call returns.
    static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    /// SQLite uses the bytes where they are, until the statement is reset or bound again.
    static let `static` = unsafeBitCast(0, to: sqlite3_destructor_type.self)

    /// Bindings of a prepared statement (`Statement.sqliteStatement`); the caller steps and resets it (and then
    /// resets `arena`, when given).
    public init(_ stmt: OpaquePointer, arena: BindArena? = nil) { self.stmt = stmt; self.arena = arena }

    public func bind(_ i: Int32, _ value: DatabaseValue) {
        switch value.storage {
        case .null: sqlite3_bind_null(stmt, i)
        case .int64(let v): sqlite3_bind_int64(stmt, i, v)
        case .double(let v): sqlite3_bind_double(stmt, i, v)
        case .string(let s): bind(i, s)
        case .blob(let d): d.withUnsafeBytes { bind(i, blob: $0) }
        }
    }

    public func bind(_ i: Int32, _ text: String?) {
        guard let text else { sqlite3_bind_null(stmt, i); return }
        bind(i, text)
    }

    /// A text that is never NULL. A native string's bytes are read where they are (`withUTF8`, which may make a
    /// bridged string native, only otherwise).
    public func bind(_ i: Int32, _ text: String) {
        if text.utf8.withContiguousStorageIfAvailable({ bind(i, utf8: $0) }) == nil {
            var t = text
            t.withUTF8 { bind(i, utf8: $0) }
        }
    }

    /// Text given as its UTF-8 bytes.
    public func bind(_ i: Int32, utf8 b: UnsafeBufferPointer<UInt8>) {
        if let arena {
            _ = sqlite3_bind_text(stmt, i, arena.copy(UnsafeRawBufferPointer(b)).assumingMemoryBound(to: CChar.self), Int32(b.count), Self.static)
        } else {
            _ = sqlite3_bind_text(stmt, i, UnsafeRawPointer(b.baseAddress ?? UnsafePointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self),
                                  Int32(b.count), Self.transient)
        }
    }

    public func bind(_ i: Int32, blob b: UnsafeRawBufferPointer) {
        if let arena {
            _ = sqlite3_bind_blob(stmt, i, arena.copy(b), Int32(b.count), Self.static)
        } else {
            _ = sqlite3_bind_blob(stmt, i, b.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, Int32(b.count), Self.transient)
        }
    }

    public func bind(_ i: Int32, _ value: Int64?) {
        if let value { sqlite3_bind_int64(stmt, i, value) } else { sqlite3_bind_null(stmt, i) }
    }

    public func bind(_ i: Int32, _ value: Int?) { bind(i, value.map(Int64.init)) }
}

extension Statement {
    /// Binds parameters with `body` (1-based, every parameter the SQL has), steps the statement once (an INSERT,
    /// UPDATE or DELETE: it returns no row) and resets it. A failure is GRDB's `DatabaseError` with SQLite's extended code, message and the SQL.
    public func executeRaw(_ db: Database, _ body: (RawBindings) -> Void) throws {
        try RawBindings.execute(sqliteStatement, on: db.sqliteConnection, sql: sql, body)
    }
}

extension RawBindings {
    /// Binds `stmt`'s parameters with `body`, steps it once (it returns no row) and resets it. A failure is
    /// GRDB's `DatabaseError` with SQLite's extended code and message, read from `connection`, and `sql`.
    /// With `arena`, texts and blobs are bound from it (no copy by SQLite) and it is reset with the statement.
    public static func execute(_ stmt: OpaquePointer, on connection: OpaquePointer?, sql: String, arena: BindArena? = nil,
                               _ body: (RawBindings) -> Void) throws {
        defer { sqlite3_reset(stmt); sqlite3_clear_bindings(stmt); arena?.reset() }
        body(RawBindings(stmt, arena: arena))
        let rc = sqlite3_step(stmt)
        guard rc == SQLITE_DONE else { throw lastError(on: connection, sql: sql) }
    }

    /// GRDB's `DatabaseError` for the last failure on `connection`: SQLite's extended code and message, and `sql`.
    public static func lastError(on connection: OpaquePointer?, sql: String) -> DatabaseError {
        DatabaseError(resultCode: ResultCode(rawValue: sqlite3_extended_errcode(connection)),
                      message: String(cString: sqlite3_errmsg(connection)), sql: sql)
    }
}
