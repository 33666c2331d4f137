@testable import EditLogBundle
import EditLog
import Foundation
import Testing

/// Mutated bundles (bit flips, overwritten bytes, truncations, insertions, deletions; seeded): the reader never
/// crashes and either reads the bundle or throws an EditLogError.
@Suite struct BundleFuzzTests {
    static let iterations = Int(ProcessInfo.processInfo.environment["EDITLOG_FUZZ_ITERATIONS"] ?? "").map { max(1, $0 / 10) } ?? 300

    @Test func mutatedBundlesNeverCrashTheReader() throws {
        let shared = SharedBundle.shared
        let d = TempDir()
        let log = try EditLog.open(at: shared.log, readonly: true)
        let k = BundleSignature.generateKeyPair()
        // A small bundle with blobs and a signature (the last 120 events hold some attachments).
        _ = try log.exportBundle(to: d.file("small.bundle"), since: .position(shared.head - 120), signingKey: k.privateKey, blockSize: 2048)
        log.close()
        let valid = [UInt8](try Data(contentsOf: URL(fileURLWithPath: d.file("small.bundle"))))
        var rng = SplitMix64(seed: 0xB0D1E)
        func int(_ n: Int) -> Int { Int(rng.next() % UInt64(max(n, 1))) }
        var outcomes: [String: Int] = [:]
        for i in 0..<Self.iterations {
            var b = valid
            for _ in 0..<(1 + int(3)) {
                switch int(5) {
                case 0: b[int(b.count)] ^= UInt8(1 << int(8))
                case 1: b[int(b.count)] = UInt8(truncatingIfNeeded: rng.next())
                case 2: b = Array(b.prefix(1 + int(b.count - 1)))
                case 3: b.insert(UInt8(truncatingIfNeeded: rng.next()), at: int(b.count + 1))
                default: if b.count > 1 { b.remove(at: int(b.count)) }
                }
            }
            let path = d.file("m\(i % 4).bundle")
            try Data(b).write(to: URL(fileURLWithPath: path))
            do {
                _ = try BundleFixture.read(path, trust: [k.publicKey])
                outcomes["read", default: 0] += 1
            } catch let e as EditLogError {
                outcomes[e.kind.rawValue, default: 0] += 1
            } catch {
                Issue.record("mutation \(i): not an EditLogError: \(error)")
            }
        }
        #expect(outcomes.values.reduce(0, +) == Self.iterations)
        #expect((outcomes["corrupt"] ?? 0) > Self.iterations / 2, "\(outcomes)")
    }
}
