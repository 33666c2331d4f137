import EditLogCore
import EditLogMerge
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
    /// An update whose every changed field is an editor-tracking field (a commit that changed no value still
    /// moves Editor and EditDate): auditors may filter these out.
    public var trackingOnly = false

    public var json: JSONValue {
        var f: [String: JSONValue] = [:]
        for c in fields { f[c.field] = c.json }
        return ["layer": .string(layerName), "layerId": .int(Int64(layer)), "globalId": .string(globalId), "change": .string(kind.rawValue),
                "fields": .object(f), "actors": .array(actors.map { .string($0) }), "sessions": .array(sessions.map { .string($0) }),
                "trackingOnly": .bool(trackingOnly)]
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
    /// The changes of the service's definitions in between (`SchemaChanged`), in position order: a field added (its
    /// values then show as changes, null → value), removed (shown here, once: its column is not in the state at `to`,
    /// and its values' changes are left out of `changes`), altered.
    public var schemaChanges: [SchemaChangeRecord] = []

    /// `schemaChanges` only when the window has any: a window without one reads as it did before schema changes existed.
    public var json: JSONValue {
        var o: [String: JSONValue] = ["from": from.json, "to": to.json, "clock": .string(clock.rawValue), "events": .int(Int64(events)),
                                      "changes": .array(changes.map(\.json))]
        if !schemaChanges.isEmpty { o["schemaChanges"] = .array(schemaChanges.map(\.json)) }
        return .object(o)
    }

    /// A GeoJSON FeatureCollection of the changed features, geometry as `export` writes it (`Geometry.geoJSON`;
    /// tables without geometry have `"geometry": null`).
    public var geoJSON: JSONValue {
        .object([
            "type": "FeatureCollection",
            "features": .array(changes.map { c in
                var f: [String: JSONValue] = [:]
                for fc in c.fields { f[fc.field] = ["old": fc.old, "new": fc.new] }
                return .object([
                    "type": "Feature", "id": .string(c.globalId), "geometry": Geometry.geoJSON(c.geometry) ?? .null,
                    "properties": ["change": .string(c.kind.rawValue), "layer": .string(c.layerName), "globalId": .string(c.globalId),
                                   "fields": .object(f), "actors": .array(c.actors.map { .string($0) }), "sessions": .array(c.sessions.map { .string($0) }),
                                   "trackingOnly": .bool(c.trackingOnly)],
                ])
            }),
        ])
    }
}

/// What a window's events did, each feature counted once per kind of change: `created` (a create), `updated` (a change
/// to a feature that existed at the window's start), `deleted` (a delete). A feature created and deleted in the window
/// counts in `created` and in `deleted`; one created and then changed (a rule filling its address) in `created` only.
public struct EditCounts: Sendable, Hashable {
    public var created = 0
    public var updated = 0
    public var deleted = 0

    public init(created: Int = 0, updated: Int = 0, deleted: Int = 0) { (self.created, self.updated, self.deleted) = (created, updated, deleted) }

    public var json: JSONValue { ["created": .int(Int64(created)), "updated": .int(Int64(updated)), "deleted": .int(Int64(deleted))] }
}

/// The pure fold behind `diff`: feed the feature-changing events between two moments in position order.
public struct DiffFold: Sendable {
    struct Field {
        var old: JSONValue; var new: JSONValue; var actors: [String] = []; var sessions: [String] = []; var causes: [String] = []
        /// An editor-tracking field first set in the window by the tracking (events carry no old value for it):
        /// `old` is read at the window's start (`resolveTracking`).
        var oldUnknown = false
    }
    struct Feature {
        // Kept small (a window's every changed feature has one, and the report's one scan holds them beside its
        // figures): what only a fold with detail fills is boxed (`Detail`), its members ordered to pack.
        var layer: Int
        /// Without field detail, the fields instead: each one's value at the start and now as hashes, in a short list
        /// (a field table per feature weighed most of the report's memory once its window started after the baseline).
        var marks: [Mark] = []
        private var box: DetailBox?
        /// Without detail, the centre of the geometry its last event set: two numbers, not a JSON point per feature.
        var centre: (x: Double, y: Double)?
        var created = false
        var deleted = false
        var seen = false
        /// The kinds of change the window's events made (`EditCounts`), a bit each.
        var did: UInt8 = 0

        init(layer: Int) { self.layer = layer }

        /// Copied on write: a copy of the fold (`changes`) changes its own.
        var detail: Detail {
            get { box?.value ?? Detail() }
            _modify {
                if box == nil || !isKnownUniquelyReferenced(&box) { box = DetailBox(box?.value ?? Detail()) }
                yield &box!.value
            }
        }
        var fields: [String: Field] { get { box?.value.fields ?? [:] } _modify { yield &detail.fields } }
        var deletedAttributes: [String: JSONValue] { get { box?.value.deletedAttributes ?? [:] } _modify { yield &detail.deletedAttributes } }
        var deletedBy: DeletedBy? { get { box?.value.deletedBy } _modify { yield &detail.deletedBy } }
        var actors: [String] { get { box?.value.actors ?? [] } _modify { yield &detail.actors } }
        var sessions: [String] { get { box?.value.sessions ?? [] } _modify { yield &detail.sessions } }
        /// With detail, the geometry its last event set.
        var geometry: JSONValue? { get { box?.value.geometry } _modify { yield &detail.geometry } }

        /// Without detail: field `k` is `new` now; where it is not marked yet, it was `old` (its hash) at the window's
        /// start, or nil when that is read later (`resolveTracking`).
        mutating func mark(_ k: String, old: Int?, new: JSONValue, names: inout MarkNames) {
            let id = names.id(k)
            if let i = marks.firstIndex(where: { $0.field == id }) { marks[i].new = new.hashValue; return }
            marks.append(Mark(field: id, oldUnknown: old == nil, old: old ?? 0, new: new.hashValue))
        }

        /// Sets the fields whose value at the window's start was unknown (`resolveTracking`) to `found`'s (null when
        /// absent), in place: the field table is not copied.
        mutating func resolveStart(_ found: [String: JSONValue], names: MarkNames) {
            var i = fields.startIndex
            while i != fields.endIndex {
                if fields.values[i].oldUnknown {
                    fields.values[i].old = found[fields.keys[i]] ?? .null
                    fields.values[i].oldUnknown = false
                }
                fields.formIndex(after: &i)
            }
            for m in marks.indices where marks[m].oldUnknown {
                marks[m].old = (found[names.names[Int(marks[m].field)]] ?? .null).hashValue
                marks[m].oldUnknown = false
            }
        }

        /// Counts a row change the first time this feature makes that kind of change.
        mutating func count(_ row: FeatureEffect.Row, in counts: inout EditCounts) {
            let bit: UInt8
            switch row {
            case .create: bit = 1
            case .update: if did & 1 != 0 { return } else { bit = 2 }
            case .delete, .deleteAgain: bit = 4
            case .none: return
            }
            guard did & bit == 0 else { return }
            did |= bit
            switch bit {
            case 1: counts.created += 1
            case 2: counts.updated += 1
            default: counts.deleted += 1
            }
        }
    }
    /// A field of a feature folded without detail (`Feature.marks`): whether it changed is all that is read.
    struct Mark {
        /// The field's name in the fold's `MarkNames`.
        var field: UInt32
        /// As `Field.oldUnknown`: `old` is read at the window's start (`resolveTracking`).
        var oldUnknown = false
        var old: Int
        var new: Int
        var changed: Bool { oldUnknown || old != new }
    }
    /// The field names the marks hold, each once: a mark keeps its name's number.
    struct MarkNames {
        var ids: [String: UInt32] = [:]
        var names: [String] = []
        mutating func id(_ name: String) -> UInt32 {
            if let i = ids[name] { return i }
            names.append(name)
            ids[name] = UInt32(names.count - 1)
            return UInt32(names.count - 1)
        }
    }
    /// What a feature folded with detail holds besides its kind and marks.
    struct Detail {
        var fields: [String: Field] = [:]
        var deletedAttributes: [String: JSONValue] = [:]
        var deletedBy: DeletedBy?
        var actors: [String] = []
        var sessions: [String] = []
        var geometry: JSONValue?
    }
    /// `Feature.detail`'s storage: changed only while uniquely referenced (copy on write), so sending it is safe.
    final class DetailBox: @unchecked Sendable {
        var value: Detail
        init(_ value: Detail) { self.value = value }
    }
    /// Who deleted a feature in the window, and how (with detail); boxed, and never changed once made.
    final class DeletedBy: Sendable {
        let actor: String, session: String?, cause: String
        init(_ actor: String, _ session: String?, _ cause: String) { (self.actor, self.session, self.cause) = (actor, session, cause) }
    }

    /// By GlobalID (`FeatureKey`: no string per feature).
    var features: [FeatureKey: Feature] = [:]
    var markNames = MarkNames()
    public private(set) var events = 0
    /// What the events folded so far did (`EditCounts`).
    public private(set) var edited = EditCounts()
    /// Features touched so far (an upper bound of the changes).
    public var featureCount: Int { features.count }
    /// The schema at the window's end (names, and the fields a change lists).
    let schema: ServiceSchema
    /// Each event's layer as it was then (editor tracking); nil or unchanged: `schema`'s.
    let timeline: SchemaTimeline?
    /// Fields removed in the window, lowercased by layer id (`SchemaTimeline.removedFields`): not in the state at the
    /// window's end, so their changes are left out.
    let removed: [Int: Set<String>]
    /// False: only each feature's kind of change and geometry are kept (no field values, actors or sessions),
    /// and nothing at all of the fields of a feature created in the window (the report's map needs no more).
    let detail: Bool
    /// The log's id: its own standalone decisions (a parent kept for an orphan, a record revived with its parent or
    /// deleted again) change features as the projection applies them. nil: decisions are not folded.
    let ownLog: String?

    public init(schema: ServiceSchema, fields detail: Bool = true, ownLog: String? = nil, timeline: SchemaTimeline? = nil,
                removed: [Int: Set<String>] = [:]) {
        self.schema = schema
        self.timeline = timeline?.changed == true ? timeline : nil
        self.removed = removed
        self.detail = detail
        self.ownLog = ownLog
    }

    /// The event types the fold reads (`LogWindow.fold` selects them).
    public static let foldedTypes: [EventType] = [.featureBaselined, .sessionCommitted, .featureDerived, .conflictResolved, .featureDeleted, .mergeDecided]

    static func note(_ list: inout [String], _ s: String?) { if let s, !list.contains(s) { list.append(s) } }

    static func change(_ c: inout Field, to new: JSONValue, by e: RecordedEvent, detail: Bool) {
        c.new = new
        if detail { note(&c.actors, e.actor); note(&c.sessions, e.session); note(&c.causes, e.cause) }
    }

    /// Folds one event; `decision`: this log's decision about it (an imported event merged otherwise than as it came,
    /// `DecisionLookup`), applied as the projection applies it (`FeatureEffect`). A decision event itself is folded
    /// only when it is this log's and standalone (a decision about an event comes with that event).
    public mutating func apply(_ e: RecordedEvent, decision: MergeDecision? = nil) throws {
        guard let type = e.eventType, Self.foldedTypes.contains(type), let (layerId, globalId) = StreamName.parseFeature(e.stream) else { return }
        let body = try e.body
        if case .mergeDecided(let d) = body {
            guard let ownLog, d.log == ownLog, let effect = FeatureEffect.of(standalone: d), effect.revives || effect.row == .deleteAgain else { return }
            events += 1
            Self.apply(standalone: effect, e, detail: detail, to: &features[FeatureKey(globalId), default: Feature(layer: layerId)], counting: &edited)
            return
        }
        guard let effect = FeatureEffect.of(e, body, decision: decision) else { return }
        // A resolution that closes a conflict as this log held it changes nothing.
        if case .conflictResolved = body, effect.row == .none { return }
        events += 1
        // Changed in place in the dictionary (one lookup, and its field table is not copied on write).
        Self.apply(e, body, effect, layer: timeline.map { $0.layer(layerId, at: e.position) } ?? schema.layer(id: layerId), detail: detail, to: &features[FeatureKey(globalId), default: Feature(layer: layerId)],
                   counting: &edited, names: &markNames)
    }

    /// A standalone decision of this log: the feature live again (kept for an orphan, or with its parent), or deleted
    /// again. Live again while the fold holds it live: it was deleted at the window's start, so it appears in it.
    static func apply(standalone effect: FeatureEffect, _ e: RecordedEvent, detail: Bool, to f: inout Feature, counting counts: inout EditCounts) {
        f.seen = true
        f.count(effect.row, in: &counts)
        if detail { note(&f.actors, e.actor) }
        if effect.revives {
            revive(&f)
        } else if effect.row == .deleteAgain {
            f.deleted = true
            if detail { f.deletedBy = DeletedBy(e.actor, nil, e.cause) }
        }
    }

    /// Live again: deleted in the window, it is not deleted; deleted before it, it appears in it.
    static func revive(_ f: inout Feature) {
        if f.deleted {
            f.deleted = false
            if f.deletedBy != nil || !f.deletedAttributes.isEmpty { f.deletedBy = nil; f.deletedAttributes = [:] }
        } else {
            f.created = true
        }
    }

    static func apply(_ e: RecordedEvent, _ body: EventBody, _ effect: FeatureEffect, layer: LayerSchema?, detail: Bool, to f: inout Feature,
                      counting counts: inout EditCounts, names: inout MarkNames) {
        f.count(effect.row, in: &counts)
        func name(_ k: String) -> String { layer?.field(k)?.name ?? k }
        func change(_ k: String, _ old: JSONValue, _ new: JSONValue) {
            if !detail {
                if !f.created { f.mark(k, old: old.hashValue, new: new, names: &names) }
                return
            }
            Self.change(&f.fields[k, default: Field(old: old, new: new)], to: new, by: e, detail: detail)
        }
        // Editor tracking as the projector writes it (the effect's), after the event's own changes.
        func track() {
            guard let layer, detail || !f.created else { return }
            for (k, v) in layer.editorTrackingValues(of: e, effect.tracking) {
                if !detail {
                    f.mark(k, old: nil, new: v, names: &names)
                    continue
                }
                let unknown = !f.created
                Self.change(&f.fields[k, default: Field(old: .null, new: v, oldUnknown: unknown)], to: v, by: e, detail: detail)
            }
        }
        if effect.revives { revive(&f) }
        let first = !f.seen
        f.seen = true
        if detail { Self.note(&f.actors, e.actor); Self.note(&f.sessions, e.session) }
        switch effect.row {
        case .create, .update:
            if effect.row == .create && first { f.created = true }
            if let g = effect.geometry { if detail { f.geometry = g } else { f.centre = Self.centrePoint(g) } }
            if !detail && f.created { break }
            // A baseline's attributes are values, not changes: only those it sets.
            let attributes: Bool = if case .featureBaselined = body { true } else { false }
            effect.forEachValue { k, old, new in if !(attributes && new.isNull) { change(name(k), old, new) } }
            track()
            if let atts = effect.attachments {
                for a in atts.added { change("@attachment:\(a.attachmentId)", .null, .string(a.name)) }
                for a in atts.renamed { change("@attachment:\(a.attachmentId)", a.old, .string(a.new)) }
                for a in atts.removed { change("@attachment:\(a.attachmentId)", a.name, .null) }
            }
        case .delete, .deleteAgain:
            f.deleted = true
            if detail, case .featureDeleted(let d) = body {
                f.deletedAttributes = d.attributes
                f.deletedBy = DeletedBy(e.actor, e.session, e.cause)
            }
        case .none:
            break
        }
    }

    /// Reads where the window changed a feature's editor tracking what it was at the window's start (`start`: a
    /// feature's tracking values then), so tracking compares like any field: a commit that moved only Editor and
    /// EditDate is an update, one that moved nothing is none. Without field detail, only for a feature no other
    /// field shows changed (its kind is all the report reads). Call it before `changes`.
    public mutating func resolveTracking(_ start: (_ wanted: [(layer: LayerSchema, globalId: String)]) throws -> [String: [String: JSONValue]]) rethrows {
        var wanted: [(layer: LayerSchema, globalId: String)] = []
        for i in features.indices {
            let f = features.values[i]
            if detail {
                guard !f.created, f.fields.values.contains(where: \.oldUnknown) else { continue }
            } else {
                guard !f.created, !f.deleted, f.marks.contains(where: \.oldUnknown), !f.marks.contains(where: { !$0.oldUnknown && $0.changed }) else { continue }
            }
            guard let layer = schema.layer(id: f.layer) else { continue }
            wanted.append((layer, features.keys[i].string))
        }
        // Read and applied 500 features at a time: a long window's values are never all held at once.
        var next = 0
        while next < wanted.count {
            let batch = Array(wanted[next..<min(next + 500, wanted.count)])
            next += batch.count
            let values = try start(batch)
            for (_, g) in batch {
                guard let i = features.index(forKey: FeatureKey(g)) else { continue }
                features.values[i].resolveStart(values[g] ?? [:], names: markNames)
            }
        }
    }

    /// The net changes: a feature created and deleted in between is left out, as is a field changed and changed back.
    /// Without `fields`, each change has its kind and geometry only.
    public var changes: [FeatureChange] {
        var copy = self
        return copy.takeChanges()
    }

    /// The centre of a geometry's envelope as an Esri point (all the report's map reads of a changed feature).
    public static func centre(_ g: JSONValue?) -> JSONValue? { point(centrePoint(g)) }

    static func centrePoint(_ g: JSONValue?) -> (x: Double, y: Double)? { Geometry.bounds(g).map { b in ((b.minX + b.maxX) / 2, (b.minY + b.maxY) / 2) } }

    static func point(_ c: (x: Double, y: Double)?) -> JSONValue? { c.map { ["x": .double($0.x), "y": .double($0.y)] } }

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
        while case (let key, var f)? = features.popFirst() {
            let g = key.string
            // A field removed in the window is not in the state at its end: not a change of the feature.
            if let gone = removed[f.layer] {
                f.fields = f.fields.filter { !gone.contains($0.key.lowercased()) }
                f.marks.removeAll { gone.contains(markNames.names[Int($0.field)].lowercased()) }
                f.deletedAttributes = f.deletedAttributes.filter { !gone.contains($0.key.lowercased()) }
            }
            let layerName = schema.layer(id: f.layer)?.name ?? "layer \(f.layer)"
            let kind: FeatureChange.Kind
            var fields: [FieldChange]
            if f.created && f.deleted { continue }
            if !detail {
                let kind: FeatureChange.Kind = f.deleted ? .deleted : f.created ? .added : .updated
                // A tracking field still unread (`resolveTracking`) stands beside a field that changed: a change either way.
                if kind == .updated && !f.marks.contains(where: \.changed) { continue }
                try body(FeatureChange(layer: f.layer, layerName: layerName, globalId: g, kind: kind, fields: [], actors: [], sessions: [],
                                             geometry: Self.point(f.centre)))
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
            let layer = schema.layer(id: f.layer)
            let trackingOnly = kind == .updated && fields.allSatisfy { layer?.isEditorTrackingField($0.field) == true }
            try body(FeatureChange(layer: f.layer, layerName: layerName, globalId: g, kind: kind, fields: fields, actors: f.actors,
                                   sessions: f.sessions, geometry: f.geometry, trackingOnly: trackingOnly))
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
        let window = LogWindow(from: from, to: to, clock: clock, layer: layer)
        let timeline = try SchemaTimeline.read(db, newest: schema)
        var fold = try window.fold(db, timeline: timeline, fields: fields, progress: progress)
        let events = fold.events
        var changes = fold.takeChanges()
        if geometry {
            let world = ProjectedState(db: db, schema: schema)
            for i in changes.indices where changes[i].geometry == nil {
                let g = try world.feature(layer: changes[i].layer, globalId: changes[i].globalId)?.geometry
                changes[i].geometry = fields ? g : DiffFold.centre(g)
            }
        }
        return DiffResult(from: from, to: to, clock: clock, events: events, changes: changes,
                          schemaChanges: timeline.changes(after: from, upTo: to, layer: layer, clock: clock))
    }
}

extension Audit {
    /// A feature's editor-tracking values at `moment`: at a position, from the change index (`ChangeIndex.values`,
    /// the values the projection's writes left); at a time, or in a log without the index, its stream folded up to
    /// it (`fieldValues`: this log's decisions and `EditorTracking`, as the projection applied them).
    static func trackingStart(_ db: Database, at moment: LogMoment, clock: EventClock, ownLog: String?)
        -> ([(layer: LayerSchema, globalId: String)]) throws -> [String: [String: JSONValue]] {
        { wanted in
            func fields(_ layer: LayerSchema) -> Set<String> { Set(layer.attributeFields.map(\.name).filter(layer.isEditorTrackingField)) }
            if case .position(let p) = moment, let indexed = try ChangeIndex.values(db, at: p, of: wanted, fields: fields) { return indexed }
            return try fieldValues(db, at: moment, clock: clock, ownLog: ownLog, of: wanted, fields: fields)
        }
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

/// This log's decision about an imported event, for the folds that read events by type (`diff`, the report's map): the
/// importer records it just before the event, so it is the event at the position before, when that is this log's
/// `MergeDecided` naming the event. The scan reads decisions too (`DiffFold.foldedTypes`): the event it read just before
/// is that position's most of the time, and one it did not read there within a window of positions is no decision. So
/// only an imported event at a window's start, or in a window of times, is looked up (one read by position).
struct DecisionLookup {
    let db: Database
    let ownLog: String?
    /// The last position before a window of positions: the scan reads every decision after it.
    let scannedAfter: Int64?
    /// The event the scan read before.
    private var previous: RecordedEvent?

    init(_ db: Database, from: LogMoment) throws {
        self.db = db
        ownLog = try EventStore.logId(in: db)
        scannedAfter = if case .position(let p) = from { p } else { nil }
    }

    /// Call it for every event the scan reads, in order.
    mutating func decision(about e: RecordedEvent) throws -> MergeDecision? {
        defer { previous = e }
        guard let ownLog, e.origin.logId != ownLog, e.position > 1, e.type != EventType.mergeDecided.rawValue else { return nil }
        let before = e.position - 1
        let decided: RecordedEvent
        if let previous, previous.position == before {
            guard previous.type == EventType.mergeDecided.rawValue else { return nil }
            decided = previous
        } else if let scannedAfter, before > scannedAfter {
            return nil
        } else {
            guard let found = try EventReading.first(db, where: "position = ? AND type = ?", arguments: [before, EventType.mergeDecided.rawValue]) else { return nil }
            decided = found
        }
        return try EffectFold.decision(about: e, before: decided, ownLog: ownLog)
    }
}
