@testable import EditLogServer
import EditLog
import Foundation
import Testing

/// The byte-level readers of request parameters (percent-decoding, objectIds lists) give what the
/// Foundation readers give (`removingPercentEncoding`; `anyObjectIdList`, which reads every other spelling),
/// on random inputs drawn from the characters that matter.
@Suite("Feature service: parameter parsing")
struct ServerParameterParsingTests {
    static func reference(_ s: Substring) -> String {
        let plus = s.replacingOccurrences(of: "+", with: " ")
        return plus.removingPercentEncoding ?? plus
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
        var answered = 0
        let alphabet = ["1", "23", "0", "-", ",", ", ", " ", "\t", "[", "]", "x", "+4", "999999999999999999", "\n", "\u{00A0}"]
        for _ in 0..<5000 {
            let n = Int(rng.next() % 7)
            let s = (0..<n).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }.joined()
            let reference = try? FeatureService.anyObjectIdList(s)
            #expect((try? FeatureService.objectIdList(s)) == reference, "\(s.debugDescription)")
            if let plain = FeatureService.plainObjectIdList(s) { answered += 1; #expect(plain == reference, "\(s.debugDescription)") }
        }
        #expect(answered > 1000, "the byte reader answered only \(answered) of 5000")
        let long = (1...1000).map { String($0 * 3) }.joined(separator: ",")
        #expect(try FeatureService.objectIdList(long) == (1...1000).map { Int64($0 * 3) })
        #expect(FeatureService.plainObjectIdList(long) != nil)
    }
}
