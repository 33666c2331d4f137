import EditLogCore
import EditLogProjections
import EditLogStore
import GRDB

/// One schema change of this log as the readers show it: the `SchemaChanged` event and one of its changes.
public struct SchemaChangeRecord: Sendable, Hashable {
    public var position: Int64
    /// The time on `clock`.
    public var time: String
    public var recordedTime: String
    public var clock: EventClock
    public var actor: String
    public var device: String
    /// `sync`, `schema-apply`, `import:<log>`.
    public var cause: String
    public var change: SchemaChange

    /// "field-added Trees.Notes: esriFieldTypeString(200)" (`SchemaChange.text`).
    public var text: String { change.text }

    public var json: JSONValue {
        ["position": .int(position), "time": .string(time), "clock": .string(clock.rawValue), "actor": .string(actor), "device": .string(device),
         "cause": .string(cause), "change": change.json, "text": .string(change.text)]
    }
}

/// This log's schemas over its positions (its `SchemaDefined`, then each of its `SchemaChanged`), read once by a reader
/// that shows a moment or a window, so each moment is read with the schema then in force. A log whose schema never
/// changed costs one indexed count (no schema is decoded: the newest, which the caller holds, is the only one).
public struct SchemaTimeline: Sendable {
    public struct Version: Sendable {
        /// The schema event (0: the only schema of a log whose schema never changed, in force from the start).
        public var position: Int64
        /// The event (nil for the only schema of a log whose schema never changed).
        public var event: RecordedEvent?
        public var schema: ServiceSchema
        /// What it changed from the version before (none for the first).
        public var changes: [SchemaChange]
    }

    /// Oldest first; never empty.
    public let versions: [Version]

    public var newest: ServiceSchema { versions[versions.count - 1].schema }
    /// False when the log's schema never changed.
    public var changed: Bool { versions.count > 1 }

    /// `newest`: the schema in force now (the handle's).
    public static func read(_ db: Database, newest: ServiceSchema) throws -> SchemaTimeline {
        let logId = try EventStore.logId(in: db)
        var clause = "stream = ? AND type = ?"
        var args: StatementArguments = [StreamName.schema, EventType.schemaChanged.rawValue]
        if let logId { clause += " AND origin_log = ?"; args += [logId] }
        let changes = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM events WHERE \(clause)", arguments: args) ?? 0
        guard changes > 0 else { return SchemaTimeline(versions: [Version(position: 0, event: nil, schema: newest, changes: [])]) }
        let versions = try all(db)
        guard !versions.isEmpty else { return SchemaTimeline(versions: [Version(position: 0, event: nil, schema: newest, changes: [])]) }
        return SchemaTimeline(versions: versions)
    }

    /// Every schema event of this log (its `SchemaDefined`, then each `SchemaChanged`; imported logs' are their records),
    /// oldest first, each decoded, with what it changed: the one reading of them (`EditLog.schemaVersions` too).
    public static func all(_ db: Database) throws -> [Version] {
        var own = "stream = ?"
        var ownArgs: StatementArguments = [StreamName.schema]
        if let logId = try EventStore.logId(in: db) { own += " AND origin_log = ?"; ownArgs += [logId] }
        var events: [RecordedEvent] = []
        try EventReading.forEach(db, where: own, arguments: ownArgs) { events.append($0) }
        var versions: [Version] = []
        for e in events {
            let s: ServiceSchema
            do throws(EditLogError) {
                guard let defs = try e.body.schemaDefinitions else { throw e.corrupt("is not a schema event") }
                s = try defs.decode()
            } catch {
                throw EditLogError(.corrupt, "the schema event cannot be decoded: \(error.message)", at: "position \(e.position)")
            }
            versions.append(Version(position: e.position, event: e, schema: s, changes: versions.last.map { $0.schema.changes(to: s) } ?? []))
        }
        return versions
    }

    /// The index of the version in force after event `position` (the first when none is yet).
    func index(at position: Int64) -> Int {
        guard changed else { return 0 }
        var lo = 0, hi = versions.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if versions[mid].position <= position { lo = mid } else { hi = mid - 1 }
        }
        return lo
    }

    /// The schema in force after event `position`.
    public func schema(at position: Int64) -> ServiceSchema { versions[index(at: position)].schema }

    /// The schema in force at `moment` (nil: the end), read as the readers read a moment (`LogMoment.includes`).
    public func schema(at moment: LogMoment?, clock: EventClock) -> ServiceSchema {
        guard changed, let moment else { return newest }
        return versions.last { v in v.event.map { moment.includes($0, clock: clock) } ?? true }?.schema ?? versions[0].schema
    }

    /// Layer `id` as it was after event `position`.
    public func layer(_ id: Int, at position: Int64) -> LayerSchema? { versions[index(at: position)].schema.layer(id: id) }

    /// The changes recorded after `from` (exclusive; nil: from the start) up to `to` (inclusive; nil: the end), optionally
    /// of one layer, each change its own record, in position order.
    public func changes(after from: LogMoment?, upTo to: LogMoment?, layer: Int? = nil, clock: EventClock) -> [SchemaChangeRecord] {
        guard changed else { return [] }
        var out: [SchemaChangeRecord] = []
        for v in versions.dropFirst() {
            guard let e = v.event, to.map({ $0.includes(e, clock: clock) }) ?? true, !(from.map { $0.includes(e, clock: clock) } ?? false) else { continue }
            for c in v.changes where layer == nil || c.layer == layer {
                out.append(SchemaChangeRecord(position: e.position, time: clock.time(of: e), recordedTime: e.recordedTime, clock: clock, actor: e.actor, device: e.device,
                                              cause: e.cause, change: c))
            }
        }
        return out
    }

    /// The fields of each layer that some schema in force between `from` and `to` had and the schema at `to` has not
    /// (lowercased, by layer id): a field removed in the window, whose column the state at `to` lacks.
    public func removedFields(after from: LogMoment?, upTo to: LogMoment?, clock: EventClock) -> [Int: Set<String>] {
        guard changed else { return [:] }
        let end = schema(at: to, clock: clock)
        var out: [Int: Set<String>] = [:]
        // The version in force at `from`, then each one recorded up to `to`.
        let first = from.map { m in versions.lastIndex { v in v.event.map { m.includes($0, clock: clock) } ?? true } ?? 0 } ?? 0
        for v in versions[first...] where v.event.map({ e in to.map { $0.includes(e, clock: clock) } ?? true }) ?? true {
            for l in v.schema.layers {
                let kept = Set((end.layer(id: l.id)?.attributeFields ?? []).map { $0.name.lowercased() })
                for f in l.attributeFields where !kept.contains(f.name.lowercased()) { out[l.id, default: []].insert(f.name.lowercased()) }
            }
        }
        return out
    }
}
