import EditLogCore
import EditLogProjections
import Foundation

extension WriteUnit {
    /// After a change recorded in this log (a script's step, a resolution), in its transaction: a record that lived only
    /// because a feature it deleted (`deleted`) did goes again, and a parent kept for an orphan that nothing keeps any more
    /// (one its records pointed at before: `left`) is deleted again, as an import would (`Importer.release`), with the
    /// rules' values derived again after them. Elsewhere one cheap look (`Importer.mayRelease`) finds nothing to do.
    public mutating func release(deleted: [(layer: Int, globalId: String)], left: [(layer: Int, globalId: String)], context: EventContext) throws {
        guard let logId = projector.logId, try Importer.mayRelease(deleted: deleted, left: left, schema: schema, db: db) else { return }
        var importer = try Importer(schema: schema, policy: .lastInWins, ownLog: logId, context: context, source: "record")
        try importer.release(deleted: deleted, left: left, unit: &self)
    }
}

extension WriteUnit {
    /// The parents (by GlobalID key) a change of a record (a commit's or a resolution's `changes`) pointed it away from:
    /// the old values of the relationship keys it changed (`release`'s `left`).
    public static func parentsLeft(layer id: Int, changes: FieldChanges, schema: ServiceSchema) -> [(layer: Int, globalId: String)] {
        guard let layer = schema.layer(id: id), !changes.isEmpty else { return [] }
        var out: [(layer: Int, globalId: String)] = []
        for rel in layer.relationships where rel.role == .destination {
            guard let fk = layer.field(named: rel.keyField)?.name.lowercased(),
                  let old = changes.change(lowercased: fk)?.change.old.stringValue.flatMap(GlobalID.normalize),
                  let (parent, _) = schema.counterpart(of: rel, in: layer) else { continue }
            out.append((parent.id, old))
        }
        return out
    }
}
