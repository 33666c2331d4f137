import Foundation

/// The event ids a log may hold (`BlockedBloomFilter`): an import looks an id up in the log only when the filter
/// cannot rule it out.
struct EventIdFilter {
    private var filter: BlockedBloomFilter

    /// `expected`: how many ids the caller expects to insert, if it knows.
    init(expected: Int = 0) { filter = BlockedBloomFilter(expected: expected) }

    /// Two 64-bit hashes of the id's 16 bytes (its halves, mixed: ids need not be random).
    private static func hashes(_ id: UUID) -> (block: UInt64, bits: UInt64) {
        let u = id.uuid
        let hi = UInt64(u.0) << 56 | UInt64(u.1) << 48 | UInt64(u.2) << 40 | UInt64(u.3) << 32
            | UInt64(u.4) << 24 | UInt64(u.5) << 16 | UInt64(u.6) << 8 | UInt64(u.7)
        let lo = UInt64(u.8) << 56 | UInt64(u.9) << 48 | UInt64(u.10) << 40 | UInt64(u.11) << 32
            | UInt64(u.12) << 24 | UInt64(u.13) << 16 | UInt64(u.14) << 8 | UInt64(u.15)
        let a = BlockedBloomFilter.mix(hi ^ BlockedBloomFilter.mix(lo))
        return (a, BlockedBloomFilter.mix(a ^ lo))
    }

    mutating func insert(_ id: UUID) {
        let (a, b) = Self.hashes(id)
        filter.insert(block: a, bits: b)
    }

    func mayContain(_ id: UUID) -> Bool {
        let (a, b) = Self.hashes(id)
        return filter.mayContain(block: a, bits: b)
    }

    /// Ids inserted (each insert counts, repeated or not).
    var count: Int { filter.count }
    var levelCount: Int { filter.levelCount }
}
