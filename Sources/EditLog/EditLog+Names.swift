import EditLogAudit
import EditLogCore
import EditLogProjections

@_exported import struct EditLogAudit.EditCounts

extension EditLog {
    /// A feature's display value now (`Audit.displayValues`: its layer's `displayField`, a deleted feature's last value),
    /// as `history` shows a related record; nil when no layer holds the GlobalID, its layer has no display field, or the
    /// value is null.
    public func displayValue(of globalId: String) throws(EditLogError) -> String? {
        let g = try normalizeGlobalId(globalId)
        return try read { db in
            guard let layer = try ProjectedState(db: db, schema: schema).locate(globalId: g) else { return nil }
            return try Audit.displayValues(db, schema: schema, of: [(layer.id, g)])[g]
        }
    }
}
