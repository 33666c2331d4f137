import EditLog
import EditLogServer
import Foundation

/// `historicMoment` pages of the feature service (issue 56) over the big log, served in this process as
/// `ServeLoad` serves its log, with the log's checkpoints (every 10,000 events, made first, untimed, as `replay`'s).
/// The layer's definition is read first (untimed), as a client reads `startArchivingMoment` before it asks for a
/// moment; before a moment's first page its checkpoint's file is read once (untimed), as the log is: the pages are
/// measured with the files they read in the OS's page cache. For each of a few random (seeded) moments between the log's first and last client times, pages of 1,000
/// trees (`where=1=1`, `outFields=*`, geometry, ordered by ObjectID, a random `resultOffset`) one GET at a time, as a
/// client paging through the moment does. The goal, p99 ≤ 200 ms, is read over every page, the first at each moment
/// included (it makes the moment's state over the nearest checkpoint); the first pages also have a row of their own.
/// The floor: the same pages after the first without `historicMoment` (the live projections), over the same HTTP path.
enum HistoricPage: Scenario {
    static let name = "historic-page"
    static let summary = "serve: a 1,000-feature query page at a random historicMoment of the big log, the first at the moment included (goal p99 ≤ 200 ms; floor: the same page live)"
    static let needsBulkLog = true

    static func run(_ ctx: BenchContext) throws -> [Measurement] {
        let log = try ctx.openBulkLog()
        let events = try log.eventCount()
        let t0 = Stopwatch.wallNow()
        let written = try log.createCheckpoints(every: ReplayAt.checkpointEvery)
        ctx.note("checkpoints every \(ReplayAt.checkpointEvery) events: \(written.count) written (\(Fmt.seconds(Double(Stopwatch.wallNow() - t0) / 1e9)), untimed)")
        guard let start = try log.startMilliseconds(by: .client), let last = try log.events(after: events - 1).first,
              let end = Timestamp.parse(EventClock.client.time(of: last)) else { throw RawError(description: "the big log has no events") }
        let trees = try log.queryCount(layer: "0", FeatureQuery())
        let quick = ctx.sizes.profile == "quick"
        let momentsCount = quick ? 4 : 8, pagesPerMoment = quick ? 25 : 50
        ctx.prewarm(ctx.bulkLogPath)
        let port = try ServeLoad.startServer(log)
        let layer = "http://127.0.0.1:\(port)/arcgis/rest/services/Trees/FeatureServer/0"
        let base = layer + "/query?where=1%3D1&outFields=*&orderByFields=OBJECTID&resultRecordCount=1000&f=json"
        defer { try? FileManager.default.removeItem(atPath: ctx.bulkLogPath + ".moments-\(getpid())") }

        /// One GET, timed (ms); fails on an ArcGIS error or a page that is not 1,000 features.
        func page(_ url: String) throws -> Double {
            let t = Stopwatch.wallNow()
            let d = try ServeLoad.get(url)
            let ms = Double(Stopwatch.wallNow() - t) / 1e6
            guard d.count > 100, !d.starts(with: Data(#"{"error":"#.utf8)) else { throw RawError(description: "\(url.prefix(160)) answered \(String(decoding: d.prefix(300), as: UTF8.self))") }
            return ms
        }
        let definition = try ServeLoad.get(layer + "?f=json")
        guard definition.count > 100, !definition.starts(with: Data(#"{"error":"#.utf8)) else {
            throw RawError(description: "the layer's definition: \(String(decoding: definition.prefix(300), as: UTF8.self))")
        }
        var rng = SplitMix64(seed: ctx.seed &+ 0x4157)
        var cold: [Double] = [], warm: [Double] = [], floor: [Double] = []
        for _ in 0..<momentsCount {
            let moment = start + Int64(rng.next() % UInt64(max(1, end - start)))
            let position = try log.position(atMilliseconds: moment, by: .client)
            if let c = try log.checkpoints().last(where: { $0.position <= position }) { ctx.prewarm(c.path) }
            let atMoment = "&historicMoment=\(moment)"
            let offsets = (0..<pagesPerMoment).map { _ in Int(rng.next() % UInt64(max(1, trees - 1000))) }
            cold.append(try page(base + "&resultOffset=\(offsets[0])" + atMoment))
            ctx.note("moment \(Timestamp.human(milliseconds: moment)) (position \(Fmt.count(Int(position))) of \(Fmt.count(Int(events)))): first page \(Fmt.num(cold.last!)) ms")
            for o in offsets {
                warm.append(try page(base + "&resultOffset=\(o)" + atMoment))
                floor.append(try page(base + "&resultOffset=\(o)"))
            }
        }
        log.close()
        func pct(_ v: [Double], _ p: Double) -> Double {
            let s = v.sorted()
            return s[min(s.count - 1, max(0, Int((p * Double(s.count)).rounded(.up)) - 1))]
        }
        let size = "1,000 of \(Fmt.count(trees)) trees at \(momentsCount) moments of a \(Fmt.count(Int(events)))-event log"
        let all = cold + warm
        var m = Measurement(scenario: name, kind: .latency, size: size, units: all.count, unitName: "pages", goal: .millisecondsAtMost(200))
        m.seconds = all.reduce(0, +) / 1000
        m.p50ms = pct(all, 0.5); m.p99ms = pct(all, 0.99); m.maxms = all.max()
        m.floorSeconds = floor.reduce(0, +) / 1000
        m.floorDescription = "the pages after the first without historicMoment (the live projections), same HTTP path, one GET at a time: p50 \(Fmt.num(pct(floor, 0.5))) ms, p99 \(Fmt.num(pct(floor, 0.99))) ms"
        m.notes.append("every page: the first at each moment and \(pagesPerMoment) after it (p50 \(Fmt.num(pct(warm, 0.5))) ms, p99 \(Fmt.num(pct(warm, 0.99))) ms); one GET at a time over the loopback")
        var c = Measurement(scenario: name + " (first page)", kind: .latency, size: size, units: cold.count, unitName: "moments", goal: .millisecondsAtMost(200))
        c.seconds = cold.reduce(0, +) / 1000
        c.p50ms = pct(cold, 0.5); c.p99ms = pct(cold, 0.99); c.maxms = cold.max()
        c.notes.append("the first query at a moment makes its state over the nearest checkpoint (kept for the next pages); the goal read on these pages alone")
        return [m, c]
    }
}
