/// A Bloom filter of keys hashed to two 64-bit values (`BloomKey`): `mayContain` false means the key was certainly
/// never inserted. It grows as a chain of filters, each twice the last (a "scalable" Bloom filter), so it needs no
/// count up front; given one (`expected`), its first level holds that many and a lookup reads one cache line. Each
/// level is blocked: a key's 4 bits lie in one 64-byte block; 12 bits per key keep false positives near 1% per level.
struct BlockedBloomFilter<Key: BloomKey> {
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
    /// The smallest level's bits (16 KiB; about 11k keys).
    static var firstBits: Int { 1 << 17 }
    /// The largest first level `expected` may ask for (32 MiB of bits, about 22M keys).
    static var maxFirstBits: Int { 1 << 28 }
    private let firstBits: Int

    /// `expected`: how many keys the caller expects, if it knows (the first level is sized for them).
    init(expected: Int = 0) {
        var bits = Self.firstBits
        while bits < Self.maxFirstBits && bits / 12 < expected { bits <<= 1 }
        firstBits = bits
    }

    /// Inserts a key: its first hash picks the block, its second the 4 bits in it (9 bits each).
    mutating func insert(_ key: Key) {
        let (a, b) = key.bloomHashes
        if levels.last.map({ $0.count >= $0.capacity }) ?? true {
            levels.append(Level(bits: levels.last.map { $0.words.count * 64 * 2 } ?? firstBits))
        }
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

    func mayContain(_ key: Key) -> Bool {
        let (a, b) = key.bloomHashes
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

    /// Keys inserted (each insert counts, repeated or not).
    var count: Int { levels.reduce(0) { $0 + $1.count } }
    /// Levels grown so far.
    var levelCount: Int { levels.count }
}
