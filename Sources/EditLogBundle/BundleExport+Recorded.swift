import EditLogCore
import GRDB

extension BundleExport {
    /// The exports recorded for a peer (`--peer`), oldest first: (from, to, bundle SHA-256, created at).
    public static func recorded(_ db: Database, peer: String) throws -> [(from: Int64, to: Int64, sha256: String, createdAt: String)] {
        try Row.fetchAll(db, sql: "SELECT from_position, to_position, bundle_sha256, created_at FROM bundle_exports WHERE peer = ? ORDER BY id",
                         arguments: [peer]).map { (from: $0[0], to: $0[1], sha256: $0[2], createdAt: $0[3]) }
    }
}
