import EditLog
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// The change-bundle rows (issue 10): export the whole big log as a bundle (against pigz and gzip over the same
// uncompressed tar bytes), import that bundle into an empty log of the same schema (against the record floor of
// the rows the import left), and verify it (timed; gunzip of the same file as a reference). The bundle
// bundle-export leaves next to the big log is the one bundle-import and bundle-verify read; either makes it first
// (in a child process, unreported) when it is missing.

extension BenchContext {
    /// The whole big log as a bundle (what `bundle-export` leaves; `bundle-import` and `bundle-verify` read it).
    var bulkBundlePath: String { bulkLogPath + ".bundle" }
    var bulkBundleReadyMarker: String { bulkBundlePath + ".complete" }

    /// The big log's bundle, exported first (by a `bundle-export --prepare-only` child, so its memory never
    /// counts toward the caller's peak RSS) when missing.
    func bulkBundle() throws -> String {
        if FileManager.default.fileExists(atPath: bulkBundleReadyMarker) { return bulkBundlePath }
        note("exporting the big log's bundle first (not reported)")
        if inProcess {
            let prep = BenchContext(sizes: sizes, seed: seed, workDir: workDir, fixtureDir: fixtureDir, prepareOnly: true)
            prep.inProcess = true
            _ = try BundleExportScenario.run(prep)
        } else {
            try prepareInChild(BundleExportScenario.name)
        }
        guard FileManager.default.fileExists(atPath: bulkBundleReadyMarker) else { throw RawError(description: "no bundle at \(bulkBundlePath)") }
        return bulkBundlePath
    }
}

/// External programs the bundle rows compare with (pigz, gzip), run as subprocesses.
enum ExternalTool {
    /// The program's path on $PATH, or nil.
    static func find(_ name: String) -> String? {
        let dirs = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":")
        return dirs.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Wall time and the children's CPU time (user + system, from `RUSAGE_CHILDREN`) of one run, and the bytes it
    /// wrote to stdout when they were counted.
    struct Run {
        var watch: Stopwatch
        var stdoutBytes: Int64
    }

    /// Runs `exe args` with stdin from the file `input` and stdout to the file `output` (`/dev/null` allowed), or,
    /// with `output` nil, into a pipe whose bytes are counted and dropped.
    static func run(_ exe: String, _ args: [String], input: String, output: String?) throws -> Run {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        p.arguments = args
        guard let inh = FileHandle(forReadingAtPath: input) else { throw RawError(description: "cannot read \(input)") }
        defer { try? inh.close() }
        p.standardInput = inh
        var outh: FileHandle?
        var pipe: Pipe?
        if let output {
            if output != "/dev/null" { _ = FileManager.default.createFile(atPath: output, contents: nil) }
            guard let h = FileHandle(forWritingAtPath: output) else { throw RawError(description: "cannot write \(output)") }
            outh = h
            p.standardOutput = h
        } else {
            let pp = Pipe()
            pipe = pp
            p.standardOutput = pp
        }
        defer { try? outh?.close() }
        let cpu0 = childrenCpuNs()
        let w0 = Stopwatch.wallNow()
        try p.run()
        var counted: Int64 = 0
        if let pipe {
            let fd = pipe.fileHandleForReading.fileDescriptor
            var buf = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if n > 0 { counted += Int64(n) } else if n == 0 || errno != EINTR { break }
            }
        }
        p.waitUntilExit()
        var w = Stopwatch()
        w.wallNs = Stopwatch.wallNow() - w0
        w.cpuNs = childrenCpuNs() - cpu0
        guard p.terminationReason == .exit, p.terminationStatus == 0 else {
            throw RawError(description: "\(exe) \(args.joined(separator: " ")) failed (status \(p.terminationStatus))")
        }
        return Run(watch: w, stdoutBytes: counted)
    }

    static func childrenCpuNs() -> UInt64 {
        var u = rusage()
        getrusage(Int32(RUSAGE_CHILDREN.rawValue), &u)
        func ns(_ t: timeval) -> UInt64 { UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_usec) * 1000 }
        return ns(u.ru_utime) + ns(u.ru_stime)
    }
}

/// Exports the whole big log as a bundle with the facade (`exportBundle`, every event and blob, unsigned). Peer:
/// `pigz -p 2 -6` compressing the bundle's own uncompressed tar bytes (extracted once with `gzip -dc`, untimed) to
/// /dev/null, timed in the same run; goal ≥ 1.0x its throughput over those bytes. Size: `gzip -6` of the same tar
/// bytes; goal ≤ 1.01x its size.
enum BundleExportScenario: Scenario {
    static let name = "bundle-export"
    static let summary = "export the big log as a bundle vs pigz -p 2 -6 (throughput) and gzip -6 (size) over the same tar bytes"
    static let needsBulkLog = true

    static func run(_ ctx: BenchContext) throws -> [Measurement] {
        ctx.prewarm(ctx.bulkLogPath)
        let log = try ctx.openBulkLog()
        let events = Int(try log.eventCount())
        let out = ctx.bulkBundlePath
        try? FileManager.default.removeItem(atPath: ctx.bulkBundleReadyMarker)
        ctx.note("exporting the \(Fmt.count(events))-event log to a bundle")
        Memory.resetPeak()
        var watch = Stopwatch()
        let summary = try watch.time { try log.exportBundle(to: out, overwrite: true) }
        let rss = Memory.peakBytes()
        log.close()
        _ = FileManager.default.createFile(atPath: ctx.bulkBundleReadyMarker, contents: Data("\(summary.bytes)\n".utf8))
        if ctx.prepareOnly { return [] }

        let tarBytes = summary.uncompressedBytes
        let size = "\(Fmt.count(events))-event log, \(Fmt.mb(tarBytes)) tar"
        var m = Measurement(scenario: name + " vs pigz -p 2 -6", kind: .throughput, size: size, units: Int(tarBytes), unitName: "B",
                            seconds: watch.seconds, cpuSeconds: watch.cpuSeconds, goal: .peerRatioAtLeast(1.0))
        m.notes.append("bundle \(Fmt.mb(summary.bytes)) (\(summary.bytes) bytes) from \(tarBytes) uncompressed tar bytes; "
                       + "\(summary.manifest.eventCount) events, \(summary.manifest.blobCount) blobs; throughput over the uncompressed tar bytes; deflated by \(EditLog.bundleDeflater)")
        var s = Measurement(scenario: name + " size vs gzip -6", kind: .size, size: size, units: Int(tarBytes), goal: .sizeRatioAtMost(1.01))
        s.sizeBytes = summary.bytes
        var r = Measurement(scenario: name, kind: .rss, size: size, units: events, goal: .megabytesAtMost(100))
        r.rssBytes = rss
        var g = Measurement(scenario: name + " (ref: gzip -6, 1 thread)", kind: .info, size: size, units: Int(tarBytes), unitName: "B",
                            seconds: watch.seconds, cpuSeconds: watch.cpuSeconds)

        guard let gzip = ExternalTool.find("gzip") else {
            m.unavailable = "peer unavailable: no gzip to extract the tar"
            s.unavailable = "peer unavailable: no gzip"
            return [m, s, r]
        }
        // The bundle's uncompressed tar bytes, once (untimed).
        let tar = ctx.path("bundle-export.tar")
        defer { try? FileManager.default.removeItem(atPath: tar) }
        _ = try ExternalTool.run(gzip, ["-dc"], input: out, output: tar)
        let extracted = (try FileManager.default.attributesOfItem(atPath: tar)[.size] as? NSNumber)?.int64Value ?? -1
        guard extracted == tarBytes else { throw RawError(description: "gzip -dc gave \(extracted) bytes, the export reported \(tarBytes) uncompressed bytes") }
        ctx.prewarm(tar)

        if let pigz = ExternalTool.find("pigz") {
            ctx.note("peer: pigz -p 2 -6 < tar > /dev/null")
            let run = try ExternalTool.run(pigz, ["-p", "2", "-6"], input: tar, output: "/dev/null")
            m.floorSeconds = run.watch.seconds
            m.floorCpuSeconds = run.watch.cpuSeconds
            m.floorDescription = "peer, not a floor: `\(pigz) -p 2 -6 < tar > /dev/null` (\(pigzVersion(pigz))) over the bundle's own \(tarBytes) uncompressed "
                + "tar bytes (extracted once with gzip -dc, untimed, read once to be in the page cache); the ratio is the export's throughput over those "
                + "bytes (reading the log, JSON, tar, deflate, fsync) / pigz's (deflate only)"
        } else {
            m.unavailable = "peer unavailable: no pigz on PATH"
        }

        ctx.note("size: gzip -6 < tar | wc -c")
        let gz = try ExternalTool.run(gzip, ["-6"], input: tar, output: nil)
        s.floorSizeBytes = gz.stdoutBytes
        s.notes.append("the bundle \(summary.bytes) bytes (independent 2 MiB gzip members), gzip -6 of the same tar \(gz.stdoutBytes) bytes (one member)")
        g.floorSeconds = gz.watch.seconds
        g.floorCpuSeconds = gz.watch.cpuSeconds
        g.floorDescription = "reference only: `gzip -6 < tar` (one thread) into a pipe counted by the bench"
        let (zm, zs) = try zlibOnly(ctx, events: events, size: size, tarBytes: tarBytes, pigz: m, gzipBytes: gz.stdoutBytes)
        return [m, s, r, g, zm, zs]
    }

    /// The same export with the system zlib only (`--deflate zlib`), against the same pigz run and `gzip -6` size:
    /// the issue's goals as they stand if the bundle must be deflated by zlib (the default uses libdeflate where the
    /// system has it; `Libdeflate.swift`).
    static func zlibOnly(_ ctx: BenchContext, events: Int, size: String, tarBytes: Int64, pigz: Measurement,
                         gzipBytes: Int64) throws -> (Measurement, Measurement) {
        let out = ctx.path("bundle-export-zlib.bundle")
        defer { try? FileManager.default.removeItem(atPath: out) }
        ctx.prewarm(ctx.bulkLogPath)
        let log = try ctx.openBulkLog()
        ctx.note("exporting the \(Fmt.count(events))-event log again, deflated by zlib only")
        var watch = Stopwatch()
        let summary = try watch.time { try log.exportBundle(to: out, overwrite: true, deflate: .zlib) }
        log.close()
        guard summary.uncompressedBytes == tarBytes else {
            throw RawError(description: "the zlib export has \(summary.uncompressedBytes) uncompressed bytes, the default one \(tarBytes)")
        }
        var m = Measurement(scenario: name + " --deflate zlib vs pigz -p 2 -6", kind: .throughput, size: size, units: Int(tarBytes), unitName: "B",
                            seconds: watch.seconds, cpuSeconds: watch.cpuSeconds, goal: .peerRatioAtLeast(1.0))
        m.floorSeconds = pigz.floorSeconds
        m.floorCpuSeconds = pigz.floorCpuSeconds
        m.floorDescription = pigz.floorDescription.map { "the same run as the row above: " + $0 }
        if pigz.floorSeconds == nil { m.unavailable = pigz.unavailable ?? "peer unavailable" }
        m.notes.append("the same export deflated by \(summary.deflater): the speed goal as it stands with the system zlib only")
        var s = Measurement(scenario: name + " --deflate zlib size vs gzip -6", kind: .size, size: size, units: Int(tarBytes), goal: .sizeRatioAtMost(1.01))
        s.sizeBytes = summary.bytes
        s.floorSizeBytes = gzipBytes
        return (m, s)
    }

    static func pigzVersion(_ pigz: String) -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: pigz)
        p.arguments = ["--version"]
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        guard (try? p.run()) != nil else { return "pigz" }
        let d = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: d, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Imports the big log's whole bundle into an empty log of the same schema (`EditLog.create` with the fixture's
/// service documents, webmap and rules, no baseline, another log id), one transaction (`importBundle`).
/// Floor: the record floor of the rows the import left (events, projection rows, blobs) — raw C-API inserts into a
/// fresh file with the target's DDL, one transaction.
enum BundleImportScenario: Scenario {
    static let name = "bundle-import"
    static let summary = "import the big log's bundle into an empty log vs raw inserts of every row the import left, one transaction"
    static let needsBulkLog = true

    static func run(_ ctx: BenchContext) throws -> [Measurement] {
        let bundle = try ctx.bulkBundle()
        let fx = try ctx.fixture()
        let target = ctx.path("bundle-import-target.editlog")
        ctx.remove(target)
        defer { ctx.remove(target) }
        let clock = StepClock(start: 1_795_000_000_000, step: 1)
        let log = try EditLog.create(at: target, service: fx.service, webmap: fx.webmap, rules: fx.rules, baseline: [],
                                     actor: "bench", device: "editlog-bench", clock: clock,
                                     ids: UUIDv7Generator(clock: clock, seed: ctx.seed &+ 10), logId: "bench-import-\(ctx.seed)")
        let base = try log.eventCount()
        ctx.prewarm(bundle)
        let bundleBytes = (try FileManager.default.attributesOfItem(atPath: bundle)[.size] as? NSNumber)?.int64Value ?? 0
        ctx.note("importing the bundle (\(Fmt.mb(bundleBytes))) into an empty log of the same schema (\(base) events)")
        Memory.resetPeak()
        // The peak row includes what this process holds before the import (binary, fixtures, the new log).
        ctx.note("RSS before the import \(Fmt.mb(Memory.currentBytes()))")
        var watch = Stopwatch()
        let (report, contents) = try watch.time { try log.importBundle(at: bundle, actor: "bench", device: "editlog-bench") }
        let rss = Memory.peakBytes()
        let total = try log.eventCount()
        log.close()
        let appended = Int(total - base)

        let size = "\(Fmt.count(contents.eventCount))-event bundle (\(Fmt.mb(bundleBytes)))"
        var m = Measurement(scenario: name, kind: .throughput, size: size, units: appended, unitName: "ev",
                            seconds: watch.seconds, cpuSeconds: watch.cpuSeconds, goal: .ratioAtLeast(0.5))
        m.notes.append("\(report.imported) events imported, \(report.alreadyPresent) already present, \(report.decisions) merge decisions, "
                       + "\(report.derived) derived, \(report.blobs) blobs; the log grew from \(base) to \(total) events")
        if !ctx.prepareOnly {
            ctx.note("floor: raw C-API inserts of every row the import left (events, projection rows, blobs), one transaction")
            let src = try RawDB(target, readonly: true)
            let tables = try Floors.addedRows(in: src, after: base, baseLog: nil)
            let floor = try Floors.replay(tables, from: src, into: ctx.path("floor-bundle-import.sqlite"), grouping: .oneTransaction, remove: ctx.remove)
            m.floorSeconds = floor.watch.seconds
            m.floorCpuSeconds = floor.watch.cpuSeconds
            m.floorDescription = "the record floor of the import: raw C-API INSERT, one prepared statement per table, of every row the import left "
                + "(\(floor.total) rows: \(floor.summary)) into a fresh file with the target log's DDL, one transaction, WAL + synchronous=NORMAL "
                + "(no bundle reading, gunzip, checksums or hashing in the floor)"
        }
        var r = Measurement(scenario: name, kind: .rss, size: size, units: appended, goal: .megabytesAtMost(100))
        r.rssBytes = rss
        return [m, r]
    }
}

/// Verifies the big log's bundle (`EditLog.verifyBundle`: gzip CRCs, tar, checksums, every event's chain hash, blob
/// hashes). No floor; reference line: `gzip -dc bundle > /dev/null` of the same file.
enum BundleVerifyScenario: Scenario {
    static let name = "bundle-verify"
    static let summary = "verify the big log's bundle (no floor; gunzip of the same file as a reference)"
    static let needsBulkLog = true

    static func run(_ ctx: BenchContext) throws -> [Measurement] {
        let bundle = try ctx.bulkBundle()
        ctx.prewarm(bundle)
        let bundleBytes = (try FileManager.default.attributesOfItem(atPath: bundle)[.size] as? NSNumber)?.int64Value ?? 0
        ctx.note("verifying the bundle (\(Fmt.mb(bundleBytes)))")
        Memory.resetPeak()
        var watch = Stopwatch()
        let contents = try watch.time { try EditLog.verifyBundle(at: bundle) }
        let rss = Memory.peakBytes()

        let size = "\(Fmt.count(contents.eventCount))-event bundle (\(Fmt.mb(bundleBytes)))"
        var m = Measurement(scenario: name, kind: .info, size: size, units: contents.eventCount, unitName: "ev",
                            seconds: watch.seconds, cpuSeconds: watch.cpuSeconds)
        m.notes.append("\(contents.eventCount) events, \(contents.blobs.count) blobs checked")
        if !ctx.prepareOnly, let gzip = ExternalTool.find("gzip") {
            ctx.note("reference: gzip -dc bundle > /dev/null")
            let run = try ExternalTool.run(gzip, ["-dc"], input: bundle, output: "/dev/null")
            m.floorSeconds = run.watch.seconds
            m.floorCpuSeconds = run.watch.cpuSeconds
            m.floorDescription = "reference only (no goal): `gzip -dc < bundle > /dev/null`, one thread, the same file"
        }
        var r = Measurement(scenario: name, kind: .rss, size: size, units: contents.eventCount, goal: .megabytesAtMost(100))
        r.rssBytes = rss
        return [m, r]
    }
}
