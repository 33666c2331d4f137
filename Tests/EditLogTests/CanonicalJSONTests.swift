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
            for _ in 0..<Int(rng.next() % 40) {  // past 16 keys the writer sorts differently
                let key = String(String.UnicodeScalarView((0..<Int(rng.next() % 5)).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }))
                o[key] = .int(Int64(rng.next() % 100))
            }
            let keys = o.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            let expected = "{" + keys.map { JSONValue.string($0).serialized() + ":" + o[$0]!.serialized() }.joined(separator: ",") + "}"
            #expect(JSONValue.object(o).serialized() == expected)
        }
    }
}

extension CanonicalJSONTests {
    /// Strings are escaped eight bytes at a time where none needs it: every byte value at every place of strings
    /// of 1 to 24 bytes is escaped as JSON requires (RFC 8259 §7, with the short escapes for `\n`, `\r`, `\t`),
    /// written at a pointer and appended to an array alike.
    @Test func everyByteAtEveryPlaceIsEscapedAsJSONRequires() {
        func reference(_ bytes: [UInt8]) -> [UInt8] {
            var out: [UInt8] = [0x22]
            for c in bytes {
                switch c {
                case 0x22: out += [0x5C, 0x22]
                case 0x5C: out += [0x5C, 0x5C]
                case 0x0A: out += Array("\\n".utf8)
                case 0x0D: out += Array("\\r".utf8)
                case 0x09: out += Array("\\t".utf8)
                case 0..<0x20: out += Array(String(format: "\\u%04x", Int(c)).utf8)
                default: out.append(c)
                }
            }
            return out + [0x22]
        }
        var mismatches: [String] = []
        for length in 1...24 {
            for place in 0..<length {
                for value in 0...255 {
                    var bytes = [UInt8]((0..<length).map { UInt8(ascii: "a") + UInt8($0 % 26) })
                    bytes[place] = UInt8(value)
                    let expected = reference(bytes)
                    let atPointer = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: JSONValue.maxStringBytes(utf8Count: length)) { buffer in
                        let n = bytes.withUnsafeBytes { JSONValue.writeString(utf8: $0, into: buffer.baseAddress!) }
                        return Array(buffer[0..<n])
                    }
                    var appended: [UInt8] = [0x2C]
                    bytes.withUnsafeBufferPointer { JSONValue.writeString(utf8: $0, to: &appended) }
                    if atPointer != expected || appended != [0x2C] + expected { mismatches.append("length \(length), byte \(value) at \(place)") }
                }
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
    }
}
