import EditLog
import Foundation

/// Records each finished session in its own transaction (`record` of one session; WAL,
/// synchronous=NORMAL, as every log). Floor (issue 4): the same rows inserted raw, one transaction per
/// row, same settings. A second, stricter floor uses the log's own transaction boundaries (one per session).
enum AppendSession: Scenario {
    static let name = "append-session"
    static let summary = "one transaction per finished session vs raw one-transaction-per-row inserts (WAL, synchronous=NORMAL)"

    static func run(_ ctx: BenchContext) throws -> [Measurement] {
        let s = ctx.sizes
        let path = ctx.path("append-session.editlog")
        defer { ctx.remove(path) }
        let (log, workload) = try ctx.logFromBase(at: path, trees: s.sessionTrees, workloadSeed: ctx.seed &+ 1000)
        let base = try log.eventCount()
        ctx.note("recording \(Fmt.count(s.sessions)) sessions, one transaction each")

        Memory.resetPeak()
        var watch = Stopwatch()
        var events = 0
        for i in 0..<s.sessions {
            var line = 0
            let commands = workload.nextSession(line: &line)
            let label = "bench-session-\(ctx.seed)-\(i)"
            let sha = Workload.scriptSHA(label)
            let result = try watch.time { try log.record(commands, name: label, sha256: sha) }
            events += result.events.count
        }
        let rss = Memory.peakBytes()
        log.close()

        let size = "\(Fmt.count(s.sessions)) sessions (\(Fmt.count(events)) events)"
        var m = Measurement(scenario: name, kind: .throughput, size: size, units: events, unitName: "ev",
                            seconds: watch.seconds, cpuSeconds: watch.cpuSeconds, goal: .ratioAtLeast(0.8))
        m.notes.append("\(Fmt.rate(Double(s.sessions) / watch.seconds, "sessions")); each record call adds a ScriptRecorded event")
        m.rssBytes = rss
        var strict = Measurement(scenario: name + " (floor: 1 txn/session)", kind: .info, size: size, units: events, unitName: "ev",
                                 seconds: watch.seconds, cpuSeconds: watch.cpuSeconds)
        if !ctx.prepareOnly {
            ctx.note("floor: raw inserts of the same \(events) rows, one transaction per row")
            let perRow = try Floors.insertEvents(ctx, from: path, after: base, transactions: .eachRow, name: "floor-session-row")
            m.floorSeconds = perRow.seconds
            m.floorCpuSeconds = perRow.cpuSeconds
            m.floorDescription = "raw C-API INSERT of the same rows, BEGIN IMMEDIATE/COMMIT around each row, WAL + synchronous=NORMAL"
            ctx.note("stricter floor: the same rows, one transaction per session (the log's boundaries)")
            let perSession = try Floors.insertEvents(ctx, from: path, after: base, transactions: .endAfter(column: 4, value: "ScriptRecorded"), name: "floor-session-txn")
            strict.floorSeconds = perSession.seconds
            strict.floorCpuSeconds = perSession.cpuSeconds
            strict.floorDescription = "raw C-API INSERT of the same rows with the log's transaction boundaries (one per recorded session)"
        }
        return [m, strict]
    }
}
