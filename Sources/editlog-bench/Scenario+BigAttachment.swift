import EditLog
import Foundation

/// One large attachment through a bundle: the issue asks that export and import stream, "peak RSS flat whatever the
/// size", and the million-event rows only vary the event count. A log of the fixture's schema holding one tree with
/// one attachment of `--attachment-mib` MiB of bytes that do not compress (made first by a child, unreported: the
/// `record` that stages it holds it whole) is exported, the bundle verified, imported into an empty log of the same
/// schema, and that log verified (`EditLog.verify`, projections too), in turn; each step's peak RSS is a row
/// (goal ≤ 100 MB, as for the million-event bundle). Time is reported, with no floor.
enum BundleBigAttachment: Scenario {
    static let name = "bundle-big-attachment"
    static let summary = "export, verify and import a bundle of one large attachment (full 512 MiB, quick 64 MiB), then verify the log: peak RSS of each"

    static func logPath(_ ctx: BenchContext) -> String { ctx.path("big-attachment-\(ctx.sizes.attachmentMiB)m-s\(ctx.seed).editlog") }

    /// Bytes that do not compress, the same for the same seed (xorshift64).
    static func noise(_ count: Int, seed: UInt64) -> [UInt8] {
        var x = seed | 1
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { raw in
            let words = raw.bindMemory(to: UInt64.self)
            for i in words.indices { x ^= x << 13; x ^= x >> 7; x ^= x << 17; words[i] = x }
        }
        return out
    }

    static func prepare(_ ctx: BenchContext) throws {
        let path = logPath(ctx)
        if FileManager.default.fileExists(atPath: path + ".complete") { return }
        ctx.remove(path)
        let fx = try ctx.fixture()
        let clock = StepClock(start: 1_790_000_000_000, step: 1)
        let log = try EditLog.create(at: path, service: fx.service, webmap: fx.webmap, rules: fx.rules, baseline: [],
                                     actor: "bench", device: "editlog-bench", clock: clock,
                                     ids: UUIDv7Generator(clock: clock, seed: ctx.seed &+ 20), logId: "bench-big-\(ctx.seed)")
        let tree = "{0B1C2D3E-4F50-4A61-8B72-000000000001}", photo = "{0B1C2D3E-4F50-4A61-8B72-000000000002}"
        let bytes = noise(ctx.sizes.attachmentMiB << 20, seed: ctx.seed &+ 21)
        let ops: [ScriptCommand.Operation] = [
            .create(layer: "Trees", globalId: tree, geometry: .object(["x": .double(-122.63), "y": .double(45.52)]), attributes: ["DBH": .int(3)], parent: nil),
            .attach(attachmentId: photo, name: "survey.tif", contentType: "image/tiff", data: bytes, preferredSize: "actual"),
            .finish,
        ]
        let commands = ops.enumerated().map { i, op in
            ScriptCommand(line: i + 1, op: op, actor: "surveyor", device: "bench", at: "2026-06-01T10:00:0\(i)Z", session: "big-1")
        }
        _ = try log.record(commands, name: "big-attachment", sha256: Workload.scriptSHA("big-attachment"))
        log.close()
        _ = FileManager.default.createFile(atPath: path + ".complete", contents: nil)
    }

    static func run(_ ctx: BenchContext) throws -> [Measurement] {
        let source = logPath(ctx)
        if !FileManager.default.fileExists(atPath: source + ".complete") {
            if ctx.inProcess || ctx.prepareOnly { try prepare(ctx) } else { try ctx.prepareInChild(name) }
        }
        if ctx.prepareOnly { return [] }
        let mib = ctx.sizes.attachmentMiB
        let size = "one \(mib) MiB attachment"
        let bundle = ctx.path("big-attachment.bundle")
        let target = ctx.path("big-attachment-import.editlog")
        ctx.remove(target)
        defer { ctx.remove(target); try? FileManager.default.removeItem(atPath: bundle) }
        var rows: [Measurement] = []
        func step(_ what: String, _ body: () throws -> String) throws {
            Memory.resetPeak()
            var watch = Stopwatch()
            let note = try watch.time(body)
            var r = Measurement(scenario: "\(name) \(what)", kind: .rss, size: size, units: 1, unitName: "attachment",
                                seconds: watch.seconds, cpuSeconds: watch.cpuSeconds, goal: .megabytesAtMost(100))
            r.rssBytes = Memory.peakBytes()
            r.notes.append("\(note); \(Fmt.seconds(watch.seconds)) (\(Fmt.num(Double(mib) / max(watch.seconds, 1e-9))) MiB/s)")
            rows.append(r)
        }
        ctx.prewarm(source)
        let log = try EditLog.open(at: source, readonly: true)
        ctx.note("exporting the log of one \(mib) MiB attachment")
        try step("export") {
            let s = try log.exportBundle(to: bundle, overwrite: true)
            return "bundle \(Fmt.mb(s.bytes)), \(s.manifest.blobCount) blob of \(s.manifest.blobBytes) bytes"
        }
        log.close()
        ctx.note("verifying its bundle")
        try step("bundle verify") {
            let c = try EditLog.verifyBundle(at: bundle)
            return "\(c.eventCount) events, \(c.blobs.count) blob checked"
        }
        let fx = try ctx.fixture()
        let clock = StepClock(start: 1_795_000_000_000, step: 1)
        let into = try EditLog.create(at: target, service: fx.service, webmap: fx.webmap, rules: fx.rules, baseline: [],
                                      actor: "bench", device: "editlog-bench", clock: clock,
                                      ids: UUIDv7Generator(clock: clock, seed: ctx.seed &+ 22), logId: "bench-big-import-\(ctx.seed)")
        ctx.note("importing it into an empty log")
        try step("import") {
            let r = try into.importBundle(at: bundle, actor: "bench", device: "editlog-bench").report
            return "\(r.imported) events, \(r.blobs) blob stored"
        }
        into.close()
        ctx.note("verifying the log it went into")
        try step("log verify") {
            let r = try EditLog.verify(at: target)
            guard r.ok else { throw RawError(description: "the imported log does not verify: \(r.problems.prefix(3))") }
            return "\(r.events) events, \(r.blobs) blob checked, projections equal a rebuild"
        }
        return rows
    }
}
