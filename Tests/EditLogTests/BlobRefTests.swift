import EditLogCore
import Testing

/// The compact record of the blobs events name (the import's and the bundle reader's): the text comes back exactly,
/// a canonical one's 32 bytes are its hex digits, and the order (which decides the blob a "missing bytes" error names
/// first) is the text's.
@Suite struct BlobRefTests {
    static func text(_ rng: inout SplitMix64) -> String {
        let hex = Array("0123456789abcdef")
        var s = String((0..<64).map { _ in hex[Int.random(in: 0..<16, using: &rng)] })
        switch Int.random(in: 0..<6, using: &rng) {
        case 0: s = s.uppercased()
        case 1: s.removeLast()
        case 2: s = String(s.prefix(Int.random(in: 0..<64, using: &rng)))
        case 3: s.replaceSubrange(s.startIndex...s.startIndex, with: "g")
        default: break
        }
        return s
    }

    @Test(arguments: 0..<20)
    func roundTripsAndOrdersAsItsText(seed: Int) {
        var rng = SplitMix64(seed: UInt64(seed))
        let texts = (0..<200).map { _ in Self.text(&rng) }
        var digests = 0
        for t in texts {
            let ref = BlobRef(t)
            #expect(ref.text == t)
            if case .digest = ref {
                digests += 1
                #expect(ref.digestBytes.map(Hex.encode) == t)
            } else {
                #expect(ref.digestBytes == nil)
            }
        }
        #expect(texts.map(BlobRef.init).sorted().map(\.text) == texts.sorted())
        #expect(Set(texts.map(BlobRef.init)).count == Set(texts).count)
        #expect(digests > 0 && digests < texts.count)
    }
}
