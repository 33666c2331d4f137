import GRDB

/// Which statement a projection row is written with (`Projector.write`): the key its prepared statement is found by.
/// GRDB's statement cache and the row writer's hashed the SQL text per row, and a feature table's INSERT or UPDATE
/// names every column: about 5,600 instructions per feature row of an import (callgrind). A key hashes in a few
/// words. A layer's statements by key hold for one column layout (`LayerColumns`) only.
enum RowStatement: Hashable {
    case insertFeature(layer: Int)
    /// The UPDATE assigning the columns of `mask` (`LayerColumns.update(assigning:)`).
    case updateFeature(layer: Int, mask: [UInt64])
    case insertSession
    case updateSession

    /// The feature table's layer; nil for a session statement.
    var layer: Int? {
        switch self {
        case .insertFeature(let l), .updateFeature(let l, _): return l
        case .insertSession, .updateSession: return nil
        }
    }
}

/// The prepared statements of one run of row writes (a `writePending…` loop), by key. They stay prepared in GRDB's
/// cache, which nothing empties during the run; the layouts do not change within it.
struct StatementMemo {
    private var statements: [RowStatement: OpaquePointer] = [:]

    mutating func statement(_ key: RowStatement, sql: String, _ db: Database) throws -> OpaquePointer {
        if let s = statements[key] { return s }
        let s = try db.cachedStatement(sql: sql).sqliteStatement
        statements[key] = s
        return s
    }
}
