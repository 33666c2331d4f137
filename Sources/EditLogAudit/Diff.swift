import EditLogCore
import EditLogProjections
import EditLogStore
import GRDB

/// One field of a changed feature: its value at `from`, at `to`, and who changed it in between.
public struct FieldChange: Sendable, Hashable {
    /// An attribute field, or `@attachment:<attachment GlobalID>` (its name; null when absent).
    public var field: String
    public var old: JSONValue
    public var new: JSONValue
    /// The actors, sessions and causes of the events that changed it, in order of first appearance.
    public var actors: [String]
    public var sessions: [String]
    public var causes: [String]

    public var json: JSONValue {
        ["old": old, "new": new, "actors": .array(actors.map { .string($0) }), "sessions": .array(sessions.map { .string($0) }),
         "causes": .array(causes.map { .string($0) })]
    }
}

/// A feature added, deleted or updated between two moments.
public struct FeatureChange: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable { case added, deleted, updated }
    public var layer: Int
    public var layerName: String
    public var globalId: String
    public var kind: Kind
    /// By field name, sorted in `fieldList`.
    public var fields: [FieldChange]
    public var actors: [String]
    public var sessions: [String]
    /// Esri JSON, from the events or the current projection (filled by `Audit.diff` for geojson).
    public var geometry: JSONValue?

    public var json: JSONValue {
        var f: [String: JSONValue] = [:]
        for c in fields { f[c.field] = c.json }
        return ["layer": .string(layerName), "layerId": .int(Int64(layer)), "globalId": .string(globalId), "change": .string(kind.rawValue),
                "fields": .object(f), "actors": .array(actors.map { .string($0) }), "sessions": .array(sessions.map { .string($0) })]
    }
}

public struct DiffResult: Sendable, Hashable {
    public var from: LogMoment
    public var to: LogMoment
    public var clock: EventClock
    /// How many events lay between the two moments (of the types that change features).
    public var events: Int
    /// By layer id, then GlobalID.
    public var changes: [FeatureChange]

    public var json: JSONValue {
        ["from": from.json, "to": to.json, "clock": .string(clock.rawValue), "events": .int(Int64(events)), "changes": .array(changes.map(\.json))]
    }

    /// A GeoJSON FeatureCollection of the changed features (tables without geometry have `"geometry": null`).
    public var geoJSON: JSONValue {
        .object([
            "type": "FeatureCollection",
            "features": .array(changes.map { c in
                var f: [String: JSONValue] = [:]
                for fc in c.fields { f[fc.field] = ["old": fc.old, "new": fc.new] }
                return .object([
                    "type": "Feature", "id": .string(c.globalId), "geometry": GeoJSON.geometry(c.geometry),
                    "properties": ["change": .string(c.kind.rawValue), "layer": .string(c.layerName), "globalId": .string(c.globalId),
                                   "fields": .object(f), "actors": .array(c.actors.map { .string($0) }), "sessions": .array(c.sessions.map { .string($0) })],
                ])
            }),
        ])
    }
}

/// Esri JSON geometry to GeoJSON (rings kept as they are).
public enum GeoJSON {
    public static func geometry(_ g: JSONValue?) -> JSONValue {
        guard let g, !g.isNull else { return .null }
        if let x = g["x"], let y = g["y"], !x.isNull, !y.isNull { return ["type": "Point", "coordinates": [x, y]] }
        if let pts = g["points"]?.arrayValue { return ["type": "MultiPoint", "coordinates": .array(pts)] }
        if let paths = g["paths"]?.arrayValue {
            return paths.count == 1 ? ["type": "LineString", "coordinates": paths[0]] : ["type": "MultiLineString", "coordinates": .array(paths)]
        }
        if let rings = g["rings"]?.arrayValue { return ["type": "Polygon", "coordinates": .array(rings)] }
        return .null
    }
}

/// The pure fold behind `diff`: feed the feature-changing events between two moments in position order.
public struct DiffFold: Sendable {
    struct Field { var old: JSONValue; var new: JSONValue; var actors: [String] = []; var sessions: [String] = []; var causes: [String] = [] }
    struct Feature {
        var layer: Int
        var created = false
        var deleted = false
        var seen = false
        var fields: [String: Field] = [:]
        var deletedAttributes: [String: JSONValue] = [:]
        var deletedBy: (actor: String, session: String?, cause: String)?
        var actors: [String] = []
        var sessions: [String] = []
        var geometry: JSONValue?
    }
    var features: [String: Feature] = [:]
    public private(set) var events = 0
    /// Features touched so far (an upper bound of the changes).
    public var featureCount: Int { features.count }
    let schema: ServiceSchema
    /// False: only each feature's kind of change and geometry are kept (no field values, actors or sessions),
    /// and nothing at all of the fields of a feature created in the window (the report's map needs no more).
    let detail: Bool

    public init(schema: ServiceSchema, fields detail: Bool = true) {
        self.schema = schema
        self.detail = detail
    }

    static func note(_ list: inout [String], _ s: String?) { if let s, !list.contains(s) { list.append(s) } }

    static func change(_ c: inout Field, to new: JSONValue, by e: RecordedEvent, detail: Bool) {
        c.new = new
        if detail { note(&c.actors, e.actor); note(&c.sessions, e.session); note(&c.causes, e.cause) }
    }

    public mutating func apply(_ e: RecordedEvent) throws {
        guard let type = e.eventType, [.featureBaselined, .sessionCommitted, .featureDerived, .featureDeleted].contains(type),
              let (layerId, globalId) = StreamName.parseFeature(e.stream) else { return }
        events += 1
        // Changed in place in the dictionary (one lookup, and its field table is not copied on write).
        try Self.apply(e, type, layer: schema.layer(id: layerId), detail: detail, to: &features[globalId, default: Feature(layer: layerId)])
    }

    static func apply(_ e: RecordedEvent, _ type: EventType, layer: LayerSchema?, detail: Bool, to f: inout Feature) throws {
        let p = e.fields
        func name(_ k: String) -> String { layer?.field(k)?.name ?? k }
        func change(_ k: String, _ old: JSONValue, _ new: JSONValue) {
            if !detail && f.created { return }
            Self.change(&f.fields[k, default: Field(old: old, new: new)], to: new, by: e, detail: detail)
        }
        let first = !f.seen
        f.seen = true
        if detail { Self.note(&f.actors, e.actor); Self.note(&f.sessions, e.session) }
        switch type {
        case .featureBaselined:
            if first { f.created = true }
            if detail || !f.created {
                for (k, v) in try p.object("attributes") where !v.isNull { change(name(k), .null, v) }
            }
            if let g = p.optional("geometry"), !g.isNull { f.geometry = detail ? g : Self.centre(g) }
        case .sessionCommitted, .featureDerived:
            if type == .sessionCommitted, try p.string("kind") == "create" {
                if first { f.created = true }
                if let g = p.optional("geometry"), !g.isNull { f.geometry = detail ? g : Self.centre(g) }
            }
            if !detail && f.created { break }
            for (k, c) in try p.object("changes") { change(name(k), c["old"] ?? .null, c["new"] ?? .null) }
            if type == .sessionCommitted {
                let atts = try p.object("attachments")
                for a in try p.array("added", in: atts, parentKey: "attachments") {
                    if let id = a["attachmentId"]?.stringValue { change("@attachment:\(id)", .null, a["name"] ?? .null) }
                }
                for a in try p.array("renamed", in: atts, parentKey: "attachments") {
                    if let id = a["attachmentId"]?.stringValue { change("@attachment:\(id)", a["old"] ?? .null, a["new"] ?? .null) }
                }
                for a in try p.array("removed", in: atts, parentKey: "attachments") {
                    if let id = a["attachmentId"]?.stringValue { change("@attachment:\(id)", a["name"] ?? .null, .null) }
                }
            }
        case .featureDeleted:
            f.deleted = true
            if detail {
                f.deletedAttributes = try p.object("attributes")
                f.deletedBy = (e.actor, e.session, e.cause)
            }
        default: break
        }
    }

    /// The net changes: a feature created and deleted in between is left out, as is a field changed and changed back.
    /// Without `fields`, each change has its kind and geometry only.
    public var changes: [FeatureChange] {
        var copy = self
        return copy.takeChanges()
    }

    /// The centre of a geometry's envelope as an Esri point (all the report's map reads of a changed feature).
    public static func centre(_ g: JSONValue?) -> JSONValue? {
        Geometry.bounds(g).map { b in ["x": .double((b.minX + b.maxX) / 2), "y": .double((b.minY + b.maxY) / 2)] }
    }

    /// `changes`, emptying the fold as it goes (its memory and the result's are not both held).
    public mutating func takeChanges() -> [FeatureChange] {
        var out: [FeatureChange] = []
        out.reserveCapacity(features.count)
        takeChanges { out.append($0) }
        return out.sortedByLayerAndGlobalId()
    }

    /// Each net change handed to `body` in no particular order, emptying the fold as it goes (the report keeps
    /// a compact row per change instead of a `FeatureChange`).
    public mutating func takeChanges(_ body: (FeatureChange) throws -> Void) rethrows {
        while let (g, f) = features.popFirst() {
            let layerName = schema.layer(id: f.layer)?.name ?? "layer \(f.layer)"
            let kind: FeatureChange.Kind
            var fields: [FieldChange]
            if f.created && f.deleted { continue }
            if !detail {
                let kind: FeatureChange.Kind = f.deleted ? .deleted : f.created ? .added : .updated
                if kind == .updated && !f.fields.contains(where: { $0.value.old != $0.value.new }) { continue }
                try body(FeatureChange(layer: f.layer, layerName: layerName, globalId: g, kind: kind, fields: [], actors: [], sessions: [],
                                             geometry: f.geometry))
                continue
            }
            if f.deleted {
                kind = .deleted
                // Its values at `from`: the first old of a field changed in between, else its last value.
                var old = f.deletedAttributes.filter { !$0.value.isNull }
                for (k, c) in f.fields { old[k] = c.old }
                fields = old.filter { !$0.value.isNull }.map { k, v in
                    var c = f.fields[k] ?? Field(old: v, new: .null)
                    Self.note(&c.actors, f.deletedBy?.actor); Self.note(&c.sessions, f.deletedBy?.session); Self.note(&c.causes, f.deletedBy?.cause)
                    return FieldChange(field: k, old: v, new: .null, actors: c.actors, sessions: c.sessions, causes: c.causes)
                }
            } else {
                kind = f.created ? .added : .updated
                fields = f.fields.compactMap { k, c in
                    c.old == c.new ? nil : FieldChange(field: k, old: c.old, new: c.new, actors: c.actors, sessions: c.sessions, causes: c.causes)
                }
                if kind == .updated && fields.isEmpty { continue }
            }
            fields.sort { $0.field < $1.field }
            try body(FeatureChange(layer: f.layer, layerName: layerName, globalId: g, kind: kind, fields: fields, actors: f.actors,
                                         sessions: f.sessions, geometry: f.geometry))
        }
    }
}

extension Audit {
    /// What changed between `from` (exclusive) and `to` (inclusive): reads only the events in between
    /// (positions, or times on `clock`), optionally of one layer. With `geometry`, a changed feature whose
    /// events carry no geometry gets the projection's.
    /// `progress` gets (positions scanned, positions in the window) as the scan moves and at the end.
    /// Without `fields`, each change has its kind and geometry only (`DiffFold(fields:)`; the report's map).
    public static func diff(_ db: Database, schema: ServiceSchema, from: LogMoment, to: LogMoment, layer: Int? = nil, clock: EventClock = .default,
                            geometry: Bool = false, fields: Bool = true, progress: ((Int64, Int64) -> Void)? = nil) throws -> DiffResult {
        var parts = ["type IN ('FeatureBaselined', 'SessionCommitted', 'FeatureDerived', 'FeatureDeleted')"]
        var args: StatementArguments = []
        let (a, aa) = from.sql(clock: clock, after: true), (b, ba) = to.sql(clock: clock, after: false)
        parts += [a, b]; args += aa; args += ba
        if let layer { parts.append("stream >= ? AND stream < ?"); args += ["\(layer):", "\(layer);"] }
        // A position window starts the scan at `from` (the rowid), so the work grows with the changes only.
        let after: Int64 = if case .position(let p) = from { p } else { 0 }
        let scan = try ScanProgress(db, after: after, to: to, report: progress)
        // The fold runs on a second thread while the events are read and parsed, except over a short window of
        // positions: a thread costs more than it saves there (serve's extractChanges diffs each layer over a few
        // generations).
        var fold = DiffFold(schema: schema, fields: fields)
        var pipeline: DiffFoldPipeline?
        if case .position(let p) = from, case .position(let q) = to, q - p <= DiffFoldPipeline.inlineWindow {} else {
            pipeline = DiffFoldPipeline(fold)
        }
        do {
            try EventReading.forEach(db, after: after, where: parts.joined(separator: " AND "), arguments: args) {
                if let pipeline { try pipeline.add($0) } else { try fold.apply($0) }
                scan?.at($0.position)
            }
        } catch {
            _ = try? pipeline?.finish()
            throw error
        }
        if let pipeline { fold = try pipeline.finish() }
        scan?.finish()
        let events = fold.events
        var changes = fold.takeChanges()
        if geometry {
            let world = ProjectedState(db: db, schema: schema)
            for i in changes.indices where changes[i].geometry == nil {
                let g = try world.feature(layer: changes[i].layer, globalId: changes[i].globalId)?.geometry
                changes[i].geometry = fields ? g : DiffFold.centre(g)
            }
        }
        return DiffResult(from: from, to: to, clock: clock, events: events, changes: changes)
    }
}

/// Progress of a scan of the events after `after` up to a moment, by position (the scan reads them in
/// position order): reported every 10,000 positions and at the end.
final class ScanProgress {
    let after: Int64
    let span: Int64
    let report: (Int64, Int64) -> Void
    private var next: Int64

    /// nil when there is nothing to report to.
    init?(_ db: Database, after: Int64, to: LogMoment, report: ((Int64, Int64) -> Void)?) throws {
        guard let report else { return nil }
        let end: Int64 = if case .position(let p) = to { p } else { try EventReading.count(db) }
        self.after = after
        span = max(0, end - after)
        self.report = report
        next = after + 10_000
    }

    func at(_ position: Int64) {
        guard position >= next else { return }
        report(min(position - after, span), span)
        next = position + 10_000
    }

    func finish() { report(span, span) }
}
