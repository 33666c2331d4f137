/// Which statement a projection row is written with (`Projector.write`): the key its prepared statement is found by.
/// GRDB's statement cache and the row writer's hashed the SQL text per row, and a feature table's INSERT or UPDATE
/// names every column, so hashing it was a large part of writing a row. A key hashes in a few words. A layer's statements by key hold for one column layout (`LayerColumns`) only.
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

/// Prepared statements by `RowStatement`: for one run of row writes (a `writePending…` loop, the statements kept in
/// GRDB's cache, which nothing empties during the run), or for the row writer's whole replay (its own statements,
/// a layer's keys forgotten when its layout changes).
struct StatementMemo {
    private var statements: [RowStatement: OpaquePointer] = [:]

    /// The statement of `key`, prepared by `prepare` the first time.
    mutating func statement(_ key: RowStatement, prepare: () throws -> OpaquePointer) rethrows -> OpaquePointer {
        if let s = statements[key] { return s }
        let s = try prepare()
        statements[key] = s
        return s
    }

    /// Forgets the statements of `layer`'s table (another column layout).
    mutating func forget(layer: Int) {
        statements = statements.filter { $0.key.layer != layer }
    }
}
