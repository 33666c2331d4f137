import EditLog
import Foundation

/// `history` and `show` of random features of the big log: p50/p99 latency over `lookups` features
/// (seeded sample of every feature of every layer), goal ≤ 5 ms each.
enum HistoryShow: Scenario {
    static let name = "history"
    static let summary = "history and show of 1,000 random features of the big log (p50/p99, goal ≤ 5 ms)"
    static let needsBulkLog = true

    static func run(_ ctx: BenchContext) throws -> [Measurement] {
        ctx.prewarm(ctx.bulkLogPath)
        let log = try ctx.openBulkLog()
        let events = Int(try log.eventCount())
        let layers = log.schema.layers.map(\.id)
        // Every feature id, read from the log file itself (read-only, C API).
        var all: [String] = []
        do {
            let db = try RawDB(log.path, readonly: true)
            let tables = Set(try Floors.layerTables(db))
            for l in layers where tables.contains("p_layer_\(l)") {
                all += try db.strings("SELECT _globalid FROM p_layer_\(l) ORDER BY _oid")
            }
        }
        var rng = SplitMix64(seed: ctx.seed &+ 77)
        // A seeded sample without replacement (partial Fisher–Yates).
        let n = min(ctx.sizes.lookups, all.count)
        for i in 0..<n {
            let j = i + Int(rng.next() % UInt64(all.count - i))
            all.swapAt(i, j)
        }
        let sample = Array(all.prefix(n))
        ctx.note("\(n) random features of \(all.count) on a \(Fmt.count(events))-event log")
        // Warm up: prepare the cached statements on features outside the sample.
        for g in all.suffix(20) { _ = try log.history(globalId: g); _ = try log.show(globalId: g) }

        Memory.resetPeak()
        var historyMs: [Double] = [], showMs: [Double] = []
        var hw = Stopwatch(), sw = Stopwatch()
        var entries = 0
        for g in sample {
            let t0 = Stopwatch.wallNow()
            let h = try hw.time { try log.history(globalId: g) }
            historyMs.append(Double(Stopwatch.wallNow() - t0) / 1e6)
            entries += h.entries.count
        }
        for g in sample {
            let t0 = Stopwatch.wallNow()
            _ = try sw.time { try log.show(globalId: g) }
            showMs.append(Double(Stopwatch.wallNow() - t0) / 1e6)
        }
        let rss = Memory.peakBytes()
        log.close()
        let size = "\(Fmt.count(n)) features, \(Fmt.count(events))-event log"
        func row(_ label: String, _ ms: [Double], _ w: Stopwatch) -> Measurement {
            let sorted = ms.sorted()
            func pct(_ p: Double) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int((p * Double(sorted.count)).rounded(.up)) - 1)] }
            var m = Measurement(scenario: label, kind: .latency, size: size, units: n, unitName: "lookups",
                                seconds: w.seconds, cpuSeconds: w.cpuSeconds, goal: .millisecondsAtMost(5))
            m.p50ms = pct(0.5); m.p99ms = pct(0.99); m.maxms = sorted.last
            return m
        }
        var h = row("history", historyMs, hw)
        h.notes.append("\(Fmt.num(Double(entries) / Double(max(n, 1)))) history entries per feature on average")
        var r = Measurement(scenario: "history + show", kind: .rss, size: size, units: n, goal: .megabytesAtMost(100))
        r.rssBytes = rss
        return [h, row("show", showMs, sw), r]
    }
}
