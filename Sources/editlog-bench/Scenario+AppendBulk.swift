import EditLog
import Foundation

/// Records sessions in bulk (`record`, one transaction per batch of sessions) until the log has grown by
/// `bulkEvents` events. Floor: the same rows, read back from the log, inserted with the C API into a fresh
/// file with the same table definition and indexes, one prepared statement, one transaction.
/// The log it leaves behind is the big log `rebuild`, `verify` and `history` read.
enum AppendBulk: Scenario {
    static let name = "append-bulk"
    static let summary = "record sessions in bulk (one transaction per batch) vs raw inserts of the same rows in one transaction"

    static func run(_ ctx: BenchContext) throws -> [Measurement] {
        let s = ctx.sizes
        let path = ctx.bulkLogPath
        try? FileManager.default.removeItem(atPath: ctx.bulkLogReadyMarker)
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
                            seconds: watch.seconds, cpuSeconds: watch.cpuSeconds, goal: .ratioAtLeast(0.8))
        m.notes.append("log grew from \(base) to \(total) events; \(Fmt.count(recorded)) timed")
        if !ctx.prepareOnly {
            ctx.note("floor: raw C-API inserts of the same \(Fmt.count(recorded)) rows, one statement, one transaction")
            let floor = try Floors.insertEvents(ctx, from: path, after: base, transactions: .callerManaged, name: "floor-bulk")
            m.floorSeconds = floor.seconds
            m.floorCpuSeconds = floor.cpuSeconds
            m.floorDescription = "raw C-API INSERT of the same rows into an identical events table (same indexes), one prepared statement, one transaction, WAL + synchronous=NORMAL"
        }
        var r = Measurement(scenario: name, kind: .rss, size: size, units: recorded, goal: .megabytesAtMost(100))
        r.rssBytes = rss
        return [m, r]
    }
}

enum Floors {
    /// Copies the log's events after position `after` into a fresh file with the same `events` table
    /// (earlier rows copied first, untimed), timing only the inserts and their transactions.
    static func insertEvents(_ ctx: BenchContext, from logPath: String, after: Int64, transactions: FloorTransactions, name: String) throws -> Stopwatch {
        let floorPath = ctx.path("\(name).sqlite")
        ctx.remove(floorPath)
        defer { ctx.remove(floorPath) }
        let src = try RawDB(logPath, readonly: true)
        let dst = try RawDB(floorPath)
        try dst.useLogSettings()
        try RawCopy.cloneSchema(of: "events", from: src, into: dst)
        let cols = try src.columns(of: "events")
        let select = "SELECT \(cols.map(Raw.quote).joined(separator: ", ")) FROM events WHERE position <= \(after) ORDER BY position"
        var untimed: Stopwatch? = nil
        try dst.exec("BEGIN")
        try RawCopy.copy(select: select, from: src, into: dst, table: "events", columns: cols, transactions: .callerManaged, watch: &untimed)
        try dst.exec("COMMIT")
        try dst.exec("PRAGMA wal_checkpoint(TRUNCATE)")
        var watch: Stopwatch? = Stopwatch()
        let timedSelect = "SELECT \(cols.map(Raw.quote).joined(separator: ", ")) FROM events WHERE position > \(after) ORDER BY position"
        let begin = try dst.prepare("BEGIN IMMEDIATE"), commit = try dst.prepare("COMMIT")
        if case .callerManaged = transactions { try watch!.time { try begin.run() } }
        try RawCopy.copy(select: timedSelect, from: src, into: dst, table: "events", columns: cols, transactions: transactions, watch: &watch)
        if case .callerManaged = transactions { try watch!.time { try commit.run() } }
        return watch!
    }
}
