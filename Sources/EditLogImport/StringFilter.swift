/// Strings a log may hold (stream names, session ids) as a `BlockedBloomFilter`: `mayContain` false means the string
/// was certainly never inserted. Hashed with the standard library's `Hasher`, whose seed is per process: a filter
/// lives in memory for one import and is never stored.
struct StringFilter {
    private var filter: BlockedBloomFilter

    /// `expected`: how many strings the caller expects to insert, if it knows.
    init(expected: Int = 0) { filter = BlockedBloomFilter(expected: expected) }

    private static func hashes(_ s: String) -> (block: UInt64, bits: UInt64) {
        var h = Hasher()
        h.combine(s)
        let a = BlockedBloomFilter.mix(UInt64(bitPattern: Int64(h.finalize())))
        return (a, BlockedBloomFilter.mix(a ^ 0x5851_F42D_4C95_7F2D))
    }

    mutating func insert(_ s: String) {
        let (a, b) = Self.hashes(s)
        filter.insert(block: a, bits: b)
    }

    func mayContain(_ s: String) -> Bool {
        let (a, b) = Self.hashes(s)
        return filter.mayContain(block: a, bits: b)
    }

    var count: Int { filter.count }
}
