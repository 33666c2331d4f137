import EditLog
import EditLogSync
import Foundation

/// `editlog sync` pulling N remote changes: a hub (a copy of the base log with N trees) is served on 127.0.0.1
/// by `editlog serve`'s application in a process of its own (`SyncHub`: a hub is another machine, so the peak RSS
/// is the device's alone); a device (another copy) syncs once (timed as `sync-snapshot`: a first sync reads every
/// feature in pages; floor: the same pages downloaded), the hub then records one session on each of the N trees
/// (again in its own process), and the device's second sync is timed, in a process of its own as `editlog sync`
/// runs (`SyncDevice`: extractChanges, attachment lists, the merge of 2N sync-pull events, rules derived again, the
/// state events). Floor: the same `extractChanges` answer downloaded over the same loopback, plus raw C-API inserts
/// of every row the sync left, one transaction. A third run, with nothing new to pull, gives a peak RSS row of its own.
enum SyncScenario: Scenario {
    static let name = "sync"
    static let summary = "sync pulling N remote changes (N: 100k full, 2k --quick) vs the extractChanges download plus raw inserts of the rows it left; the first sync's snapshot vs its query pages downloaded; the peak RSS of the run after it"

    /// Runs async work from the scenario's synchronous code (the server answers on its own event loops).
    static func blocking<T>(_ body: @escaping () async throws -> T) throws -> T {
        let box = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        let unchecked = UncheckedBody(body)
        Task {
            do { box.result = .success(try await unchecked.body()) } catch { box.result = .failure(error) }
            done.signal()
        }
        done.wait()
        return try box.result!.get()
    }

    /// Every layer's query pages (`maxRecordCount` a page) downloaded and parsed over the loopback: the floor of
    /// reading a service's features. Returns the bytes read.
    static func queryPages(_ url: String, layers: [LayerSchema]) throws -> Int {
        try blocking {
            var total = 0
            for layer in layers {
                var offset = 0
                while true {
                    let r = try await HTTPTransport().postForm(url + "/\(layer.id)/query", form: [
                        ("where", "1=1"), ("outFields", "*"), ("returnGeometry", "true"), ("orderByFields", layer.objectIdField ?? "OBJECTID"),
                        ("resultOffset", String(offset)), ("resultRecordCount", String(SyncHub.maxRecordCount)), ("f", "json"), ("token", SyncHub.token),
                    ])
                    total += r.body.count
                    guard let page = try? JSONParser.parse(r.body), let features = page["features"]?.arrayValue, !features.isEmpty else { break }
                    offset += features.count
                    if page["exceededTransferLimit"]?.boolValue != true { break }
                }
            }
            return total
        }
    }

    static func run(_ ctx: BenchContext) throws -> [Measurement] {
        let n = ctx.sizes.syncChanges
        let base = try ctx.baseLog(trees: n)
        let hubPath = ctx.path("sync-hub.editlog"), devicePath = ctx.path("sync-device.editlog")
        for p in [hubPath, devicePath] { ctx.remove(p); try FileManager.default.copyItem(atPath: base, toPath: p) }
        defer { ctx.remove(hubPath); ctx.remove(devicePath) }
        let deviceClock = StepClock(start: 1_781_500_000_000, step: 1)
        let deviceIds = UUIDv7Generator(clock: deviceClock, seed: ctx.seed &+ 22)
        let firstRun = try EditLog.open(at: devicePath, clock: deviceClock, ids: deviceIds)
        let layers = firstRun.schema.layers
        let firstBox = UncheckedRef(firstRun)
        var hub = try SyncHub.Child(path: hubPath, recordTrees: 0, ctx: ctx)
        defer { hub.stop() }
        let firstURL = hub.url
        let firstClient = try FeatureServiceClient(url: firstURL, token: SyncHub.token)

        ctx.note("timed: the first sync of a device with the hub (\(n) trees): a snapshot, every feature read in pages and compared")
        var first = Stopwatch()
        let snapshot = try first.time { try blocking { try await SyncEngine(log: firstBox.value, client: firstClient, options: SyncOptions(actor: "bench", device: "editlog-bench")).run() } }
        var s = Measurement(scenario: "sync-snapshot", kind: .throughput, size: "\(Fmt.count(n)) trees", units: n, unitName: "trees",
                            seconds: first.seconds, cpuSeconds: first.cpuSeconds, goal: .ratioAtLeast(0.2))
        s.notes.append("snapshot \(snapshot.snapshot), \(snapshot.pulled.count) changes pulled, \(snapshot.pushed.count) pushed")
        if !ctx.prepareOnly {
            // Floor: the same pages of every layer downloaded over the same loopback (what the snapshot cannot avoid).
            var download = Stopwatch()
            let bytes = try download.time { try queryPages(firstURL, layers: layers) }
            s.floorSeconds = download.seconds
            s.floorCpuSeconds = download.cpuSeconds
            s.floorDescription = "every layer's query pages (\(SyncHub.maxRecordCount) a page) downloaded and parsed over the same loopback (\(Fmt.mb(Int64(bytes))))"
        }
        // The hub records one session on each of n trees in a new process of its own, then serves them.
        hub.stop()
        ctx.note("the hub records one session on each of \(n) trees (in its own process), then serves")
        hub = try SyncHub.Child(path: hubPath, recordTrees: n, port: hub.port, ctx: ctx)
        let url = hub.url
        let client = try FeatureServiceClient(url: url, token: SyncHub.token)
        firstRun.close()
        let before = try eventCount(devicePath)
        ctx.prewarm(devicePath)
        // The second sync is a second run, as each `editlog sync` is: a process of its own, whose peak RSS is that
        // run's alone (`SyncDevice`); with --in-process (for profilers), in this one, after a trim of the heap.
        ctx.note("timed: the device's second sync" + (ctx.inProcess ? " (in this process)" : " (in a process of its own)"))
        let opts = SyncOptions(actor: "bench", device: "editlog-bench")
        let report: SyncDevice.Outcome
        if ctx.inProcess {
            let device = try EditLog.open(at: devicePath, clock: deviceClock, ids: deviceIds)
            defer { device.close() }
            let deviceBox = UncheckedRef(device)
            Memory.resetPeak()
            var watch = Stopwatch()
            let r = try watch.time { try blocking { try await SyncEngine(log: deviceBox.value, client: client, options: opts).run() } }
            report = SyncDevice.Outcome(r, watch)
        } else {
            report = try SyncDevice.child(path: devicePath, url: url, run: 1, ctx: ctx)
        }
        let after = try eventCount(devicePath)
        let size = "\(Fmt.count(report.pulled)) remote changes"
        var m = Measurement(scenario: name, kind: .throughput, size: size, units: report.pulled, unitName: "changes",
                            seconds: report.seconds, cpuSeconds: report.cpuSeconds, goal: .ratioAtLeast(0.5))
        m.notes.append("\(report.pulled) changes pulled (serverGen \(report.fromServerGen) -> \(report.toServerGen)), \(report.imported) events imported, "
                       + "\(report.conflicts) conflicts, \(report.pushed) pushed; the device grew from \(before) to \(after) events")
        if !ctx.prepareOnly {
            ctx.note("floor: the same extractChanges download, then raw inserts of every row the sync left (one transaction)")
            var download = Stopwatch()
            // In the same windows of server generations the sync asks for (serve answers at most 30,000 ObjectIDs at once).
            let from = report.fromServerGen, to = report.toServerGen
            let layerIds = "[\(layers.map { String($0.id) }.joined(separator: ","))]"
            let bytes = try download.time {
                try blocking {
                    var total = 0, start = from
                    repeat {
                        let end = min(to, start + opts.generationWindow)
                        let r = try await HTTPTransport().postForm(url + "/extractChanges", form: [
                            ("layers", layerIds), ("serverGens", "[\(start),\(end)]"), ("returnInserts", "true"), ("returnUpdates", "true"),
                            ("returnDeletes", "true"), ("dataFormat", "json"), ("f", "json"), ("token", SyncHub.token),
                        ])
                        if r.body.count < 1000, String(decoding: r.body, as: UTF8.self).contains("\"error\"") {
                            throw RawError(description: "the floor's extractChanges failed: \(String(decoding: r.body, as: UTF8.self))")
                        }
                        total += r.body.count
                        start = end
                    } while start < to
                    return total
                }
            }
            let src = try RawDB(devicePath, readonly: true)
            let tables = try Floors.addedRows(in: src, after: before, baseLog: nil)
            let floor = try Floors.replay(tables, from: src, into: ctx.path("floor-sync.sqlite"), grouping: .oneTransaction, remove: ctx.remove)
            m.floorSeconds = download.seconds + floor.watch.seconds
            m.floorCpuSeconds = download.cpuSeconds + floor.watch.cpuSeconds
            m.floorDescription = "the extractChanges answer downloaded over the same loopback (\(Fmt.mb(Int64(bytes))), \(Fmt.seconds(download.seconds))) "
                + "plus raw C-API INSERT of every row the sync left (\(floor.total) rows: \(floor.summary)), one transaction, WAL + synchronous=NORMAL "
                + "(\(Fmt.seconds(floor.watch.seconds)))"
        }
        var r = Measurement(scenario: name, kind: .rss, size: size, units: report.pulled, goal: .megabytesAtMost(120))
        r.rssBytes = report.peakRSS
        var rows = [s, m, r]
        // A third run, with nothing new to pull: what a run holds of the pulls before it (the `$sync` stream lists
        // every change ever pulled).
        if !ctx.inProcess {
            ctx.note("timed: the device's third sync (nothing new to pull; in a process of its own)")
            let third = try SyncDevice.child(path: devicePath, url: url, run: 2, ctx: ctx)
            var t = Measurement(scenario: name + " (the next run)", kind: .rss, size: "0 new after \(size)", units: third.pulled, goal: .megabytesAtMost(120))
            t.rssBytes = third.peakRSS
            t.notes.append("\(third.pulled) changes pulled, \(third.imported) events imported, \(third.pushed) pushed, in \(Fmt.seconds(third.seconds))")
            rows.append(t)
        }
        return rows
    }
}

/// The events of the log at `path` (opened read-only, closed again).
func eventCount(_ path: String) throws -> Int64 {
    let log = try EditLog.open(at: path, readonly: true)
    defer { log.close() }
    return try log.eventCount()
}

final class ResultBox<T>: @unchecked Sendable {
    var result: Result<T, any Error>?
}

/// A closure (over non-Sendable logs) handed to a task the scenario waits for: used from one task at a time.
final class UncheckedBody<T>: @unchecked Sendable {
    let body: () async throws -> T
    init(_ body: @escaping () async throws -> T) { self.body = body }
}

/// A non-Sendable value handed to a task the scenario waits for.
final class UncheckedRef<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
