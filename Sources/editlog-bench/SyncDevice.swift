import EditLog
import EditLogSync
import Foundation

/// The sync scenario's timed sync: a device's run of `sync` in a process of its own
/// (`editlog-bench --sync-device PATH --hub-url URL`), as each `editlog sync` is. Its peak RSS is then that run's
/// alone, not the earlier run's heap left in the scenario's process (the first sync's snapshot holds every feature).
enum SyncDevice {
    /// What the child prints, as one `DEVICE-SYNC` JSON line.
    struct Outcome: Codable {
        var seconds: Double
        var cpuSeconds: Double
        var peakRSS: Int64
        var pulled: Int
        var fromServerGen: Int64
        var toServerGen: Int64
        var imported: Int
        var conflicts: Int
        var pushed: Int

        /// A run's report, timed by `watch`; the peak RSS is the process's, read now.
        init(_ report: SyncReport, _ watch: Stopwatch) {
            seconds = watch.seconds; cpuSeconds = watch.cpuSeconds; peakRSS = Memory.peakBytes()
            pulled = report.pulled.count; fromServerGen = report.fromServerGen ?? 0; toServerGen = report.toServerGen ?? 0
            imported = report.imported; conflicts = report.conflicts.count; pushed = report.pushed.count
        }
    }

    /// The child's side. Its clock and ids start after the earlier runs' (the first is the scenario's own), so no
    /// event id repeats.
    static func run(path: String, url: String, seed: UInt64, run: Int) throws {
        let clock = StepClock(start: 1_782_000_000_000 + Int64(run) * 1_000_000_000, step: 1)
        let log = try EditLog.open(at: path, clock: clock, ids: UUIDv7Generator(clock: clock, seed: seed &+ 24 &+ UInt64(run)))
        defer { log.close() }
        let box = UncheckedRef(log)
        let client = try FeatureServiceClient(url: url, token: SyncHub.token)
        let opts = SyncOptions(actor: "bench", device: "editlog-bench")
        var watch = Stopwatch()
        let report = try watch.time { try SyncScenario.blocking { try await SyncEngine(log: box.value, client: client, options: opts).run() } }
        let out = Outcome(report, watch)
        FileHandle.standardOutput.write(Data(("DEVICE-SYNC " + String(decoding: try JSONEncoder().encode(out), as: UTF8.self) + "\n").utf8))
    }

    /// The parent's side: runs the child to its end and returns what it printed.
    static func child(path: String, url: String, run: Int, ctx: BenchContext) throws -> Outcome {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: BenchContext.executablePath)
        p.arguments = ["--sync-device", path, "--hub-url", url, "--device-run", String(run), "--seed", String(ctx.seed), "--fixtures", ctx.fixtureDir]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard p.terminationStatus == 0, let line = text.split(separator: "\n").last(where: { $0.hasPrefix("DEVICE-SYNC ") }) else {
            throw RawError(description: "the device's sync (--sync-device \(path)) failed with status \(p.terminationStatus): \(text.suffix(400))")
        }
        return try JSONDecoder().decode(Outcome.self, from: Data(line.dropFirst("DEVICE-SYNC ".count).utf8))
    }
}
