import EditLog
import Foundation

/// Records sessions in bulk (`record`, one transaction per batch of sessions) until the log has grown by
/// `bulkEvents` events. Floor (the record floor): every row the timed `record` calls left in the log — the
/// event rows and the projection rows they produced (sessions, feature rows, attachments, scripts, staged
/// blobs) — read back and inserted with the C API into a fresh file with the same tables and indexes, one
/// transaction. Reference lines keep the older events-only floor, and put the same rows in one transaction per
/// `record` call (the boundaries the calls' atomicity imposes). With `--peers`, the same events go
/// through a peer event store (eventsourcing on SQLite) with the same transaction grouping.
/// The log it leaves behind is the big log `rebuild`, `verify` and `history` read.
enum AppendBulk: Scenario {
    static let name = "append-bulk"
    static let summary = "record sessions in bulk (one transaction per batch) vs raw inserts of every row it leaves, one transaction"

    static func run(_ ctx: BenchContext) throws -> [Measurement] {
        let s = ctx.sizes
        let path = ctx.bulkLogPath
        try? FileManager.default.removeItem(atPath: ctx.bulkLogReadyMarker)
        try? FileManager.default.removeItem(atPath: path + ".checkpoints")  // the replay scenario's, of the previous log
        let (log, workload) = try ctx.logFromBase(at: path, trees: s.bulkTrees, workloadSeed: ctx.seed)
        let base = try log.eventCount()
        ctx.note("base log: \(base) events; recording \(Fmt.count(s.bulkEvents)) events in batches of \(s.batchSessions) sessions")

        Memory.resetPeak()
        var watch = Stopwatch()
        var recorded = 0, sessions = 0, batches = 0, line = 0
        var nextReport = s.bulkEvents / 10
        while recorded < s.bulkEvents {
            var commands: [ScriptCommand] = []
            line = 0
            for _ in 0..<s.batchSessions {
                commands += workload.nextSession(line: &line)
                sessions += 1
            }
            batches += 1
            let label = "bench-bulk-\(ctx.seed)-\(batches)"
            let result = try watch.time { try log.record(commands, name: label, sha256: Workload.scriptSHA(label)) }
            recorded += result.events.count
            if recorded >= nextReport {
                ctx.note("\(Fmt.count(recorded)) events, \(Fmt.rate(Double(recorded) / watch.seconds, "ev")), RSS \(Fmt.mb(Memory.currentBytes()))")
                nextReport += s.bulkEvents / 10
            }
        }
        let rss = Memory.peakBytes()
        let total = try log.eventCount()
        log.close()
        _ = FileManager.default.createFile(atPath: ctx.bulkLogReadyMarker, contents: Data("\(total)\n".utf8))

        let size = "\(Fmt.count(recorded)) events (\(Fmt.count(sessions)) sessions, \(batches) batches)"
        var m = Measurement(scenario: name, kind: .throughput, size: size, units: recorded, unitName: "ev",
                            seconds: watch.seconds, cpuSeconds: watch.cpuSeconds, goal: .ratioAtLeast(0.5))
        m.notes.append("log grew from \(base) to \(total) events; \(Fmt.count(recorded)) timed")
        var r = Measurement(scenario: name, kind: .rss, size: size, units: recorded, goal: .megabytesAtMost(100))
        r.rssBytes = rss
        var rows = [m, r]
        if !ctx.prepareOnly {
            ctx.note("record floor: raw C-API inserts of every row the record calls left (events and projection rows), one transaction")
            let src = try RawDB(path, readonly: true)
            let tables = try Floors.addedRows(in: src, after: base, baseLog: try ctx.baseLog(trees: s.bulkTrees))
            let floor = try Floors.replay(tables, from: src, into: ctx.path("floor-bulk.sqlite"), grouping: .oneTransaction, remove: ctx.remove)
            rows[0].floorSeconds = floor.watch.seconds
            rows[0].floorCpuSeconds = floor.watch.cpuSeconds
            rows[0].floorDescription = "the record floor: raw C-API INSERT, one prepared statement per table, of every row the timed record calls left "
                + "(\(floor.total) rows: \(floor.summary); an updated feature row counts once) into a fresh file with the measured log's DDL "
                + "(same tables and indexes), one transaction, WAL + synchronous=NORMAL"
            ctx.note("reference: the events-only floor (the same \(Fmt.count(recorded)) event rows, one transaction)")
            let eventsOnly = try Floors.insertEvents(ctx, from: path, after: base, transactions: .callerManaged, name: "floor-bulk-events")
            var e = Measurement(scenario: name + " (floor: events only)", kind: .info, size: size, units: recorded, unitName: "ev",
                                seconds: watch.seconds, cpuSeconds: watch.cpuSeconds)
            e.floorSeconds = eventsOnly.seconds
            e.floorCpuSeconds = eventsOnly.cpuSeconds
            e.floorDescription = "reference only: raw C-API INSERT of the event rows alone into an events table already holding the base log's events "
                + "(same indexes), one prepared statement, one transaction, WAL + synchronous=NORMAL"
            rows.append(e)
            let ends = try Floors.transactionEnds(in: src, after: base)
            ctx.note("reference: the record floor's rows, one transaction per record call (\(ends.count) transactions)")
            let perCall = try Floors.replay(tables, from: src, into: ctx.path("floor-bulk-calls.sqlite"), grouping: .endingAt(ends), remove: ctx.remove)
            var c = Measurement(scenario: name + " (floor: 1 txn/record call)", kind: .info, size: size, units: recorded, unitName: "ev",
                                seconds: watch.seconds, cpuSeconds: watch.cpuSeconds)
            c.floorSeconds = perCall.watch.seconds
            c.floorCpuSeconds = perCall.watch.cpuSeconds
            c.floorDescription = "reference only: the record floor's \(perCall.total) rows with BEGIN IMMEDIATE/COMMIT around each record call's rows "
                + "(\(perCall.transactions) transactions, the log's own boundaries): the physical work the calls' atomicity cannot avoid"
            rows.append(c)
            if ctx.peers != nil {
                rows.append(try Peers.compare(ctx, scenario: name, logPath: path, after: base, size: size, seconds: watch.seconds, cpuSeconds: watch.cpuSeconds))
            }
        }
        return rows
    }
}
