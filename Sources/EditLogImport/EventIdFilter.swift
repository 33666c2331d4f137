import Foundation

/// The event ids a log may hold, as a Bloom filter: `mayContain` false means the id is certainly not in the set, so
/// an import looks an id up in the log only when the filter cannot rule it out. It grows as a chain of filters, each
/// twice the last (a "scalable" Bloom filter), so it needs no count up front. Each level is blocked: an id's 4 bits
/// lie in one 64-byte block, one cache line to read; 12 bits per id keep false positives near 1% per level.
/// A million ids take about 2 MB.
struct EventIdFilter {
    private struct Level {
        var words: [UInt64]
        /// Blocks (8 words each) less one: a power of two less one.
        let blockMask: UInt64
        let capacity: Int
        var count = 0

        init(bits: Int) {
            words = [UInt64](repeating: 0, count: bits / 64)
            blockMask = UInt64(bits / 512 - 1)
            capacity = bits / 12
        }
    }

    private var levels: [Level] = []
    /// The first level's bits (16 KiB; about 11k ids).
    static let firstBits = 1 << 17

    init() {}

    /// Two 64-bit hashes of the id's 16 bytes (its halves, mixed: ids need not be random): the first picks the block,
    /// the second the 4 bits in it (9 bits each).
    private static func hashes(_ id: UUID) -> (block: UInt64, bits: UInt64) {
        let u = id.uuid
        let hi = UInt64(u.0) << 56 | UInt64(u.1) << 48 | UInt64(u.2) << 40 | UInt64(u.3) << 32
            | UInt64(u.4) << 24 | UInt64(u.5) << 16 | UInt64(u.6) << 8 | UInt64(u.7)
        let lo = UInt64(u.8) << 56 | UInt64(u.9) << 48 | UInt64(u.10) << 40 | UInt64(u.11) << 32
            | UInt64(u.12) << 24 | UInt64(u.13) << 16 | UInt64(u.14) << 8 | UInt64(u.15)
        let a = mix(hi ^ mix(lo))
        return (a, mix(a ^ lo))
    }

    /// SplitMix64's finalizer.
    private static func mix(_ x: UInt64) -> UInt64 {
        var z = x
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func insert(_ id: UUID) {
        if levels.last.map({ $0.count >= $0.capacity }) ?? true {
            levels.append(Level(bits: levels.last.map { $0.words.count * 64 * 2 } ?? Self.firstBits))
        }
        let (a, b) = Self.hashes(id)
        let last = levels.count - 1
        levels[last].count += 1
        let base = Int((a & levels[last].blockMask) << 3)
        levels[last].words.withUnsafeMutableBufferPointer { w in
            for i in 0..<4 {
                let bit = (b >> UInt64(9 * i)) & 511
                w[base + Int(bit >> 6)] |= 1 << (bit & 63)
            }
        }
    }

    func mayContain(_ id: UUID) -> Bool {
        let (a, b) = Self.hashes(id)
        for level in levels {
            let base = Int((a & level.blockMask) << 3)
            let hit = level.words.withUnsafeBufferPointer { w in
                for i in 0..<4 {
                    let bit = (b >> UInt64(9 * i)) & 511
                    if w[base + Int(bit >> 6)] & (1 << (bit & 63)) == 0 { return false }
                }
                return true
            }
            if hit { return true }
        }
        return false
    }

    /// Ids inserted (each insert counts, repeated or not).
    var count: Int { levels.reduce(0) { $0 + $1.count } }
}
