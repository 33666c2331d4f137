import EditLogAudit
import EditLogCore
import EditLogMerge
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

/// One schema of this log: the event that put it in force and what it changed.
public struct SchemaVersion: Sendable {
    public var position: Int64
    /// `SchemaDefined` (the log's first) or `SchemaChanged`.
    public var type: String
    public var cause: String
    public var actor: String
    public var device: String
    /// Client time when given, else the time it was recorded.
    public var time: String
    /// When this log recorded it.
    public var recordedTime: String
    public var schema: ServiceSchema
    /// What it changed from the schema before it (none for the first).
    public var changes: [SchemaChange]
    /// Where its definitions came from (a service URL or a file), when recorded.
    public var source: String?
    /// Local values the change could not keep as they were (`SchemaChanged` conflicts).
    public var conflicts: [Conflict]
}

/// What `changeSchema` did: nothing when the definitions are this log's already.
public struct SchemaUpdate: Sendable {
    public var changes: [SchemaChange]
    /// The `SchemaChanged` event's position (nil: nothing changed, or a dry run).
    public var position: Int64?
    public var conflicts: [Conflict]
}

extension EditLog {
    /// The schema in force now and the position of the event that put it in force (a change another handle or process
    /// recorded since included).
    public func schemaInForce() throws(EditLogError) -> (position: Int64, schema: ServiceSchema) {
        try read { _ in (schemaPosition, schema) }
    }

    /// This log's own schema events, oldest first (imported logs' schema events are records, not this log's schemas).
    public func schemaVersions() throws(EditLogError) -> [SchemaVersion] {
        let all = try read { db in try SchemaTimeline.all(db) }
        var versions: [SchemaVersion] = []
        for v in all {
            guard let e = v.event else { continue }
            var conflicts: [Conflict] = [], source: String?
            if case .schemaChanged(let c) = try e.body { conflicts = c.conflicts; source = c.source }
            versions.append(SchemaVersion(position: e.position, type: e.type, cause: e.cause, actor: e.actor, device: e.device,
                                          time: e.clientTime ?? e.recordedTime, recordedTime: e.recordedTime, schema: v.schema,
                                          changes: v.changes, source: source, conflicts: conflicts))
        }
        guard !versions.isEmpty else { throw EditLogError(.corrupt, "the log has no schema event", at: path) }
        return versions
    }

    /// The schema in force after event `position`: the newest of this log's schema events at or before it.
    public func schemaVersion(atOrBefore position: Int64) throws(EditLogError) -> SchemaVersion {
        let all = try schemaVersions()
        guard let v = all.last(where: { $0.position <= position }) else {
            throw EditLogError(.notFound, "no schema is in force at position \(position) (the log's first schema is at \(all[0].position))", at: path)
        }
        return v
    }

    /// Records definitions `service` (ArcGIS REST documents, as `init` takes them) as this log's schema when they differ
    /// from the one in force: one `SchemaChanged` event of `cause`, whose projection tables follow in the same
    /// transaction. The log's pop-ups and rules stay. A change that would lose data is refused with nothing written,
    /// naming the layer, the field and a feature: a field's type changed, a string narrowed below a value it holds.
    /// `conflicts` names the local values the change cannot keep (sync: local edits of a removed field, values outside
    /// a narrowed domain); they are recorded in the event, and `conflicts` lists them.
    public func changeSchema(service: [(name: String, json: JSONValue)], cause: String, source: String?, actor: String, device: String,
                             clientTime: String? = nil, dryRun: Bool = false,
                             conflicts: (_ old: ServiceSchema, _ changes: [SchemaChange], _ world: ProjectedState, _ ids: any IDGenerator) throws -> [Conflict] = { _, _, _, _ in [] })
        throws(EditLogError) -> SchemaUpdate {
        if dryRun {
            let plan = try read { db in
                try SchemaChangePlan.make(db, service: service, source: source, old: schema, world: ProjectedState(db: db, schema: schema), ids: ids, conflicts: conflicts)
            }
            return SchemaUpdate(changes: plan.changes, position: nil, conflicts: plan.conflicts)
        }
        return try write { unit in
            let (plan, e) = try unit.changeSchema(service: service, cause: cause, source: source,
                                                  context: EventContext(actor: actor, device: device, clientTime: clientTime), conflicts: conflicts)
            return SchemaUpdate(changes: plan.changes, position: e?.position, conflicts: e == nil ? [] : plan.conflicts)
        }
    }
}
