import EditLog
import Foundation

/// A benchmark scenario: one small file (`Scenario+Name.swift`) conforming to this, listed in `Scenarios.all`.
/// `run` executes in its own child process (so peak RSS is the scenario's own), measures the log's hot
/// path and its raw SQLite floor in that same process, and returns table rows.
protocol Scenario: Sendable {
    /// The name on the command line (`editlog-bench NAME ...`).
    static var name: String { get }
    static var summary: String { get }
    /// Needs the big bulk-recorded log (built by `append-bulk` first if missing).
    static var needsBulkLog: Bool { get }
    static func run(_ ctx: BenchContext) throws -> [Measurement]
}

extension Scenario {
    static var needsBulkLog: Bool { false }
}

enum Scenarios {
    /// Every scenario, in run order (`append-bulk` first: it builds the log the later ones read).
    static let all: [any Scenario.Type] = [
        AppendBulk.self,
        AppendSession.self,
        Rebuild.self,
        Verify.self,
        HistoryShow.self,
        ReplayAt.self,
        ExportLive.self,
        ReportWhole.self,
        DiffWindows.self,
        BundleExportScenario.self,
        BundleImportScenario.self,
        BundleVerifyScenario.self,
        BundleBigAttachment.self,
        ServeLoad.self,
        HistoricPage.self,
        SyncScenario.self,
        ReplicaScenario.self,
    ]

    static func named(_ n: String) -> (any Scenario.Type)? {
        all.first { $0.name == n } ?? (n == "show" ? HistoryShow.self : nil)
    }
}

/// Sizes of a run: `--quick` for CI, full by default (issue 4's sizes); each can be overridden.
struct Sizes: Codable, Sendable {
    var profile: String
    /// Events `append-bulk` records (the big log the read scenarios use).
    var bulkEvents: Int
    /// Generated trees in the big log's baseline (besides the fixture's 240).
    var bulkTrees: Int
    /// Sessions per `record` call (one transaction) in `append-bulk`.
    var batchSessions: Int
    /// Sessions recorded one transaction each in `append-session`.
    var sessions: Int
    var sessionTrees: Int
    /// Random features looked up by `history`/`show`.
    var lookups: Int
    /// Trees (generated, besides the fixture's) in the log `diff` edits 1% and 10% of.
    var diffTrees: Int
    /// Generated trees the hub of `sync` changes (one session each): the remote changes one sync pulls.
    var syncChanges: Int
    /// MiB of the one attachment `bundle-big-attachment` carries.
    var attachmentMiB: Int

    static let quick = Sizes(profile: "quick", bulkEvents: 50_000, bulkTrees: 5_000, batchSessions: 200, sessions: 2_000, sessionTrees: 1_000, lookups: 1_000, diffTrees: 10_000, syncChanges: 2_000,
                             attachmentMiB: 64)
    static let full = Sizes(profile: "full", bulkEvents: 1_000_000, bulkTrees: 50_000, batchSessions: 500, sessions: 20_000, sessionTrees: 5_000, lookups: 1_000, diffTrees: 100_000, syncChanges: 100_000,
                            attachmentMiB: 512)
}

/// What a scenario gets: sizes, seed, a work directory, the fixture, and the big log.
final class BenchContext {
    let sizes: Sizes
    let seed: UInt64
    let workDir: String
    let fixtureDir: String
    /// Skip floors (used when a scenario only prepares the big log for others).
    let prepareOnly: Bool
    private var loadedFixture: Fixture?

    init(sizes: Sizes, seed: UInt64, workDir: String, fixtureDir: String, prepareOnly: Bool) {
        self.sizes = sizes; self.seed = seed; self.workDir = workDir; self.fixtureDir = fixtureDir; self.prepareOnly = prepareOnly
    }

    func fixture() throws -> Fixture {
        if let f = loadedFixture { return f }
        let f = try Fixture.load(fixtureDir)
        loadedFixture = f
        return f
    }

    var bulkLogPath: String { "\(workDir)/bulk-\(sizes.bulkEvents)ev-\(sizes.bulkTrees)t-s\(seed).editlog" }
    var bulkLogReadyMarker: String { bulkLogPath + ".complete" }
    var bulkLogReady: Bool { FileManager.default.fileExists(atPath: bulkLogReadyMarker) }

    func path(_ name: String) -> String { "\(workDir)/\(name)" }

    /// Removes a SQLite file and its -wal/-shm.
    func remove(_ path: String) {
        for s in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: path + s) }
    }

    func note(_ s: String) {
        FileHandle.standardError.write(Data("  · \(s)\n".utf8))
    }

    /// Runs scenarios in this process (`--in-process`): base logs are then made here too.
    var inProcess = false

    /// `--peers`: the peer event store the append scenarios are compared with.
    var peers: PeerConfig?

    /// A base log: the fixture schema, rules and baseline plus `trees` generated trees (one `create`
    /// transaction). Made once per work directory by a separate process (`--make-base`), so building
    /// its baseline in memory never counts toward a scenario's peak RSS.
    func baseLog(trees: Int) throws -> String {
        let path = self.path("base-\(trees)t-s\(seed).editlog")
        if FileManager.default.fileExists(atPath: path + ".complete") { return path }
        if inProcess {
            try makeBaseLog(at: path, trees: trees)
        } else {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: Self.executablePath)
            p.arguments = ["--make-base", path, "--base-trees", String(trees), "--seed", String(seed), "--fixtures", fixtureDir]
            try p.run()
            p.waitUntilExit()
            guard p.terminationStatus == 0 else { throw RawError(description: "making the base log \(path) failed") }
        }
        return path
    }

    /// Runs `scenario --prepare-only` in a child process (what it makes is kept in the work directory), so the
    /// preparation's memory never counts toward the measured child's peak RSS.
    func prepareInChild(_ scenario: String) throws {
        note("preparing \(scenario) in a child process (not reported)")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.executablePath)
        p.arguments = ["--child", scenario, "--prepare-only", "--dir", workDir, "--fixtures", fixtureDir,
                       "--seed", String(seed), "--events", String(sizes.bulkEvents), "--trees", String(sizes.bulkTrees),
                       "--batch", String(sizes.batchSessions), "--sessions", String(sizes.sessions), "--lookups", String(sizes.lookups),
                       "--sync-changes", String(sizes.syncChanges), "--attachment-mib", String(sizes.attachmentMiB)]
        // The sizes no flag sets (diffTrees…) come from the profile: every flag above overrides the rest of it.
        if sizes.diffTrees == Sizes.quick.diffTrees && Sizes.quick.diffTrees != Sizes.full.diffTrees { p.arguments?.append("--quick") }
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw RawError(description: "preparing \(scenario) failed (exit \(p.terminationStatus))") }
    }

    func makeBaseLog(at path: String, trees: Int) throws {
        note("creating a base log: fixture baseline + \(trees) generated trees")
        let workload = Workload(fixture: try fixture(), seed: seed)
        remove(path)
        let fx = try fixture()
        let clock = StepClock(start: 1_780_000_000_000, step: 1)
        let ids = UUIDv7Generator(clock: clock, seed: seed)
        let log = try EditLog.create(at: path, service: fx.service, webmap: fx.webmap, rules: fx.rules, baseline: workload.baseline(extraTrees: trees),
                                     actor: "bench", device: "editlog-bench", clock: clock, ids: ids, logId: "bench-\(seed)")
        log.close()
        _ = FileManager.default.createFile(atPath: path + ".complete", contents: nil)
    }

    /// A fresh copy of the base log at `path`, opened with a deterministic clock and v7 ids, and a
    /// workload (of `workloadSeed`) picking from its features.
    func logFromBase(at path: String, trees: Int, workloadSeed: UInt64) throws -> (EditLog, Workload) {
        let base = try baseLog(trees: trees)
        remove(path)
        try FileManager.default.copyItem(atPath: base, toPath: path)
        let clock = StepClock(start: 1_781_000_000_000, step: 1)
        let log = try EditLog.open(at: path, clock: clock, ids: UUIDv7Generator(clock: clock, seed: workloadSeed))
        let workload = Workload(fixture: try fixture(), seed: workloadSeed)
        try workload.adopt(log)
        return (log, workload)
    }

    /// Reads a file once so the measured operation and its floor both find it in the OS page cache
    /// (otherwise whichever runs first pays for the disk).
    func prewarm(_ path: String) {
        guard let fh = FileHandle(forReadingAtPath: path) else { return }
        defer { try? fh.close() }
        while let d = try? fh.read(upToCount: 1 << 20), !d.isEmpty {}
    }

    static var executablePath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// Opens the big log read-only, as `editlog export`, `replay` and `report` do (the read-write handle has the
    /// writer's 16 MiB page cache, which a scan of the log fills).
    func openBulkLogReadOnly() throws -> EditLog {
        guard bulkLogReady else { throw RawError(description: "the bulk log \(bulkLogPath) is missing; run append-bulk first") }
        return try EditLog.open(at: bulkLogPath, readonly: true)
    }

    /// Opens the big log (deterministic ids continue after what it holds).
    func openBulkLog() throws -> EditLog {
        guard bulkLogReady else { throw RawError(description: "the bulk log \(bulkLogPath) is missing; run append-bulk first") }
        let clock = StepClock(start: 1_790_000_000_000, step: 1)
        return try EditLog.open(at: bulkLogPath, clock: clock, ids: UUIDv7Generator(clock: clock, seed: seed &+ 1))
    }
}
