import EditLogCore
import EditLogMerge
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

/// What `editlog report` shows for a window of the log: the figures (computed here, tested) and their
/// rendering as one self-contained HTML file (no script, no network: inline CSS and SVG only).
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
            switch e.eventType {
            case .mergeDecided?:
                let d: MergeDecision
                do throws(EditLogError) { d = try MergeDecision(json: e.payload) } catch { throw error.at("position \(e.position)") }
                for c in d.conflicts {
                    conflictIndex[c.id] = r.conflicts.count
                    r.conflicts.append(ConflictRow(conflict: c, position: e.position, time: clock.time(of: e), decidedBy: e.actor))
                }
                return
            case .conflictResolved?:
                // A resolution of a conflict decided before the window is not listed (its conflict is not).
                if let id = e.payload["conflictId"]?.stringValue, let i = conflictIndex[id] {
                    r.conflicts[i].resolutions.append(.init(take: e.payload["take"]?.stringValue ?? "value", value: e.payload["value"] ?? .null,
                                                         actor: e.actor, time: clock.time(of: e)))
                }
                return
            case .sessionStarted?:
                r.sessionsByActorDay[e.actor, default: [:]][String(clock.time(of: e).prefix(10)), default: 0] += 1
                return
            case .featureDerived?:
                // Causes, features and field lists repeat across derived edits: one copy of each is kept.
                let fields = try e.fields.object("changes").keys.sorted()
                r.derived.append(Derived(position: e.position, time: clock.time(of: e), layer: layerName,
                                         globalId: interned.string(try e.fields.string("globalId")), cause: interned.string(e.cause),
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

    // MARK: HTML

    static func esc(_ s: String) -> String {
        var o = ""
        for c in s {
            switch c {
            case "&": o += "&amp;"
            case "<": o += "&lt;"
            case ">": o += "&gt;"
            case "\"": o += "&quot;"
            case "'": o += "&#39;"
            default: o.append(c)
            }
        }
        return o
    }

    static func id(_ s: String) -> String { String(s.map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "_" }) }

    static let colors: [FeatureChange.Kind: String] = [.added: "#1a9850", .deleted: "#d73027", .updated: "#4575b4"]

    func countTable(_ title: String, _ key: String, _ counts: [String: Int]) -> String {
        var h = "<table id=\"by-\(key)\"><caption>\(Self.esc(title))</caption><tr><th>\(key)</th><th>events</th></tr>"
        for (k, n) in counts.sorted(by: { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }) {
            h += "<tr><td>\(Self.esc(k))</td><td class=\"n\" id=\"\(key)-\(Self.id(k))\">\(n)</td></tr>"
        }
        return h + "</table>"
    }

    /// Sessions per actor per day: one row per actor, one cell per day, the count inside.
    /// Emitted a row at a time: a long window has one cell per actor per day (1.2k days by 50 actors in the
    /// benchmark's 1M-event log).
    func sessionsSVG(_ emit: (String) -> Void) {
        let actors = sessionsByActorDay.keys.sorted()
        let days = Set(sessionsByActorDay.values.flatMap(\.keys)).sorted()
        guard !actors.isEmpty else { return emit("<p>No sessions in this window.</p>") }
        let maxN = sessionsByActorDay.values.flatMap(\.values).max() ?? 1
        let cw = 64, ch = 26, left = 130, top = 70
        var s = "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"sessions-chart\" width=\"\(left + cw * days.count + 70)\" height=\"\(top + ch * actors.count + 10)\" role=\"img\"><title>Sessions per actor per day</title>"
        for (j, d) in days.enumerated() {
            s += "<text x=\"\(left + j * cw + cw / 2)\" y=\"\(top - 8)\" transform=\"rotate(-40 \(left + j * cw + cw / 2) \(top - 8))\" font-size=\"11\">\(Self.esc(d))</text>"
        }
        for (i, a) in actors.enumerated() {
            emit(s)
            s = ""
            s += "<text x=\"4\" y=\"\(top + i * ch + 17)\" font-size=\"12\">\(Self.esc(a))</text>"
            for (j, d) in days.enumerated() {
                let n = sessionsByActorDay[a]?[d] ?? 0
                let op = n == 0 ? 0.04 : 0.2 + 0.8 * Double(n) / Double(maxN)
                s += "<rect class=\"cell\" data-actor=\"\(Self.esc(a))\" data-day=\"\(d)\" data-count=\"\(n)\" x=\"\(left + j * cw + 2)\" y=\"\(top + i * ch + 2)\" width=\"\(cw - 4)\" height=\"\(ch - 4)\" fill=\"#4575b4\" fill-opacity=\"\(String(format: "%.2f", op))\"/>"
                if n > 0 { s += "<text x=\"\(left + j * cw + cw / 2 - 4)\" y=\"\(top + i * ch + 18)\" font-size=\"12\">\(n)</text>" }
            }
        }
        emit(s + "</svg>")
    }

    /// The changed features on a plain projection of their geometries' centres, coloured by kind of change.
    func mapSVG(_ emit: (String) -> Void) {
        let placed = changes.indices.compactMap { i -> (Int, Double, Double)? in changes[i].centre.map { (i, $0.x, $0.y) } }
        guard !placed.isEmpty else { return emit("<p>No edited features with a geometry in this window.</p>") }
        var (x0, x1, y0, y1) = (placed[0].1, placed[0].1, placed[0].2, placed[0].2)
        for (_, x, y) in placed { x0 = min(x0, x); x1 = max(x1, x); y0 = min(y0, y); y1 = max(y1, y) }
        let w = 640.0, h = 420.0, pad = 20.0
        let sx = (w - 2 * pad) / max(x1 - x0, 1e-9), sy = (h - 2 * pad) / max(y1 - y0, 1e-9)
        let k = min(sx, sy)
        emit("<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"map\" width=\"\(Int(w))\" height=\"\(Int(h))\" role=\"img\"><title>Features edited in the window</title><rect width=\"100%\" height=\"100%\" fill=\"#f4f1ea\"/>")
        for (i, x, y) in placed {
            let c = changes[i]
            let px = pad + (x - x0) * k, py = h - pad - (y - y0) * k
            emit("<circle class=\"feature \(c.kind.rawValue)\" data-change=\"\(c.kind.rawValue)\" cx=\"\(String(format: "%.1f", px))\" cy=\"\(String(format: "%.1f", py))\" r=\"5\" fill=\"\(Self.colors[c.kind]!)\" stroke=\"#222\" stroke-width=\"0.5\"><title>\(Self.esc(layerNames[c.layer] ?? "layer \(c.layer)")) \(Self.esc(c.globalId)): \(c.kind.rawValue)</title></circle>")
        }
        var ly = 18
        var s = ""
        for kind in [FeatureChange.Kind.added, .updated, .deleted] {
            s += "<circle cx=\"\(Int(w) - 90)\" cy=\"\(ly - 4)\" r=\"5\" fill=\"\(Self.colors[kind]!)\"/><text x=\"\(Int(w) - 80)\" y=\"\(ly)\" font-size=\"12\">\(kind.rawValue)</text>"
            ly += 18
        }
        emit(s + "</svg>")
    }

    /// The page as one string (small windows and tests; `writeHTML` streams it to a file).
    public var html: String {
        var s = ""
        render { s += $0 }
        return s
    }

    /// Writes the page to `path` in pieces of about 1 MiB: the page is never one string in memory.
    public func writeHTML(to path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil), let fh = FileHandle(forWritingAtPath: path) else {
            throw EditLogError(.io, "cannot write \(path)")
        }
        defer { try? fh.close() }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(1 << 20)
        var failure: Error?
        func flush() {
            guard failure == nil, !buffer.isEmpty else { return }
            do { try fh.write(contentsOf: buffer) } catch { failure = error }
            buffer.removeAll(keepingCapacity: true)
        }
        render { piece in
            buffer.append(contentsOf: piece.utf8)
            if buffer.count >= 1 << 20 { flush() }
        }
        flush()
        if let failure { throw EditLogError(.io, "cannot write \(path): \(failure.localizedDescription)") }
    }

    /// The page, handed to `emit` piece by piece.
    func render(_ emit: (String) -> Void) {
        var kinds: [FeatureChange.Kind: Int] = [:]
        for c in changes { kinds[c.kind, default: 0] += 1 }
        emit("""
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>EditLog report</title>
            <style>
            body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
            table{border-collapse:collapse;margin:8px 16px 16px 0;display:inline-table;vertical-align:top}
            td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}td.n{text-align:right}
            caption{font-weight:bold;text-align:left;padding:4px 0}
            h2{margin-top:28px;border-bottom:1px solid #ddd}
            </style></head><body>
            <h1>EditLog report</h1>
            <p id="window">After <b>\(Self.esc(from.description))</b> up to <b>\(Self.esc(to.description))</b>; times on the <b id="clock">\(clock.rawValue)</b> clock.</p>
            <p>Sessions opened: <b id="total-sessions">\(sessionCount)</b>. Feature changes: <b id="total-events">\(byCause.values.reduce(0, +))</b>.
            Features changed: <b id="changed-added">\(kinds[.added] ?? 0)</b> added, <b id="changed-updated">\(kinds[.updated] ?? 0)</b> updated,
            <b id="changed-deleted">\(kinds[.deleted] ?? 0)</b> deleted. Conflicts decided: <b id="total-conflicts">\(conflicts.count)</b>.</p>
            <h2>Sessions per actor over time</h2>

            """)
        sessionsSVG(emit)
        emit("""

            <h2>Counts</h2>
            \(countTable("By layer", "layer", byLayer))\(countTable("By actor", "actor", byActor))\(countTable("By cause", "cause", byCause))
            <h2>Derived edits</h2>
            <table id="derived"><tr><th>pos</th><th>time (\(clock.rawValue))</th><th>layer</th><th>feature</th><th>cause</th><th>triggering session</th><th>fields</th></tr>
            """)
        for d in derived {
            emit("<tr class=\"derived\"><td>\(d.position)</td><td>\(Self.esc(String(d.time.prefix(19))))</td><td>\(Self.esc(d.layer))</td><td>\(Self.esc(d.globalId))</td><td>\(Self.esc(d.cause))</td><td>\(Self.esc(d.session ?? "-"))</td><td>\(Self.esc(d.fields.joined(separator: ", ")))</td></tr>")
        }
        emit("</table>\n<h2>Canceled and abandoned sessions</h2>\n<table id=\"discarded\"><tr><th>session</th><th>status</th><th>actor</th><th>feature</th><th>ended (\(clock.rawValue))</th><th>discarded</th></tr>")
        for s in discarded {
            emit("<tr class=\"discarded \(s.status.rawValue)\"><td>\(Self.esc(s.id))</td><td>\(s.status.rawValue)</td><td>\(Self.esc(s.actor))</td><td>\(Self.esc(s.globalId))</td><td>\(Self.esc(String(s.endedTime.prefix(19))))</td><td>\(Self.esc(s.what))</td></tr>")
        }
        emit("</table>\n<h2>Conflicts</h2>\n<table id=\"conflicts\"><tr><th>pos</th><th>decided (\(clock.rawValue))</th><th>layer</th><th>feature</th><th>field</th><th>kind</th><th>base</th><th>local</th><th>remote</th><th>policy → winner</th><th>resolved by hand</th></tr>")
        func side(_ v: SideValue) -> String {
            Self.esc(v.value.serialized()) + (v.writer.map { w in "<br><small>\(Self.esc(w.actor)) · \(Self.esc(String(w.time.prefix(19))))\(w.session.map { " · " + Self.esc($0) } ?? "")</small>" } ?? "")
        }
        for row in conflicts {
            let c = row.conflict
            let resolved = row.resolutions.map { "\(Self.esc($0.take)) = \(Self.esc($0.value.serialized())) by \(Self.esc($0.actor)) at \(Self.esc(String($0.time.prefix(19))))" }
            emit("<tr class=\"conflict \(c.kind.rawValue)\" id=\"conflict-\(Self.id(c.id))\"><td>\(row.position)</td><td>\(Self.esc(String(row.time.prefix(19))))</td><td>\(Self.esc(layerNames[c.layer] ?? "layer \(c.layer)"))</td><td>\(Self.esc(c.globalId))</td><td>\(Self.esc(c.field ?? c.attachmentId.map { "attachment " + $0 } ?? "-"))</td><td>\(c.kind.rawValue)</td><td>\(Self.esc(c.base.serialized()))</td><td>\(side(c.local))</td><td>\(side(c.remote))</td><td>\(c.policy.rawValue)\(c.rule.map { " (\($0.rawValue))" } ?? "") → <b>\(c.winner.rawValue)</b></td><td>\(resolved.isEmpty ? "-" : resolved.joined(separator: "<br>"))</td></tr>")
        }
        if conflicts.isEmpty { emit("<tr><td colspan=\"11\">No conflicts decided in this window.</td></tr>") }
        emit("</table>\n<h2>Map of edited features</h2>\n")
        mapSVG(emit)
        emit("\n</body></html>\n")
    }
}

extension Audit {
    public static func report(_ db: Database, schema: ServiceSchema, from: LogMoment?, to: LogMoment?, clock: EventClock = .default,
                              progress: ((Int64, Int64) -> Void)? = nil) throws -> AuditReport {
        try AuditReport.build(db, schema: schema, from: from ?? .position(0), to: to ?? .position(try EventReading.count(db)), clock: clock, progress: progress)
    }
}
