import Foundation

/// A key of a `BlockedBloomFilter`: two 64-bit hashes, the first to pick a block, the second the bits in it.
protocol BloomKey {
    var bloomHashes: (block: UInt64, bits: UInt64) { get }
}

/// SplitMix64's finalizer.
func splitMix(_ x: UInt64) -> UInt64 {
    var z = x
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
}

/// The event ids a log may hold: an import looks an id up in the log only when the filter cannot rule it out.
typealias EventIdFilter = BlockedBloomFilter<UUID>

extension UUID: BloomKey {
    /// The id's 16 bytes as two halves, mixed (ids need not be random).
    var bloomHashes: (block: UInt64, bits: UInt64) {
        let u = uuid
        let hi = UInt64(u.0) << 56 | UInt64(u.1) << 48 | UInt64(u.2) << 40 | UInt64(u.3) << 32
            | UInt64(u.4) << 24 | UInt64(u.5) << 16 | UInt64(u.6) << 8 | UInt64(u.7)
        let lo = UInt64(u.8) << 56 | UInt64(u.9) << 48 | UInt64(u.10) << 40 | UInt64(u.11) << 32
            | UInt64(u.12) << 24 | UInt64(u.13) << 16 | UInt64(u.14) << 8 | UInt64(u.15)
        let a = splitMix(hi ^ splitMix(lo))
        return (a, splitMix(a ^ lo))
    }
}

/// Strings a log may hold (stream names, session ids).
typealias StringFilter = BlockedBloomFilter<String>

extension String: BloomKey {
    /// The standard library's `Hasher`, whose seed is per process: a filter lives in memory for one import and is
    /// never stored.
    var bloomHashes: (block: UInt64, bits: UInt64) {
        var h = Hasher()
        h.combine(self)
        let a = splitMix(UInt64(bitPattern: Int64(h.finalize())))
        return (a, splitMix(a ^ 0x5851_F42D_4C95_7F2D))
    }
}
