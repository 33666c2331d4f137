import EditLog
import Foundation
import Testing

/// JSON numbers: integers are kept exact in 64 bits or refused, never widened to a rounded Double;
/// numbers with a fraction or an exponent are Doubles.
@Suite struct JSONNumberTests {
    @Test func theInt64BoundsParseExactly() throws {
        #expect(try JSONParser.parse("9223372036854775807") == .int(Int64.max))
        #expect(try JSONParser.parse("-9223372036854775808") == .int(Int64.min))
        #expect(try JSONParser.parse("[9223372036854775807,-9223372036854775808]") == .array([.int(.max), .int(.min)]))
        // Beyond a Double's 53-bit mantissa, still exact.
        #expect(try JSONParser.parse("9007199254740993") == .int(9_007_199_254_740_993))
        #expect(try JSONParser.parse("-0") == .int(0))
        #expect(JSONValue.int(.max).serialized() == "9223372036854775807")
        #expect(JSONValue.int(.min).serialized() == "-9223372036854775808")
    }

    func refusal(_ text: String) -> JSONParseError? {
        do { _ = try JSONParser.parse(text); return nil } catch { return error }
    }

    @Test func oneBeyondEitherBoundIsRefused() throws {
        for (text, literal, offset) in [("9223372036854775808", "9223372036854775808", 0),
                                        ("-9223372036854775809", "-9223372036854775809", 0),
                                        (#"{"a":[1, 18446744073709551616]}"#, "18446744073709551616", 9),
                                        ("[-99999999999999999999999]", "-99999999999999999999999", 1)] {
            let e = try #require(refusal(text), "\(text) was accepted")
            #expect(e.offset == offset, "\(text)")
            #expect(e.reason == "integer \(literal) does not fit in 64 bits; write it as a string or a decimal")
            #expect(e.description.contains("at byte \(offset)"))
        }
        // A long literal is shortened in the message.
        let long = String(repeating: "9", count: 100)
        let e = try #require(refusal(long))
        #expect(e.reason.hasPrefix("integer " + String(repeating: "9", count: 40) + "…"))
        #expect(e.reason.count < 120)
    }

    @Test func fractionsAndExponentsStayDoubles() throws {
        #expect(try JSONParser.parse("1e3") == .double(1000))
        #expect(try JSONParser.parse("1E+3") == .double(1000))
        #expect(try JSONParser.parse("1.0") == .double(1))
        #expect(try JSONParser.parse("-0.0") == .double(-0.0))
        #expect(try JSONParser.parse("9223372036854775808.0") == .double(9_223_372_036_854_775_808.0))
        #expect(try JSONParser.parse("-9.3e18") == .double(-9.3e18))
        #expect(try JSONParser.parse("1e-400") == .double(0))
        // Still refused: a Double out of range.
        #expect(refusal("1e309")?.reason.contains("out of range") == true)
        // Doubles are written so they read back as doubles, even when whole and beyond Int64.
        for d in [1000.0, 1e19, -9.3e18, 9_223_372_036_854_775_808.0, 1e15, 123_456_789_012_345_680.0] {
            #expect(try JSONParser.parse(JSONValue.double(d).serialized()) == .double(d), "\(d)")
        }
    }

    @Test func everyFixtureStillParses() throws {
        var files = try FileManager.default.contentsOfDirectory(atPath: Paths.arcgisRest).filter { $0.hasSuffix(".json") }.map { Paths.arcgisRest + "/" + $0 }
        let e = FileManager.default.enumerator(atPath: Paths.root + "/Fixtures")
        while let rel = e?.nextObject() as? String {
            if rel.hasSuffix(".json") || rel.hasSuffix(".ndjson") { files.append(Paths.root + "/Fixtures/" + rel) }
        }
        #expect(files.count >= 40)
        for f in files.sorted() {
            let bytes = try InputFiles.bytes(f)
            let docs = f.hasSuffix(".ndjson") ? bytes.split(separator: 0x0A).map(Array.init) : [bytes]
            for doc in docs { #expect(throws: Never.self, "\(f)") { _ = try JSONParser.parse(doc) } }
        }
    }
}
