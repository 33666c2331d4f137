import EditLogCore
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

    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "field": .string(field), "value": value, "position": .int(position), "type": .string(type), "actor": .string(actor),
            "device": .string(device), "session": JSONValue(session), "time": .string(time), "clock": .string(clock.rawValue), "cause": .string(cause),
        ]
        if let source { o["source"] = .string(source) }
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
    public let layer: LayerSchema
    public let clock: EventClock
    public private(set) var values: [String: BlameEntry] = [:]
    public private(set) var deleted: BlameEntry?
    public private(set) var exists = false

    public init(layer: LayerSchema, clock: EventClock) { self.layer = layer; self.clock = clock }

    func entry(_ e: RecordedEvent, _ field: String, _ value: JSONValue, source: String? = nil) -> BlameEntry {
        BlameEntry(field: field, value: value, position: e.position, type: e.type, actor: e.actor, device: e.device, session: e.session,
                   time: clock.time(of: e), clock: clock, cause: e.cause, source: source)
    }

    /// The field's schema spelling.
    func name(_ k: String) -> String { layer.field(k)?.name ?? k }

    /// Editor tracking as the projector fills it: the event's actor and recording time.
    mutating func track(_ e: RecordedEvent, create: Bool) {
        for (f, v) in layer.editorTrackingValues(of: e, create: create) { values[f] = entry(e, f, v) }
    }

    public mutating func apply(_ e: RecordedEvent) throws {
        let p = e.fields
        switch e.eventType {
        case .featureBaselined?:
            exists = true
            let attrs = try p.object("attributes")
            for f in layer.attributeFields { values[f.name] = entry(e, f.name, .null) }
            for (k, v) in attrs { values[name(k)] = entry(e, name(k), v) }
            if let g = p.optional("geometry"), !g.isNull { values["@geometry"] = entry(e, "@geometry", g) }
        case .sessionCommitted?:
            let changes = try p.object("changes")
            let create = try p.string("kind") == "create"
            if create {
                exists = true
                for f in layer.attributeFields { values[f.name] = entry(e, f.name, .null) }
                if let g = p.optional("geometry"), !g.isNull { values["@geometry"] = entry(e, "@geometry", g) }
            }
            for (k, c) in changes { values[name(k)] = entry(e, name(k), c["new"] ?? .null) }
            track(e, create: create)
        case .featureDerived?:
            let source = p.optional("from")?.stringValue ?? p.optional("polygon")?.stringValue
            for (k, c) in try p.object("changes") { values[name(k)] = entry(e, name(k), c["new"] ?? .null, source: source) }
            track(e, create: false)
        case .featureDeleted?:
            deleted = entry(e, "@deleted", true)
        default: break
        }
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
        var fold = BlameFold(layer: layer, clock: clock)
        try EventReading.forEach(db, where: "stream = ?", arguments: [StreamName.feature(layer: layer.id, globalId: globalId)]) { e in
            guard asOf?.includes(e, clock: clock) ?? true else { return }
            try fold.apply(e)
        }
        return Blame(layer: layer, globalId: globalId, asOf: asOf, clock: clock, exists: fold.exists, deleted: fold.deleted, fields: fold.entries)
    }
}
