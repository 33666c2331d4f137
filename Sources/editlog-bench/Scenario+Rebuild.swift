import EditLog
import Foundation

/// Drops and rebuilds every projection from the big log's events (`rebuild`, one transaction).
/// Floor: a raw scan of every event row (`SELECT * FROM events`, every column stepped) plus raw C-API inserts
/// of the resulting projection rows (every projection table, read back after the rebuild) into an identical
/// empty schema (the measured log's DDL: same tables and indexes), one prepared statement per table, one transaction.
enum Rebuild: Scenario {
    static let name = "rebuild"
    static let summary = "rebuild projections from scratch vs a raw scan of the events plus raw inserts of the resulting rows"
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
            let src = try RawDB(ctx.bulkLogPath, readonly: true)
            let tables = try Floors.projectionRows(in: src)
            ctx.note("floor: raw scan of the events + raw inserts of the rebuilt rows of \(tables.map(\.table).joined(separator: ", "))")
            let floor = try Floors.replay(tables, from: src, into: ctx.path("floor-rebuild.sqlite"), grouping: .oneTransaction,
                                          scanEvents: true, cacheKiB: EditLog.rebuildCacheKiB, remove: ctx.remove)
            m.floorSeconds = floor.watch.seconds
            m.floorCpuSeconds = floor.watch.cpuSeconds
            m.floorDescription = "raw C-API SELECT * FROM events stepping every column of the \(events) rows, then raw INSERT of the \(floor.total) rebuilt "
                + "projection rows (\(floor.featureRows) feature rows; \(floor.summary)) into a fresh file with the measured log's DDL, one transaction, "
                + "the rebuild's \(EditLog.rebuildCacheKiB / 1024) MiB page cache"
        }
        var r = Measurement(scenario: name, kind: .rss, size: size, units: events, goal: .megabytesAtMost(100))
        r.rssBytes = rss
        return [m, r]
    }
}
