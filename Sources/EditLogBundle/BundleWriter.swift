import EditLogCore
import Foundation

/// Entry names and sizes of the bundle format (`schemas/bundle.md`).
public enum BundleLayout {
    public static let manifest = "manifest.json"
    public static let schema = "schema.json"
    public static let sums = "SHA256SUMS"
    public static let signature = "SHA256SUMS.sig"
    public static let eventsPrefix = "events/"
    public static let blobsPrefix = "blobs/"
    /// Event chunks are cut before they pass this size (a single longer line gets a chunk of its own).
    public static let chunkBytes = 4 << 20
    /// The largest event chunk a reader accepts (it holds one chunk in memory).
    public static let maxChunkBytes: Int64 = 64 << 20
    /// Uncompressed bytes per gzip member, as the export cuts them (chosen with the deflate settings: zlib's
    /// `DeflateTuning.bundle`, libdeflate's `GzipEngine.bundle`). Each member starts with no history, so longer ones
    /// compress a little better, and more bytes are in flight. Readers accept members of any size.
    public static let gzipBlockBytes = 2 << 20

    public static func chunkName(_ n: Int) -> String {
        let digits = String(n)
        return eventsPrefix + String(repeating: "0", count: max(0, 8 - digits.count)) + digits + ".ndjson"
    }
}

/// Writes a bundle: tar entries in gzip members, event lines cut into chunks, and at the end SHA256SUMS
/// (and its signature). Nothing is held whole but one event chunk and one batch of gzip blocks.
///
/// The manifest and the schema (the first two entries) can be given later than the entries after them (`head`):
/// they then make the first gzip member alone, and the rest is cut into blocks from the third entry on, so nothing
/// after them depends on their size.
final class BundleWriter {
    /// The manifest's bytes (its newline included) and the schema's, when they are ready (always when asked to
    /// wait), nil while they are not.
    typealias Head = (_ wait: Bool) throws(EditLogError) -> (manifest: [UInt8], schema: [UInt8])?

    let file: OutputFile
    let gzip: ParallelGzipWriter
    let tar: TarWriter
    private var chunk: [UInt8] = []
    private var chunks = 0
    /// The manifest's and schema's entries for SHA256SUMS, once a `head` gave them.
    private let headEntries = HeadEntries()

    init(path: String, mtime: Int64, blockSize: Int = BundleLayout.gzipBlockBytes, engine: GzipEngine = .bundle, head: Head? = nil) throws(EditLogError) {
        file = try OutputFile(path: path)
        let entries = headEntries
        let gzipHead = head.map { BundleWriter.tarHead($0, mtime: mtime, entries: entries) }
        gzip = ParallelGzipWriter(output: file, blockSize: blockSize, engine: engine, head: gzipHead)
        tar = TarWriter(sink: gzip, mtime: mtime)
    }

    /// The head as the gzip writer takes it: the two entries' tar bytes (their SHA-256s kept in `entries`).
    private static func tarHead(_ head: @escaping Head, mtime: Int64, entries: HeadEntries) -> ParallelGzipWriter.Head {
        return { (wait: Bool) throws(EditLogError) -> [UInt8]? in
            guard let parts = try head(wait) else { return nil }
            entries.entries = [(BundleLayout.manifest, EventHash.sha256(parts.manifest)), (BundleLayout.schema, EventHash.sha256(parts.schema))]
            return Ustar.entry(name: BundleLayout.manifest, data: parts.manifest, mtime: mtime)
                + Ustar.entry(name: BundleLayout.schema, data: parts.schema, mtime: mtime)
        }
    }

    /// Fills the head given at `init` (waiting for it) and deflates it. Nothing without one.
    func fillHead() throws(EditLogError) {
        try gzip.fillHead()
    }

    /// One entry of `size` bytes written piece by piece (`body` hands each to `write`); returns their SHA-256.
    func add(_ name: String, size: Int64, _ body: (_ write: (UnsafeRawBufferPointer) throws(EditLogError) -> Void) throws -> Void) throws -> [UInt8] {
        try flushEvents()
        try tar.begin(name, size: size)
        let tar = self.tar
        try body { (piece: UnsafeRawBufferPointer) throws(EditLogError) in try tar.write(piece) }
        return try tar.end()
    }

    /// One event line (its canonical JSON; the newline is added here).
    func addEventLine(_ line: [UInt8]) throws(EditLogError) {
        if !chunk.isEmpty && chunk.count + line.count + 1 > BundleLayout.chunkBytes { try flushEvents() }
        chunk.append(contentsOf: line)
        chunk.append(0x0A)
    }

    private func flushEvents() throws(EditLogError) {
        guard !chunk.isEmpty else { return }
        chunks += 1
        try tar.add(BundleLayout.chunkName(chunks), chunk)
        chunk.removeAll(keepingCapacity: true)
    }

    /// Writes SHA256SUMS (and its signature with `signingKey`), ends the archive, syncs. Returns the file's SHA-256.
    func finish(signingKey: [UInt8]?) throws(EditLogError) -> [UInt8] {
        try flushEvents()
        try fillHead()
        var sums: [UInt8] = []
        for e in headEntries.entries + tar.entries { sums.append(contentsOf: Array("\(Hex.encode(e.sha256))  \(e.name)\n".utf8)) }
        let signature = try signingKey.map { (k: [UInt8]) throws(EditLogError) -> [UInt8] in try BundleSignature.sign(sums, privateKey: k) }
        try tar.add(BundleLayout.sums, sums)
        if let signature { try tar.add(BundleLayout.signature, signature) }
        try tar.finish()
        try gzip.finish()
        return try file.finish()
    }
}

/// The head's entries, set by the gzip writer's head source (which the writer owns, so it cannot hold the writer).
private final class HeadEntries {
    var entries: [(name: String, sha256: [UInt8])] = []
}
