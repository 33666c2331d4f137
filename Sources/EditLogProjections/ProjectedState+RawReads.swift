import EditLogCore
import EditLogStore
import Foundation
import GRDB
import GRDBSQLite

/// The decider's point reads (a feature by GlobalID, an open session of a feature) stepped through SQLite's C API:
/// every session of a `record` makes them, and GRDB's `Row` copied every column of a wide feature row into boxed
/// values first (it showed in `record`'s profile). Same statements, same results as the `Row` paths.
extension ProjectedState {
    /// Binds `text` to parameter `index`, steps once and hands the row (if any) to `body`; resets the statement.
    static func stepOnce<T>(_ statement: Statement, db: Database, binding texts: [String], ints: [(Int32, Int64)] = [],
                            _ body: (OpaquePointer) throws -> T) throws -> T? {
        let stmt = statement.sqliteStatement
        defer { sqlite3_reset(stmt); sqlite3_clear_bindings(stmt) }
        let b = RawBindings(stmt)
        for (i, t) in texts.enumerated() { b.bind(Int32(i + 1), t) }
        for (i, v) in ints { b.bind(i, v) }
        let rc = sqlite3_step(stmt)
        if rc == SQLITE_DONE { return nil }
        guard rc == SQLITE_ROW else { throw RawBindings.lastError(on: db.sqliteConnection, sql: statement.sql) }
        return try body(stmt)
    }

    static func text(_ stmt: OpaquePointer, _ i: Int32) -> String? {
        guard sqlite3_column_type(stmt, i) != SQLITE_NULL, let p = sqlite3_column_text(stmt, i) else { return nil }
        return String(decoding: UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(stmt, i))), as: UTF8.self)
    }

    /// A column as `jsonValue(_:)` gives it (blobs as base64).
    static func jsonColumn(_ stmt: OpaquePointer, _ i: Int32) -> JSONValue {
        switch sqlite3_column_type(stmt, i) {
        case SQLITE_NULL: return .null
        case SQLITE_INTEGER: return .int(sqlite3_column_int64(stmt, i))
        case SQLITE_FLOAT: return .double(sqlite3_column_double(stmt, i))
        case SQLITE_TEXT: return .string(text(stmt, i) ?? "")
        default:
            let n = Int(sqlite3_column_bytes(stmt, i))
            guard n > 0, let p = sqlite3_column_blob(stmt, i) else { return .string("") }
            return .string(Data(bytes: p, count: n).base64EncodedString())
        }
    }

    /// `snapshot(_:_:)` of the current row of `stmt` (a `SELECT *` of a feature table).
    func snapshot(_ layer: LayerSchema, stmt: OpaquePointer) throws -> FeatureSnapshot {
        let fields = layer.attributeFields
        var attrs: [String: JSONValue] = Dictionary(minimumCapacity: fields.count)
        for (i, f) in fields.enumerated() { attrs[f.name] = Self.jsonColumn(stmt, Int32(2 + i)) }
        let g = Int32(2 + fields.count)
        let globalId = Self.text(stmt, 1) ?? ""
        var geometry: JSONValue?
        if sqlite3_column_type(stmt, g) != SQLITE_NULL, let p = sqlite3_column_text(stmt, g) {
            do {
                geometry = try JSONParser.parse(buffer: UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(stmt, g))))
            } catch {
                throw EditLogError(.corrupt, "the projected geometry of \(layer.name) \(globalId) is not JSON (\(error.description)); the projection was altered: run `editlog rebuild`",
                                   at: "position \(sqlite3_column_int64(stmt, g + 12))")
            }
        }
        return FeatureSnapshot(layerId: layer.id, globalId: globalId, objectId: sqlite3_column_int64(stmt, 0), attributes: attrs,
                               geometry: geometry, deleted: sqlite3_column_int64(stmt, g + 10) != 0)
    }

    /// The session of the one row `statement` selects (`sessionColumns`), from the projector's memory when it holds it.
    func sessionRow(_ statement: Statement, binding texts: [String], ints: [(Int32, Int64)] = []) throws -> SessionState? {
        let found = try Self.stepOnce(statement, db: db, binding: texts, ints: ints) { stmt in
            (id: Self.text(stmt, 0) ?? "", state: Self.text(stmt, 1) ?? "", started: sqlite3_column_int64(stmt, 2))
        }
        guard let found else { return nil }
        if let s = projector?.openSessions[found.id] { return s }
        return try Self.decodeSession(state: found.state, startedPosition: found.started, id: found.id)
    }

    /// Every row of a `SELECT *` of a feature table whose arguments are set, as snapshots; resets the statement.
    func featureRows(_ layer: LayerSchema, _ statement: Statement) throws -> [FeatureSnapshot] {
        let stmt = statement.sqliteStatement
        defer { sqlite3_reset(stmt) }
        var out: [FeatureSnapshot] = []
        while true {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { return out }
            guard rc == SQLITE_ROW else { throw RawBindings.lastError(on: db.sqliteConnection, sql: statement.sql) }
            out.append(try snapshot(layer, stmt: stmt))
        }
    }
}
