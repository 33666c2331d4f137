@testable import EditLogAudit
import EditLogCore
import Foundation
import Testing

/// `FeatureKey`: the fold and the report keep a GlobalID in 16 bytes when it is a normalized `{UUID}`; whatever its
/// spelling, it gives the GlobalID back as it came, and orders as the strings do.
@Suite struct FeatureKeyTests {
    /// Random GlobalIDs: normalized, lower-case, without braces, with a character out of place, and other text.
    static func globalIds(_ n: Int, seed: UInt64) -> [String] {
        var rng = SplitMix64(seed: seed)
        return (0..<n).map { i in
            var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let u = bytes.withUnsafeMutableBytes { UUID(uuid: $0.load(as: uuid_t.self)) }
            let normal = "{" + u.uppercasedString + "}"
            switch i % 6 {
            case 0, 1: return normal
            case 2: return normal.lowercased()
            case 3: return u.uppercasedString
            case 4:
                var c = Array(normal.utf8)
                c[Int.random(in: 1..<37, using: &rng)] = [UInt8(ascii: "g"), UInt8(ascii: "-"), UInt8(ascii: "a"), UInt8(ascii: "Z")].randomElement(using: &rng)!
                bytes = c
                return String(decoding: bytes, as: UTF8.self)
            default: return "tree-\(rng.next() % 1000)"
            }
        }
    }

    @Test func aKeyGivesBackItsGlobalIdAndOrdersAsTheStringsDo() {
        let ids = Self.globalIds(3000, seed: 57)
        for g in ids { #expect(FeatureKey(g).string == g, "\(g)") }
        #expect(ids.filter { GlobalID.uuid(ofNormal: $0) != nil }.allSatisfy { GlobalID.normalize($0) == $0 })
        #expect(ids.map(FeatureKey.init).sorted(by: FeatureKey.precedes).map(\.string) == ids.sorted())
        // Equal keys for equal GlobalIDs only.
        #expect(Set(ids.map(FeatureKey.init)).count == Set(ids).count)
    }
}
