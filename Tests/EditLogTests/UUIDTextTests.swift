import EditLog
import Foundation
import Testing

/// `UUID.lowercasedString`, `uppercasedString` and `UUID(text:)` (ids printed and parsed without Foundation's
/// sprintf/sscanf) agree with Foundation's `uuidString` and `UUID(uuidString:)`.
@Suite struct UUIDTextTests {
    @Test func printingAndParsingAgreeWithFoundation() {
        var rng = SplitMix64(seed: 7)
        for _ in 0..<2_000 {
            var bytes = [UInt8](repeating: 0, count: 16)
            for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255, using: &rng) }
            let u = bytes.withUnsafeBytes { UUID(uuid: $0.load(as: uuid_t.self)) }
            #expect(u.uppercasedString == u.uuidString)
            #expect(u.lowercasedString == u.uuidString.lowercased())
            #expect(UUID(text: u.uuidString) == u)
            #expect(UUID(text: u.uuidString.lowercased()) == u)
            #expect(GlobalID.normalize(u.uuidString.lowercased()) == "{\(u.uuidString)}")
            #expect(GlobalID.normalize("{\(u.uuidString.lowercased())}") == "{\(u.uuidString)}")
            #expect(GlobalID.normalize("{\(u.uuidString)}") == "{\(u.uuidString)}")  // already canonical: the fast path
        }
    }

    /// The canonical form is returned as it is; anything near it (a lower-case digit, a dash moved, a digit out of
    /// hex, a brace missing) goes the long way, and comes out as it did before the fast path.
    @Test func nearlyCanonicalGlobalIdsNormalizeAsBefore() {
        func reference(_ s: String) -> String? {
            var t = Substring(s)
            if t.hasPrefix("{") && t.hasSuffix("}") { t = t.dropFirst().dropLast() }
            guard t.utf8.count == 36, let u = UUID(text: t) else { return nil }
            return "{" + u.uppercasedString + "}"
        }
        var rng = SplitMix64(seed: 8)
        let swaps: [UInt8] = Array("0aAfFgG-{} ".utf8)
        for _ in 0..<3_000 {
            var bytes = Array("{\(UUID(uuid: (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }.withUnsafeBytes { $0.load(as: uuid_t.self) }).uuidString)}".utf8)
            let at = Int(rng.next() % UInt64(bytes.count))
            bytes[at] = swaps[Int(rng.next() % UInt64(swaps.count))]
            let s = String(decoding: bytes, as: UTF8.self)
            #expect(GlobalID.normalize(s) == reference(s), "\(s)")
        }
    }

    @Test func malformedTextIsRefusedAsFoundationRefusesIt() {
        let good = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
        #expect(UUID(text: good) == UUID(uuidString: good))
        let bad = ["", "3f2504e0", good + "0", String(good.dropLast()), good.replacingOccurrences(of: "-", with: "_"),
                   "3f2504e04f8941d39a0c0305e82c3301", "3f2504e0-4f89-41d3-9a0c-0305e82c330g", "3f2504e0-4f89-41d3-9a0c0-305e82c3301",
                   "{3f2504e0-4f89-41d3-9a0c-0305e82c3301}"]
        for s in bad {
            #expect(UUID(text: s) == nil, "\(s)")
            #expect(UUID(uuidString: s) == nil, "Foundation accepts \(s)")
        }
        // Foundation's sscanf takes a leading space as a digit's padding and reads another id than was written
        // (…3300 from "…330"); these are refused.
        let padded = " 3f2504e0-4f89-41d3-9a0c-0305e82c330"
        #expect(UUID(text: padded) == nil)
        #expect(GlobalID.normalize(padded) == nil)
        #expect(GlobalID.normalize("{" + good) == nil)
        #expect(GlobalID.normalize("3f2504e0-4f89-41d3-9a0c-0305e82c330") == nil)
    }

    /// `GlobalIDKey` (an import's 17-byte key of a feature) gives back the GlobalID it was made from, canonical or
    /// not, and orders keys exactly as their texts order.
    @Test func globalIdKeysRoundTripAndOrderAsTheirText() {
        var rng = SplitMix64(seed: 11)
        var texts: [String] = []
        for k in 0..<1_000 {
            var bytes = [UInt8](repeating: 0, count: 16)
            for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255, using: &rng) }
            if k % 7 == 0 { bytes[0] = texts.isEmpty ? 0 : 0xFF }  // shared prefixes: the low word decides
            let u = bytes.withUnsafeBytes { UUID(uuid: $0.load(as: uuid_t.self)) }
            let canonical = "{\(u.uuidString)}"
            let key = GlobalIDKey(canonical)
            guard case .bits = key else { Issue.record("\(canonical) is canonical"); continue }
            #expect(key.globalId == canonical)
            texts.append(canonical)
            // Not canonical (lower case, no braces): kept as text, given back unchanged.
            let other = k % 2 == 0 ? u.uuidString.lowercased() : u.uuidString
            #expect(GlobalIDKey(other) == .text(other))
            #expect(GlobalIDKey(other).globalId == other)
            texts.append(other)
        }
        texts += ["", "{", "{3F2504E0-4F89-41D3-9A0C-0305E82C330G}", "{3F2504E0-4F89-41D3-9A0C-0305E82C3301", "plain"]
        // Braced, but not canonical: a lower-case digit, a misplaced dash, a non-ASCII character in place of two digits
        // (38 bytes) and of one (39), bytes just past '9' and 'F' and just before 'A'.
        let nonCanonical = ["{3F2504E0-4F89-41D3-9A0C-0305e82C3301}", "{3F2504E04-F89-41D3-9A0C-0305E82C3301}", "{3F2504E0-4F89-41D3-9A0C-0305E82C33É}", "{3F2504E0-4F89-41D3-9A0C-0305E82C330É}",
                            "{3F2504E0-4F89-41D3-9A0C-0305E82C330:}", "{3F2504E0-4F89-41D3-9A0C-0305E82C330G}", "{3F2504E0-4F89-41D3-9A0C-0305E82C330@}"]
        for t in nonCanonical { #expect(GlobalIDKey(t) == .text(t), "\(t)") }
        #expect(GlobalID.bits("{00000000-0000-0000-0000-000000000001}")! == (0, 1))
        #expect(GlobalID.bits("{FFFFFFFF-FFFF-FFFF-0000-000000000000}")! == (UInt64.max, 0))
        texts += nonCanonical
        #expect(texts.map(GlobalIDKey.init).sorted().map(\.globalId) == texts.sorted())
    }
}
