import EditLogCore
import Foundation

/// POSIX ustar (POSIX.1-1988) entries: a 512-byte header, the data, zero padding to 512; two zero blocks end the archive.
/// Only regular files with names under 100 bytes are written, so no extension headers are ever needed.
enum Ustar {
    static let block = 512
    /// The largest size the 11 octal digits of the size field hold (8 GiB - 1).
    static let maxSize: Int64 = 0o77777777777

    static func header(name: String, size: Int64, mtime: Int64) -> [UInt8] {
        var h = [UInt8](repeating: 0, count: block)
        func put(_ s: String, _ offset: Int, _ length: Int) {
            for (i, b) in s.utf8.prefix(length).enumerated() { h[offset + i] = b }
        }
        func octal(_ v: Int64, _ offset: Int, _ length: Int) {
            // length - 1 digits, zero-padded, then NUL.
            let digits = String(v, radix: 8)
            put(String(repeating: "0", count: max(0, length - 1 - digits.count)) + digits, offset, length - 1)
        }
        put(name, 0, 100)
        octal(0o644, 100, 8)       // mode
        octal(0, 108, 8)           // uid
        octal(0, 116, 8)           // gid
        octal(size, 124, 12)       // size
        octal(max(0, mtime), 136, 12)  // mtime
        h[156] = UInt8(ascii: "0")  // typeflag: regular file
        put("ustar", 257, 6)       // magic "ustar\0"
        put("00", 263, 2)          // version
        put("editlog", 265, 32)    // uname
        put("editlog", 297, 32)    // gname
        // Checksum: the header's bytes summed with the checksum field as 8 spaces; 6 octal digits, NUL, space.
        for i in 148..<156 { h[i] = 0x20 }
        let sum = h.reduce(0) { $0 + Int($1) }
        let digits = String(sum, radix: 8)
        put(String(repeating: "0", count: max(0, 6 - digits.count)) + digits, 148, 6)
        h[154] = 0
        h[155] = 0x20
        return h
    }

    static func padding(for size: Int64) -> Int { Int((Int64(block) - size % Int64(block)) % Int64(block)) }

    /// One whole entry's bytes: header, data, padding (for entries written apart from a `TarWriter`).
    static func entry(name: String, data: [UInt8], mtime: Int64) -> [UInt8] {
        precondition(name.utf8.count < 100, "tar entry names stay under 100 bytes")
        return header(name: name, size: Int64(data.count), mtime: mtime) + data + [UInt8](repeating: 0, count: padding(for: Int64(data.count)))
    }
}

/// Writes tar entries into a gzip writer, keeping each entry's SHA-256 for `SHA256SUMS`.
final class TarWriter {
    let sink: ParallelGzipWriter
    let mtime: Int64
    /// Every entry written, with the SHA-256 of its data, in order.
    private(set) var entries: [(name: String, sha256: [UInt8])] = []

    init(sink: ParallelGzipWriter, mtime: Int64) {
        self.sink = sink
        self.mtime = mtime
    }

    /// Writes one whole entry.
    func add(_ name: String, _ data: [UInt8]) throws(EditLogError) {
        try begin(name, size: Int64(data.count))
        try write(data)
        _ = try end()
    }

    /// An entry being written piece by piece (`begin`, `write`, `end`).
    private var open: (name: String, size: Int64, written: Int64, digest: ContentDigest)?

    /// Begins an entry of `size` bytes that `write` hands over in pieces (an attachment of any size, never held whole).
    func begin(_ name: String, size: Int64) throws(EditLogError) {
        precondition(open == nil, "a tar entry is being written")
        precondition(name.utf8.count < 100, "tar entry names stay under 100 bytes")
        guard size <= Ustar.maxSize else { throw EditLogError(.invalidInput, "\(name) is larger than a ustar entry can hold (8 GiB)") }
        try sink.write(Ustar.header(name: name, size: size, mtime: mtime))
        open = (name, size, 0, ContentDigest())
    }

    /// The open entry's next bytes.
    func write(_ piece: some DataProtocol) throws(EditLogError) {
        guard let o = open else { preconditionFailure("no tar entry is open") }
        guard o.written + Int64(piece.count) <= o.size else {
            throw EditLogError(.corrupt, "\(o.name): more than the \(o.size) bytes its header announced")
        }
        open!.written += Int64(piece.count)
        open!.digest.update(piece)
        try sink.write(piece)
    }

    /// Ends the open entry (all its bytes written) and returns their SHA-256.
    func end() throws(EditLogError) -> [UInt8] {
        guard let o = open else { preconditionFailure("no tar entry is open") }
        open = nil
        guard o.written == o.size else { throw EditLogError(.corrupt, "\(o.name): \(o.written) bytes of the \(o.size) its header announced") }
        let pad = Ustar.padding(for: o.size)
        if pad > 0 { try sink.write([UInt8](repeating: 0, count: pad)) }
        let sha = o.digest.finalize()
        entries.append((o.name, sha))
        return sha
    }

    /// The end-of-archive marker: two zero blocks.
    func finish() throws(EditLogError) {
        try sink.write([UInt8](repeating: 0, count: 2 * Ustar.block))
    }
}
