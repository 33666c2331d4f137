import ArgumentParser
import EditLog
import Foundation
import GRDBSQLite

// editlog-bench: the log's hot paths against the raw SQLite floor, measured in the same run (issue 4,
// "Performance 2"). Each scenario runs in a child process (this executable re-run with the hidden
// `--child NAME`), so its peak RSS is its own; the child prints its rows as one `BENCH-RESULT {json}` line.

@main
struct EditLogBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "editlog-bench",
        abstract: "EditLog's hot paths against raw SQLite C-API floors measured in the same run.",
        discussion: """
            Scenarios (default: all, in this order): append-bulk, append-session, rebuild, verify, history \
            (history and show; `show` is accepted as a name too), replay, export, report, diff, bundle-export, \
            bundle-import, bundle-verify, bundle-big-attachment (one attachment of --attachment-mib MiB through export, verify and \
            import: peak RSS of each), serve (editlog serve under wrk: queries and applyEdits, 16 connections; its rows say peer unavailable without wrk), sync. \
            The read and bundle scenarios (all but append-session, diff and bundle-big-attachment) use the big log \
            append-bulk leaves (bundle-import and bundle-verify the bundle bundle-export makes of it); each is built first, \
            unreported, when only later scenarios are asked for. Each scenario runs in a child \
            process, measuring the operation and then its floor; the table prints each ratio (throughput / floor \
            throughput) against its goal, met or NOT met. Build and run it with tools/bench (release mode). \
            Results of a full run: tools/BENCH-RESULTS.md.
            """)

    @Argument(help: ArgumentHelp("Scenarios to run (default: every one); see --list.", valueName: "scenario"))
    var scenarios: [String] = []

    @Flag(help: "CI sizes: a 50k-event bulk log on a 5k-tree base, 2k sessions. Size options given too apply on top.")
    var quick = false

    @Flag(help: "Full sizes (the default): a 1M-event bulk log on a 50k-tree base, 20k sessions.")
    var full = false

    @Flag(help: "Print the results as JSON on stdout (the table then goes to stderr).")
    var json = false

    @Option(help: ArgumentHelp("Events append-bulk records (the big log's size); `_` separators allowed.", valueName: "n"),
            transform: { try EditLogBench.positive($0, "--events") })
    var events: Int?

    @Option(help: ArgumentHelp("Generated trees in the big log's base (besides the fixture's 240).", valueName: "n"),
            transform: { try EditLogBench.positive($0, "--trees") })
    var trees: Int?

    @Option(help: ArgumentHelp("Sessions per record call (one transaction) in append-bulk.", valueName: "n"),
            transform: { try EditLogBench.positive($0, "--batch") })
    var batch: Int?

    @Option(help: ArgumentHelp("Sessions append-session records, one transaction each.", valueName: "n"),
            transform: { try EditLogBench.positive($0, "--sessions") })
    var sessions: Int?

    @Option(help: ArgumentHelp("Random features history/show look up.", valueName: "n"),
            transform: { try EditLogBench.positive($0, "--lookups") })
    var lookups: Int?

    @Option(help: ArgumentHelp("Remote changes the sync scenario pulls.", valueName: "n"),
            transform: { try EditLogBench.positive($0, "--sync-changes") })
    var syncChanges: Int?

    @Option(help: ArgumentHelp("MiB of the one attachment bundle-big-attachment carries (full 512, quick 64).", valueName: "n"),
            transform: { try EditLogBench.positive($0, "--attachment-mib") })
    var attachmentMib: Int?

    @Option(help: ArgumentHelp("The workload's seed.", valueName: "n"))
    var seed: UInt64 = 4

    @Option(help: ArgumentHelp("Work directory, kept afterwards; a big log of the same size and seed in it is reused (default: a temporary directory).", valueName: "dir"))
    var dir: String?

    @Flag(help: "Keep the temporary work directory (a --dir is always kept).")
    var keep = false

    @Option(help: ArgumentHelp("The Trees of Portland fixture (default: ./Fixtures/trees-of-portland).", valueName: "dir"))
    var fixtures: String?

    @Flag(help: "Run the scenarios in this process (for profilers; peak RSS is then not per scenario).")
    var inProcess = false

    @Flag(help: "List the scenarios and exit.")
    var list = false

    @Flag(help: "Also run append-bulk's and append-session's events through the peer event store (Python eventsourcing on SQLite; tools/bench --peers installs it) and compare throughputs (goal ≥ 2x).")
    var peers = false

    // The child-process protocol and the peer's location (hidden: tools/bench and the parent pass them).

    @Option(help: ArgumentHelp("Python of the peer's venv (default: $EDITLOG_BENCH_PEER_PYTHON, else .build-peers/venv/bin/python).", valueName: "path", visibility: .hidden))
    var peerPython: String?

    @Option(help: ArgumentHelp("The peer script (default: tools/peers/eventsourcing_peer.py).", valueName: "path", visibility: .hidden))
    var peerScript: String?

    @Option(help: ArgumentHelp("Seconds after which a peer run is killed.", valueName: "s", visibility: .hidden))
    var peerTimeout: Double = 900

    @Option(help: ArgumentHelp("Run one scenario and print its rows as a BENCH-RESULT line (the parent's child protocol).", valueName: "scenario", visibility: .hidden))
    var child: String?

    @Flag(help: ArgumentHelp("With --child: only build what later scenarios need (no floors, nothing reported).", visibility: .hidden))
    var prepareOnly = false

    @Option(help: ArgumentHelp("Make a base log at this path (fixture baseline plus --base-trees generated trees) and exit.", valueName: "path", visibility: .hidden))
    var makeBase: String?

    @Option(help: ArgumentHelp("With --make-base: generated trees in the base log.", valueName: "n", visibility: .hidden))
    var baseTrees: Int?

    @Option(help: ArgumentHelp("Serve this log as the sync scenario's hub, printing `HUB-PORT n`, until terminated.", valueName: "path", visibility: .hidden))
    var serveHub: String?

    @Option(help: ArgumentHelp("With --serve-hub: first record one session on each of this many trees.", valueName: "n", visibility: .hidden))
    var recordTrees: Int?

    @Option(help: ArgumentHelp("With --serve-hub: the port (0: any free one).", valueName: "n", visibility: .hidden))
    var hubPort: Int?

    @Option(help: ArgumentHelp("Sync this log with --hub-url once, as a process of its own, printing `DEVICE-SYNC {json}`.", valueName: "path", visibility: .hidden))
    var syncDevice: String?

    @Option(help: ArgumentHelp("With --sync-device: the hub's feature service URL.", valueName: "url", visibility: .hidden))
    var hubURL: String?

    @Option(help: ArgumentHelp("With --sync-device: which run of the device this is (its clock and ids start after the earlier runs').", valueName: "n", visibility: .hidden))
    var deviceRun: Int = 1

    static func positive(_ s: String, _ flag: String) throws -> Int {
        guard let n = Int(s.replacingOccurrences(of: "_", with: "")), n > 0 else {
            throw ValidationError("\(flag) needs a positive integer, not \(s)")
        }
        return n
    }

    var sizes: Sizes {
        var s = quick ? Sizes.quick : Sizes.full
        if let events { s.bulkEvents = events }
        if let trees { s.bulkTrees = trees }
        if let batch { s.batchSessions = batch }
        if let sessions { s.sessions = sessions }
        if let lookups { s.lookups = lookups }
        if let syncChanges { s.syncChanges = syncChanges }
        if let attachmentMib { s.attachmentMiB = attachmentMib }
        return s
    }

    func validate() throws {
        if quick && full { throw ValidationError("--quick and --full conflict: choose one size profile") }
        if list && !scenarios.isEmpty { throw ValidationError("--list prints the scenarios and runs none: drop --list or the scenario names (\(scenarios.joined(separator: " ")))") }
        if list && (json || peers) { throw ValidationError("--list runs nothing: --\(json ? "json" : "peers") has no effect with it") }
        if keep && dir != nil { throw ValidationError("--keep and --dir conflict: --keep keeps the temporary work directory, and a --dir is always kept") }
        if !peers && (peerPython != nil || peerScript != nil) { throw ValidationError("--peer-python/--peer-script need --peers") }
        if peerTimeout <= 0 { throw ValidationError("--peer-timeout needs a positive number of seconds") }
        if prepareOnly && child == nil { throw ValidationError("--prepare-only needs --child") }
        if baseTrees != nil && makeBase == nil { throw ValidationError("--base-trees needs --make-base") }
        if (recordTrees != nil || hubPort != nil) && serveHub == nil { throw ValidationError("--record-trees and --hub-port need --serve-hub") }
        if let r = recordTrees, r < 0 { throw ValidationError("--record-trees needs an integer ≥ 0") }
        if serveHub != nil && (child != nil || makeBase != nil) { throw ValidationError("--serve-hub conflicts with --child and --make-base") }
        if let b = baseTrees, b < 0 { throw ValidationError("--base-trees needs an integer ≥ 0") }
        if child != nil || makeBase != nil {
            let mode = child != nil ? "--child" : "--make-base"
            if child != nil && makeBase != nil { throw ValidationError("--child and --make-base conflict") }
            if inProcess { throw ValidationError("\(mode) and --in-process conflict") }
            if list { throw ValidationError("\(mode) and --list conflict") }
            if !scenarios.isEmpty { throw ValidationError("\(mode) takes no scenario arguments") }
        }
        if child != nil && dir == nil { throw ValidationError("--child needs --dir") }
        if let c = child, Scenarios.named(c) == nil { throw ValidationError("unknown scenario \(c) for --child") }
        for s in scenarios where Scenarios.named(s) == nil {
            throw ValidationError("unknown scenario \(s); scenarios: \(Scenarios.all.map { $0.name }.joined(separator: ", ")) (show = history)")
        }
    }

    /// The scenarios asked for, by their canonical names.
    var selectedNames: [String] { scenarios.compactMap { Scenarios.named($0)?.name } }

    func childArguments(_ scenario: String, prepareOnly: Bool, dir: String, peer: PeerConfig?) -> [String] {
        var a = ["--child", scenario, "--dir", dir, "--seed", String(seed)]
        if quick { a.append("--quick") }
        if let fixtures { a += ["--fixtures", fixtures] }
        if prepareOnly { a.append("--prepare-only") }
        for (flag, v) in [("--events", events), ("--trees", trees), ("--batch", batch), ("--sessions", sessions), ("--lookups", lookups), ("--sync-changes", syncChanges), ("--attachment-mib", attachmentMib)] {
            if let v { a += [flag, String(v)] }
        }
        if let peer, !prepareOnly {
            a += ["--peers", "--peer-python", peer.python, "--peer-script", peer.script, "--peer-timeout", String(peer.timeoutSeconds)]
        }
        return a
    }

    /// The peer's python and script, when --peers: explicit, else $EDITLOG_BENCH_PEER_PYTHON, else the
    /// package root's .build-peers/venv (the package root found from the fixture).
    func peerConfig(fixtureDir: String) throws -> PeerConfig? {
        guard peers else { return nil }
        let root = URL(fileURLWithPath: fixtureDir).deletingLastPathComponent().deletingLastPathComponent().path
        let python = peerPython ?? ProcessInfo.processInfo.environment["EDITLOG_BENCH_PEER_PYTHON"] ?? root + "/.build-peers/venv/bin/python"
        let script = peerScript ?? root + "/tools/peers/eventsourcing_peer.py"
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw RawError(description: "--peers: no peer Python at \(python); run tools/bench --peers (it installs the pinned eventsourcing offline into .build-peers/venv)")
        }
        guard FileManager.default.fileExists(atPath: script) else { throw RawError(description: "--peers: no peer script at \(script)") }
        return PeerConfig(python: python, script: script, timeoutSeconds: peerTimeout)
    }

    mutating func run() throws {
        // As the editlog executable does, so the peak RSS measured is the one a user sees.
        ProcessMemory.keepLargeAllocationsMapped()
        if let path = serveHub {
            guard let fx = Fixture.locate(fixtures) else { stderr("editlog-bench: no fixture"); throw ExitCode(2) }
            let ctx = BenchContext(sizes: sizes, seed: seed, workDir: (path as NSString).deletingLastPathComponent, fixtureDir: fx, prepareOnly: true)
            do { try SyncHub.serve(path: path, recordTrees: recordTrees ?? 0, port: hubPort ?? 0, ctx: ctx) } catch {
                stderr("editlog-bench: the hub failed: \(error)")
                throw ExitCode(1)
            }
            return
        }
        if let path = syncDevice {
            do { try SyncDevice.run(path: path, url: hubURL ?? "", seed: seed, run: deviceRun) } catch {
                stderr("editlog-bench: the device's sync failed: \(error)")
                throw ExitCode(1)
            }
            return
        }
        if let path = makeBase {
            guard let fx = Fixture.locate(fixtures) else { stderr("editlog-bench: no fixture"); throw ExitCode(2) }
            let ctx = BenchContext(sizes: sizes, seed: seed, workDir: (path as NSString).deletingLastPathComponent, fixtureDir: fx, prepareOnly: true)
            do { try ctx.makeBaseLog(at: path, trees: baseTrees ?? 0) } catch {
                stderr("editlog-bench: making the base log failed: \(error)")
                throw ExitCode(1)
            }
            return
        }
        let rc = child.map { runChild(self, name: $0) } ?? runParent(self)
        if rc != 0 { throw ExitCode(rc) }
    }
}

func stderr(_ s: String) { FileHandle.standardError.write(Data((s + "\n").utf8)) }

func machineLine() -> [String: String] {
    var meta: [String: String] = [:]
    meta["nproc"] = String(ProcessInfo.processInfo.activeProcessorCount)
    if let cpu = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
       let line = cpu.split(separator: "\n").first(where: { $0.hasPrefix("model name") }) {
        meta["cpu"] = line.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) }
    }
    meta["swift"] = ProcessInfo.processInfo.environment["EDITLOG_BENCH_SWIFT"] ?? "unknown (set EDITLOG_BENCH_SWIFT)"
    meta["sqlite"] = String(cString: sqlite3_libversion())
    if let c = ProcessInfo.processInfo.environment["EDITLOG_BENCH_COMMIT"] { meta["commit"] = c }
    meta["loadavgStart"] = loadAverage()
    return meta
}

func loadAverage() -> String {
    ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").prefix(3).joined(separator: " ")
}

func runChild(_ o: EditLogBench, name: String) -> Int32 {
    guard let type = Scenarios.named(name), let dir = o.dir, let fx = Fixture.locate(o.fixtures) else {
        stderr("editlog-bench: bad child invocation"); return 2
    }
    let ctx = BenchContext(sizes: o.sizes, seed: o.seed, workDir: dir, fixtureDir: fx, prepareOnly: o.prepareOnly)
    do {
        ctx.peers = try o.peerConfig(fixtureDir: fx)
        let rows = try type.run(ctx)
        let data = try JSONEncoder().encode(rows)
        print("BENCH-RESULT " + String(decoding: data, as: UTF8.self))
        return 0
    } catch {
        stderr("editlog-bench: \(name) failed: \(error)")
        return 1
    }
}

/// Runs one scenario in a child process; returns its rows (or a failure row).
func spawn(_ o: EditLogBench, _ name: String, prepareOnly: Bool, dir: String, peer: PeerConfig?) -> [Measurement] {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: BenchContext.executablePath)
    p.arguments = o.childArguments(name, prepareOnly: prepareOnly, dir: dir, peer: peer)
    let out = Pipe()
    p.standardOutput = out
    do { try p.run() } catch {
        return [Measurement(scenario: name, kind: .info, size: "—", notes: ["could not start the child: \(error)"])]
    }
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self)
    if p.terminationStatus == 0, let line = text.split(separator: "\n").last(where: { $0.hasPrefix("BENCH-RESULT ") }),
       let rows = try? JSONDecoder().decode([Measurement].self, from: Data(line.dropFirst("BENCH-RESULT ".count).utf8)) {
        return rows
    }
    return [Measurement(scenario: name, kind: .info, size: "FAILED", notes: ["child exited with status \(p.terminationStatus)"])]
}

func runParent(_ o: EditLogBench) -> Int32 {
    if o.list {
        for s in Scenarios.all { print("\(s.name.padding(toLength: 16, withPad: " ", startingAt: 0)) \(s.summary)") }
        return 0
    }
    guard let fx = Fixture.locate(o.fixtures) else {
        stderr("editlog-bench: cannot find the Trees of Portland fixture; run from the package root or pass --fixtures DIR")
        return 2
    }
    let peer: PeerConfig?
    do { peer = try o.peerConfig(fixtureDir: fx) } catch {
        stderr("editlog-bench: \(error)")
        return 2
    }
    let started = Stopwatch.wallNow()
    let dir: String
    let temporary = o.dir == nil
    if let d = o.dir {
        dir = d
        try? FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
    } else {
        var template = Array((NSTemporaryDirectory() + "/editlog-bench-XXXXXX").utf8CString)
        guard let p = mkdtemp(&template) else { stderr("editlog-bench: cannot create a work directory"); return 1 }
        dir = String(cString: p)
    }
    let meta = machineLine()
    let names = o.selectedNames
    let selected = Scenarios.all.filter { names.isEmpty || names.contains($0.name) }
    stderr("editlog-bench (\(o.sizes.profile)): \(selected.map { $0.name }.joined(separator: ", "))")
    stderr("machine: nproc \(meta["nproc"]!), \(meta["cpu"] ?? "?"), \(meta["swift"]!), SQLite \(meta["sqlite"]!); work dir \(dir)")
    let ctx = BenchContext(sizes: o.sizes, seed: o.seed, workDir: dir, fixtureDir: fx, prepareOnly: false)
    ctx.inProcess = o.inProcess
    ctx.peers = peer
    var results: [Measurement] = []
    for s in selected {
        let t0 = Stopwatch.wallNow()
        if s.needsBulkLog && !ctx.bulkLogReady {
            stderr("[prepare] building the \(Fmt.count(o.sizes.bulkEvents))-event log with append-bulk (not reported)")
            if o.inProcess {
                let prep = BenchContext(sizes: o.sizes, seed: o.seed, workDir: dir, fixtureDir: fx, prepareOnly: true)
                prep.inProcess = true
                _ = try? AppendBulk.run(prep)
            } else {
                _ = spawn(o, AppendBulk.name, prepareOnly: true, dir: dir, peer: nil)
            }
        }
        stderr("[\(s.name)] \(s.summary)")
        if o.inProcess {
            do { results += try s.run(ctx) } catch {
                results.append(Measurement(scenario: s.name, kind: .info, size: "FAILED", notes: ["\(error)"]))
            }
        } else {
            results += spawn(o, s.name, prepareOnly: false, dir: dir, peer: peer)
        }
        stderr("[\(s.name)] done in \(Fmt.seconds(Double(Stopwatch.wallNow() - t0) / 1e9))")
    }
    let total = Double(Stopwatch.wallNow() - started) / 1e9
    if temporary && !o.keep { try? FileManager.default.removeItem(atPath: dir) }

    var meta2 = meta
    meta2["profile"] = o.sizes.profile
    meta2["seed"] = String(o.seed)
    meta2["wallSeconds"] = String(format: "%.1f", total)
    meta2["loadavgEnd"] = loadAverage()
    meta2["command"] = (["editlog-bench"] + CommandLine.arguments.dropFirst()).joined(separator: " ")
    let table = Report.table(results)
    var notes: [String] = []
    for m in results {
        for n in m.notes { notes.append("- \(m.scenario): \(n)") }
        if let f = m.floorDescription { notes.append("- \(m.scenario) floor: \(f)") }
        if let r = m.cpuRatio, m.kind == .throughput || m.kind == .info { notes.append("- \(m.scenario): CPU-time ratio \(Fmt.num(r))x") }
    }
    let human = "\nmachine: nproc \(meta["nproc"]!), \(meta["cpu"] ?? "?"), \(meta["swift"]!), SQLite \(meta["sqlite"]!)\n"
        + (meta["commit"].map { "commit: \($0)\n" } ?? "")
        + "sizes: \(o.sizes.profile); total wall time \(Fmt.seconds(total)); load average \(meta["loadavgStart"]!) at start, \(meta2["loadavgEnd"]!) at end\n\n" + table + "\n\n" + notes.joined(separator: "\n")
    if o.json {
        stderr(human)
        print(Report.json(results, meta: meta2))
    } else {
        print(human)
    }
    let failed = results.contains { $0.size == "FAILED" }
    return failed ? 1 : 0
}
