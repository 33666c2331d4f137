import EditLog
import Foundation

/// Records each finished session in its own transaction (`record` of one session; WAL,
/// synchronous=NORMAL, as every log). Floor: every row each `record` call left (its events and the
/// projection rows they produced), inserted raw with one transaction per session — the log's own
/// boundaries —, same settings. A reference line puts every one of those rows in its own transaction.
enum AppendSession: Scenario {
    static let name = "append-session"
    static let summary = "one transaction per finished session vs raw inserts of the rows it leaves, one transaction per session (WAL, synchronous=NORMAL)"

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
                            seconds: watch.seconds, cpuSeconds: watch.cpuSeconds, goal: .ratioAtLeast(0.7))
        m.notes.append("\(Fmt.rate(Double(s.sessions) / watch.seconds, "sessions")); each record call adds a ScriptRecorded event")
        var r = Measurement(scenario: name, kind: .rss, size: size, units: events, goal: .megabytesAtMost(100))
        r.rssBytes = rss
        var rows = [m, r]
        if !ctx.prepareOnly {
            let src = try RawDB(path, readonly: true)
            let tables = try Floors.addedRows(in: src, after: base, baseLog: try ctx.baseLog(trees: s.sessionTrees))
            let ends = try Floors.transactionEnds(in: src, after: base)
            ctx.note("floor: raw inserts of the rows each record call left, one transaction per session (\(ends.count) transactions)")
            let perSession = try Floors.replay(tables, from: src, into: ctx.path("floor-session-txn.sqlite"), grouping: .endingAt(ends), remove: ctx.remove)
            rows[0].floorSeconds = perSession.watch.seconds
            rows[0].floorCpuSeconds = perSession.watch.cpuSeconds
            rows[0].floorDescription = "raw C-API INSERT of every row each record call left (\(perSession.total) rows: \(perSession.summary)) "
                + "into a fresh file with the measured log's DDL, BEGIN IMMEDIATE/COMMIT around each session's rows "
                + "(\(perSession.transactions) transactions, the log's own boundaries), WAL + synchronous=NORMAL"
            ctx.note("reference: the same rows, one transaction per row")
            let perRow = try Floors.replay(tables, from: src, into: ctx.path("floor-session-row.sqlite"), grouping: .eachRow, remove: ctx.remove)
            var ref = Measurement(scenario: name + " (floor: 1 txn/row)", kind: .info, size: size, units: events, unitName: "ev",
                                  seconds: watch.seconds, cpuSeconds: watch.cpuSeconds)
            ref.floorSeconds = perRow.watch.seconds
            ref.floorCpuSeconds = perRow.watch.cpuSeconds
            ref.floorDescription = "reference only: the same \(perRow.total) rows with BEGIN IMMEDIATE/COMMIT around each row (\(perRow.transactions) transactions)"
            rows.append(ref)
            if ctx.peers != nil {
                rows.append(try Peers.compare(ctx, scenario: name, logPath: path, after: base, size: size, seconds: watch.seconds, cpuSeconds: watch.cpuSeconds))
            }
        }
        return rows
    }
}
