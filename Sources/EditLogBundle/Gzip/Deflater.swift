import CZlib
import EditLogCore
import Foundation

/// One complete gzip member (RFC 1952) from one block of input, through the system zlib.
enum GzipMember {
    /// Compresses `input` into a self-contained gzip member (header, deflate stream, CRC-32 and size trailer).
    static func compress(_ input: [UInt8], level: Int32 = 6) -> [UInt8] {
        var stream = z_stream()
        guard czlib_deflate_init_gzip(&stream, level) == Z_OK else { preconditionFailure("zlib deflateInit2 failed (out of memory)") }
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, uLong(input.count))) + 64
        var output = [UInt8](repeating: 0, count: bound)
        let produced: Int = input.withUnsafeBufferPointer { inp in
            output.withUnsafeMutableBufferPointer { outp in
                stream.next_in = UnsafeMutablePointer(mutating: inp.baseAddress)
                stream.avail_in = uInt(inp.count)
                stream.next_out = outp.baseAddress
                stream.avail_out = uInt(outp.count)
                let rc = deflate(&stream, Z_FINISH)
                precondition(rc == Z_STREAM_END, "zlib deflate did not finish within deflateBound (rc \(rc))")
                return outp.count - Int(stream.avail_out)
            }
        }
        output.removeSubrange(produced...)
        return output
    }
}

/// A byte sink for the compressed file: `<path>` opened for writing, every write checked, the SHA-256 of what
/// was written kept (the bundle's own checksum, recorded for `--peer`).
final class OutputFile {
    let path: String
    private var fd: Int32
    private(set) var digest = ContentDigest()
    private(set) var bytesWritten: Int64 = 0

    init(path: String) throws(EditLogError) {
        self.path = path
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        if fd < 0 { throw EditLogError(.io, "cannot create the file: \(String(cString: strerror(errno)))", at: path) }
    }

    func write(_ bytes: [UInt8]) throws(EditLogError) {
        digest.update(bytes)
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 {
                if errno == EINTR { continue }
                throw EditLogError(.io, "cannot write: \(String(cString: strerror(errno)))", at: path)
            }
            done += n
        }
        bytesWritten += Int64(bytes.count)
    }

    /// Flushes to disk and closes. Returns the SHA-256 of the whole file.
    func finish() throws(EditLogError) -> [UInt8] {
        if fsync(fd) != 0 { throw EditLogError(.io, "cannot sync: \(String(cString: strerror(errno)))", at: path) }
        let rc = close(fd)
        fd = -1
        if rc != 0 { throw EditLogError(.io, "cannot close: \(String(cString: strerror(errno)))", at: path) }
        return digest.finalize()
    }

    deinit { if fd >= 0 { close(fd) } }
}

/// Gzip output as a series of independent members (as pigz and BGZF write them): the input is cut into blocks of
/// `blockSize` bytes, a batch of `workers` blocks is deflated at once on all cores, and the members are written in
/// order. Memory stays bounded by `workers × blockSize` (plus their compressed forms), whatever the total size.
final class ParallelGzipWriter {
    static let defaultBlockSize = 1 << 20

    let output: OutputFile
    let blockSize: Int
    let workers: Int
    let level: Int32
    private var current: [UInt8] = []
    private var full: [[UInt8]] = []
    /// Uncompressed bytes accepted so far.
    private(set) var uncompressedBytes: Int64 = 0

    init(output: OutputFile, blockSize: Int = ParallelGzipWriter.defaultBlockSize, workers: Int = ProcessInfo.processInfo.activeProcessorCount, level: Int32 = 6) {
        self.output = output
        self.blockSize = max(512, blockSize)
        self.workers = max(1, workers)
        self.level = level
        current.reserveCapacity(self.blockSize)
    }

    func write(_ bytes: some Collection<UInt8>) throws(EditLogError) {
        var rest = bytes[...]
        uncompressedBytes += Int64(bytes.count)
        while !rest.isEmpty {
            let take = min(blockSize - current.count, rest.count)
            let end = rest.index(rest.startIndex, offsetBy: take)
            current.append(contentsOf: rest[rest.startIndex..<end])
            rest = rest[end...]
            if current.count == blockSize {
                full.append(current)
                current = []
                current.reserveCapacity(blockSize)
                if full.count == workers { try flushBatch() }
            }
        }
    }

    private func flushBatch() throws(EditLogError) {
        guard !full.isEmpty else { return }
        let blocks = full
        full.removeAll(keepingCapacity: true)
        let members = Members(count: blocks.count)
        let level = self.level
        DispatchQueue.concurrentPerform(iterations: blocks.count) { i in
            members.set(i, GzipMember.compress(blocks[i], level: level))
        }
        for m in members.all() { try output.write(m) }
    }

    /// Compresses what is left (a last, shorter member) and writes it.
    func finish() throws(EditLogError) {
        if !current.isEmpty { full.append(current); current = [] }
        try flushBatch()
    }
}

/// The compressed members of one batch, filled by concurrent workers (each index written once, under a lock).
private final class Members: @unchecked Sendable {
    private let lock = NSLock()
    private var slots: [[UInt8]]
    init(count: Int) { slots = Array(repeating: [], count: count) }
    func set(_ i: Int, _ m: [UInt8]) { lock.lock(); slots[i] = m; lock.unlock() }
    func all() -> [[UInt8]] { lock.lock(); defer { lock.unlock() }; return slots }
}
