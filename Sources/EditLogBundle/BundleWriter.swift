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

    public static func chunkName(_ n: Int) -> String {
        let digits = String(n)
        return eventsPrefix + String(repeating: "0", count: max(0, 8 - digits.count)) + digits + ".ndjson"
    }
}

/// Writes a bundle: tar entries in gzip members, event lines cut into chunks, and at the end SHA256SUMS
/// (and its signature). Nothing is held whole but one event chunk and one batch of gzip blocks.
final class BundleWriter {
    let file: OutputFile
    let gzip: ParallelGzipWriter
    let tar: TarWriter
    private var chunk: [UInt8] = []
    private var chunks = 0

    init(path: String, mtime: Int64, blockSize: Int = ParallelGzipWriter.defaultBlockSize) throws(EditLogError) {
        file = try OutputFile(path: path)
        gzip = ParallelGzipWriter(output: file, blockSize: blockSize)
        tar = TarWriter(sink: gzip, mtime: mtime)
    }

    /// One whole entry; `sha256`, when the caller has it, must be the data's (SHA256SUMS lists it).
    func add(_ name: String, _ data: [UInt8], sha256: [UInt8]? = nil) throws(EditLogError) {
        try flushEvents()
        try tar.add(name, data, sha256: sha256)
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
        var sums: [UInt8] = []
        for e in tar.entries { sums.append(contentsOf: Array("\(Hex.encode(e.sha256))  \(e.name)\n".utf8)) }
        let signature = try signingKey.map { (k: [UInt8]) throws(EditLogError) -> [UInt8] in try BundleSignature.sign(sums, privateKey: k) }
        try tar.add(BundleLayout.sums, sums)
        if let signature { try tar.add(BundleLayout.signature, signature) }
        try tar.finish()
        try gzip.finish()
        return try file.finish()
    }
}
