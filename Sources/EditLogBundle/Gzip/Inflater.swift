import CZlib
import EditLogCore
import Foundation

/// Decompression limits: a bundle that would expand beyond them is refused, never expanded into memory or disk.
public struct BundleLimits: Sendable {
    /// The most uncompressed bytes a bundle may hold (default 64 GiB).
    public var maxTotalBytes: Int64
    /// The most output bytes per input byte once the output passes `ratioGrace` (default 1000).
    public var maxRatio: Int
    /// Output below this size is never refused for its ratio (default 64 MiB: small, very regular bundles are fine).
    public var ratioGrace: Int64

    public init(maxTotalBytes: Int64 = 64 << 30, maxRatio: Int = 1000, ratioGrace: Int64 = 64 << 20) {
        self.maxTotalBytes = maxTotalBytes; self.maxRatio = maxRatio; self.ratioGrace = ratioGrace
    }

    public static let `default` = BundleLimits()
}

/// Streaming gunzip of a file holding one or more concatenated gzip members, read in 64 KiB pieces.
/// Input that is not gzip, a damaged member, a file cut short, and output beyond the limits are `EditLogError`s.
final class GzipInputStream {
    let path: String
    let limits: BundleLimits
    private let fd: Int32
    private var stream = z_stream()
    private var input = [UInt8](repeating: 0, count: 1 << 16)
    private var inputStart = 0
    private var inputEnd = 0
    private var eof = false
    /// True after a member ended and no input followed: the end of the data.
    private var finished = false
    private(set) var compressedRead: Int64 = 0
    private(set) var totalOut: Int64 = 0
    /// The compressed file's size: no more input than this can ever be read.
    let fileSize: Int64

    init(path: String, limits: BundleLimits) throws(EditLogError) {
        self.path = path
        self.limits = limits
        var st = stat()
        if stat(path, &st) != 0 {
            if errno == ENOENT { throw EditLogError(.notFound, "no bundle at \(path)") }
            throw EditLogError(.io, "cannot read: \(String(cString: strerror(errno)))", at: path)
        }
        fileSize = Int64(st.st_size)
        fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { throw EditLogError(.io, "cannot open: \(String(cString: strerror(errno)))", at: path) }
        guard czlib_inflate_init_gzip(&stream) == Z_OK else { close(fd); throw EditLogError(.io, "zlib inflateInit2 failed (out of memory)", at: path) }
        try fill()
        guard inputEnd - inputStart >= 2, input[inputStart] == 0x1F, input[inputStart + 1] == 0x8B else {
            throw EditLogError(.invalidInput, "not an EditLog bundle: the file does not start with the gzip magic bytes 1f 8b", at: path)
        }
    }

    deinit {
        inflateEnd(&stream)
        close(fd)
    }

    private func fill() throws(EditLogError) {
        guard !eof else { return }
        if inputStart == inputEnd { inputStart = 0; inputEnd = 0 }
        guard inputEnd < input.count else { return }
        while true {
            let n = input.withUnsafeMutableBytes { Foundation.read(fd, $0.baseAddress! + inputEnd, $0.count - inputEnd) }
            if n < 0 {
                if errno == EINTR { continue }
                throw EditLogError(.io, "cannot read: \(String(cString: strerror(errno)))", at: path)
            }
            if n == 0 { eof = true } else { inputEnd += n; compressedRead += Int64(n) }
            return
        }
    }

    private func corrupt(_ message: String) -> EditLogError {
        EditLogError(.corrupt, "the gzip stream is damaged: \(message) (after \(totalOut) uncompressed bytes)", at: path)
    }

    /// Reads up to `count` decompressed bytes into `buffer` from `offset` on; 0 only at the end of the data.
    func read(into buffer: inout [UInt8], at offset: Int, count: Int) throws(EditLogError) -> Int {
        guard count > 0 else { return 0 }
        precondition(offset + count <= buffer.count)
        while true {
            if finished { return 0 }
            if inputStart == inputEnd { try fill() }
            if inputStart == inputEnd && eof {
                throw corrupt("the file ends in the middle of a gzip member (truncated)")
            }
            let (rc, consumed, produced) = buffer.withUnsafeMutableBytes { out in
                inflateStep(into: UnsafeMutableRawBufferPointer(rebasing: out[offset..<(offset + count)]))
            }
            inputStart += consumed
            totalOut += Int64(produced)
            try checkLimits()
            switch rc {
            case Z_OK, Z_BUF_ERROR:
                if produced > 0 { return produced }
                if rc == Z_BUF_ERROR && inputStart == inputEnd && eof { throw corrupt("the file ends in the middle of a gzip member (truncated)") }
            case Z_STREAM_END:
                // A member ended: another may follow (members are independent), else the data ends here.
                if inputStart == inputEnd { try fill() }
                if inputStart == inputEnd && eof {
                    finished = true
                } else {
                    inflateReset(&stream)
                }
                if produced > 0 || finished { return produced }
            case Z_DATA_ERROR:
                let msg = stream.msg.map { String(cString: $0) } ?? "invalid deflate data"
                throw corrupt(msg)
            case Z_NEED_DICT:
                throw corrupt("a member needs a preset dictionary")
            case Z_MEM_ERROR:
                throw EditLogError(.io, "zlib ran out of memory", at: path)
            default:
                throw corrupt("zlib error \(rc)")
            }
        }
    }

    /// One inflate call over the buffered input: (zlib's result, input consumed, output produced).
    private func inflateStep(into out: UnsafeMutableRawBufferPointer) -> (Int32, Int, Int) {
        let available = inputEnd - inputStart
        let start = inputStart
        return input.withUnsafeMutableBytes { inp in
            stream.next_in = inp.baseAddress!.assumingMemoryBound(to: Bytef.self) + start
            stream.avail_in = uInt(available)
            stream.next_out = out.baseAddress!.assumingMemoryBound(to: Bytef.self)
            stream.avail_out = uInt(out.count)
            let rc = inflate(&stream, Z_NO_FLUSH)
            return (rc, available - Int(stream.avail_in), out.count - Int(stream.avail_out))
        }
    }

    /// Refuses, before inflating them, `bytes` more of output that an entry header declares (`entry`), when they would
    /// pass the limit on the total or, over the whole compressed file, the ratio: a bomb is refused, not expanded.
    func checkDeclared(_ bytes: Int64, entry: String) throws(EditLogError) {
        let total = totalOut + bytes
        if total > limits.maxTotalBytes {
            throw EditLogError(.invalidInput, "refused: \(entry) declares \(bytes) bytes, beyond the limit of \(limits.maxTotalBytes) bytes on the bundle's uncompressed size", at: path)
        }
        if total > limits.ratioGrace && total / max(1, fileSize) > Int64(limits.maxRatio) {
            throw EditLogError(.invalidInput, "refused: \(entry) declares \(bytes) bytes, which would expand the \(fileSize)-byte bundle more than \(limits.maxRatio) times: "
                               + "a decompression bomb (nothing of it was inflated)", at: path)
        }
    }

    private func checkLimits() throws(EditLogError) {
        if totalOut > limits.maxTotalBytes {
            throw EditLogError(.invalidInput, "refused: the bundle expands beyond \(limits.maxTotalBytes) bytes (the limit on its uncompressed size)", at: path)
        }
        if totalOut > limits.ratioGrace && totalOut / max(1, compressedRead) > Int64(limits.maxRatio) {
            throw EditLogError(.invalidInput, "refused: the bundle expands more than \(limits.maxRatio) times its compressed size (\(totalOut) bytes from \(compressedRead)): a decompression bomb", at: path)
        }
    }
}
