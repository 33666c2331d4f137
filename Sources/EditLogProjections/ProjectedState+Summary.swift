import EditLogCore
import GRDB

/// Figures and lookups of the projection tables the facade answers with: sessions by status and their actors, live
/// attachments, a recorded script, every GlobalID of a layer.
extension ProjectedState {
    /// How many sessions are in each status, by status.
    public func sessionCountsByStatus() throws -> [(status: String, count: Int64)] {
        try Row.fetchAll(db, sql: "SELECT status, COUNT(*) FROM p_sessions GROUP BY status ORDER BY status").map { (status: $0[0], count: $0[1]) }
    }

    /// Every actor of a session, in name order.
    public func sessionActors() throws -> [String] {
        try String.fetchAll(db, sql: "SELECT DISTINCT actor FROM p_sessions ORDER BY actor")
    }

    /// How many attachments are live (not detached, on any feature).
    public func liveAttachmentCount() throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT COUNT(*) FROM p_attachments WHERE deleted = 0") ?? 0
    }

    /// The position of the `ScriptRecorded` of a script by its SHA-256, or nil when it was never recorded. The projector
    /// writes a script's row as it applies the event, so a write unit's own scripts are found too.
    public func scriptPosition(sha256: String) throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT position FROM p_scripts WHERE sha256 = ?", arguments: [sha256])
    }

    /// Every GlobalID of a layer (deleted features too), in ObjectID order.
    public func globalIds(layer: Int) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT _globalid FROM \(ProjectionTables.featureTable(layer)) ORDER BY _oid")
    }
}

extension ProjectionTables {
    /// Drops every feature table (`p_layer_…`) but those named in `keep` (a replay written for some layers only).
    public static func dropLayerTables(_ db: Database, keeping keep: Set<String>) throws {
        for t in try all(db) where t.hasPrefix("p_layer_") && !keep.contains(t) { try db.execute(sql: "DROP TABLE \(t)") }
    }

    /// How many live features a feature table holds.
    public static func liveFeatureCount(_ db: Database, table: String) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table) WHERE _deleted = 0") ?? 0
    }
}
