import CZlib
import EditLogCore
import Foundation

/// zlib's match-search parameters (`deflateTune`): how hard deflate looks for a longer match.
struct DeflateTuning: Sendable, Equatable {
    var goodLength: Int32
    var maxLazy: Int32
    var niceLength: Int32
    var maxChain: Int32

    /// What bundles are deflated with where zlib deflates them (no system libdeflate: `GzipEngine.bundle`), on top
    /// of level 6: a chain of 10 instead of 128, lazy matching always, a nice length of 24. On bundles' tar bytes
    /// (canonical JSON lines, mostly) this costs clearly less CPU than level 6's own parameters (8, 16, 128, 128)
    /// for a bundle about as small. The chain of 10 on 2 MiB blocks (`BundleLayout.gzipBlockBytes`) trades part of
    /// the size goal's slack (≤ 1.01x `gzip -6`) for the export's speed (goal ≥ 1.0x `pigz -p 2 -6`); a chain of 8
    /// came too near the size bound. Figures: `tools/BENCH-RESULTS.md`.
    static let bundle = DeflateTuning(goodLength: 32, maxLazy: 258, niceLength: 24, maxChain: 10)
}

/// One complete gzip member (RFC 1952) from one block of input, through the system zlib.
enum GzipMember {
    /// Compresses `input` into a self-contained gzip member (header, deflate stream, CRC-32 and size trailer), with
    /// `tuning` on top of `level` when given.
    static func compress(_ input: [UInt8], level: Int32 = 6, tuning: DeflateTuning? = nil) -> [UInt8] {
        var scratch: [UInt8] = []
        return compress(input, level: level, tuning: tuning, scratch: &scratch)
    }

    /// As `compress(_:level:tuning:)`, deflating into `scratch` (grown to the bound when short, kept for the next
    /// call), and returning a copy of the member's bytes alone.
    static func compress(_ input: [UInt8], level: Int32, tuning: DeflateTuning?, scratch: inout [UInt8]) -> [UInt8] {
        var stream = z_stream()
        guard czlib_deflate_init_gzip(&stream, level) == Z_OK else { preconditionFailure("zlib deflateInit2 failed (out of memory)") }
        defer { deflateEnd(&stream) }
        if let t = tuning {
            precondition(deflateTune(&stream, t.goodLength, t.maxLazy, t.niceLength, t.maxChain) == Z_OK, "zlib deflateTune refused \(t)")
        }
        let bound = Int(deflateBound(&stream, uLong(input.count))) + 64
        if scratch.count < bound { scratch = [UInt8](repeating: 0, count: bound) }
        return input.withUnsafeBufferPointer { inp in
            scratch.withUnsafeMutableBufferPointer { outp in
                stream.next_in = UnsafeMutablePointer(mutating: inp.baseAddress)
                stream.avail_in = uInt(inp.count)
                stream.next_out = outp.baseAddress
                stream.avail_out = uInt(bound)
                let rc = deflate(&stream, Z_FINISH)
                precondition(rc == Z_STREAM_END, "zlib deflate did not finish within deflateBound (rc \(rc))")
                return Array(outp[0..<(bound - Int(stream.avail_out))])
            }
        }
    }
}

extension GzipMember {
    /// A member written with a plain 10-byte header (no extra field, name, comment or header CRC: what zlib and
    /// libdeflate write), given the FHCRC flag and the CRC-16 of its header (RFC 1952 §2.3.1: the low 16 bits of the
    /// header's CRC-32). Then no bit of a header can change unseen: the CRC-32 of the trailer covers only the data,
    /// so a flipped bit in MTIME, XFL, OS or a flag would otherwise pass every gunzip. zlib's inflate and GNU gzip
    /// check it; pigz and Python's gzip module skip it.
    static func withHeaderCRC(_ member: some Collection<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(member.count + 2)
        out.append(contentsOf: member.prefix(10))
        precondition(out.count == 10 && out[0] == 0x1F && out[1] == 0x8B && out[3] == 0, "a member with a plain 10-byte gzip header")
        out[3] = 0x02  // FHCRC
        let crc = out.withUnsafeBufferPointer { UInt32(crc32(0, $0.baseAddress, 10)) }
        out.append(UInt8(truncatingIfNeeded: crc))
        out.append(UInt8(truncatingIfNeeded: crc >> 8))
        out.append(contentsOf: member.dropFirst(10))
        return out
    }
}

/// Which library deflates a writer's members, and how hard. Both write standard, independent gzip members that any
/// gunzip reads; only their compressed bytes differ.
enum GzipEngine: Sendable, Equatable {
    /// The system zlib at `level`, with `tuning` on top when given.
    case zlib(level: Int32, tuning: DeflateTuning?)
    /// The system's libdeflate (`Libdeflate.system`) at `level` (1-12).
    case libdeflate(level: Int32)

    /// What bundles are written with: libdeflate at `libdeflateLevel` where the system has it (Debian's `libdeflate0`
    /// is on every machine of this project's kind), else zlib level 6 with `DeflateTuning.bundle`. The export must
    /// match `pigz -p 2 -6` (zlib at level 6 on both cores) while it also reads the log, checks the chain, writes the
    /// lines and hashes every entry on the same cores: zlib's deflate alone, at the cheapest tuning that keeps the size
    /// goal (<= 1.01x `gzip -6`), leaves too little of the cores for the rest, and the export stayed short of pigz
    /// through every zlib tuning tried (`tools/BENCH-RESULTS.md`).
    static var bundle: GzipEngine { Libdeflate.system != nil ? .libdeflate(level: libdeflateLevel) : .zlib(level: 6, tuning: .bundle) }

    /// libdeflate's level for bundles: 5 gives most of 6's size for little more than 4's time, and leaves the export's
    /// speed goal a wide margin (levels 4 to 6 against the zlib tuning: `tools/BENCH-RESULTS.md`).
    static let libdeflateLevel: Int32 = 5
}

extension GzipEngine: CustomStringConvertible {
    var description: String {
        switch self {
        case .zlib(let level, let tuning):
            return "zlib level \(level)" + (tuning.map { ", deflateTune(\($0.goodLength), \($0.maxLazy), \($0.niceLength), \($0.maxChain))" } ?? "")
        case .libdeflate(let level):
            return "libdeflate level \(level) (\(Libdeflate.soname))"
        }
    }
}

/// Deflates whole gzip members for one thread, with one engine: a libdeflate compressor is not shared between
/// threads, and its tables (and the output buffer, grown to the largest bound met) are kept from member to member.
final class MemberDeflater {
    /// zlib's parameters, or a libdeflate compressor of the level asked for (owned: freed with the deflater).
    private enum Backend {
        case zlib(level: Int32, tuning: DeflateTuning?)
        case libdeflate(Libdeflate, compressor: OpaquePointer)
    }
    private let backend: Backend
    private var scratch: [UInt8] = []

    /// A deflater for `engine`; `.libdeflate` needs `Libdeflate.system` (a precondition: ask `GzipEngine.bundle`).
    init(_ engine: GzipEngine) {
        switch engine {
        case .zlib(let level, let tuning):
            backend = .zlib(level: level, tuning: tuning)
        case .libdeflate(let level):
            guard let lib = Libdeflate.system else { preconditionFailure("libdeflate was asked for, but \(Libdeflate.soname) is not loaded") }
            guard let c = lib.alloc(level) else { preconditionFailure("libdeflate refused level \(level) (or is out of memory)") }
            backend = .libdeflate(lib, compressor: c)
        }
    }

    deinit { if case .libdeflate(let lib, let c) = backend { lib.free(c) } }

    /// `input` as one complete gzip member, its header protected by a CRC-16 (`GzipMember.withHeaderCRC`).
    func compress(_ input: [UInt8]) -> [UInt8] {
        switch backend {
        case .zlib(let level, let tuning):
            return GzipMember.withHeaderCRC(GzipMember.compress(input, level: level, tuning: tuning, scratch: &scratch))
        case .libdeflate(let lib, let c):
            let bound = lib.gzipBound(c, input.count)
            if scratch.count < bound { scratch = [UInt8](repeating: 0, count: bound) }
            return input.withUnsafeBytes { inp in
                scratch.withUnsafeMutableBytes { outp in
                    let n = lib.gzipCompress(c, inp.baseAddress, inp.count, outp.baseAddress, bound)
                    precondition(n > 0, "libdeflate did not finish within its bound")
                    return GzipMember.withHeaderCRC(UnsafeRawBufferPointer(rebasing: outp[0..<n]))
                }
            }
        }
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
/// `blockSize` bytes, each block is deflated on a deflate thread of this writer (at a lower priority than the
/// caller) while the caller goes on filling the next one, and the members are written in order on the caller's
/// thread. At most `window * workers + 1` blocks are in flight, so memory stays bounded by about that many blocks
/// (plus their compressed forms), whatever the total size.
///
/// The first member can be left for later (`head`): the blocks after it are deflated meanwhile and their members
/// kept (at most `headBacklog`, compressed) until it is filled, when they are written after it.
final class ParallelGzipWriter {
    /// The first member's bytes when they are ready (always when asked to wait), nil while they are not.
    typealias Head = (_ wait: Bool) throws(EditLogError) -> [UInt8]?

    let output: OutputFile
    let blockSize: Int
    let workers: Int
    let engine: GzipEngine
    private var current: [UInt8] = []
    /// Blocks handed to the workers, and members written so far (in order).
    private var submitted = 0
    private var written = 0
    /// Uncompressed bytes accepted so far.
    private(set) var uncompressedBytes: Int64 = 0

    init(output: OutputFile, blockSize: Int = BundleLayout.gzipBlockBytes, workers: Int = ProcessInfo.processInfo.activeProcessorCount,
         engine: GzipEngine = .bundle, head: Head? = nil) {
        self.output = output
        self.blockSize = max(512, blockSize)
        self.workers = max(1, workers)
        self.engine = engine
        current.reserveCapacity(self.blockSize)
        pool = DeflatePool(threads: self.workers, nice: Self.deflateNice, engine: engine, members: members, spare: spare)
        if let head {
            pendingHead = head
            submitted = 1
        }
    }

    deinit { pool.cancel() }

    /// Blocks in flight per deflate thread. With one (`workers + 1` in flight), a deflate thread often waited for the
    /// next block while the producing thread shared its core with both. More than 2 (of 2 MiB) was no faster and
    /// costs memory against the export's peak-RSS goal.
    static let window = 2
    /// The deflate threads' nice value. The producing thread (reading the log, checking the chain, writing lines)
    /// feeds both deflate threads and was the one slowed when the three shared two cores; at equal priority it got
    /// too little of a core. Nice 5 made the export faster; 10 was no better than 5.
    static let deflateNice: Int32 = 5
    /// Members done and kept while the first is left for later; past them, the writer waits for the first. This
    /// bounds the backlog to that many compressed members.
    static let headBacklog = 32
    /// The first member's source, until it is filled.
    private var pendingHead: Head?
    /// The deflate threads, taking blocks from one queue in order.
    private let pool: DeflatePool
    /// Input blocks the deflate threads are done with, for the next ones: with glibc's mmap threshold fixed
    /// (`ProcessMemory`), a new block would be a fresh mapping, faulted in page by page (and its output buffer too).
    private let spare = SpareBlocks()
    private let members = Members()

    func write(_ bytes: some Collection<UInt8>) throws(EditLogError) {
        var rest = bytes[...]
        uncompressedBytes += Int64(bytes.count)
        while !rest.isEmpty {
            let take = min(blockSize - current.count, rest.count)
            let end = rest.index(rest.startIndex, offsetBy: take)
            current.append(contentsOf: rest[rest.startIndex..<end])
            rest = rest[end...]
            if current.count == blockSize {
                var block = spare.take(capacity: blockSize)
                swap(&block, &current)
                try submit(BlockBox(consume block))
            }
        }
    }

    /// Hands `block` to a deflate thread (first writing members, waiting for them, while `window * workers + 1` are in flight), then
    /// writes every member already done, in order.
    private func submit(_ block: BlockBox) throws(EditLogError) {
        if pendingHead != nil { try fillHead(wait: submitted - written > Self.headBacklog) }
        if pendingHead != nil {
            // Nothing can be written before the first member: only the blocks not yet deflated are bounded.
            pool.waitForRoom(Self.window * workers)
        } else {
            while submitted - written > Self.window * workers { _ = try writeNext(waiting: true) }
        }
        pool.submit(seq: submitted, block: block)
        submitted += 1
        while try writeNext(waiting: false) {}
    }

    /// Writes the next member in order if it is done (or, `waiting`, once it is). False when there was none to write.
    private func writeNext(waiting: Bool) throws(EditLogError) -> Bool {
        guard written < submitted, let m = members.take(written, waiting: waiting) else { return false }
        try output.write(m)
        written += 1
        return true
    }

    /// Deflates the first member, left for later, from its source's bytes (waiting for them with `wait`; without,
    /// nothing happens while they are not ready). Nothing when it is filled already or was never left for later.
    func fillHead(wait: Bool = true) throws(EditLogError) {
        guard let source = pendingHead, let bytes = try source(wait) else { return }
        pendingHead = nil
        uncompressedBytes += Int64(bytes.count)
        members.put(0, MemberDeflater(engine).compress(bytes))
    }

    /// Compresses what is left (a last, shorter member) and writes every member.
    func finish() throws(EditLogError) {
        try fillHead()
        if !current.isEmpty {
            var block: [UInt8] = []
            swap(&block, &current)
            try submit(BlockBox(consume block))
        }
        while written < submitted { _ = try writeNext(waiting: true) }
        pool.cancel()
    }
}

/// The deflate threads of a `ParallelGzipWriter`: one queue of blocks, taken oldest first by whichever thread is
/// free, so no thread waits while another has blocks queued (a queue per thread, block `n` on thread `n % threads`,
/// was slower). Each thread keeps its output buffer and runs at the nice value given (on Linux the nice value is
/// per thread; raising it needs no privilege).
private final class DeflatePool: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var queue: [(seq: Int, block: BlockBox)] = []
    private var stopping = false
    private var running: Int
    /// Blocks submitted and not yet deflated.
    private var inFlight = 0

    init(threads: Int, nice: Int32, engine: GzipEngine, members: Members, spare: SpareBlocks) {
        running = threads
        for _ in 0..<threads {
            let thread = Thread { [self] in
                _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice)
                let deflater = MemberDeflater(engine)
                var finished = false
                while let (seq, block) = next(finished: finished) {
                    // Taken out of its box, the block has no other owner, so it is emptied in place for reuse.
                    var bytes = block.take()
                    members.put(seq, deflater.compress(bytes))
                    bytes.removeAll(keepingCapacity: true)
                    spare.put(bytes)
                    finished = true
                }
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    func submit(seq: Int, block: BlockBox) {
        condition.lock()
        queue.append((seq, block))
        inFlight += 1
        condition.signal()  // only deflate threads wait here: the submitting thread is the one that waits for room
        condition.unlock()
    }

    /// Waits while more than `limit` blocks are queued or being deflated.
    func waitForRoom(_ limit: Int) {
        condition.lock()
        defer { condition.unlock() }
        while inFlight > limit && !stopping { condition.wait() }
    }

    /// The oldest queued block, waiting for one (after counting the calling thread's last block, `finished`, as
    /// deflated); nil once the pool stops. Ends the calling thread's count then.
    private func next(finished: Bool) -> (Int, BlockBox)? {
        condition.lock()
        defer { condition.unlock() }
        if finished {
            inFlight -= 1
            condition.broadcast()
        }
        while queue.isEmpty && !stopping { condition.wait() }
        if stopping {
            running -= 1
            condition.broadcast()
            return nil
        }
        return queue.removeFirst()
    }

    /// Drops what is queued, lets the blocks being deflated finish, and waits for the threads to end.
    func cancel() {
        condition.lock()
        defer { condition.unlock() }
        queue.removeAll()
        stopping = true
        condition.broadcast()
        while running > 0 { condition.wait() }
    }
}

/// One input block on its way to a deflate thread, which takes it out (leaving no other owner).
private final class BlockBox: @unchecked Sendable {
    // Taken once, on the deflate thread, after the writer let go of it.
    private var bytes: [UInt8]
    init(_ bytes: consuming [UInt8]) { self.bytes = bytes }
    func take() -> [UInt8] {
        var out: [UInt8] = []
        swap(&out, &bytes)
        return out
    }
}

/// Emptied input blocks, kept for reuse (at most the blocks in flight).
private final class SpareBlocks: @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`.
    private var blocks: [[UInt8]] = []

    func put(_ block: [UInt8]) {
        lock.withLock { blocks.append(block) }
    }

    /// An empty block with room for `capacity` bytes: a spare one when there is one.
    func take(capacity: Int) -> [UInt8] {
        if let b = lock.withLock({ blocks.popLast() }), b.capacity >= capacity { return b }
        var b: [UInt8] = []
        b.reserveCapacity(capacity)
        return b
    }
}

/// Members compressed by the workers, by their block's sequence number, until the writer takes them in order.
private final class Members: @unchecked Sendable {
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var done: [Int: [UInt8]] = [:]

    func put(_ seq: Int, _ member: [UInt8]) {
        condition.lock()
        done[seq] = member
        condition.broadcast()
        condition.unlock()
    }

    func take(_ seq: Int, waiting: Bool) -> [UInt8]? {
        condition.lock()
        defer { condition.unlock() }
        while waiting && done[seq] == nil { condition.wait() }
        return done.removeValue(forKey: seq)
    }
}
