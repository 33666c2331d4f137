import EditLogCore
import Testing

/// `Hex`: decode is encode's inverse, takes either case, and refuses what is not an even run of hex digits.
@Suite struct HexTests {
    @Test func decodeIsEncodesInverse() {
        var rng = SystemRandomNumberGenerator()
        for n in [0, 1, 16, 32, 257] {
            let bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            #expect(Hex.decode(Hex.encode(bytes)) == bytes)
            #expect(Hex.decode(Hex.encode(bytes).uppercased()) == bytes)
        }
        #expect(Hex.decode("00ff7fA0") == [0x00, 0xFF, 0x7F, 0xA0])
    }

    @Test(arguments: ["0", "abc", "0g", "g0", "zz", " 00", "00 ", "0-", "é0"])
    func whatIsNotAnEvenRunOfHexDigitsIsRefused(_ s: String) {
        #expect(Hex.decode(s) == nil)
    }
}
