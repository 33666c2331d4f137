@testable import EditLogBundle
import EditLog
import Foundation
import Testing

/// A temporary directory removed when the value is released.
final class TempDir {
    let path: String
    init() {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("editlog-bundle-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    func file(_ name: String) -> String { path + "/" + name }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

enum BundleFixture {
    /// The Trees of Portland log with every fixture script recorded (sessions, attachments, rules): deterministic.
    static func log(at path: String) throws -> EditLog {
        let log = try Fixture.treesLog(at: path)
        for script in SchemaFilesTests.validScripts {
            let bytes = try InputFiles.bytes("\(Paths.trees)/scripts/\(script)")
            _ = try log.record(try ScriptParser.parse(bytes), name: script, sha256: InputFiles.sha256(bytes))
        }
        return log
    }

    /// Every event of a log, in order.
    static func events(_ log: EditLog) throws -> [RecordedEvent] {
        var out: [RecordedEvent] = []
        try log.events(LogFilter()) { out.append($0) }
        return out
    }

    /// Reads a bundle whole, collecting what the callbacks saw.
    static func read(_ path: String, trust: [[UInt8]] = [], limits: BundleLimits = .default) throws -> (BundleContents, [RecordedEvent], [String: [UInt8]]) {
        var events: [RecordedEvent] = []
        var blobs: [String: [UInt8]] = [:]
        let c = try BundleReader(path: path, limits: limits).read(trust: trust, event: { events.append($0) }, blob: { piece in
            // Pieces come in order: each one starts where the blob's bytes so far end.
            precondition(Int64(blobs[piece.shaText, default: []].count) == piece.offset, "a blob piece out of order")
            blobs[piece.shaText, default: []].append(contentsOf: piece.bytes)
        })
        return (c, events, blobs)
    }

    /// The entries of a bundle (no check beyond gzip's and tar's own).
    static func unpack(_ path: String) throws -> [(name: String, data: [UInt8])] {
        let tar = TarReader(source: try GzipInputStream(path: path, limits: .default))
        var out: [(String, [UInt8])] = []
        while let e = try tar.next() { out.append((e.name, try tar.readAll())) }
        return out
    }

    /// Writes entries as a bundle container; `sums` recomputes SHA256SUMS over the entries before it (replacing any).
    static func pack(_ entries: [(name: String, data: [UInt8])], to path: String, recomputeSums: Bool = true, blockSize: Int = 1 << 20) throws {
        let file = try OutputFile(path: path)
        let gz = ParallelGzipWriter(output: file, blockSize: blockSize)
        let tar = TarWriter(sink: gz, mtime: 0)
        var list = entries
        if recomputeSums {
            list.removeAll { $0.name == BundleLayout.sums || $0.name == BundleLayout.signature }
        }
        for e in list { try tar.add(e.name, e.data) }
        if recomputeSums {
            var sums: [UInt8] = []
            for e in tar.entries { sums += Array("\(Hex.encode(e.sha256))  \(e.name)\n".utf8) }
            try tar.add(BundleLayout.sums, sums)
        }
        try tar.finish()
        try gz.finish()
        _ = try file.finish()
    }

    /// A bundle's whole tar stream (gunzipped).
    static func tarBytes(_ path: String) throws -> [UInt8] {
        let gz = try GzipInputStream(path: path, limits: .default)
        var out: [UInt8] = [], buf = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = try gz.read(into: &buf, at: 0, count: buf.count)
            if n == 0 { return out }
            out += buf[..<n]
        }
    }

    /// Rewrites one entry's JSON (manifest, or one line of an event chunk) and repacks with fresh checksums.
    static func edit(_ path: String, to out: String, _ body: (inout [(name: String, data: [UInt8])]) throws -> Void) throws {
        var entries = try unpack(path)
        try body(&entries)
        try pack(entries, to: out)
    }

    static func json(_ bytes: [UInt8]) throws -> JSONValue { try JSONParser.parse(bytes) }

    /// The lines of an event chunk.
    static func lines(_ data: [UInt8]) -> [[UInt8]] { data.split(separator: 0x0A).map(Array.init) }
    static func join(_ lines: [[UInt8]]) -> [UInt8] { lines.flatMap { $0 + [0x0A] } }

    /// Whether a system tool is on the PATH.
    static func has(_ tool: String) -> Bool { (try? CLI.sh("command -v \(tool)"))?.status == 0 }
}

/// Expects `body` to throw an EditLogError of `kind` whose description contains `fragment`.
func expectBundleError(_ kind: EditLogError.Kind, _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected a \(kind) error containing \"\(fragment)\"", sourceLocation: sourceLocation)
    } catch let e as EditLogError {
        #expect(e.kind == kind, "\(e)", sourceLocation: sourceLocation)
        #expect(fragment.isEmpty || e.description.contains(fragment), "\(e)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("not an EditLogError: \(error)", sourceLocation: sourceLocation)
    }
}
