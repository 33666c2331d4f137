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
        let events = try read { db in
            var out: [RecordedEvent] = []
            try EventReading.forEach(db, stream: StreamName.schema) { if $0.origin.logId == logId { out.append($0) } }
            return out
        }
        var versions: [SchemaVersion] = []
        for e in events {
            let s: ServiceSchema
            do { s = try Projector.decodeSchema(e.payload) } catch {
                throw EditLogError(.corrupt, "the schema event cannot be decoded: \(error.message)", at: "\(path): position \(e.position)")
            }
            var conflicts: [Conflict] = []
            for c in e.payload["conflicts"]?.arrayValue ?? [] {
                do { conflicts.append(try Conflict(json: c)) } catch { throw e.fields.corrupt(error.message) }
            }
            versions.append(SchemaVersion(position: e.position, type: e.type, cause: e.cause, actor: e.actor, device: e.device,
                                          time: e.clientTime ?? e.recordedTime, schema: s,
                                          changes: versions.last.map { $0.schema.changes(to: s) } ?? [],
                                          source: e.payload["source"]?.stringValue, conflicts: conflicts))
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
        // One plan, read in the write transaction (or, for a dry run, in a read transaction).
        func plan(_ db: Database, _ old: ServiceSchema, _ world: ProjectedState, _ ids: any IDGenerator) throws -> (ServiceSchema, [SchemaChange], [Conflict], JSONValue?, JSONValue?) {
            guard let current = try EventReading.ownSchemaEvent(db) else { throw EditLogError(.corrupt, "the log has no schema event", at: path) }
            let webmap = current.payload["webmap"].flatMap { $0.isNull ? nil : $0 }, rules = current.payload["rules"].flatMap { $0.isNull ? nil : $0 }
            let first = try Self.decodeDefinitions(service, webmap: webmap, rules: rules, source: source)
            let changes = old.changes(to: first)
            guard !changes.isEmpty else { return (first, [], [], webmap, rules) }
            // What the change adds joins the pop-ups (`WebMapEdits`), so the new schema is decoded with them.
            let popups = WebMapEdits.adding(changes, of: first, to: webmap)
            let new = try Self.decodeDefinitions(service, webmap: popups, rules: rules, source: source)
            try Self.refuseDataLoss(changes, old: old, world: world, source: source)
            return (new, changes, try conflicts(old, changes, world, ids), popups, rules)
        }
        if dryRun {
            let (_, changes, found, _, _) = try read { db in try plan(db, schema, ProjectedState(db: db, schema: schema), ids) }
            return SchemaUpdate(changes: changes, position: nil, conflicts: found)
        }
        return try write { unit in
            let (_, changes, found, webmap, rules) = try plan(unit.db, unit.schema, unit.world, unit.ids)
            guard !changes.isEmpty else { return SchemaUpdate(changes: [], position: nil, conflicts: []) }
            var payload = Self.schemaPayload(service: service, webmap: webmap, rules: rules).objectValue ?? [:]
            payload["changes"] = .array(changes.map(\.json))
            payload["conflicts"] = .array(found.map(\.json))
            payload["source"] = source.map { .string($0) } ?? .null
            let e = try unit.emit(NewEvent(id: unit.ids.next(), stream: StreamName.schema, type: .schemaChanged, payload: .object(payload),
                                           context: EventContext(actor: actor, device: device, clientTime: clientTime), session: nil, cause: cause))
            return SchemaUpdate(changes: changes, position: e.position, conflicts: found)
        }
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
