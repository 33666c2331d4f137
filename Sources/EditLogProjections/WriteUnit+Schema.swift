import EditLogCore
import EditLogMerge
import EditLogStore
import Foundation
import GRDB

/// A change of a log's schema, planned against the schema in force: the one place a `SchemaChanged` event is made
/// (`EditLog.changeSchema` for sync and `schema apply`, an import that adopts what a bundle's events need).
public struct SchemaChangePlan {
    /// The new schema (the log's pop-ups with what the change adds, its rules as they are).
    public var schema: ServiceSchema
    /// What it changes (empty: the definitions are the log's already, nothing to record).
    public var changes: [SchemaChange]
    /// Local values the change cannot keep as they were (recorded in the event).
    public var conflicts: [Conflict]
    /// The `SchemaChanged` event's body: the whole new definitions, the changes, conflicts and source (nil: no change).
    public var event: SchemaChanged?

    /// Plans definitions `service` (ArcGIS REST documents, as `init` takes them) as the schema after `old`, the one in
    /// force in `db` (this log's newest own schema event gives the web map and rules, which stay). Refuses a change that
    /// would lose data (`refuseDataLoss`) with nothing written. `conflicts` names the local values the change cannot keep.
    public static func make(_ db: Database, service: [(name: String, json: JSONValue)], source: String?, old: ServiceSchema, world: ProjectedState,
                            ids: any IDGenerator,
                            conflicts: (_ old: ServiceSchema, _ changes: [SchemaChange], _ world: ProjectedState, _ ids: any IDGenerator) throws -> [Conflict])
        throws -> SchemaChangePlan {
        guard let current = try EventReading.ownSchemaEvent(db) else { throw EditLogError(.corrupt, "the log has no schema event") }
        guard let defs = try current.body.schemaDefinitions else { throw current.corrupt("is not a schema event") }
        let webmap = defs.webmap, rules = defs.rules
        let first = try decodeDefinitions(service, webmap: webmap, rules: rules, source: source)
        let changes = old.changes(to: first)
        guard !changes.isEmpty else { return SchemaChangePlan(schema: first, changes: [], conflicts: [], event: nil) }
        // What the change adds joins the pop-ups (`WebMapEdits`), so the new schema is decoded with them.
        let popups = WebMapEdits.adding(changes, of: first, to: webmap)
        let new = try decodeDefinitions(service, webmap: popups, rules: rules, source: source)
        try refuseDataLoss(changes, old: old, world: world, source: source)
        let found = try conflicts(old, changes, world, ids)
        let event = SchemaChanged(SchemaDefinitions(service: service, webmap: popups, rules: rules), changes: changes, conflicts: found, source: source)
        return SchemaChangePlan(schema: new, changes: changes, conflicts: found, event: event)
    }

    static func decodeDefinitions(_ service: [(name: String, json: JSONValue)], webmap: JSONValue?, rules: JSONValue?, source: String?) throws(EditLogError) -> ServiceSchema {
        do { return try ArcGISSchemaDecoder.decode(service: service, webmap: webmap, rules: rules) } catch {
            throw EditLogError(.invalidInput, "the new definitions cannot be this log's schema, whose web map and rules stay as they are: \(error.message)", at: source)
        }
    }

    /// Refuses a change whose values could not be kept: a type changed, a string narrowed below a value it holds.
    static func refuseDataLoss(_ changes: [SchemaChange], old: ServiceSchema, world: ProjectedState, source: String?) throws {
        for c in changes {
            guard let field = c.field, let layer = old.layer(id: c.layer), let f = layer.field(field) else { continue }
            let what = "\(c.layerName).\(field)"
            let advice = "nothing was recorded; make the change on the service a new field (and copy the values across there), or restore the old definition"
            if c.typeChanged {
                let holder = try world.firstLiveValue(layer: layer, field: f.name)
                throw EditLogError(.invalidInput, "field \(what): \(c.details[0]) would lose its values"
                                   + (holder.map { " (feature \($0.globalId) holds \($0.value.serialized()))" } ?? "") + "; \(advice)", at: source)
            }
            if let n = c.narrowedLength, let holder = try world.firstLiveValue(layer: layer, field: f.name, longerThan: n) {
                throw EditLogError(.invalidInput, "field \(what) would be narrowed to \(n) characters, but feature \(holder.globalId) holds "
                                   + "\(holder.value.stringValue?.count ?? 0): \(holder.value.serialized()); \(advice)", at: source)
            }
        }
    }
}

extension WriteUnit {
    /// Records definitions `service` as this log's schema when they differ from the one in force (`SchemaChangePlan`):
    /// one `SchemaChanged` event of `cause` in `context`, whose projection tables follow at once (the projector adopts
    /// it: `unit.schema` is the new one after). Returns the plan and the event (nil: nothing changed).
    @discardableResult
    public mutating func changeSchema(service: [(name: String, json: JSONValue)], cause: String, source: String?, context: EventContext,
                                      conflicts: (_ old: ServiceSchema, _ changes: [SchemaChange], _ world: ProjectedState, _ ids: any IDGenerator) throws -> [Conflict] = { _, _, _, _ in [] })
        throws -> (plan: SchemaChangePlan, event: RecordedEvent?) {
        let plan = try SchemaChangePlan.make(db, service: service, source: source, old: schema, world: world, ids: ids, conflicts: conflicts)
        guard let event = plan.event else { return (plan, nil) }
        let e = try emit(NewEvent(id: ids.next(), stream: StreamName.schema, body: event.body, context: context, session: nil, cause: cause))
        return (plan, e)
    }
}
