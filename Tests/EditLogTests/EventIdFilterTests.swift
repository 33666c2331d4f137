@testable import EditLogImport
import Foundation
import Testing

/// `EventIdFilter`: an id inserted is never ruled out, across the levels it grows; ids never inserted are mostly
/// ruled out (the import looks up the rest).
@Suite struct EventIdFilterTests {
    /// Deterministic ids: SplitMix64 output, in UUIDv7's shape for half of them (time-ordered, little entropy up front).
    static func ids(seed: UInt64, count: Int) -> [UUID] {
        var state = seed
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        return (0..<count).map { i in
            let hi = i % 2 == 0 ? UInt64(1_700_000_000_000 + i) << 16 | 0x7000 | (next() & 0xFFF) : next()
            let lo = next()
            var bytes = [UInt8](repeating: 0, count: 16)
            for j in 0..<8 { bytes[j] = UInt8(truncatingIfNeeded: hi >> UInt64(56 - 8 * j)); bytes[8 + j] = UInt8(truncatingIfNeeded: lo >> UInt64(56 - 8 * j)) }
            return bytes.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
        }
    }

    @Test(arguments: [1, 1_000, 11_000, 200_000])
    func noIdInsertedIsRuledOutAndFewOthersPass(count: Int) {
        var filter = EventIdFilter()
        let inserted = Self.ids(seed: UInt64(count), count: count)
        for id in inserted { filter.insert(id) }
        #expect(filter.count == count)
        #expect(inserted.allSatisfy { filter.mayContain($0) })
        let others = Self.ids(seed: UInt64(count) &+ 0xABCDEF, count: 20_000)
        let passed = others.filter { filter.mayContain($0) }.count
        // About 1% per level grown; 200k ids grow it to 5 levels.
        #expect(passed < others.count / 10, "\(passed) of \(others.count) ids never inserted were not ruled out")
    }

    @Test func aFilterSizedForItsIdsKeepsThemInOneLevel() {
        var filter = EventIdFilter(expected: 200_000)
        let inserted = Self.ids(seed: 11, count: 200_000)
        for id in inserted { filter.insert(id) }
        #expect(filter.levelCount == 1)
        #expect(inserted.allSatisfy { filter.mayContain($0) })
        let others = Self.ids(seed: 0xFEED, count: 20_000)
        let passed = others.filter { filter.mayContain($0) }.count
        #expect(passed < others.count / 50, "\(passed) of \(others.count) ids never inserted were not ruled out by one level")
        // Past what its level holds (sized up to a power of two: 349k ids for 200k), it grows.
        for id in Self.ids(seed: 12, count: 200_000) { filter.insert(id) }
        #expect(filter.levelCount == 2)
        #expect(inserted.allSatisfy { filter.mayContain($0) })
    }

    @Test(arguments: [0, 50_000])
    func noStringInsertedIsRuledOutAndFewOthersPass(expected: Int) {
        var filter = StringFilter(expected: expected)
        let inserted = (0..<60_000).map { "feature:\($0 % 3):{\(String($0 &* 2_654_435_761 % 1_000_003, radix: 16))-\($0)}" }
        for s in inserted { filter.insert(s) }
        #expect(filter.count == inserted.count)
        #expect(inserted.allSatisfy { filter.mayContain($0) })
        let others = (0..<20_000).map { "session-\($0)" }
        let passed = others.filter { filter.mayContain($0) }.count
        #expect(passed < others.count / 10, "\(passed) of \(others.count) strings never inserted were not ruled out")
        #expect(!StringFilter().mayContain(inserted[0]))
    }

    @Test func anEmptyFilterRulesOutEverything() {
        let filter = EventIdFilter()
        #expect(Self.ids(seed: 7, count: 1_000).allSatisfy { !filter.mayContain($0) })
    }
}
