import EditLog
import Foundation

/// Verifies the whole hash chain of the big log (`verify(projections: false, structure: false)`: every event's
/// hash, stream versions, origins and blobs; SQLite's integrity_check and the definitions check are left out). Floor: a raw full scan, `SELECT * FROM events`
/// stepping every column.
enum Verify: Scenario {
    static let name = "verify"
    static let summary = "verify the whole hash chain vs a raw full scan of the events table"
    static let needsBulkLog = true

    static func run(_ ctx: BenchContext) throws -> [Measurement] {
        ctx.prewarm(ctx.bulkLogPath)
        let log = try ctx.openBulkLog()
        let events = Int(try log.eventCount())
        ctx.note("verifying the chain of \(Fmt.count(events)) events")
        Memory.resetPeak()
        var watch = Stopwatch()
        let report = try watch.time { try log.verify(projections: false, structure: false) }
        let rss = Memory.peakBytes()
        log.close()
        guard report.ok else { throw RawError(description: "the log did not verify: \(report.problems.prefix(3).joined(separator: "; "))") }

        let size = "\(Fmt.count(events))-event log"
        var m = Measurement(scenario: name, kind: .throughput, size: size, units: events, unitName: "ev",
                            seconds: watch.seconds, cpuSeconds: watch.cpuSeconds, goal: .ratioAtLeast(0.3))
        m.notes.append("\(report.blobs) blobs checked too")
        if !ctx.prepareOnly {
            ctx.note("floor: raw full scan of the events table")
            let db = try RawDB(ctx.bulkLogPath, readonly: true)
            var fw = Stopwatch()
            let scanned = try fw.time { try RawCopy.scan(db, sql: "SELECT * FROM events") }
            guard scanned.rows == events else { throw RawError(description: "scan saw \(scanned.rows) rows, the log has \(events)") }
            m.floorSeconds = fw.seconds
            m.floorCpuSeconds = fw.cpuSeconds
            m.floorDescription = "raw C-API SELECT * FROM events, stepping every column of every row"
        }
        var r = Measurement(scenario: name, kind: .rss, size: size, units: events, goal: .megabytesAtMost(100))
        r.rssBytes = rss
        return [m, r]
    }
}
