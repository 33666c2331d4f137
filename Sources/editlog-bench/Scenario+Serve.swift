import EditLog
import EditLogServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `editlog serve` under Debian's `wrk` on the loopback: the feature service of a copy of the base log
/// (`bulkTrees` generated trees plus the fixture's), run in this process (Hummingbird, release build) with
/// `maxRecordCount` 1,000. Three requests, each a `wrk --latency` run of 16 connections for a bounded time:
///
/// - `query` of 1,000 features by `where` (`OBJECTID BETWEEN …`, `outFields=*`, geometry),
/// - `query` of 1,000 features by `objectIds` (every other ObjectID of a range),
/// - `applyEdits` of 10 updates (a wrk Lua script POSTs form-encoded updates of random trees' DBH).
///
/// Each first alone at full speed (capacity: requests/s, p50/p99), then all three at once, paced by wrk's
/// `delay()`, at twice the expected load (below): the goal rows, query p99 ≤ 20 ms and no error. An ArcGIS
/// error travels with HTTP 200, so the Lua scripts read every body (`{"error":…}`, `"success":false`).
/// The floor of each query: the same query through the facade in this process (`queryFeatures` and the
/// feature set's JSON as the service writes it, `FeatureSetJSON`), no HTTP, one at a time.
///
/// The expected load: 200 devices syncing once a minute, each sync one `where` query (the pull), one
/// `objectIds` query (the features it names) and one `applyEdits` of 10 updates (the push): 3.3 requests/s
/// of each, 10/s in all; 2x is 6.7/s of each, 20/s in all.
/// Without `wrk` on the PATH the service rows say "peer unavailable" (the floors are still measured).
enum ServeLoad: Scenario {
    static let name = "serve"
    static let summary = "editlog serve under wrk: query 1,000 features by where / objectIds and applyEdits of 10 updates, 16 connections; p99 at 2x the load of 200 devices syncing each minute"
    static let devices = 200.0
    static let syncsPerMinute = 1.0
    /// Requests of each kind per second at twice the expected load.
    static var pacedRate: Double { 2 * devices * syncsPerMinute / 60 }
    static let token = "bench-token-0001"

    struct WrkResult: Decodable {
        var requests: Int
        var durationUs: Double
        var bytes: Double
        var bodyErrors: Int
        var connect: Int, read: Int, write: Int, status: Int, timeout: Int
        var p50us: Double, p99us: Double, maxUs: Double
        var errors: Int { bodyErrors + connect + read + write + status + timeout }
        var rate: Double { durationUs > 0 ? Double(requests) / (durationUs / 1e6) : 0 }
    }

    static let luaCommon = """
        local threads = {}
        local counter = 0
        function setup(thread)
          counter = counter + 1
          thread:set("id", counter)
          table.insert(threads, thread)
        end
        function done(summary, latency, requests)
          local e = 0
          for _, t in ipairs(threads) do e = e + (t:get("errors") or 0) end
          io.write(string.format('EDITLOG-WRK {"requests":%d,"durationUs":%d,"bytes":%d,"bodyErrors":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50us":%d,"p99us":%d,"maxUs":%d}\\n',
            summary.requests, summary.duration, summary.bytes, e, summary.errors.connect, summary.errors.read, summary.errors.write,
            summary.errors.status, summary.errors.timeout, latency:percentile(50), latency:percentile(99), latency.max))
        end
        """

    /// GET of the URL given to wrk; an error is a non-200 status or an ArcGIS error body.
    static let queryLua = luaCommon + """

        function init(args)
          errors = 0
          pace = tonumber(args[1]) or 0
          math.randomseed(os.time() * 1000 + (id or 0) * 7919)
        end
        function delay() if pace > 0 then return math.random(math.floor(pace / 2), pace + math.floor(pace / 2)) end return 0 end
        function response(status, headers, body)
          if status ~= 200 or string.sub(body, 1, 9) == '{"error":' then errors = errors + 1 end
        end
        """

    /// POST of 10 updates of random trees' DBH (distinct, consecutive ObjectIDs from a random start).
    static let applyEditsLua = luaCommon + """

        local function urlencode(s)
          return (string.gsub(s, "[^%w%-%._~]", function(c) return string.format("%%%02X", string.byte(c)) end))
        end
        function init(args)
          errors = 0
          pace = tonumber(args[1]) or 0
          trees = tonumber(args[2])
          token = args[3]
          math.randomseed(os.time() * 1000 + (id or 0) * 7919)
        end
        function delay() if pace > 0 then return math.random(math.floor(pace / 2), pace + math.floor(pace / 2)) end return 0 end
        function request()
          local start = math.random(1, trees - 10)
          local parts = {}
          for i = 1, 10 do
            parts[i] = string.format('{"attributes":{"OBJECTID":%d,"DBH":%.1f}}', start + i, math.random(10, 1500) / 10)
          end
          local body = "f=json&rollbackOnFailure=true&token=" .. token .. "&updates=" .. urlencode("[" .. table.concat(parts, ",") .. "]")
          return wrk.format("POST", nil, {["Content-Type"] = "application/x-www-form-urlencoded"}, body)
        end
        function response(status, headers, body)
          if status ~= 200 or string.sub(body, 1, 9) == '{"error":' or string.find(body, '"success":false', 1, true) then errors = errors + 1 end
        end
        """

    static var wrkPath: String? {
        let dirs = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/usr/local/bin").split(separator: ":").map(String.init)
        return dirs.map { $0 + "/wrk" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts `wrk` (not waiting for it).
    static func startWrk(_ wrk: String, script: String, url: String, connections: Int, seconds: Int, args: [String]) throws -> (Process, Pipe) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: wrk)
        p.arguments = ["-t", String(min(2, connections)), "-c", String(connections), "-d", "\(seconds)s", "--latency", "--timeout", "10s", "-s", script, url, "--"] + args
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        return (p, out)
    }

    static func finish(_ run: (Process, Pipe)) throws -> WrkResult {
        let data = run.1.fileHandleForReading.readDataToEndOfFile()
        run.0.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix("EDITLOG-WRK ") }) else {
            throw RawError(description: "wrk exited with status \(run.0.terminationStatus) without a result: \(text.prefix(500))")
        }
        return try JSONDecoder().decode(WrkResult.self, from: Data(line.dropFirst("EDITLOG-WRK ".count).utf8))
    }

    /// The service on 127.0.0.1 (a free port) in this process; returns the port.
    static func startServer(_ log: EditLog) throws -> Int {
        var options = ServerOptions(serviceName: "Trees")
        options.port = 0
        options.anonymousReads = true
        options.tokens = [token: "bench_user"]
        options.maxRecordCount = 1000
        options.readers = 8
        let box = PortBox()
        let ready = DispatchSemaphore(value: 0)
        let app = makeApplication(log: log, options: options) { port in box.port = port; ready.signal() }
        let sendable = UncheckedBox(app)
        Task.detached { try? await sendable.value.runService() }
        guard ready.wait(timeout: .now() + 30) == .success, let port = box.port else { throw RawError(description: "the feature service did not start") }
        return port
    }

    final class PortBox: @unchecked Sendable { var port: Int? }
    final class UncheckedBox<T>: @unchecked Sendable {
        let value: T
        init(_ value: T) { self.value = value }
    }

    /// One GET, waited for.
    static func get(_ url: String) throws -> Data {
        let box = UncheckedBox(DataBox())
        let done = DispatchSemaphore(value: 0)
        URLSession.shared.dataTask(with: URL(string: url)!) { data, _, error in
            box.value.data = data; box.value.error = error; done.signal()
        }.resume()
        done.wait()
        if let e = box.value.error { throw e }
        return box.value.data ?? Data()
    }

    final class DataBox: @unchecked Sendable { var data: Data?; var error: Error? }

    /// The in-process floor of a query: `runs` times the facade query and the JSON of its features.
    static func floor(_ log: EditLog, _ q: FeatureQuery, runs: Int) throws -> (mean: Double, p50: Double, p99: Double, features: Int) {
        let fields = log.schema.layer("Trees")?.fields.filter { $0.type != .geometry } ?? []
        var ms: [Double] = []
        var features = 0
        var total = 0.0
        for _ in 0..<(runs + 3) {
            let t0 = Stopwatch.wallNow()
            let page = try log.queryFeatureBytes(layer: "0", q, fields: fields, returnGeometry: true)
            let bytes = FeatureSetJSON.bytes(header: [:], features: page.bytes)
            let t = Double(Stopwatch.wallNow() - t0) / 1e6
            features = page.count
            precondition(!bytes.isEmpty)
            ms.append(t)
            total += t
        }
        ms = Array(ms.dropFirst(3))  // warm-up
        total = ms.reduce(0, +)
        let sorted = ms.sorted()
        func pct(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int((p * Double(sorted.count)).rounded(.up)) - 1)] }
        return (total / Double(ms.count), pct(0.5), pct(0.99), features)
    }

    /// `extractChanges` of 1,000 changed features (features returned, as a sync client downloads them) over windows
    /// ending across the log's second half, each window's start found on the change index; sequential requests, so
    /// the latency is the request's own. Floor: the same features through `queryFeatureBytes` by ObjectID, in process.
    static func extractChangesRow(_ log: EditLog, base: String, trees: Int, quick: Bool) throws -> Measurement {
        let head = try log.eventCount()
        guard try log.changedFeatures(layer: "0", after: 0, upTo: 1) != nil else {
            throw RawError(description: "\(log.path) has no change index (made before it): run `editlog rebuild` on it, or remove it to have it made again")
        }
        let windows = quick ? 5 : 20, repeats = 3
        var ms: [Double] = [], floorMs: [Double] = []
        var changes = 0
        for w in 0..<windows {
            let to = head - Int64(w) * (head / 2) / Int64(windows)
            // The latest start with at least 1,000 changes in the window (binary search over positions).
            var lo: Int64 = 0, hi = to
            while hi - lo > 1 {
                let mid = (lo + hi) / 2
                if (try log.changedFeatures(layer: "0", after: mid, upTo: to)?.count ?? 0) >= 1000 { lo = mid } else { hi = mid }
            }
            let found = try log.changedFeatures(layer: "0", after: lo, upTo: to) ?? []
            changes += found.count
            let url = "\(base.replacingOccurrences(of: "/FeatureServer/0", with: "/FeatureServer"))/extractChanges?layers=0&serverGens=%5B\(lo),\(to)%5D&returnInserts=true&returnUpdates=true&returnDeletes=true&returnIdsOnly=false&f=json"
            for _ in 0..<repeats {
                let t0 = Stopwatch.wallNow()
                let d = try get(url)
                ms.append(Double(Stopwatch.wallNow() - t0) / 1e6)
                guard (try? JSONParser.parse(Array(d)))?["edits"] != nil else { throw RawError(description: "extractChanges answered \(String(decoding: d.prefix(300), as: UTF8.self))") }
            }
            let ids = try found.compactMap { try log.objectId(layer: "0", globalId: $0.globalId)?.objectId }
            floorMs.append(try floor(log, FeatureQuery(objectIds: ids, limit: ids.count), runs: repeats).mean)
        }
        let sorted = ms.sorted()
        func pct(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int((p * Double(sorted.count)).rounded(.up)) - 1)] }
        var m = Measurement(scenario: "serve extractChanges 1,000 changes", kind: .latency, size: "\(windows) windows of ≥ 1,000 changed trees of \(Fmt.count(trees)), \(Fmt.count(Int(head))) events",
                            units: ms.count, unitName: "req", goal: .millisecondsAtMost(50))
        m.seconds = ms.reduce(0, +) / 1000
        m.p50ms = pct(0.5); m.p99ms = pct(0.99); m.maxms = sorted.last
        m.floorSeconds = floorMs.reduce(0, +) / Double(floorMs.count) * Double(ms.count) / 1000
        m.floorDescription = "the same features by ObjectID through queryFeatureBytes in this process (no HTTP), mean over the windows"
        m.notes.append("\(ms.count) sequential requests (\(repeats) per window), \(changes / windows) changes per window on average; returnIdsOnly=false, so each answer carries the features")
        return m
    }

    static func run(_ ctx: BenchContext) throws -> [Measurement] {
        let trees = ctx.sizes.bulkTrees + 240
        let path = ctx.path("serve-\(ctx.sizes.bulkTrees)t-s\(ctx.seed).editlog")
        let (log, _) = try ctx.logFromBase(at: path, trees: ctx.sizes.bulkTrees, workloadSeed: ctx.seed &+ 11)
        let quick = ctx.sizes.profile == "quick"
        let aloneSeconds = quick ? 3 : 15, pacedSeconds = quick ? 10 : 30
        let low = Int64(trees / 2 - 500), high = low + 999
        let ids = (0..<1000).map { Int64(trees / 4) + 2 * Int64($0) }
        let whereText = "OBJECTID BETWEEN \(low) AND \(high)"
        ctx.prewarm(path)

        // Floors: the same queries through the facade, in this process.
        let floorRuns = quick ? 50 : 200
        let whereFloor = try floor(log, FeatureQuery(predicate: .between(.field("OBJECTID"), low: .value(.int(low)), high: .value(.int(high)), negated: false), limit: 1000), runs: floorRuns)
        let idsFloor = try floor(log, FeatureQuery(objectIds: ids, limit: 1000), runs: floorRuns)
        ctx.note("floors: where \(Fmt.num(whereFloor.mean)) ms (\(whereFloor.features) features), objectIds \(Fmt.num(idsFloor.mean)) ms (\(idsFloor.features) features)")

        let size = "1,000 of \(Fmt.count(trees)) trees, 16 connections"
        let form: (String) -> String = { $0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0 }
        var rows: [Measurement] = []
        func row(_ label: String, _ r: WrkResult?, floor: (mean: Double, p50: Double, p99: Double, features: Int)?, seconds: Int, goal: Goal?, note: String) -> Measurement {
            var m = Measurement(scenario: label, kind: .latency, size: size, units: r?.requests ?? 0, unitName: "req", goal: goal)
            if let r {
                m.seconds = r.durationUs / 1e6
                m.p50ms = r.p50us / 1000; m.p99ms = r.p99us / 1000; m.maxms = r.maxUs / 1000
                m.notes.append("\(note): \(r.requests) requests in \(Fmt.seconds(r.durationUs / 1e6)) = \(Fmt.num(r.rate)) req/s, p50 \(Fmt.num(r.p50us / 1000)) ms, p99 \(Fmt.num(r.p99us / 1000)) ms, max \(Fmt.num(r.maxUs / 1000)) ms, \(String(format: "%.1f", r.bytes / 1e6)) MB read, \(r.errors) errors")
                if r.errors > 0 { m.status = "NOT met: \(r.errors) errors" }
                if r.requests == 0 { m.status = "NOT met: no request completed" }
            } else {
                m.kind = .info
                m.status = "peer unavailable: wrk is not installed (apt-get install wrk)"
            }
            if let floor {
                m.floorSeconds = floor.mean / 1000 * Double(max(r?.requests ?? 1, 1))
                m.floorDescription = "the same query through the facade in this process (queryFeatureBytes + the feature set's JSON as the service writes it, one at a time, no HTTP): mean \(Fmt.num(floor.mean)) ms, p50 \(Fmt.num(floor.p50)) ms, p99 \(Fmt.num(floor.p99)) ms over \(floorRuns) runs, \(floor.features) features"
                if r == nil { m.units = 1; m.seconds = nil }
            }
            return m
        }

        guard let wrk = wrkPath else {
            ctx.note("wrk is not installed: the service rows say peer unavailable")
            for (label, f) in [("serve query where", whereFloor), ("serve query objectIds", idsFloor)] as [(String, (mean: Double, p50: Double, p99: Double, features: Int))] {
                rows.append(row(label, nil, floor: f, seconds: 0, goal: .millisecondsAtMost(20), note: ""))
            }
            rows.append(row("serve applyEdits 10 updates", nil, floor: nil, seconds: 0, goal: nil, note: ""))
            log.close()
            return rows
        }

        let port = try startServer(log)
        let base = "http://127.0.0.1:\(port)/arcgis/rest/services/Trees/FeatureServer/0"
        let whereURL = "\(base)/query?where=\(form(whereText))&outFields=*&f=json"
        let idsURL = "\(base)/query?objectIds=\(form(ids.map(String.init).joined(separator: ",")))&outFields=*&f=json"
        let editURL = "\(base)/applyEdits"
        let queryScript = ctx.path("serve-query.lua"), editScript = ctx.path("serve-applyedits.lua")
        try Data(queryLua.utf8).write(to: URL(fileURLWithPath: queryScript))
        try Data(applyEditsLua.utf8).write(to: URL(fileURLWithPath: editScript))
        // Check each request once (a wrong URL would otherwise measure error answers).
        for url in [whereURL, idsURL] {
            let d = try get(url)
            let v = try JSONParser.parse(Array(d))
            guard v["features"]?.arrayValue?.count == 1000 else { throw RawError(description: "\(url.prefix(120))… answered \(String(decoding: d.prefix(300), as: UTF8.self))") }
        }
        let before = try log.eventCount()

        ctx.note("wrk: each request alone, 16 connections, \(aloneSeconds) s")
        let whereAlone = try finish(try startWrk(wrk, script: queryScript, url: whereURL, connections: 16, seconds: aloneSeconds, args: ["0"]))
        let idsAlone = try finish(try startWrk(wrk, script: queryScript, url: idsURL, connections: 16, seconds: aloneSeconds, args: ["0"]))
        let editAlone = try finish(try startWrk(wrk, script: editScript, url: editURL, connections: 16, seconds: aloneSeconds, args: ["0", String(trees), token]))

        // All three at once, paced: 6 + 6 + 4 connections, each waiting (uniformly 0.5x to 1.5x the pace, so the
        // connections do not fire in step) so its kind totals `pacedRate` req/s
        // (a connection's cycle is its wait plus the answer's latency: the wait is the cycle less one service
        // time, estimated as the p50 measured alone over its 16 connections, so the rate lands near the target).
        let rate = pacedRate
        func pace(_ connections: Int, _ alone: WrkResult) -> String {
            String(max(0, Int((Double(connections) / rate * 1000 - alone.p50us / 1000 / 16).rounded())))
        }
        ctx.note("wrk: all three at once at 2x the expected load (\(Fmt.num(rate)) req/s of each), \(pacedSeconds) s")
        let w = try startWrk(wrk, script: queryScript, url: whereURL, connections: 6, seconds: pacedSeconds, args: [pace(6, whereAlone)])
        let i = try startWrk(wrk, script: queryScript, url: idsURL, connections: 6, seconds: pacedSeconds, args: [pace(6, idsAlone)])
        let e = try startWrk(wrk, script: editScript, url: editURL, connections: 4, seconds: pacedSeconds, args: [pace(4, editAlone), String(trees), token])
        let (wherePaced, idsPaced, editPaced) = (try finish(w), try finish(i), try finish(e))
        let appended = try log.eventCount() - before
        ctx.note("the applyEdits runs appended \(appended) events")

        rows.append(row("serve query where", whereAlone, floor: whereFloor, seconds: aloneSeconds, goal: nil, note: "alone, full speed (capacity)"))
        rows.append(row("serve query objectIds", idsAlone, floor: idsFloor, seconds: aloneSeconds, goal: nil, note: "alone, full speed (capacity)"))
        var edits = row("serve applyEdits 10 updates", editAlone, floor: nil, seconds: aloneSeconds, goal: nil, note: "alone, full speed (capacity)")
        edits.notes.append("every request one record of 10 edit sessions (rollbackOnFailure=true) through the one writer; \(appended) events appended by both applyEdits runs")
        rows.append(edits)
        rows.append(try extractChangesRow(log, base: base, trees: trees, quick: quick))
        let load = "2x load: \(Fmt.num(rate)) req/s of each kind"
        for (label, r, f) in [("serve query where @2x", wherePaced, whereFloor as (mean: Double, p50: Double, p99: Double, features: Int)?),
                              ("serve query objectIds @2x", idsPaced, idsFloor), ("serve applyEdits @2x", editPaced, nil)] {
            var m = row(label, r, floor: f, seconds: pacedSeconds, goal: f == nil ? nil : .millisecondsAtMost(20),
                        note: "paced with the other two at once (where 6, objectIds 6, applyEdits 4 connections)")
            m.size = "\(load), 16 connections in all"
            m.notes.append("expected load: \(Int(devices)) devices syncing every minute, each sync one where query, one objectIds query and one applyEdits of 10 updates = \(Fmt.num(rate / 2)) req/s of each; 2x = \(Fmt.num(rate)) req/s of each")
            rows.append(m)
        }
        return rows
    }
}
