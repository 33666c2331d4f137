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
}
