import EditLog
import Foundation
import Testing

/// RFC 9562 version 7 ids as `UUIDv7Generator` makes them: layout, the clock in the first 48 bits,
/// and byte order that follows the order of generation (within a millisecond, across milliseconds,
/// and when the clock steps back).
@Suite struct UUIDv7Tests {
    /// A clock that reads out a fixed list of milliseconds, then repeats the last one.
    final class ScriptedClock: LogClock, @unchecked Sendable {
        private let lock = NSLock()
        private var readings: [Int64]
        private var k = 0
        init(_ readings: [Int64]) { self.readings = readings }
        func now() -> Int64 {
            lock.lock(); defer { lock.unlock() }
            let v = readings[min(k, readings.count - 1)]
            k += 1
            return v
        }
    }

    static func bytes(_ u: UUID) -> [UInt8] { withUnsafeBytes(of: u.uuid) { Array($0) } }

    /// The first 48 bits, big-endian: the Unix milliseconds.
    static func millis(_ b: [UInt8]) -> Int64 { b.prefix(6).reduce(Int64(0)) { $0 << 8 | Int64($1) } }

    /// The 12-bit `rand_a` field, which the generator uses as a counter within a millisecond.
    static func counter(_ b: [UInt8]) -> Int { Int(b[6] & 0x0F) << 8 | Int(b[7]) }

    static func expectStrictlyIncreasing(_ ids: [[UInt8]], sourceLocation: SourceLocation = #_sourceLocation) {
        for k in ids.indices.dropFirst() where !ids[k - 1].lexicographicallyPrecedes(ids[k]) {
            Issue.record("id \(k) is not greater than id \(k - 1) in byte order", sourceLocation: sourceLocation)
            return
        }
    }

    @Test func versionAndVariantBits() {
        let g = UUIDv7Generator(clock: StepClock(start: 1_780_000_000_000, step: 0), seed: 42)
        for _ in 0..<5000 {
            let u = g.next(), b = Self.bytes(u)
            #expect(b[6] >> 4 == 0x7, "version nibble")
            #expect(b[8] >> 6 == 0b10, "RFC 9562 variant")
            // The textual form agrees: xxxxxxxx-xxxx-7xxx-[89ab]xxx-xxxxxxxxxxxx.
            let s = u.uuidString.lowercased().map { $0 }
            #expect(s[14] == "7" && "89ab".contains(s[19]))
        }
    }

    @Test func theFirst48BitsAreTheClocksMilliseconds() {
        // Values chosen so every one of the six bytes differs, and the top byte is used.
        let readings: [Int64] = [1, 0x0102_0304_0506, 1_780_000_000_000, 0xFFFF_FFFF_FFFE, 0xFFFF_FFFF_FFFF]
        let g = UUIDv7Generator(clock: ScriptedClock(readings), seed: 1)
        let ids = readings.map { _ in Self.bytes(g.next()) }
        #expect(ids.map(Self.millis) == readings)
        #expect(ids[1].prefix(6) == [0x01, 0x02, 0x03, 0x04, 0x05, 0x06])
        #expect(ids[4].prefix(6) == [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        Self.expectStrictlyIncreasing(ids)
    }

    @Test func manyIdsInOneMillisecondIncreaseAndCarryIntoTheNext() {
        let ms: Int64 = 1_780_000_000_000
        let g = UUIDv7Generator(clock: StepClock(start: ms, step: 0), seed: 7)  // every reading is ms + 0
        let ids = (0..<20_000).map { _ in Self.bytes(g.next()) }
        Self.expectStrictlyIncreasing(ids)
        // The counter starts in the lower half of its 12 bits, so at least 2048 ids fit in the clock's millisecond ...
        #expect(Self.counter(ids[0]) <= 0x7FF)
        #expect(ids.prefix(2048).allSatisfy { Self.millis($0) == ms })
        // ... each one the counter plus one, until 0xFFF, then the next millisecond starts again at counter 0.
        for k in 1..<ids.count {
            let (a, b) = (ids[k - 1], ids[k])
            if Self.counter(a) == 0xFFF {
                #expect(Self.millis(b) == Self.millis(a) + 1 && Self.counter(b) == 0)
            } else {
                #expect(Self.millis(b) == Self.millis(a) && Self.counter(b) == Self.counter(a) + 1)
            }
        }
        // 20,000 ids in one millisecond borrow at most 20,000 / 4096 + 1 milliseconds from the future.
        #expect(Self.millis(ids.last!) <= ms + 5)
    }

    @Test func idsAcrossMillisecondsIncreaseAndCarryTheClock() {
        let clock = StepClock(start: 1_780_000_000_000, step: 1)
        let g = UUIDv7Generator(clock: clock, seed: 9)
        let ids = (0..<5000).map { _ in Self.bytes(g.next()) }
        Self.expectStrictlyIncreasing(ids)
        #expect(ids.map(Self.millis) == (1...5000).map { 1_780_000_000_000 + Int64($0) })
    }

    @Test func aClockThatGoesBackwardsStillYieldsIncreasingIds() {
        let readings: [Int64] = [5000, 6000, 6000, 5500, 1, 5999, 6000, 6001, 4000, 7000]
        let g = UUIDv7Generator(clock: ScriptedClock(readings), seed: 3)
        let ids = readings.map { _ in Self.bytes(g.next()) }
        Self.expectStrictlyIncreasing(ids)
        // While the clock is behind, ids keep the highest millisecond seen and count up in it.
        #expect(ids.map(Self.millis) == [5000, 6000, 6000, 6000, 6000, 6000, 6000, 6001, 6001, 7000])
        for k in [2, 3, 4, 5, 6] { #expect(Self.counter(ids[k]) == Self.counter(ids[k - 1]) + 1) }
        #expect(Self.counter(ids[8]) == Self.counter(ids[7]) + 1)
    }

    @Test func aHundredThousandIdsAreUnique() {
        // Seeded on a stuck clock (the worst case for the counter), and unseeded on the system clock.
        for g in [UUIDv7Generator(clock: StepClock(start: 1_780_000_000_000, step: 0), seed: 5), UUIDv7Generator()] {
            let ids = (0..<100_000).map { _ in Self.bytes(g.next()) }
            #expect(Set(ids).count == 100_000)
            Self.expectStrictlyIncreasing(ids)
        }
    }

    @Test func sameSeedSameIdsDifferentSeedDifferentIds() {
        func run(_ seed: UInt64) -> [UUID] {
            let g = UUIDv7Generator(clock: StepClock(start: 1_780_000_000_000, step: 3), seed: seed)
            return (0..<100).map { _ in g.next() }
        }
        #expect(run(1) == run(1))
        #expect(Set(run(1)).isDisjoint(with: run(2)))
    }

    /// Event ids of a log as stored, in position order, from the SQLite file itself.
    static func storedIds(_ path: String) throws -> [[UInt8]] {
        let ids = try RawLog.ids(path)
        #expect(ids.allSatisfy { $0.count == 16 })
        return ids
    }

    @Test func idsStayIncreasingAcrossAReopenedLog() throws {
        let tmp = TempPath()
        // Written first with the fixture's clock (2026-05-28, 7 ms a reading) ...
        let log = try Fixture.treesLog(at: tmp.path)
        try log.run(#"{"op":"create","layer":"Trees","globalId":"\#(newGID(1))","geometry":{"x":-122.6,"y":45.5}}"#, #"{"op":"finish"}"#)
        let first = try log.eventCount()
        log.close()
        // ... then reopened with a fresh generator on the system clock.
        let again = try EditLog.open(at: tmp.path)
        try again.run(#"{"op":"create","layer":"Trees","globalId":"\#(newGID(2))","geometry":{"x":-122.61,"y":45.51}}"#, #"{"op":"finish"}"#)
        try again.run(#"{"op":"delete","layer":"Trees","globalId":"\#(newGID(1))"}"#)
        let total = try again.eventCount()
        again.close()

        let ids = try Self.storedIds(tmp.path)
        #expect(Int64(ids.count) == total && total > first && first > 0)
        #expect(Set(ids).count == ids.count)
        Self.expectStrictlyIncreasing(ids)
        #expect(ids.allSatisfy { $0[6] >> 4 == 7 && $0[8] >> 6 == 0b10 })
    }

    @Test func idsAfterReopeningWithAClockBehindTheLog() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path, baseline: false)  // ids at 2026-05-28
        log.close()
        // The device's clock was set back a year: a fresh generator does not know the log's last id.
        let behind = StepClock(start: 1_748_000_000_000, step: 1)
        let again = try EditLog.open(at: tmp.path, clock: behind, ids: UUIDv7Generator(clock: behind, seed: 2))
        try again.run(#"{"op":"create","layer":"Trees","globalId":"\#(newGID(1))","geometry":{"x":-122.6,"y":45.5}}"#, #"{"op":"finish"}"#)
        again.close()
        let ids = try Self.storedIds(tmp.path)
        #expect(Set(ids).count == ids.count)
        // EventStore.open advances the generator past the log's newest id.
        Self.expectStrictlyIncreasing(ids)
    }
}
