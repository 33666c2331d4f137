import CZlib
@testable import EditLogBundle
import EditLogCore
import Foundation
import Testing

/// The gzip writer's reused buffers: a deflate thread's output buffer kept from member to member, input blocks
/// handed back for the next ones.
@Suite struct GzipWriterTests {
    /// Bytes that compress somewhat, as event lines do (repeated keys, varying numbers).
    static func text(_ n: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        var out: [UInt8] = []
        out.reserveCapacity(n + 64)
        while out.count < n {
            out += Array("{\"k\":\(rng.next() % 100_000),\"v\":\"\(String(rng.next(), radix: 36))\"}\n".utf8)
        }
        return Array(out.prefix(n))
    }

    static func gunzip(_ bytes: [UInt8], in d: TempDir) throws -> [UInt8] {
        let path = d.file("member-\(UUID().uuidString).gz")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let input = try GzipInputStream(path: path, limits: .default)
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = try input.read(into: &buffer, at: 0, count: buffer.count)
            if n == 0 { break }
            out += buffer[0..<n]
        }
        return out
    }

    @Test func aMemberDeflatedIntoAReusedBufferIsTheMemberDeflatedAlone() throws {
        let d = TempDir()
        var scratch: [UInt8] = []
        // Growing, shrinking, empty and growing again: the buffer is grown when short and reused when long enough.
        for (i, size) in [10_000, 200_000, 3_000, 0, 1 << 20, 17].enumerated() {
            let input = Self.text(size, seed: UInt64(i))
            let reused = GzipMember.compress(input, level: 6, tuning: .bundle, scratch: &scratch)
            #expect(reused == GzipMember.compress(input, level: 6, tuning: .bundle), "size \(size)")
            #expect(scratch.count >= reused.count)
            #expect(try Self.gunzip(reused, in: d) == input, "size \(size)")
        }
    }

    /// The engines this machine has: zlib always, libdeflate where the system has `libdeflate.so.0`.
    static let engines: [GzipEngine] = [.zlib(level: 6, tuning: .bundle)] + (Libdeflate.system != nil ? [.libdeflate(level: GzipEngine.libdeflateLevel)] : [])

    @Test(.enabled(if: Libdeflate.system != nil, "the system has no libdeflate.so.0"))
    func aLibdeflateMemberIsACompleteGzipMemberOfItsInput() throws {
        let d = TempDir()
        // One deflater for all, as a deflate thread keeps it: growing, shrinking, empty and growing again.
        let deflater = MemberDeflater(.libdeflate(level: GzipEngine.libdeflateLevel))
        for (i, size) in [10_000, 200_000, 3_000, 0, 1 << 20, 17].enumerated() {
            let input = Self.text(size, seed: UInt64(50 + i))
            let member = deflater.compress(input)
            #expect(Array(member.prefix(3)) == [0x1F, 0x8B, 0x08], "size \(size): gzip magic and deflate")
            #expect(Self.memberSizes(member) == [size], "size \(size): one whole member")
            #expect(try Self.gunzip(member, in: d) == input, "size \(size)")
            // The same input gives the same member (a kept compressor carries nothing from one member to the next).
            #expect(member == MemberDeflater(.libdeflate(level: GzipEngine.libdeflateLevel)).compress(input), "size \(size)")
        }
        // Compressible text shrinks (level 5 is not a stored copy).
        let text = Self.text(1 << 20, seed: 99)
        #expect(deflater.compress(text).count < text.count / 2)
    }

    @Test func bundlesUseLibdeflateExactlyWhereTheSystemHasIt() {
        #expect(Libdeflate.load("libeditlog-no-such-library.so.0") == nil)
        if Libdeflate.system != nil {
            #expect(GzipEngine.bundle == .libdeflate(level: GzipEngine.libdeflateLevel))
            #expect(BundleDeflate.auto.deflater == "libdeflate level 5 (libdeflate.so.0)")
        } else {
            #expect(GzipEngine.bundle == .zlib(level: 6, tuning: .bundle))
            #expect(BundleDeflate.auto.deflater == "zlib level 6, deflateTune(32, 258, 24, 10)")
        }
        // The zlib deflater is the zlib member writer, buffer kept, with the header's CRC-16 added.
        let input = Self.text(70_000, seed: 5)
        let plain = GzipMember.compress(input, level: 6, tuning: .bundle)
        let member = MemberDeflater(.zlib(level: 6, tuning: .bundle)).compress(input)
        #expect(member == GzipMember.withHeaderCRC(plain))
        #expect(member.count == plain.count + 2 && member[3] == 0x02 && Array(member[12...]) == Array(plain[10...]))
        // RFC 1952's CRC-16 of this header (1f 8b 08 02, MTIME 0, XFL 0, OS 3), as Python's zlib.crc32 gives it.
        #expect(Array(member[0..<12]) == [0x1F, 0x8B, 8, 2, 0, 0, 0, 0, 0, 3, 0xA7, 0x77], "\(Array(member[0..<12]))")
    }

    @Test(arguments: engines)
    func manySmallBlocksThroughReusedBuffersComeBackInOrder(engine: GzipEngine) throws {
        let d = TempDir()
        let path = d.file("many.gz")
        let file = try OutputFile(path: path)
        let gz = ParallelGzipWriter(output: file, blockSize: 512, workers: 2, engine: engine)
        var all: [UInt8] = []
        // Writes of every size around the block size, so blocks are cut mid-write and refilled from spares.
        for i in 0..<400 {
            let piece = Self.text(i * 7 % 1_500, seed: UInt64(1_000 + i))
            all += piece
            try gz.write(piece)
        }
        try gz.finish()
        _ = try file.finish()
        #expect(gz.uncompressedBytes == Int64(all.count))
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(try Self.gunzip(bytes, in: d) == all)
        // Independent members of one block each (the last one shorter).
        let sizes = Self.memberSizes(bytes)
        #expect(sizes.dropLast().allSatisfy { $0 == 512 } && sizes.reduce(0, +) == all.count, "\(sizes.prefix(5))")
    }

    /// Each gzip member's uncompressed size, in file order (zlib reading the file member by member).
    static func memberSizes(_ bytes: [UInt8]) -> [Int] {
        var sizes: [Int] = []
        var offset = 0
        var out = [UInt8](repeating: 0, count: 1 << 16)
        while offset < bytes.count {
            var stream = z_stream()
            precondition(czlib_inflate_init_gzip(&stream) == Z_OK)
            defer { inflateEnd(&stream) }
            var size = 0
            var rc = Z_OK
            bytes.withUnsafeBufferPointer { input in
                stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress! + offset)
                stream.avail_in = uInt(input.count - offset)
                while rc == Z_OK {
                    out.withUnsafeMutableBufferPointer { o in
                        stream.next_out = o.baseAddress
                        stream.avail_out = uInt(o.count)
                        rc = inflate(&stream, Z_NO_FLUSH)
                        size += o.count - Int(stream.avail_out)
                    }
                }
            }
            guard rc == Z_STREAM_END else { return sizes + [-1] }  // not a whole member: the caller's expectation fails
            offset += Int(stream.total_in)
            sizes.append(size)
        }
        return sizes
    }

    /// What a head source was asked, in order.
    final class Asked: @unchecked Sendable {
        var waits: [Bool] = []
    }

    /// Writes `pieces` through a writer of 512-byte blocks whose first member is left for later: its source gives
    /// `head` when `ready` says so after a call (the number of calls so far), and always when the writer must wait.
    /// The file's bytes, what the source was asked (wait or not, in order) and the uncompressed bytes counted.
    static func writeWithHead(_ head: [UInt8], _ pieces: [[UInt8]], in d: TempDir, ready: @escaping @Sendable (Int) -> Bool) throws
        -> (bytes: [UInt8], waits: [Bool], uncompressed: Int64) {
        let path = d.file("head-\(UUID().uuidString).gz")
        let file = try OutputFile(path: path)
        let asked = Asked()
        let gz = ParallelGzipWriter(output: file, blockSize: 512, workers: 2, head: { wait in
            asked.waits.append(wait)
            return wait || ready(asked.waits.count) ? head : nil
        })
        for piece in pieces { try gz.write(piece) }
        try gz.finish()
        _ = try file.finish()
        return ([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), asked.waits, gz.uncompressedBytes)
    }

    @Test func aFirstMemberLeftForLaterIsWrittenFirstAndTheBacklogWaitsForIt() throws {
        let d = TempDir()
        let head = Self.text(3_000, seed: 7)
        let blocks = ParallelGzipWriter.headBacklog * 3
        let pieces = (0..<blocks).map { Self.text(512, seed: UInt64(2_000 + $0)) }
        // Not ready until the writer must wait for it.
        let (bytes, waits, uncompressed) = try Self.writeWithHead(head, pieces, in: d) { _ in false }
        // Asked at each block until the backlog was full, then waited for once.
        #expect(waits == Array(repeating: false, count: ParallelGzipWriter.headBacklog) + [true])
        #expect(Self.memberSizes(bytes) == [head.count] + Array(repeating: 512, count: blocks))
        let body = pieces.flatMap { $0 }
        #expect(try Self.gunzip(bytes, in: d) == head + body)
        #expect(uncompressed == Int64(head.count + body.count))
    }

    @Test func aHeadThatIsReadyEarlyIsTakenAtTheNextBlockAndAnUnaskedOneAtTheFinish() throws {
        let d = TempDir()
        let head = Self.text(700, seed: 8)
        let body = Self.text(512 * 10 + 100, seed: 9)
        for readyAfter in [0, 3, Int.max] {
            let (bytes, waits, _) = try Self.writeWithHead(head, [body], in: d) { $0 > readyAfter }
            // Filled once: never asked again after it gave its bytes.
            #expect(waits.filter { $0 }.count <= 1 && waits.count == min(readyAfter, 10) + 1, "ready after \(readyAfter): \(waits)")
            #expect(Self.memberSizes(bytes) == [700] + Array(repeating: 512, count: 10) + [100], "ready after \(readyAfter)")
            #expect(try Self.gunzip(bytes, in: d) == head + body)
        }
    }
}
