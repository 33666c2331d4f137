import EditLog
import Foundation

/// Drops and rebuilds every projection from the big log's events (`rebuild`, one transaction).
/// Floor: raw C-API inserts of the resulting rows (every projection table, read back after the rebuild)
/// into an identical empty schema (same tables and indexes), one prepared statement per table, one transaction.
enum Rebuild: Scenario {
    static let name = "rebuild"
    static let summary = "rebuild projections from scratch vs raw inserts of the resulting rows"
    static let needsBulkLog = true

    static func run(_ ctx: BenchContext) throws -> [Measurement] {
        ctx.prewarm(ctx.bulkLogPath)
        let log = try ctx.openBulkLog()
        let events = Int(try log.eventCount())
        ctx.note("rebuilding the projections of \(Fmt.count(events)) events")
        Memory.resetPeak()
        var watch = Stopwatch()
        try watch.time { try log.rebuild() }
        let rss = Memory.peakBytes()
        log.close()

        let size = "\(Fmt.count(events))-event log"
        var m = Measurement(scenario: name, kind: .throughput, size: size, units: events, unitName: "ev",
                            seconds: watch.seconds, cpuSeconds: watch.cpuSeconds, goal: .ratioAtLeast(0.5))
        if !ctx.prepareOnly {
            let floorPath = ctx.path("floor-rebuild.sqlite")
            ctx.remove(floorPath)
            defer { ctx.remove(floorPath) }
            let src = try RawDB(ctx.bulkLogPath, readonly: true)
            let dst = try RawDB(floorPath)
            try dst.useLogSettings()
            let tables = try src.strings("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'p\\_%' ESCAPE '\\' ORDER BY name")
            for t in tables { try RawCopy.cloneSchema(of: t, from: src, into: dst) }
            ctx.note("floor: raw inserts of the rebuilt rows of \(tables.joined(separator: ", "))")
            var fw: Stopwatch? = Stopwatch()
            let begin = try dst.prepare("BEGIN IMMEDIATE"), commit = try dst.prepare("COMMIT")
            try fw!.time { try begin.run() }
            var rows = 0, featureRows = 0
            for t in tables {
                let cols = try src.columns(of: t)
                let n = try RawCopy.copy(select: "SELECT \(cols.map(Raw.quote).joined(separator: ", ")) FROM \(Raw.quote(t))", from: src, into: dst,
                                         table: t, columns: cols, transactions: .callerManaged, watch: &fw)
                rows += n
                if t.hasPrefix("p_layer_") { featureRows += n }
            }
            try fw!.time { try commit.run() }
            m.floorSeconds = fw!.seconds
            m.floorCpuSeconds = fw!.cpuSeconds
            m.floorDescription = "raw C-API INSERT of the \(rows) rebuilt projection rows (\(featureRows) feature rows) into an identical empty schema, one transaction"
            m.notes.append("floor inserts \(rows) rows: \(featureRows) feature rows + sessions, attachments, scripts")
        }
        var r = Measurement(scenario: name, kind: .rss, size: size, units: events, goal: .megabytesAtMost(100))
        r.rssBytes = rss
        return [m, r]
    }
}
