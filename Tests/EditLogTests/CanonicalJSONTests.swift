import EditLog
import Foundation
import Testing

/// The canonical JSON that payload hashes cover must never change: integers as `String(i)` writes them,
/// object keys in the order of their UTF-8 bytes (the reference definitions below are the originals).
@Suite struct CanonicalJSONTests {
    @Test func integersAndDoublesWriteAsBefore() {
        var rng = SplitMix64(seed: 11)
        var values: [Int64] = [0, 1, -1, 9, 10, -10, 99, 100, .max, .min, .max - 1, .min + 1, 1_780_000_000_000]
        for _ in 0..<2000 { values.append(Int64(bitPattern: rng.next()) >> Int64(rng.next() % 64)) }
        for i in values {
            #expect(JSONValue.int(i).serialized() == String(i))
            let d = Double(i / 1024)
            #expect(JSONValue.double(d).serialized() == String(Int64(d)) + ".0")
        }
        #expect(JSONValue.double(-0.0).serialized() == "0.0")
        #expect(JSONValue.double(2.5).serialized() == "2.5")
    }

    @Test func objectKeysSortByTheirUTF8Bytes() {
        var rng = SplitMix64(seed: 12)
        let alphabet = Array("aAzZ_09é€😀 \"\\".unicodeScalars)
        for _ in 0..<300 {
            var o: [String: JSONValue] = [:]
            for _ in 0..<Int(rng.next() % 8) {
                let key = String(String.UnicodeScalarView((0..<Int(rng.next() % 5)).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }))
                o[key] = .int(Int64(rng.next() % 100))
            }
            let keys = o.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            let expected = "{" + keys.map { JSONValue.string($0).serialized() + ":" + o[$0]!.serialized() }.joined(separator: ",") + "}"
            #expect(JSONValue.object(o).serialized() == expected)
        }
    }
}
