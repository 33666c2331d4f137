import EditLogCore
import GRDB

extension EditLogError {
    /// The one mapping from what SQLite, GRDB or the file system threw to an `EditLogError` (and so to an
    /// exit code). An `EditLogError` passes through unchanged.
    public static func wrapping(_ error: any Error, at path: String) -> EditLogError {
        if let e = error as? EditLogError { return e }
        guard let e = error as? DatabaseError else { return EditLogError(.io, "\(error)", at: path) }
        let detail = e.message ?? "\(e.resultCode)"
        switch e.resultCode {
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return EditLogError(.conflict, "another process holds the log's write lock (SQLite: \(detail)); retry when it is done", at: path)
        case .SQLITE_CORRUPT, .SQLITE_NOTADB:
            return EditLogError(.corrupt, "SQLite cannot read the log: \(e.resultCode == .SQLITE_NOTADB ? "the file is not a database" : "the database is malformed") (\(detail))", at: path)
        default:
            return EditLogError(.io, "SQLite: \(detail)", at: path)
        }
    }
}
