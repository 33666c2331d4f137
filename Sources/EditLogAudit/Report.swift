import EditLogCore
import EditLogMerge
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

/// What `editlog report` shows for a window of the log: the figures, computed here and tested. `ReportHTML`
/// renders them as one self-contained HTML file.
public struct AuditReport: Sendable {
    public var from: LogMoment
    public var to: LogMoment
    public var clock: EventClock
    /// Sessions opened in the window, by actor, by day (the clock's date).
    public var sessionsByActorDay: [String: [String: Int]] = [:]
    /// Feature-changing events (baseline, commit, rule, delete) by layer name, actor and cause kind
    /// (`session`, `rule:<name>`, `baseline`, `delete`, `cascade`).
    public var byLayer: [String: Int] = [:]
    public var byActor: [String: Int] = [:]
    public var byCause: [String: Int] = [:]
    /// Rule-derived edits in the window.
    public var derived: [Derived] = []
    /// Sessions canceled or abandoned in the window, with what they discarded (in order of their end).
    public var discarded: [Discarded] = []
    /// Conflicts decided in the window (merge decisions of bundle imports and sync pulls), in log order, each
    /// with the resolutions recorded for it up to the window's end (`ConflictFold`, times on the window's clock).
    public var conflicts: [ConflictRecord] = []
    /// The display value (`Audit.displayValues`) of each conflict's feature, by GlobalID.
    public var conflictNames: [String: String] = [:]
    /// What the window's events did, feature by feature (`EditCounts`): the summary's counts.
    public var edited = EditCounts()
    /// The last position of the data the log was made from (its schema and baseline; `EventReading.baselineEnd`):
    /// the default window starts after it, so the baseline's features are the starting state, not edits.
    public var baselineEnd: Int64 = 0

    /// The features changed in the window (the net diff), by layer then GlobalID: kind of change and the centre
    /// of the geometry (the map). Their fields, actors and sessions are `diff`'s; a report of a long window
    /// holds one fixed-size row per changed feature.
    public var changes: [ChangedFeature] = []
    /// Layer names by id (the rows keep the id): each layer's newest name in the window (a layer removed in it too).
    public var layerNames: [Int: String] = [:]
    /// The changes of the service's definitions recorded in the window (`SchemaChanged`), in position order: shown
    /// as such, never counted as edits.
    public var schemaChanges: [SchemaChangeRecord] = []

    /// A changed feature as the report keeps it: no heap storage (the GlobalID as its 16 bytes).
    public struct ChangedFeature: Sendable, Hashable {
        public var layer: Int
        public var kind: FeatureChange.Kind
        /// The centre of its geometry's envelope (NaN without a geometry).
        var x: Double
        var y: Double
        var key: FeatureKey
        /// Its display value at the window's end (`Audit.displayValues`).
        public internal(set) var name: String?

        public var globalId: String { key.string }
        public var centre: (x: Double, y: Double)? { x.isNaN ? nil : (x, y) }

        init(_ c: FeatureChange) {
            layer = c.layer
            kind = c.kind
            let b = Geometry.bounds(c.geometry)
            x = b.map { ($0.minX + $0.maxX) / 2 } ?? .nan
            y = b.map { ($0.minY + $0.maxY) / 2 } ?? .nan
            key = FeatureKey(c.globalId)
        }

        /// Layer, then GlobalID in string order (`FeatureKey.precedes`).
        static func precedes(_ a: ChangedFeature, _ b: ChangedFeature) -> Bool {
            a.layer != b.layer ? a.layer < b.layer : FeatureKey.precedes(a.key, b.key)
        }
    }

    public struct Derived: Sendable, Hashable {
        public var position: Int64
        public var time: String
        public var layer: String
        public var globalId: String
        /// Its display value at the window's end (`Audit.displayValues`).
        public var name: String?
        public var cause: String
        /// The session whose commit (or delete) the rule ran after.
        public var session: String?
        /// What the rule ran after when that was no session's commit: nil when `session` names it.
        public var trigger: Trigger?
        public var fields: [String]

        /// A derived edit's trigger other than a session (boxed: most derived edits have a session).
        public indirect enum Trigger: Sendable, Hashable {
            /// A delete outside a session (as `editlog record`'s delete line is): the deleted feature and its event.
            case delete(position: Int64, layer: String, globalId: String, name: String?)
            /// A conflict resolved by hand (`ConflictResolved`, the event before it).
            case resolution(conflictId: String)
            /// Derived again after an import (a bundle or a sync pull) merged a feature's values: the import's source.
            case merge(source: String)
            /// A delete before the window started (its event is not in the scan).
            case deleteBeforeWindow

            /// As the page shows it.
            public var text: String {
                switch self {
                case .delete(let p, let l, let g, let n): "delete of \(l) \(g)\(n.map { " (\($0))" } ?? "") at position \(p) (a delete outside a session has none)"
                case .resolution(let id): "resolution by hand of conflict \(id)"
                case .merge(let source): "merge of \(source) (derived again after the import)"
                case .deleteBeforeWindow: "a delete outside a session, before the window"
                }
            }
        }
    }

    /// A session that ended without a commit: who, which feature, when, and what it discarded as one line
    /// (staged values, staged attachments, relationship choices). Kept small: a long window holds thousands.
    public struct Discarded: Sendable, Hashable {
        public var id: String
        public var status: SessionState.Status
        public var actor: String
        public var layer: Int
        public var globalId: String
        /// Its feature's display value at the window's end (`Audit.displayValues`).
        public var name: String?
        public var endedPosition: Int64
        public var endedTime: String
        public var what: String

        init(_ s: SessionSummary) {
            let st = s.state
            var what = st.staged.map { "\($0.field) = \($0.value.serialized())" }
            what += st.attachmentsAdded.map { "attachment \($0.name) (\($0.size) bytes, sha256 \($0.sha256))" }
            what += s.relationships.map { "\($0.name) → \($0.globalId)" }
            (id, status, actor, layer, globalId) = (s.id, st.status, st.actor, st.layerId, st.globalId)
            (endedPosition, endedTime, self.what) = (s.endedPosition ?? 0, s.endedTime ?? "", what.joined(separator: "; "))
        }
    }

    public var sessionCount: Int { sessionsByActorDay.values.reduce(0) { $0 + $1.values.reduce(0, +) } }

    static func causeKind(_ c: String) -> String { c.hasPrefix("cascade:") ? "cascade" : c }

    /// Reads the window: `from` exclusive, `to` inclusive (positions or times on `clock`), in one scan that folds the
    /// changed features and gathers the figures. `progress` gets (done, total) over it.
    public static func build(_ db: Database, schema: ServiceSchema, from: LogMoment, to: LogMoment, clock: EventClock,
                             progress: ((Int64, Int64) -> Void)? = nil) throws -> AuditReport {
        var r = AuditReport(from: from, to: to, clock: clock)
        // The log's schemas, read once: the window's end names layers and features; its schema changes are listed.
        let timeline = try SchemaTimeline.read(db, newest: schema)
        let schema = timeline.schema(at: to, clock: clock)
        for v in timeline.versions { for l in v.schema.layers { r.layerNames[l.id] = l.name } }
        for l in schema.layers { r.layerNames[l.id] = l.name }
        r.schemaChanges = timeline.changes(after: from, upTo: to, clock: clock)
        r.baselineEnd = try EventReading.baselineEnd(db)
        let window = LogWindow(from: from, to: to, clock: clock)
        final class Interned {
            var strings: [String: String] = [:]
            var fieldLists: [[String]: [String]] = [:]
            func string(_ s: String) -> String {
                if let t = strings[s] { return t }
                strings[s] = s
                return s
            }
        }
        let interned = Interned()
        var conflicts = ConflictFold(clock: clock)
        // The deletes read since the last event of another type (derived edits aside), for a rule run by a delete outside
        // a session: that rule's edit follows them in the same write, before any other event the scan reads.
        var deletes: [(position: Int64, layer: Int, globalId: String, attributes: JSONValue, actor: String)] = []
        // The derived edits in lists of a fixed size while the fold is held (one list grown by doubling held up to twice
        // its size beside it), made one list once the fold is gone.
        var derived: [[Derived]] = []
        // The figures, from the one scan of the window that also folds its changed features (`changedFeatures`).
        func figures(_ e: RecordedEvent) throws {
            let layerName = StreamName.parseFeature(e.stream).flatMap { schema.layer(id: $0.layer)?.name } ?? e.stream
            if e.eventType != .featureDeleted && e.eventType != .featureDerived { deletes.removeAll(keepingCapacity: true) }
            // Only the types whose content the report shows are decoded; the rest are counted.
            switch e.eventType {
            case .mergeDecided?, .conflictResolved?:
                try conflicts.apply(e)
                return
            case .sessionStarted?:
                r.sessionsByActorDay[e.actor, default: [:]][String(clock.time(of: e).prefix(10)), default: 0] += 1
                return
            case .featureDeleted?:
                if let (l, g) = StreamName.parseFeature(e.stream) {
                    guard case .featureDeleted(let d) = try e.body else { return }
                    deletes.append((e.position, l, g, .object(d.attributes), e.actor))
                }
            case .featureDerived?:
                guard case .featureDerived(let x) = try e.body else { return }
                // Causes, features and field lists repeat across derived edits: one copy of each is kept.
                let fields = x.changes.names.sorted()
                var trigger: Derived.Trigger?
                if e.session == nil {
                    if let id = x.conflictId {
                        trigger = .resolution(conflictId: id)
                    } else if let source = x.importSource {
                        trigger = .merge(source: interned.string(source))
                    } else if let d = Self.deleteBehind(x.globalId, among: deletes, actor: e.actor) {
                        trigger = .delete(position: d.position, layer: schema.layer(id: d.layer)?.name ?? "layer \(d.layer)", globalId: d.globalId, name: nil)
                    } else {
                        trigger = .deleteBeforeWindow
                    }
                }
                if derived.last.map({ $0.count == $0.capacity }) ?? true { derived.append([]); derived[derived.count - 1].reserveCapacity(4096) }
                derived[derived.count - 1].append(Derived(position: e.position, time: clock.time(of: e), layer: layerName,
                                         globalId: interned.string(x.globalId), name: nil, cause: interned.string(e.cause),
                                         session: e.session.map(interned.string), trigger: trigger,
                                         fields: interned.fieldLists[fields] ?? { interned.fieldLists[fields] = fields; return fields }()))
            default: break
            }
            r.byLayer[layerName, default: 0] += 1
            r.byActor[e.actor, default: 0] += 1
            r.byCause[causeKind(e.cause), default: 0] += 1
        }
        (r.changes, r.edited) = try changedFeatures(db, timeline: timeline, window: window, progress: progress, figures: figures)
        r.derived.reserveCapacity(derived.reduce(0) { $0 + $1.count })
        for i in derived.indices { r.derived += derived[i]; derived[i] = [] }
        r.conflicts = conflicts.records
        // Sessions that ended without a commit inside the window.
        // Read a session at a time and kept as one line each (a long window holds thousands; their states, kept
        // whole, weighed on the report's peak memory).
        let endedAfter: Int64? = if case .position(let f) = from { f } else { nil }
        let endedUpTo: Int64? = if case .position(let x) = to { x } else { nil }
        // At most every discarded session of the log: made at that size rather than grown by doubling.
        r.discarded.reserveCapacity(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM p_sessions WHERE status IN ('canceled', 'abandoned')") ?? 0)
        for status in ["canceled", "abandoned"] {
            try Audit.forEachSession(db, schema: schema, status: status, endedAfter: endedAfter, endedUpTo: endedUpTo, clock: clock) { s in
                guard let p = s.endedPosition, let t = s.endedTime else { return }
                let afterFrom: Bool = switch from { case .position(let f): p > f; case .time(let f): t > f }
                let beforeTo: Bool = switch to { case .position(let x): p <= x; case .time(let x): t <= x }
                if afterFrom && beforeTo { r.discarded.append(Discarded(s)) }
            }
        }
        r.discarded.sort { $0.endedPosition < $1.endedPosition }
        try r.name(db, schema: schema, interned: interned.string)
        return r
    }

    /// The delete a rule outside a session ran after: of the deletes just before it by the same actor (the write's), the
    /// one whose values pointed at the derived feature (a child deleted under its parent), else the last.
    static func deleteBehind(_ derived: String, among deletes: [(position: Int64, layer: Int, globalId: String, attributes: JSONValue, actor: String)],
                             actor: String) -> (position: Int64, layer: Int, globalId: String)? {
        let same = deletes.filter { $0.actor == actor }
        let pointing = same.last { d in d.attributes.objectValue?.values.contains { $0.stringValue?.uppercased() == derived.uppercased() } == true }
        return (pointing ?? same.last).map { ($0.position, $0.layer, $0.globalId) }
    }

    /// Sets the display value (`Audit.displayValues`, at the window's end) of every feature the report names, a batch
    /// of 500 at a time (a long window changes a feature per row of its map).
    mutating func name(_ db: Database, schema: ServiceSchema, interned: (String) -> String) throws {
        func names(_ features: [(layer: Int, globalId: String)]) throws -> [String: String] {
            try Audit.displayValues(db, schema: schema, of: features, asOf: to, clock: clock)
        }
        var i = 0
        while i < changes.count {
            let end = min(i + 500, changes.count)
            let found = try names(changes[i..<end].map { ($0.layer, $0.globalId) })
            for j in i..<end { changes[j].name = found[changes[j].globalId] }
            i = end
        }
        let layerIds = Dictionary(schema.layers.map { ($0.name, $0.id) }, uniquingKeysWith: { a, _ in a })
        var wanted: [(layer: Int, globalId: String)] = []
        var seen = Set<String>()
        func want(_ layer: Int?, _ g: String) { if let layer, seen.insert(g).inserted { wanted.append((layer, g)) } }
        for d in derived {
            want(layerIds[d.layer], d.globalId)
            if case .delete(_, let l, let g, _)? = d.trigger { want(layerIds[l], g) }
        }
        for s in discarded { want(s.layer, s.globalId) }
        for c in conflicts { want(c.conflict.layer, c.conflict.globalId) }
        var found: [String: String] = [:]
        i = 0
        while i < wanted.count {
            let end = min(i + 500, wanted.count)
            found.merge(try names(Array(wanted[i..<end]))) { a, _ in a }
            i = end
        }
        guard !found.isEmpty else { return }
        for k in derived.indices {
            if let n = found[derived[k].globalId] { derived[k].name = interned(n) }
            if case .delete(let p, let l, let g, nil)? = derived[k].trigger, let n = found[g] { derived[k].trigger = .delete(position: p, layer: l, globalId: g, name: n) }
        }
        for k in discarded.indices { discarded[k].name = found[discarded[k].globalId] }
        for c in conflicts { conflictNames[c.conflict.globalId] = found[c.conflict.globalId] }
    }

    /// `Audit.diff(…, geometry: true, fields: false)` as compact rows: the same features, kinds and centres,
    /// each row made as the fold hands its change over; and what the window's events did (`EditCounts`). `figures`
    /// sees every event of the scan (`SessionStarted` too) in position order.
    static func changedFeatures(_ db: Database, timeline: SchemaTimeline, window: LogWindow, progress: ((Int64, Int64) -> Void)?,
                                figures: (RecordedEvent) throws -> Void) throws -> ([ChangedFeature], EditCounts) {
        var out: [ChangedFeature] = []
        var edited = EditCounts()
        do {
            var fold = try window.fold(db, timeline: timeline, fields: false, pipelined: false, progress: progress, also: [.sessionStarted], observe: figures)
            out.reserveCapacity(fold.featureCount)
            let world = ProjectedState(db: db, schema: timeline.newest)
            edited = fold.edited
            try fold.takeChanges { c in
                var c = c
                // A feature whose events in the window carry no geometry is placed where the projection has it.
                if c.geometry == nil { c.geometry = try world.feature(layer: c.layer, globalId: c.globalId)?.geometry }
                out.append(ChangedFeature(c))
            }
        }
        // Sorted once the fold is gone (the sort's buffer and the fold are not held at once).
        out.sort(by: ChangedFeature.precedes)
        return (out, edited)
    }
}

extension Audit {
    /// The report of a window; by default from the end of the baseline (`EventReading.baselineEnd`: the data the log
    /// was made from is its starting state, not edits) to the log's end.
    public static func report(_ db: Database, schema: ServiceSchema, from: LogMoment?, to: LogMoment?, clock: EventClock = .default,
                              progress: ((Int64, Int64) -> Void)? = nil) throws -> AuditReport {
        try AuditReport.build(db, schema: schema, from: from ?? .position(try EventReading.baselineEnd(db)),
                              to: to ?? .position(try EventReading.count(db)), clock: clock, progress: progress)
    }
}
