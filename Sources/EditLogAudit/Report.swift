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
    /// with the resolutions recorded for it up to the window's end.
    public var conflicts: [ConflictRow] = []

    /// A conflict as the report shows it: what each side wrote and who, what the policy chose, and how it was
    /// resolved by hand since.
    public struct ConflictRow: Sendable, Hashable {
        public var conflict: Conflict
        /// The position and time (the window's clock) of the merge decision holding it, and the decider.
        public var position: Int64
        public var time: String
        public var decidedBy: String
        /// Resolutions up to the window's end, in order.
        public var resolutions: [Resolution] = []

        /// What was taken (`local`, `remote`, `base`, `value`), the value, who, when (the window's clock).
        public struct Resolution: Sendable, Hashable {
            public var take: String
            public var value: JSONValue
            public var actor: String
            public var time: String
        }
    }

    /// The features changed in the window (the net diff), by layer then GlobalID: kind of change and the centre
    /// of the geometry (the map). Their fields, actors and sessions are `diff`'s; a report of a long window
    /// holds one fixed-size row per changed feature (96.8k in the benchmark's 1M-event log).
    public var changes: [ChangedFeature] = []
    /// Layer names by id (the rows keep the id).
    public var layerNames: [Int: String] = [:]

    /// A changed feature as the report keeps it: no heap storage (the GlobalID as its 16 bytes).
    public struct ChangedFeature: Sendable, Hashable {
        public var layer: Int
        public var kind: FeatureChange.Kind
        /// The centre of its geometry's envelope (NaN without a geometry).
        var x: Double
        var y: Double
        var uuid: UUID
        /// A GlobalID that is not `{UUID}` as normalized (none in a log written by EditLog), kept as it is.
        var other: String?

        public var globalId: String { other ?? "{" + uuid.uppercasedString + "}" }
        public var centre: (x: Double, y: Double)? { x.isNaN ? nil : (x, y) }

        init(_ c: FeatureChange) {
            layer = c.layer
            kind = c.kind
            let b = Geometry.bounds(c.geometry)
            x = b.map { ($0.minX + $0.maxX) / 2 } ?? .nan
            y = b.map { ($0.minY + $0.maxY) / 2 } ?? .nan
            let g = c.globalId
            if g.utf8.count == 38, g.hasPrefix("{"), g.hasSuffix("}"), let u = UUID(text: g.dropFirst().dropLast()), "{" + u.uppercasedString + "}" == g {
                uuid = u; other = nil
            } else {
                uuid = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)); other = g
            }
        }

        /// Layer, then GlobalID in string order (for `{UUID}`s, the order of their bytes).
        static func precedes(_ a: ChangedFeature, _ b: ChangedFeature) -> Bool {
            if a.layer != b.layer { return a.layer < b.layer }
            if a.other == nil, b.other == nil {
                return withUnsafeBytes(of: a.uuid.uuid) { pa in withUnsafeBytes(of: b.uuid.uuid) { pb in memcmp(pa.baseAddress!, pb.baseAddress!, 16) < 0 } }
            }
            return a.globalId < b.globalId
        }
    }

    public struct Derived: Sendable, Hashable {
        public var position: Int64
        public var time: String
        public var layer: String
        public var globalId: String
        public var cause: String
        public var session: String?
        public var fields: [String]
    }

    /// A session that ended without a commit: who, which feature, when, and what it discarded as one line
    /// (staged values, staged attachments, relationship choices). Kept small: a long window holds thousands.
    public struct Discarded: Sendable, Hashable {
        public var id: String
        public var status: SessionState.Status
        public var actor: String
        public var globalId: String
        public var endedPosition: Int64
        public var endedTime: String
        public var what: String

        init(_ s: SessionSummary) {
            let st = s.state
            var what = st.staged.map { "\($0.field) = \($0.value.serialized())" }
            what += st.attachmentsAdded.map { "attachment \($0.name) (\($0.size) bytes, sha256 \($0.sha256))" }
            what += s.relationships.map { "\($0.name) → \($0.globalId)" }
            self.init(id: s.id, status: st.status, actor: st.actor, globalId: st.globalId, endedPosition: s.endedPosition ?? 0,
                      endedTime: s.endedTime ?? "", what: what.joined(separator: "; "))
        }

        init(id: String, status: SessionState.Status, actor: String, globalId: String, endedPosition: Int64, endedTime: String, what: String) {
            (self.id, self.status, self.actor, self.globalId, self.endedPosition, self.endedTime, self.what) = (id, status, actor, globalId, endedPosition, endedTime, what)
        }
    }

    public var sessionCount: Int { sessionsByActorDay.values.reduce(0) { $0 + $1.values.reduce(0, +) } }

    static func causeKind(_ c: String) -> String { c.hasPrefix("cascade:") ? "cascade" : c }

    /// Reads the window: `from` exclusive, `to` inclusive (positions or times on `clock`). `progress` gets (done, total)
    /// over the two scans of the window (the figures, then the changed features).
    public static func build(_ db: Database, schema: ServiceSchema, from: LogMoment, to: LogMoment, clock: EventClock,
                             progress: ((Int64, Int64) -> Void)? = nil) throws -> AuditReport {
        var r = AuditReport(from: from, to: to, clock: clock)
        for l in schema.layers { r.layerNames[l.id] = l.name }
        // The changed features first: the fold's tables are freed before the figures are gathered.
        var derivedCount = 0
        r.changes = try changedFeatures(db, schema: schema, from: from, to: to, clock: clock, derivedCount: &derivedCount,
                                        progress: progress.map { p in { d, t in p(d, 2 * t) } })
        // Counted by that scan: the list is made at its size (growing it by doubling held two copies at once).
        r.derived.reserveCapacity(derivedCount)
        let (a, aa) = from.sql(clock: clock, after: true), (b, ba) = to.sql(clock: clock, after: false)
        var args: StatementArguments = aa
        args += ba
        let after: Int64 = if case .position(let p) = from { p } else { 0 }
        // Two scans of the window: the diff's the first half of the bar, then this one.
        let scan = try ScanProgress(db, after: after, to: to, report: progress.map { p in { d, t in p(t + d, 2 * t) } })
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
        var conflictIndex: [String: Int] = [:]
        try EventReading.forEach(db, after: after, where: "\(a) AND \(b) AND type IN ('SessionStarted', 'FeatureBaselined', 'SessionCommitted', 'FeatureDerived', 'FeatureDeleted', 'MergeDecided', 'ConflictResolved')",
                                 arguments: args) { e in
            scan?.at(e.position)
            let layerName = StreamName.parseFeature(e.stream).flatMap { schema.layer(id: $0.layer)?.name } ?? e.stream
            // Only the types whose content the report shows are decoded; the rest are counted.
            switch e.eventType {
            case .mergeDecided?:
                let d: MergeDecision
                do throws(EditLogError) { d = try MergeDecision(json: e.payload) } catch { throw e.fields.corrupt(error.message) }
                for c in d.conflicts {
                    conflictIndex[c.id] = r.conflicts.count
                    r.conflicts.append(ConflictRow(conflict: c, position: e.position, time: clock.time(of: e), decidedBy: e.actor))
                }
                return
            case .conflictResolved?:
                let x = try ConflictResolved(e.fields)
                // A resolution of a conflict decided before the window is not listed (its conflict is not).
                if let id = x.conflictId, let i = conflictIndex[id] {
                    r.conflicts[i].resolutions.append(.init(take: x.take ?? "value", value: x.value, actor: e.actor, time: clock.time(of: e)))
                }
                return
            case .sessionStarted?:
                r.sessionsByActorDay[e.actor, default: [:]][String(clock.time(of: e).prefix(10)), default: 0] += 1
                return
            case .featureDerived?:
                let x = try FeatureDerived(e.fields)
                // Causes, features and field lists repeat across derived edits: one copy of each is kept.
                let fields = x.changes.names.sorted()
                r.derived.append(Derived(position: e.position, time: clock.time(of: e), layer: layerName,
                                         globalId: interned.string(x.globalId), cause: interned.string(e.cause),
                                         session: e.session.map(interned.string), fields: interned.fieldLists[fields] ?? { interned.fieldLists[fields] = fields; return fields }()))
            default: break
            }
            r.byLayer[layerName, default: 0] += 1
            r.byActor[e.actor, default: 0] += 1
            r.byCause[causeKind(e.cause), default: 0] += 1
        }
        // Sessions that ended without a commit inside the window.
        // Read a session at a time and kept as one line each (a long window holds thousands; their states were
        // half of the report's peak memory).
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
        scan?.finish()
        return r
    }

    /// `Audit.diff(…, geometry: true, fields: false)` as compact rows: the same features, kinds and centres,
    /// each row made as the fold hands its change over.
    static func changedFeatures(_ db: Database, schema: ServiceSchema, from: LogMoment, to: LogMoment, clock: EventClock,
                                derivedCount: inout Int, progress: ((Int64, Int64) -> Void)?) throws -> [ChangedFeature] {
        var decisions = try DecisionLookup(db, from: from)
        var fold = DiffFold(schema: schema, fields: false, ownLog: decisions.ownLog)
        let (a, aa) = from.sql(clock: clock, after: true), (b, ba) = to.sql(clock: clock, after: false)
        var args: StatementArguments = aa
        args += ba
        let after: Int64 = if case .position(let p) = from { p } else { 0 }
        let scan = try ScanProgress(db, after: after, to: to, report: progress)
        try EventReading.forEach(db, after: after, where: "\(DiffFold.foldedTypesSQL) AND \(a) AND \(b)", arguments: args) {
            try fold.apply($0, decision: try decisions.decision(about: $0))
            if $0.type == EventType.featureDerived.rawValue { derivedCount += 1 }
            scan?.at($0.position)
        }
        // A commit that moved editor tracking only changed the feature's row, as in `diff`.
        try fold.resolveTracking(Audit.trackingStart(db, at: from, clock: clock, ownLog: decisions.ownLog))
        scan?.finish()
        var out: [ChangedFeature] = []
        out.reserveCapacity(fold.featureCount)
        let world = ProjectedState(db: db, schema: schema)
        try fold.takeChanges { c in
            var c = c
            // A feature whose events in the window carry no geometry is placed where the projection has it.
            if c.geometry == nil { c.geometry = try world.feature(layer: c.layer, globalId: c.globalId)?.geometry }
            out.append(ChangedFeature(c))
        }
        out.sort(by: ChangedFeature.precedes)
        return out
    }
}

extension Audit {
    public static func report(_ db: Database, schema: ServiceSchema, from: LogMoment?, to: LogMoment?, clock: EventClock = .default,
                              progress: ((Int64, Int64) -> Void)? = nil) throws -> AuditReport {
        try AuditReport.build(db, schema: schema, from: from ?? .position(0), to: to ?? .position(try EventReading.count(db)), clock: clock, progress: progress)
    }
}
