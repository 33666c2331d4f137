import EditLog
import Foundation

/// `diff` between two moments of a log of `diffTrees` trees (the fixture's plus generated ones): sessions edit
/// 1% of the trees (one window), then 10% of them (the next window), two fields each (DBH and Condition).
/// Timed: the library call `EditLog.diff(from:to:)` over each window (median of 3 runs). Peer: pygeodiff's
/// `create_changeset` between GeoPackages made by our own replay at the window's two ends (untimed), timed
/// inside its Python process (median of 3 calls). Goals: ours ≤ 0.5x pygeodiff's time at 10%, ≤ 0.1x at 1%
/// (as ratios: ≥ 2x and ≥ 10x the peer). Without an importable pygeodiff the rows say "peer unavailable".
enum DiffWindows: Scenario {
    static let name = "diff"
    static let summary = "diff over sessions changing 1% and 10% of a 100k-tree log vs pygeodiff's create_changeset on replayed GeoPackages"
    static let runs = 3

    struct Peer: Decodable {
        var version: String?
        var seconds: Double?
        var times: [Double]?
        var summary: [[String: JSONNumberOrString]]?
        var error: String?
    }

    /// pygeodiff's summary rows hold strings and numbers.
    enum JSONNumberOrString: Decodable {
        case number(Int), string(String)
        init(from decoder: Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let n = try? c.decode(Int.self) { self = .number(n) } else { self = .string(try c.decode(String.self)) }
        }
        var int: Int { if case .number(let n) = self { return n }; return 0 }
        var text: String { if case .string(let s) = self { return s }; return "" }
    }

    static let script = """
        import json, os, sys, time
        try:
            import pygeodiff
        except Exception as e:
            print("GEODIFF-RESULT " + json.dumps({"error": "python3 cannot import pygeodiff (%s)" % e}))
            sys.exit(0)
        a, b, out, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
        g = pygeodiff.GeoDiff()
        times = []
        for i in range(runs):
            if os.path.exists(out):
                os.remove(out)
            t0 = time.perf_counter()
            g.create_changeset(a, b, out)
            times.append(time.perf_counter() - t0)
        g.list_changes_summary(out, out + ".json")
        summary = json.load(open(out + ".json"))["geodiff_summary"]
        print("GEODIFF-RESULT " + json.dumps({"version": g.version(), "seconds": sorted(times)[len(times) // 2], "times": times, "summary": summary}))
        """

    /// Runs pygeodiff between two GeoPackages (python3 from $EDITLOG_BENCH_GEODIFF_PYTHON, else the PATH).
    static func peer(_ ctx: BenchContext, _ a: String, _ b: String) throws -> Peer {
        let scriptPath = ctx.path("geodiff-peer.py")
        try Data(script.utf8).write(to: URL(fileURLWithPath: scriptPath))
        let python = ProcessInfo.processInfo.environment["EDITLOG_BENCH_GEODIFF_PYTHON"] ?? "python3"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = [python, scriptPath, a, b, ctx.path("geodiff-changeset.bin"), String(runs)]
        let out = Pipe()
        p.standardOutput = out
        do { try p.run() } catch { return Peer(error: "cannot run \(python): \(error)") }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix("GEODIFF-RESULT ") }) else {
            return Peer(error: "\(python) exited with status \(p.terminationStatus) without a result")
        }
        return try JSONDecoder().decode(Peer.self, from: Data(line.dropFirst("GEODIFF-RESULT ".count).utf8))
    }

    /// Sessions editing each of `trees` once (DBH and Condition), recorded in batches of 500 sessions.
    static func edit(_ log: EditLog, _ workload: Workload, _ trees: ArraySlice<String>, _ label: String) throws {
        try workload.recordEdits(log, trees: trees, label: "bench-diff-\(label)") { _ in
            [("DBH", .double(workload.dbh() + 0.05)), ("Condition", .string(workload.pick(workload.fx.conditions)))]
        }
    }

    /// What the preparation left: the windows' positions and sizes, and the GeoPackages at their ends.
    struct Prepared: Codable {
        var trees: Int
        var one: Int
        var ten: Int
        var a: Int64
        var b: Int64
        var c: Int64
        var gpkg: [String: String]
    }

    /// The log with both windows of edits and the GeoPackages at their ends: made by a `diff --prepare-only`
    /// child (recording the sessions and three replays leave memory in a process's heap, which would
    /// count toward the diff's peak RSS), once per work directory and seed.
    static func prepare(_ ctx: BenchContext, _ path: String) throws {
        let (log, workload) = try ctx.logFromBase(at: path, trees: ctx.sizes.diffTrees, workloadSeed: ctx.seed &+ 5)
        var trees = workload.trees
        var rng = SplitMix64(seed: ctx.seed &+ 0xD1FF)
        for i in trees.indices.dropLast() { trees.swapAt(i, i + Int(rng.next() % UInt64(trees.count - i))) }
        let one = trees.count / 100, ten = trees.count / 10
        let a = try log.eventCount()
        ctx.note("\(trees.count) trees; sessions editing \(one) (1%), then \(ten) (10%) of them")
        try edit(log, workload, trees[0..<one], "1pct")
        let b = try log.eventCount()
        try edit(log, workload, trees[one..<(one + ten)], "10pct")
        let c = try log.eventCount()
        var gpkg: [String: String] = [:]
        for p in [a, b, c] {
            let out = ctx.path("diff-at-\(p).gpkg")
            _ = try log.replay(asOf: .position(p), to: out, overwrite: true)
            gpkg[String(p)] = out
        }
        log.close()
        ctx.note("replayed to GeoPackages at positions \(a), \(b), \(c) (untimed)")
        let prepared = Prepared(trees: trees.count, one: one, ten: ten, a: a, b: b, c: c, gpkg: gpkg)
        try JSONEncoder().encode(prepared).write(to: URL(fileURLWithPath: path + ".prepared.json"))
    }

    static func run(_ ctx: BenchContext) throws -> [Measurement] {
        let path = ctx.path("diff-\(ctx.sizes.diffTrees)t-s\(ctx.seed).editlog")
        let marker = path + ".prepared.json"
        if ctx.prepareOnly {
            try prepare(ctx, path)
            return []
        }
        if !FileManager.default.fileExists(atPath: marker) {
            if ctx.inProcess { try prepare(ctx, path) } else { try ctx.prepareInChild(name) }
        }
        let p = try JSONDecoder().decode(Prepared.self, from: Data(contentsOf: URL(fileURLWithPath: marker)))
        let (a, b, c, one, ten) = (p.a, p.b, p.c, p.one, p.ten)
        let gpkg = Dictionary(uniqueKeysWithValues: p.gpkg.compactMap { k, v in Int64(k).map { ($0, v) } })
        guard [a, b, c].allSatisfy({ gpkg[$0].map(FileManager.default.fileExists) == true }) else {
            throw RawError(description: "\(marker) names GeoPackages that are missing; remove it to prepare again")
        }
        // Opened afresh and read-only, as `editlog diff` opens it.
        let log = try EditLog.open(at: path, readonly: true)
        ctx.prewarm(path)
        _ = try log.diff(from: .position(b), to: .position(c))  // warm-up
        Memory.resetPeak()
        var rows: [Measurement] = []
        for (label, from, to, changed, goal) in [("diff 1%", a, b, one, 10.0), ("diff 10%", b, c, ten, 2.0)] {
            var times: [Double] = [], cpu: [Double] = []
            var result: DiffResult?
            for _ in 0..<runs {
                var w = Stopwatch()
                result = try w.time { try log.diff(from: .position(from), to: .position(to)) }
                times.append(w.seconds); cpu.append(w.cpuSeconds)
            }
            let median = times.sorted()[runs / 2], medianCPU = cpu.sorted()[runs / 2]
            let changes = result?.changes ?? []
            let size = "\(Fmt.count(changed)) of \(Fmt.count(p.trees)) trees changed (\(to - from) events)"
            var m = Measurement(scenario: label, kind: .throughput, size: size, units: changes.count, unitName: "features",
                                seconds: median, cpuSeconds: medianCPU, goal: .peerRatioAtLeast(goal))
            let kinds = Dictionary(grouping: changes, by: \.kind).mapValues(\.count)
            let ours = "editlog diff: \(kinds[.added] ?? 0) added, \(kinds[.updated] ?? 0) updated, \(kinds[.deleted] ?? 0) deleted (runs: \(times.map { Fmt.seconds($0) }.joined(separator: ", ")))"
            let peer = try self.peer(ctx, gpkg[from]!, gpkg[to]!)
            if let s = peer.seconds {
                m.floorSeconds = s
                m.floorDescription = "peer, not a floor: pygeodiff \(peer.version ?? "?") create_changeset between the GeoPackages our replay wrote at positions \(from) and \(to) "
                    + "(median of \(runs) calls timed in its Python process); the ratio is pygeodiff's time / ours (goal: ours ≤ \(Fmt.num(1 / goal))x its time)"
                let counts = (peer.summary ?? []).map { "\($0["table"]?.text ?? "?"): \($0["insert"]?.int ?? 0) inserted, \($0["update"]?.int ?? 0) updated, \($0["delete"]?.int ?? 0) deleted" }
                m.notes.append("\(ours); pygeodiff: \(counts.joined(separator: "; ")) (runs: \((peer.times ?? []).map { Fmt.seconds($0) }.joined(separator: ", ")))")
            } else {
                m.status = "peer unavailable"
                m.notes.append("\(ours); peer unavailable: \(peer.error ?? "no result")")
            }
            rows.append(m)
        }
        let rss = Memory.peakBytes()
        log.close()
        var r = Measurement(scenario: name, kind: .rss, size: "\(Fmt.count(p.trees))-tree log, both windows", units: 0, goal: .megabytesAtMost(100))
        r.rssBytes = rss
        rows.append(r)
        return rows
    }
}
