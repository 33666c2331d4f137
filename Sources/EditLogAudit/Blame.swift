import EditLogCore
import EditLogMerge
import EditLogProjections
import EditLogStore
import GRDB

/// One field's value and the event that set it.
public struct BlameEntry: Sendable, Hashable {
    /// An attribute field, or `@geometry`, or `@deleted`.
    public var field: String
    public var value: JSONValue
    public var position: Int64
    public var type: String
    public var actor: String
    public var device: String
    /// The session: the user's, or for a rule the session that triggered it.
    public var session: String?
    public var time: String
    public var clock: EventClock
    /// `session`, `rule:<name>`, `baseline`, `delete`, `cascade:<GlobalID>`.
    public var cause: String
    /// For a rule: the feature it read (`from`, `polygon`), if it says.
    public var source: String?
    /// The log the event was first recorded in, when it is not this one (a bundle import, a sync pull).
    public var importedFrom: String?
    /// The conflict behind the value, when an import met one on this field (its id).
    public var conflict: String?

    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "field": .string(field), "value": value, "position": .int(position), "type": .string(type), "actor": .string(actor),
            "device": .string(device), "session": JSONValue(session), "time": .string(time), "clock": .string(clock.rawValue), "cause": .string(cause),
        ]
        if let source { o["source"] = .string(source) }
        if let importedFrom { o["importedFrom"] = .string(importedFrom) }
        if let conflict { o["conflict"] = .string(conflict) }
        return .object(o)
    }
}

/// Every field value of a feature (at the end, or as of a moment) with the event that set it.
public struct Blame: Sendable, Hashable {
    public var layer: LayerSchema
    public var globalId: String
    public var asOf: LogMoment?
    public var clock: EventClock
    /// False when the feature did not exist yet at `asOf`.
    public var exists: Bool
    /// The deletion, when the feature was deleted (at `asOf`).
    public var deleted: BlameEntry?
    /// Attribute fields in schema order, then `@geometry`.
    public var fields: [BlameEntry]

    public var json: JSONValue {
        .object([
            "layer": .string(layer.name), "globalId": .string(globalId), "asOf": asOf?.json ?? .null, "clock": .string(clock.rawValue),
            "exists": .bool(exists), "deleted": deleted?.json ?? .null, "fields": .array(fields.map(\.json)),
        ])
    }
}

/// The pure fold behind `blame`: feed a feature's stream in position order.
public struct BlameFold: Sendable {
    /// The layer as it is after the events folded so far (`schemaChanged`).
    public private(set) var layer: LayerSchema
    public let clock: EventClock
    public private(set) var values: [String: BlameEntry] = [:]
    public private(set) var deleted: BlameEntry?
    public private(set) var exists = false
    /// This log: its merge decisions say which imported values applied; events of other logs are marked imported.
    public let ownLog: String?
    /// Each event's effect with this log's decisions applied (`FeatureEffect`).
    var effects: EffectFold
    /// The effect of the event being applied.
    var effect: FeatureEffect?

    public init(layer: LayerSchema, clock: EventClock, ownLog: String? = nil) {
        self.layer = layer; self.clock = clock; self.ownLog = ownLog; effects = EffectFold(ownLog: ownLog)
    }

    func entry(_ e: RecordedEvent, _ field: String, _ value: JSONValue, source: String? = nil) -> BlameEntry {
        BlameEntry(field: field, value: value, position: e.position, type: e.type, actor: e.actor, device: e.device, session: e.session,
                   time: clock.time(of: e), clock: clock, cause: e.cause, source: source,
                   importedFrom: ownLog != nil && e.origin.logId != ownLog ? e.origin.logId : nil,
                   conflict: field == "@deleted" ? effect?.conflicts.first?.id : effect?.conflicts.first { $0.field == field }?.id
                       ?? Self.resolvedConflict(e))
    }

    /// The conflict a hand resolution resolved (`ConflictResolved`), or whose resolution a rule derived after.
    static func resolvedConflict(_ e: RecordedEvent) -> String? {
        switch try? e.body {
        case .conflictResolved(let r)?: r.conflictId
        case .featureDerived(let d)?: d.conflictId
        default: nil
        }
    }

    /// Sets a field unless this log's merge decision kept the local value.
    mutating func set(_ e: RecordedEvent, _ field: String, _ value: JSONValue, source: String? = nil) {
        values[field] = entry(e, field, value, source: source)
    }

    /// The fields whose local value this log kept now stand against the conflict the import met.
    mutating func markKept(_ f: FeatureEffect) {
        for field in f.keptFields {
            if let c = f.conflicts.first(where: { $0.field == field }) { values[name(field)]?.conflict = c.id }
        }
    }

    /// The field's schema spelling.
    func name(_ k: String) -> String { layer.field(k)?.name ?? k }

    /// Editor tracking as the projector fills it (the effect's, this log's decision included).
    mutating func track(_ e: RecordedEvent, _ f: FeatureEffect) {
        for (field, v) in layer.editorTrackingValues(of: e, f.tracking) { values[field] = entry(e, field, v) }
    }

    public mutating func apply(_ e: RecordedEvent) throws {
        let step = try effects.next(e)
        guard let f = step.effect else { return }
        effect = f
        defer { effect = nil }
        if f.revives { deleted = nil }
        switch f.row {
        case .create, .update:
            let source: String? = if case .featureDerived(let d) = step.body { d.source } else { nil }
            if f.row == .create {
                exists = true
                for field in layer.attributeFields { values[field.name] = entry(e, field.name, .null) }
            }
            f.forEachValue { k, _, v in set(e, name(k), v, source: source) }
            if let g = f.geometry { set(e, "@geometry", g) }
            markKept(f)
            track(e, f)
        case .delete, .deleteAgain:
            deleted = entry(e, "@deleted", true)
        case .none:
            break
        }
    }

    /// A `SchemaChanged` event's `changes` of this layer, `layer` its definition after it: an added field is listed
    /// from it on (null, set by the change) on a feature that exists; a removed field is no longer listed (its values
    /// stay in the events and in `history`).
    public mutating func schemaChanged(_ e: RecordedEvent, layer new: LayerSchema?, changes: [SchemaChange]) {
        for c in changes where c.layer == layer.id {
            guard let field = c.field else { continue }
            switch c.kind {
            case .fieldAdded:
                let n = new?.field(field)?.name ?? field
                if exists && values[n] == nil { values[n] = entry(e, n, .null) }
            case .fieldRemoved:
                values[name(field)] = nil
            default: break
            }
        }
        if let new { layer = new }
    }

    /// The fields in schema order, then `@geometry` (fields never set are left out).
    public var entries: [BlameEntry] {
        var out = layer.attributeFields.compactMap { values[$0.name] }
        let known = Set(layer.attributeFields.map(\.name))
        out += values.keys.filter { !known.contains($0) && $0 != "@geometry" }.sorted().compactMap { values[$0] }
        if let g = values["@geometry"] { out.append(g) }
        return out
    }
}

extension Audit {
    /// Folds one feature's stream up to `asOf` (every event when nil). Nil when no layer holds the GlobalID.
    public static func blame(_ db: Database, schema: ServiceSchema, globalId: String, asOf: LogMoment? = nil, clock: EventClock = .default) throws -> Blame? {
        guard let layer = try ProjectedState(db: db, schema: schema).locate(globalId: globalId) else { return nil }
        // The layer's fields as they were at each event and at `asOf`: its schema changes folded in at their positions.
        let timeline = try SchemaTimeline.read(db, newest: schema)
        var pending = timeline.versions.dropFirst().filter { v in
            v.event.map { asOf?.includes($0, clock: clock) ?? true } == true && v.changes.contains { $0.layer == layer.id }
        }[...]
        var fold = BlameFold(layer: timeline.versions[0].schema.layer(id: layer.id) ?? layer, clock: clock, ownLog: try EventStore.logId(in: db))
        func schemaChanges(before position: Int64) {
            while let v = pending.first, v.position < position, let e = v.event {
                fold.schemaChanged(e, layer: v.schema.layer(id: layer.id), changes: v.changes)
                pending.removeFirst()
            }
        }
        try EventReading.forEach(db, where: "stream = ?", arguments: [StreamName.feature(layer: layer.id, globalId: globalId)]) { e in
            guard asOf?.includes(e, clock: clock) ?? true else { return }
            schemaChanges(before: e.position)
            try fold.apply(e)
        }
        schemaChanges(before: .max)
        return Blame(layer: fold.layer, globalId: globalId, asOf: asOf, clock: clock, exists: fold.exists, deleted: fold.deleted, fields: fold.entries)
    }
}
