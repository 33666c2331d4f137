import EditLog
import Foundation
import GRDBSQLite

// editlog-bench: the log's hot paths against the raw SQLite floor, measured in the same run (issue 4).
//
//   editlog-bench [--quick] [--json] [--dir DIR] [--keep] [--seed N] [SCENARIO ...]
//
// Each scenario runs in a child process (this executable re-run with the hidden `--child NAME`), so its
// peak RSS is its own; the child prints its rows as one `BENCH-RESULT {json}` line.

struct Options {
    var scenarios: [String] = []
    var sizes = Sizes.full
    var json = false
    var dir: String?
    var keep = false
    var seed: UInt64 = 4
    var fixtures: String?
    var child: String?
    var prepareOnly = false
    var inProcess = false
    var list = false
    var makeBase: String?
    var baseTrees = 0
    /// Size overrides, re-passed to children.
    var overrides: [String] = []

    static let usage = """
        usage: editlog-bench [options] [SCENARIO ...]     (default: every scenario)

          --quick            CI sizes (50k-event bulk log, 2k sessions); default is the full size
                             (1M-event bulk log, 20k sessions)
          --json             print the results as JSON on stdout (the table goes to stderr)
          --events N         events appended by append-bulk (the big log's size)
          --trees N          generated trees in the big log's baseline
          --batch N          sessions per record call in append-bulk
          --sessions N       sessions of append-session
          --lookups N        features looked up by history/show
          --seed N           workload seed (default 4)
          --dir DIR          work directory (kept; an existing big log of the same size and seed is reused)
          --keep             keep the temporary work directory
          --fixtures DIR     the Trees of Portland fixture (default: ./Fixtures/trees-of-portland)
          --in-process       run scenarios in this process (for profilers; RSS is then not per scenario)
          --list             list the scenarios
        """

    static func parse(_ args: [String]) throws -> Options {
        var o = Options()
        var i = 0
        func value(_ flag: String) throws -> String {
            i += 1
            guard i < args.count else { throw RawError(description: "\(flag) needs a value") }
            return args[i]
        }
        func int(_ flag: String) throws -> Int {
            let v = try value(flag)
            guard let n = Int(v.replacingOccurrences(of: "_", with: "")), n > 0 else { throw RawError(description: "\(flag) needs a positive integer, not \(v)") }
            o.overrides += [flag, String(n)]
            return n
        }
        var quick = false
        var pending: [(inout Sizes) -> Void] = []
        while i < args.count {
            let a = args[i]
            switch a {
            case "--quick": quick = true
            case "--full": quick = false
            case "--json": o.json = true
            case "--keep": o.keep = true
            case "--in-process": o.inProcess = true
            case "--list": o.list = true
            case "--prepare-only": o.prepareOnly = true
            case "--dir": o.dir = try value(a)
            case "--fixtures": o.fixtures = try value(a)
            case "--child": o.child = try value(a)
            case "--make-base": o.makeBase = try value(a)
            case "--base-trees":
                guard let n = Int(try value(a)), n >= 0 else { throw RawError(description: "--base-trees needs an integer") }
                o.baseTrees = n
            case "--seed":
                let v = try value(a)
                guard let s = UInt64(v) else { throw RawError(description: "--seed needs an integer") }
                o.seed = s
            case "--events": let n = try int(a); pending.append { $0.bulkEvents = n }
            case "--trees": let n = try int(a); pending.append { $0.bulkTrees = n }
            case "--batch": let n = try int(a); pending.append { $0.batchSessions = n }
            case "--sessions": let n = try int(a); pending.append { $0.sessions = n }
            case "--lookups": let n = try int(a); pending.append { $0.lookups = n }
            case "-h", "--help": print(usage); exit(0)
            default:
                if a.hasPrefix("-") { throw RawError(description: "unknown option \(a)\n\(usage)") }
                guard Scenarios.named(a) != nil else {
                    throw RawError(description: "unknown scenario \(a); scenarios: \(Scenarios.all.map { $0.name }.joined(separator: ", "))")
                }
                o.scenarios.append(Scenarios.named(a)!.name)
            }
            i += 1
        }
        o.sizes = quick ? .quick : .full
        for p in pending { p(&o.sizes) }
        return o
    }

    func childArguments(_ scenario: String, prepareOnly: Bool, dir: String) -> [String] {
        var a = ["--child", scenario, "--dir", dir, "--seed", String(seed)]
        if sizes.profile == "quick" { a.append("--quick") }
        if let fixtures { a += ["--fixtures", fixtures] }
        if prepareOnly { a.append("--prepare-only") }
        return a + overrides
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

func runChild(_ o: Options, name: String) -> Int32 {
    guard let type = Scenarios.named(name), let dir = o.dir, let fx = Fixture.locate(o.fixtures) else {
        stderr("editlog-bench: bad child invocation"); return 2
    }
    let ctx = BenchContext(sizes: o.sizes, seed: o.seed, workDir: dir, fixtureDir: fx, prepareOnly: o.prepareOnly)
    do {
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
func spawn(_ o: Options, _ name: String, prepareOnly: Bool, dir: String) -> [Measurement] {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: BenchContext.executablePath)
    p.arguments = o.childArguments(name, prepareOnly: prepareOnly, dir: dir)
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

func runParent(_ o: Options) -> Int32 {
    if o.list {
        for s in Scenarios.all { print("\(s.name.padding(toLength: 16, withPad: " ", startingAt: 0)) \(s.summary)") }
        return 0
    }
    guard let fx = Fixture.locate(o.fixtures) else {
        stderr("editlog-bench: cannot find the Trees of Portland fixture; run from the package root or pass --fixtures DIR")
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
    let selected = Scenarios.all.filter { o.scenarios.isEmpty || o.scenarios.contains($0.name) }
    stderr("editlog-bench (\(o.sizes.profile)): \(selected.map { $0.name }.joined(separator: ", "))")
    stderr("machine: nproc \(meta["nproc"]!), \(meta["cpu"] ?? "?"), \(meta["swift"]!), SQLite \(meta["sqlite"]!); work dir \(dir)")
    let ctx = BenchContext(sizes: o.sizes, seed: o.seed, workDir: dir, fixtureDir: fx, prepareOnly: false)
    ctx.inProcess = o.inProcess
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
                _ = spawn(o, AppendBulk.name, prepareOnly: true, dir: dir)
            }
        }
        stderr("[\(s.name)] \(s.summary)")
        if o.inProcess {
            do { results += try s.run(ctx) } catch {
                results.append(Measurement(scenario: s.name, kind: .info, size: "FAILED", notes: ["\(error)"]))
            }
        } else {
            results += spawn(o, s.name, prepareOnly: false, dir: dir)
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

let options: Options
do { options = try Options.parse(Array(CommandLine.arguments.dropFirst())) } catch {
    stderr("editlog-bench: \(error)")
    exit(2)
}
if let path = options.makeBase {
    guard let fx = Fixture.locate(options.fixtures) else { stderr("editlog-bench: no fixture"); exit(2) }
    let ctx = BenchContext(sizes: options.sizes, seed: options.seed, workDir: (path as NSString).deletingLastPathComponent, fixtureDir: fx, prepareOnly: true)
    do { try ctx.makeBaseLog(at: path, trees: options.baseTrees) } catch {
        stderr("editlog-bench: making the base log failed: \(error)")
        exit(1)
    }
    exit(0)
}
if let child = options.child {
    exit(runChild(options, name: child))
}
exit(runParent(options))
