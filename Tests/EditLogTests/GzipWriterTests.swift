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

    @Test func manySmallBlocksThroughReusedBuffersComeBackInOrder() throws {
        let d = TempDir()
        let path = d.file("many.gz")
        let file = try OutputFile(path: path)
        let gz = ParallelGzipWriter(output: file, blockSize: 512, workers: 2)
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
        #expect(try Self.gunzip([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), in: d) == all)
    }
}
