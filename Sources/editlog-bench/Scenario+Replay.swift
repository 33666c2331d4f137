import EditLog
import Foundation

/// Replays the big log at a random (seeded) moment to a `.sqlite` file (`replay --as-of P --out x.sqlite`), from
/// its checkpoints: they are made first, untimed, as a user would with `editlog checkpoint` (every 10,000
/// events, the default; kept in the work directory and reused). Goals: ≤ 1 s and peak RSS ≤ 100 MB. No floor.
enum ReplayAt: Scenario {
    static let name = "replay"
    static let summary = "replay the big log at a random moment (and just before its last checkpoint) to a .sqlite file, from its checkpoints (goal ≤ 1 s, ≤ 100 MB)"
    static let needsBulkLog = true
    /// `editlog checkpoint`'s default `--every`.
    static let checkpointEvery: Int64 = 10_000

    static func run(_ ctx: BenchContext) throws -> [Measurement] {
        let log = try ctx.openBulkLog()
        let events = try log.eventCount()
        let t0 = Stopwatch.wallNow()
        let written = try log.createCheckpoints(every: checkpointEvery)
        let checkpoints = try log.checkpoints()
        ctx.note("checkpoints every \(checkpointEvery) events: \(written.count) written (\(Fmt.seconds(Double(Stopwatch.wallNow() - t0) / 1e9)), untimed), \(checkpoints.count) present")
        var rng = SplitMix64(seed: ctx.seed &+ 0x5E1A)
        // The random moment (the goal's case), then the costliest one: just before the last checkpoint, so the
        // replay copies the biggest earlier state and applies every-1 events after it.
        var moments = [(name, 1 + Int64(rng.next() % UInt64(events)))]
        if let last = checkpoints.last, checkpoints.count >= 2 { moments.append((name + " (late)", last.position - 1)) }
        var rows: [Measurement] = []
        for (label, position) in moments {
            let out = ctx.path("replay-\(position).sqlite")
            ctx.remove(out)
            ctx.prewarm(ctx.bulkLogPath)
            if let c = checkpoints.last(where: { $0.position <= position }) { ctx.prewarm(c.path) }
            ctx.note("\(label): replaying at position \(position) of \(Fmt.count(Int(events)))")
            Memory.resetPeak()
            var watch = Stopwatch()
            let (r, s) = try watch.time { try log.replay(asOf: .position(position), to: out, overwrite: true) }
            let rss = Memory.peakBytes()
            let applied = Int(r.position - r.checkpoint)
            let size = "position \(Fmt.count(Int(position))) of a \(Fmt.count(Int(events)))-event log"
            var m = Measurement(scenario: label, kind: .throughput, size: size, units: applied, unitName: "ev",
                                seconds: watch.seconds, cpuSeconds: watch.cpuSeconds, goal: .secondsAtMost(1))
            let bytes = (try? FileManager.default.attributesOfItem(atPath: out)[.size] as? Int).flatMap { $0 } ?? 0
            m.notes.append("from the checkpoint at \(r.checkpoint): \(applied) events applied, \(s.features.map(\.count).reduce(0, +)) live features; "
                           + "the .sqlite is \(Fmt.mb(Int64(bytes))); throughput is of the applied events")
            ctx.remove(out)
            var rr = Measurement(scenario: label, kind: .rss, size: size, units: applied, goal: .megabytesAtMost(100))
            rr.rssBytes = rss
            rows += [m, rr]
        }
        log.close()
        return rows
    }
}

/// Exports the big log's live layers (`export --out x.gpkg`, a GeoPackage). Goal: peak RSS ≤ 100 MB; time reported.
enum ExportLive: Scenario {
    static let name = "export"
    static let summary = "export the big log's live layers to a GeoPackage (goal: peak RSS ≤ 100 MB; time reported)"
    static let needsBulkLog = true

    static func run(_ ctx: BenchContext) throws -> [Measurement] {
        let log = try ctx.openBulkLogReadOnly()
        let events = try log.eventCount()
        let out = ctx.path("export.gpkg")
        ctx.remove(out)
        ctx.prewarm(ctx.bulkLogPath)
        Memory.resetPeak()
        var watch = Stopwatch()
        let s = try watch.time { try log.export(to: out, overwrite: true) }
        let rss = Memory.peakBytes()
        log.close()
        let features = s.features.map(\.count).reduce(0, +)
        let size = "\(Fmt.count(features)) features, \(Fmt.count(Int(events)))-event log"
        var m = Measurement(scenario: name, kind: .throughput, size: size, units: features, unitName: "features",
                            seconds: watch.seconds, cpuSeconds: watch.cpuSeconds)
        m.notes.append("GeoPackage: " + s.features.map { "\($0.layer) \($0.count)" }.joined(separator: ", "))
        ctx.remove(out)
        var r = Measurement(scenario: name, kind: .rss, size: size, units: features, goal: .megabytesAtMost(100))
        r.rssBytes = rss
        return [m, r]
    }
}

/// The HTML report of the whole big log (`report --out x.html`: the figures, then the page written). Goal: peak
/// RSS ≤ 100 MB; time reported.
enum ReportWhole: Scenario {
    static let name = "report"
    static let summary = "the HTML report of the whole big log (goal: peak RSS ≤ 100 MB; time reported)"
    static let needsBulkLog = true

    static func run(_ ctx: BenchContext) throws -> [Measurement] {
        let log = try ctx.openBulkLogReadOnly()
        let events = Int(try log.eventCount())
        let out = ctx.path("report.html")
        ctx.prewarm(ctx.bulkLogPath)
        Memory.resetPeak()
        var watch = Stopwatch()
        let r = try watch.time { () throws -> AuditReport in
            let r = try log.report()
            try r.writeHTML(to: out)
            return r
        }
        let rss = Memory.peakBytes()
        log.close()
        let size = "\(Fmt.count(events))-event log"
        var m = Measurement(scenario: name, kind: .throughput, size: size, units: events, unitName: "ev",
                            seconds: watch.seconds, cpuSeconds: watch.cpuSeconds)
        let bytes = (try? FileManager.default.attributesOfItem(atPath: out)[.size] as? Int).flatMap { $0 } ?? 0
        m.notes.append("\(r.sessionCount) sessions, \(r.derived.count) derived edits, \(r.discarded.count) discarded sessions, \(r.changes.count) features changed; HTML \(Fmt.mb(Int64(bytes)))")
        try? FileManager.default.removeItem(atPath: out)
        var rr = Measurement(scenario: name, kind: .rss, size: size, units: events, goal: .megabytesAtMost(100))
        rr.rssBytes = rss
        return [m, rr]
    }
}
