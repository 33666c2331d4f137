@testable import EditLogServer
import EditLog
import Foundation
import Testing

/// The byte-level readers of request parameters (percent-decoding, objectIds lists) give what the
/// Foundation readers they replace gave, on random inputs drawn from the characters that matter.
@Suite("Feature service: parameter parsing")
struct ServerParameterParsingTests {
    static func reference(_ s: Substring) -> String {
        let plus = s.replacingOccurrences(of: "+", with: " ")
        return plus.removingPercentEncoding ?? plus
    }

    static func referenceIds(_ text: String) -> [Int64]? {
        var t = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if t.hasPrefix("[") && t.hasSuffix("]") { t = String(t.dropFirst().dropLast()) }
        var ids: [Int64] = []
        for piece in t.split(separator: ",") {
            let s = piece.trimmingCharacters(in: .whitespaces)
            if s.isEmpty { continue }
            guard let n = Int64(s) else { return nil }
            ids.append(n)
        }
        return ids
    }

    @Test func percentDecodingMatchesFoundation() {
        var rng = SplitMix64(seed: 42)
        let alphabet = ["a", "Z", "0", "9", "+", "%", "%2C", "%2c", "%20", "%C3%A9", "%C3", "%FF", "%G1", "%4", "é", " ", "=", "%25", "%2B"]
        for _ in 0..<3000 {
            let n = Int(rng.next() % 8)
            let s = (0..<n).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }.joined()
            #expect(Parameters.decode(Substring(s)) == Self.reference(Substring(s)), "\(s)")
        }
        #expect(Parameters(query: "where=a%3D1+AND+b%3D%27x%27&objectIds=1%2C2").values == ["where": "a=1 AND b='x'", "objectids": "1,2"])
    }

    @Test func objectIdListsMatchTheFoundationReader() throws {
        var rng = SplitMix64(seed: 7)
        let alphabet = ["1", "23", "0", "-", ",", ", ", " ", "\t", "[", "]", "x", "+4", "999999999999999999", "\n", "\u{00A0}"]
        for _ in 0..<5000 {
            let n = Int(rng.next() % 7)
            let s = (0..<n).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }.joined()
            let got = try? FeatureService.objectIdList(s)
            #expect(got == Self.referenceIds(s), "\(s.debugDescription)")
        }
        let long = (1...1000).map { String($0 * 3) }.joined(separator: ",")
        #expect(try FeatureService.objectIdList(long) == (1...1000).map { Int64($0 * 3) })
        #expect(FeatureService.plainObjectIdList(long) != nil)
    }
}
