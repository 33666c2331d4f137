import EditLogCore
import EditLogMerge
import Foundation

/// An `AuditReport` as the one HTML file `editlog report` writes: self-contained (inline CSS and SVG only: no script,
/// font, image or network), handed out piece by piece (`render`) so a long window's page is never one string.
public struct ReportHTML: Sendable {
    public let report: AuditReport

    public init(_ report: AuditReport) { self.report = report }

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

    /// A feature as the page names it: its display value (`Audit.displayValues`) beside its GlobalID.
    static func feature(_ globalId: String, _ name: String?) -> String {
        (name.map { "<span class=\"name\">\(esc($0))</span> " } ?? "") + "<small class=\"gid\">\(esc(globalId))</small>"
    }

    /// What the summary's counts are measured against: the window's start, and whether the baseline is before it.
    var measuredAgainst: String {
        let start: String
        switch report.from {
        case .position(let p) where p == report.baselineEnd && p > 0:
            start = "position \(p), the end of the baseline: the features the log was made from are the starting state, not edits"
        case .position(let p) where p < report.baselineEnd:
            start = "position \(p), before the end of the baseline (position \(report.baselineEnd)): the baseline's features count as created"
        default:
            start = "\(report.from.description)"
        }
        return "the window's events after \(start)"
    }

    static let colors: [FeatureChange.Kind: String] = [.added: "#1a9850", .deleted: "#d73027", .updated: "#4575b4"]

    func countTable(_ title: String, _ key: String, _ counts: [String: Int]) -> String {
        var h = "<table id=\"by-\(key)\"><caption>\(Self.esc(title))</caption><tr><th>\(key)</th><th>events</th></tr>"
        for (k, n) in counts.sorted(by: { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }) {
            h += "<tr><td>\(Self.esc(k))</td><td class=\"n\" id=\"\(key)-\(Self.id(k))\">\(n)</td></tr>"
        }
        return h + "</table>"
    }

    /// Sessions per actor per day: one row per actor, one cell per day, the count inside.
    /// Emitted a row at a time: a long window has one cell per actor per day, many thousands of them.
    func sessionsSVG(_ emit: (String) -> Void) {
        let actors = report.sessionsByActorDay.keys.sorted()
        let days = Set(report.sessionsByActorDay.values.flatMap(\.keys)).sorted()
        guard !actors.isEmpty else { return emit("<p>No sessions in this window.</p>") }
        let maxN = report.sessionsByActorDay.values.flatMap(\.values).max() ?? 1
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
                let n = report.sessionsByActorDay[a]?[d] ?? 0
                let op = n == 0 ? 0.04 : 0.2 + 0.8 * Double(n) / Double(maxN)
                s += "<rect class=\"cell\" data-actor=\"\(Self.esc(a))\" data-day=\"\(d)\" data-count=\"\(n)\" x=\"\(left + j * cw + 2)\" y=\"\(top + i * ch + 2)\" width=\"\(cw - 4)\" height=\"\(ch - 4)\" fill=\"#4575b4\" fill-opacity=\"\(String(format: "%.2f", op))\"/>"
                if n > 0 { s += "<text x=\"\(left + j * cw + cw / 2 - 4)\" y=\"\(top + i * ch + 18)\" font-size=\"12\">\(n)</text>" }
            }
        }
        emit(s + "</svg>")
    }

    /// The changed features on a plain projection of their geometries' centres, coloured by kind of change.
    func mapSVG(_ emit: (String) -> Void) {
        let changes = report.changes
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
            emit("<circle class=\"feature \(c.kind.rawValue)\" data-change=\"\(c.kind.rawValue)\" cx=\"\(String(format: "%.1f", px))\" cy=\"\(String(format: "%.1f", py))\" r=\"5\" fill=\"\(Self.colors[c.kind]!)\" stroke=\"#222\" stroke-width=\"0.5\"><title>\(Self.esc(report.layerNames[c.layer] ?? "layer \(c.layer)")) \(c.name.map { Self.esc($0) + " " } ?? "")\(Self.esc(c.globalId)): \(c.kind.rawValue)</title></circle>")
        }
        var ly = 18
        var s = ""
        for kind in [FeatureChange.Kind.added, .updated, .deleted] {
            s += "<circle cx=\"\(Int(w) - 90)\" cy=\"\(ly - 4)\" r=\"5\" fill=\"\(Self.colors[kind]!)\"/><text x=\"\(Int(w) - 80)\" y=\"\(ly)\" font-size=\"12\">\(kind.rawValue)</text>"
            ly += 18
        }
        emit(s + "</svg>")
    }

    /// The page as one string (small windows and tests; `write(to:)` streams it to a file).
    public var page: String {
        var s = ""
        render { s += $0 }
        return s
    }

    /// Writes the page to `path` in pieces of about 1 MiB: the page is never one string in memory.
    public func write(to path: String) throws {
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
        for c in report.changes { kinds[c.kind, default: 0] += 1 }
        emit("""
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>EditLog report</title>
            <style>
            body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
            table{border-collapse:collapse;margin:8px 16px 16px 0;display:inline-table;vertical-align:top}
            td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}td.n{text-align:right}
            caption{font-weight:bold;text-align:left;padding:4px 0}small.gid{color:#666}
            h2{margin-top:28px;border-bottom:1px solid #ddd}
            </style></head><body>
            <h1>EditLog report</h1>
            <p id="window">After <b>\(Self.esc(report.from.description))</b> up to <b>\(Self.esc(report.to.description))</b>; times on the <b id="clock">\(report.clock.rawValue)</b> clock.</p>
            <p>Sessions opened: <b id="total-sessions">\(report.sessionCount)</b>. Feature changes: <b id="total-events">\(report.byCause.values.reduce(0, +))</b>.
            Features <b id="edited-created">\(report.edited.created)</b> created, <b id="edited-updated">\(report.edited.updated)</b> updated,
            <b id="edited-deleted">\(report.edited.deleted)</b> deleted. Conflicts decided: <b id="total-conflicts">\(report.conflicts.count)</b>.</p>
            <p id="measured"><small>Counted from \(Self.esc(measuredAgainst)). Each feature counts once per kind of change its events made:
            created, updated (it existed at the window's start), deleted; one created and deleted in the window counts as created and as deleted.
            The map shows the net change between the two moments instead: <span id="changed-added">\(kinds[.added] ?? 0)</span> added,
            <span id="changed-updated">\(kinds[.updated] ?? 0)</span> updated, <span id="changed-deleted">\(kinds[.deleted] ?? 0)</span> deleted.</small></p>
            <h2>Sessions per actor over time</h2>

            """)
        sessionsSVG(emit)
        emit("""

            <h2>Counts</h2>
            \(countTable("By layer", "layer", report.byLayer))\(countTable("By actor", "actor", report.byActor))\(countTable("By cause", "cause", report.byCause))
            <h2>Derived edits</h2>
            <table id="derived"><tr><th>pos</th><th>time (\(report.clock.rawValue))</th><th>layer</th><th>feature</th><th>cause</th><th>trigger</th><th>fields</th></tr>
            """)
        for d in report.derived {
            emit("<tr class=\"derived\"><td>\(d.position)</td><td>\(Self.esc(String(d.time.prefix(19))))</td><td>\(Self.esc(d.layer))</td><td>\(Self.feature(d.globalId, d.name))</td><td>\(Self.esc(d.cause))</td><td class=\"trigger\">\(Self.esc(d.session.map { "session " + $0 } ?? d.trigger?.text ?? "-"))</td><td>\(Self.esc(d.fields.joined(separator: ", ")))</td></tr>")
        }
        emit("</table>\n<h2>Canceled and abandoned sessions</h2>\n<table id=\"discarded\"><tr><th>session</th><th>status</th><th>actor</th><th>feature</th><th>ended (\(report.clock.rawValue))</th><th>discarded</th></tr>")
        for s in report.discarded {
            emit("<tr class=\"discarded \(s.status.rawValue)\"><td>\(Self.esc(s.id))</td><td>\(s.status.rawValue)</td><td>\(Self.esc(s.actor))</td><td>\(Self.feature(s.globalId, s.name))</td><td>\(Self.esc(String(s.endedTime.prefix(19))))</td><td>\(Self.esc(s.what))</td></tr>")
        }
        emit("</table>\n<h2>Conflicts</h2>\n<table id=\"conflicts\"><tr><th>pos</th><th>decided (\(report.clock.rawValue))</th><th>layer</th><th>feature</th><th>field</th><th>kind</th><th>base</th><th>local</th><th>remote</th><th>policy → winner</th><th>resolved by hand</th></tr>")
        func side(_ v: SideValue) -> String {
            Self.esc(v.value.serialized()) + (v.writer.map { w in "<br><small>\(Self.esc(w.actor)) · \(Self.esc(String(w.time.prefix(19))))\(w.session.map { " · " + Self.esc($0) } ?? "")</small>" } ?? "")
        }
        for row in report.conflicts {
            let c = row.conflict
            let resolved = row.resolutions.map { "\(Self.esc($0.take)) = \(Self.esc($0.value.serialized())) by \(Self.esc($0.actor)) at \(Self.esc(String($0.time.prefix(19))))" }
            emit("<tr class=\"conflict \(c.kind.rawValue)\" id=\"conflict-\(Self.id(c.id))\"><td>\(row.position)</td><td>\(Self.esc(String(row.decidedAt.prefix(19))))</td><td>\(Self.esc(report.layerNames[c.layer] ?? "layer \(c.layer)"))</td><td>\(Self.feature(c.globalId, report.conflictNames[c.globalId]))</td><td>\(Self.esc(c.field ?? c.attachmentId.map { "attachment " + $0 } ?? "-"))</td><td>\(c.kind.rawValue)</td><td>\(Self.esc(c.base.serialized()))</td><td>\(side(c.local))</td><td>\(side(c.remote))</td><td>\(c.policy.rawValue)\(c.rule.map { " (\($0.rawValue))" } ?? "") → <b>\(c.winner.rawValue)</b></td><td>\(resolved.isEmpty ? "-" : resolved.joined(separator: "<br>"))</td></tr>")
        }
        if report.conflicts.isEmpty { emit("<tr><td colspan=\"11\">No conflicts decided in this window.</td></tr>") }
        emit("</table>\n<h2>Schema changes</h2>\n<table id=\"schema-changes\"><tr><th>pos</th><th>time (\(report.clock.rawValue))</th><th>change</th><th>cause</th><th>actor</th></tr>")
        for c in report.schemaChanges {
            emit("<tr class=\"schema-change \(c.change.kind.rawValue)\"><td>\(c.position)</td><td>\(Self.esc(String(c.time.prefix(19))))</td><td>\(Self.esc(c.text))</td><td>\(Self.esc(c.cause))</td><td>\(Self.esc(c.actor))@\(Self.esc(c.device))</td></tr>")
        }
        if report.schemaChanges.isEmpty { emit("<tr><td colspan=\"5\">The service's definitions did not change in this window.</td></tr>") }
        emit("</table>\n<h2>Map of edited features (net change)</h2>\n")
        mapSVG(emit)
        emit("\n</body></html>\n")
    }
}

extension AuditReport {
    /// The report's page (`ReportHTML`) as one string.
    public var html: String { ReportHTML(self).page }

    /// Writes the report's page (`ReportHTML`) to `path`, streamed.
    public func writeHTML(to path: String) throws { try ReportHTML(self).write(to: path) }
}
