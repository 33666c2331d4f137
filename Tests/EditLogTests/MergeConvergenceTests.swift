import EditLog
import Foundation
import Testing

/// Convergence under last-in-wins: three devices that edit at random and exchange their events in any order end
/// with the same data and the same conflicts.
@Suite struct MergeConvergenceTests {
    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6])
    func threeDevicesConvergeInAnyExchangeOrder(seed: UInt64) throws {
        let paths = [TempPath("a"), TempPath("b"), TempPath("c")]
        var logs: [EditLog] = []
        let clock = StepClock(start: 1_780_000_000_000, step: 7)
        for (i, name) in ["a", "b", "c"].enumerated() {
            let log = try MergeDevices.device(name, paths[i], seed: seed * 10 + UInt64(i), clock: clock)
            var editor = RebuildPropertyTests.RandomEditor(rng: SplitMix64(seed: seed * 100 + UInt64(i)), trees: Array(try Fixture.globalIds("Trees").prefix(12)),
                                                           species: try Fixture.globalIds("Species"))
            editor.n = 10_000 * (i + 1)
            _ = try RebuildPropertyTests.drive(log, editor: &editor, steps: 90, sessionPrefix: "\(name)-")
            logs.append(log)
        }
        let bundles = seed == 1  // one seed through real bundle files, the others through the same import directly
        // Random exchanges, then full rounds (every pair, in a random order) until one adds nothing anywhere.
        var rng = SplitMix64(seed: seed)
        for _ in 0..<8 {
            let from = Int(rng.next() % 3), to = (from + 1 + Int(rng.next() % 2)) % 3
            try MergeDevices.exchange(logs[from], into: logs[to], viaBundle: bundles)
        }
        var pairs = [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
        var rounds = 0
        while true {
            rounds += 1
            for i in pairs.indices.reversed() { pairs.swapAt(i, Int(rng.next() % UInt64(i + 1))) }
            var added = 0
            for (f, t) in pairs { added += try MergeDevices.exchange(logs[f], into: logs[t], viaBundle: bundles).imported }
            if added == 0 { break }
            try #require(rounds < 10, "seed \(seed): exchanges keep adding events after \(rounds) rounds")
        }
        let digests = try logs.map { try $0.digestOfContent() }
        let diff = Set(digests).count == 1 ? "" : try MergeDevices.differences(logs)
        #expect(Set(digests).count == 1, "seed \(seed): content digests differ: \(diff)")
        let keys = try logs.map { Set(try $0.conflicts().map(\.conflict.key)) }
        #expect(keys[0] == keys[1] && keys[1] == keys[2], "seed \(seed): the logs list different conflicts")
        for log in logs { #expect(try log.digestOfProjections() == (try log.digestOfRebuild()), "seed \(seed): rebuild differs from incremental") }
    }
}
