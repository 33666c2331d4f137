import Foundation

/// A goal from issue 4. Ratios are throughput / floor throughput (higher is better).
enum Goal: Codable, Sendable {
    /// Throughput at least this fraction of the floor's (same work, same run).
    case ratioAtLeast(Double)
    /// Throughput at least this multiple of the peer's (`--peers`: the same events in a peer event store).
    case peerRatioAtLeast(Double)
    case millisecondsAtMost(Double)
    case megabytesAtMost(Double)
    /// The measured operation's wall time at most this many seconds.
    case secondsAtMost(Double)
    /// Output size at most this multiple of the reference tool's output size (bundle-export vs `gzip -6`).
    case sizeRatioAtMost(Double)

    var text: String {
        switch self {
        case .ratioAtLeast(let r): return "≥ \(Fmt.num(r))x floor"
        case .peerRatioAtLeast(let r): return "≥ \(Fmt.num(r))x peer"
        case .millisecondsAtMost(let ms): return "p99 ≤ \(Fmt.num(ms)) ms"
        case .megabytesAtMost(let mb): return "≤ \(Fmt.num(mb)) MB"
        case .secondsAtMost(let s): return "≤ \(Fmt.num(s)) s"
        case .sizeRatioAtMost(let r): return "≤ \(Fmt.num(r))x size"
        }
    }
}

/// One row of the result table.
struct Measurement: Codable, Sendable {
    enum Kind: String, Codable, Sendable { case throughput, latency, rss, info, size }

    var scenario: String
    var kind: Kind
    /// Human size, e.g. "1M events" or "1,000 features on a 1M-event log".
    var size: String
    /// Work units done (events, lookups) and their name.
    var units: Int = 0
    var unitName: String = "events"
    var seconds: Double?
    var cpuSeconds: Double?
    /// The floor, measured in the same process run over the same units of work.
    var floorSeconds: Double?
    var floorCpuSeconds: Double?
    var floorDescription: String?
    var p50ms: Double?
    var p99ms: Double?
    var maxms: Double?
    var rssBytes: Int64?
    /// `.size` rows: this tool's output size and the reference tool's over the same input.
    var sizeBytes: Int64?
    var floorSizeBytes: Int64?
    /// Set when the peer or reference tool a row compares with could not run (e.g. "peer unavailable: no pigz"):
    /// the verdict says so instead of met / NOT met.
    var unavailable: String?
    var goal: Goal?
    /// Replaces the verdict when the goal could not be judged (e.g. "peer unavailable").
    var status: String?
    var notes: [String] = []

    var throughput: Double? { seconds.flatMap { $0 > 0 ? Double(units) / $0 : nil } }
    var floorThroughput: Double? { floorSeconds.flatMap { $0 > 0 ? Double(units) / $0 : nil } }
    /// Throughput / floor throughput (= floor time / time over the same work).
    var ratio: Double? {
        guard let s = seconds, let f = floorSeconds, s > 0 else { return nil }
        return f / s
    }
    var sizeRatio: Double? {
        guard let a = sizeBytes, let b = floorSizeBytes, b > 0 else { return nil }
        return Double(a) / Double(b)
    }
    var cpuRatio: Double? {
        guard let s = cpuSeconds, let f = floorCpuSeconds, s > 0 else { return nil }
        return f / s
    }

    var value: Double? {
        switch goal {
        case .ratioAtLeast?, .peerRatioAtLeast?: return ratio
        case .millisecondsAtMost?: return p99ms
        case .megabytesAtMost?: return rssBytes.map { Double($0) / 1_048_576 }
        case .secondsAtMost?: return seconds
        case .sizeRatioAtMost?: return sizeRatio
        case nil: return nil
        }
    }

    var met: Bool? {
        guard let goal, let v = value else { return nil }
        switch goal {
        case .ratioAtLeast(let g), .peerRatioAtLeast(let g): return v >= g
        case .millisecondsAtMost(let g), .secondsAtMost(let g): return v <= g
        case .megabytesAtMost(let g), .sizeRatioAtMost(let g): return v <= g
        }
    }

    /// "met", or "NOT met" and by how much the goal is missed.
    var verdict: String {
        if let status { return status }
        if let unavailable { return unavailable }
        guard let goal, let v = value, let met else { return "—" }
        if met { return "met" }
        switch goal {
        case .ratioAtLeast(let g), .peerRatioAtLeast(let g): return "NOT met: \(Fmt.num(g / max(v, 1e-9)))x too slow"
        case .millisecondsAtMost(let g), .secondsAtMost(let g): return "NOT met: \(Fmt.num(v / g))x over"
        case .megabytesAtMost(let g): return "NOT met: +\(Fmt.num(v - g)) MB"
        case .sizeRatioAtMost(let g): return String(format: "NOT met: %.3fx > %.2fx", v, g)
        }
    }

    enum CodingKeys: String, CodingKey {
        case scenario, kind, size, units, unitName, seconds, cpuSeconds, floorSeconds, floorCpuSeconds, floorDescription
        case p50ms, p99ms, maxms, rssBytes, sizeBytes, floorSizeBytes, unavailable, goal, status, notes
    }
}

enum Fmt {
    static func num(_ v: Double) -> String {
        if v == 0 { return "0" }
        if abs(v) >= 100 { return String(format: "%.0f", v) }
        if abs(v) >= 10 { return String(format: "%.1f", v) }
        return String(format: "%.2f", v)
    }

    static func count(_ n: Int) -> String {
        if n >= 1_000_000, n % 1_000_000 == 0 { return "\(n / 1_000_000)M" }
        if n >= 1_000_000 { return String(format: "%.2fM", Double(n) / 1e6) }
        if n >= 1000, n % 1000 == 0 { return "\(n / 1000)k" }
        if n >= 10_000 { return String(format: "%.1fk", Double(n) / 1e3) }
        return "\(n)"
    }

    static func rate(_ r: Double, _ unit: String) -> String {
        if unit == "B" { return String(format: "%.1f MB/s", r / 1e6) }
        if r >= 1_000_000 { return String(format: "%.2fM %@/s", r / 1e6, unit) }
        if r >= 1000 { return String(format: "%.1fk %@/s", r / 1e3, unit) }
        return String(format: "%.0f %@/s", r, unit)
    }

    static func seconds(_ s: Double) -> String {
        if s < 1 { return String(format: "%.0f ms", s * 1000) }
        if s < 100 { return String(format: "%.2f s", s) }
        return String(format: "%.0f s", s)
    }

    static func mb(_ b: Int64) -> String { String(format: "%.1f MB", Double(b) / 1_048_576) }
}

/// The human table and the JSON document.
enum Report {
    static func table(_ ms: [Measurement]) -> String {
        let header = ["scenario", "size", "time", "throughput", "floor / peer", "ratio", "goal", "met?"]
        var rows: [[String]] = []
        for m in ms {
            var time = m.seconds.map(Fmt.seconds) ?? "—"
            var thr = m.throughput.map { Fmt.rate($0, m.unitName) } ?? "—"
            var floor = "—"
            if let f = m.floorSeconds, let ft = m.floorThroughput { floor = "\(Fmt.rate(ft, m.unitName)) (\(Fmt.seconds(f)))" }
            var ratio = m.ratio.map { Fmt.num($0) + "x" } ?? "—"
            switch m.kind {
            case .latency:
                time = "p50 \(Fmt.num(m.p50ms ?? 0)) ms"
                thr = "p99 \(Fmt.num(m.p99ms ?? 0)) ms"
                ratio = "—"
            case .rss:
                time = "—"; thr = m.rssBytes.map { "peak RSS \(Fmt.mb($0))" } ?? "—"; floor = "—"; ratio = "—"
            case .size:
                time = "—"
                thr = m.sizeBytes.map { "size \(Fmt.mb($0))" } ?? "—"
                floor = m.floorSizeBytes.map { "size \(Fmt.mb($0))" } ?? "—"
                ratio = m.sizeRatio.map { String(format: "%.3fx", $0) } ?? "—"
            default: break
            }
            rows.append([m.scenario, m.size, time, thr, floor, ratio, m.goal?.text ?? "—", m.verdict])
        }
        var widths = header.map(\.count)
        for r in rows { for (i, c) in r.enumerated() { widths[i] = max(widths[i], c.count) } }
        func line(_ cells: [String]) -> String {
            "| " + cells.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }.joined(separator: " | ") + " |"
        }
        var out = [line(header), "|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|"]
        out += rows.map(line)
        return out.joined(separator: "\n")
    }

    static func json(_ ms: [Measurement], meta: [String: String]) -> String {
        struct Doc: Encodable {
            var meta: [String: String]
            var results: [Row]
        }
        struct Row: Encodable {
            var m: Measurement
            func encode(to encoder: Encoder) throws {
                try m.encode(to: encoder)
                var c = encoder.container(keyedBy: Extra.self)
                try c.encodeIfPresent(m.throughput, forKey: .throughput)
                try c.encodeIfPresent(m.floorThroughput, forKey: .floorThroughput)
                try c.encodeIfPresent(m.ratio, forKey: .ratio)
                try c.encodeIfPresent(m.cpuRatio, forKey: .cpuRatio)
                try c.encodeIfPresent(m.sizeRatio, forKey: .sizeRatio)
                try c.encodeIfPresent(m.met, forKey: .met)
                try c.encode(m.verdict, forKey: .verdict)
            }
            enum Extra: String, CodingKey { case throughput, floorThroughput, ratio, cpuRatio, sizeRatio, met, verdict }
        }
        let enc = JSONEncoder()
        enc.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = (try? enc.encode(Doc(meta: meta, results: ms.map(Row.init)))) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
