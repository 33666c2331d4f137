/// An attachment's SHA-256 as an event names it (or a bundle's blob entry), kept until the end of an import or of
/// a bundle's reading checks that its bytes are here: the 32 bytes when the text is canonical (64 lowercase hex
/// digits), else the text itself. Ordered as the text is. A million-event bundle names tens of thousands: a value
/// of fixed size each instead of a heap string and its allocation.
public enum BlobRef: Hashable, Comparable, Sendable {
    case digest(UInt64, UInt64, UInt64, UInt64)
    case text(String)

    public init(_ sha: String) {
        // Canonical when its bytes give the same text back (32 bytes, lowercase).
        guard let b = Hex.decode(sha), b.count == 32, Hex.encode(b) == sha else { self = .text(sha); return }
        func word(_ i: Int) -> UInt64 { b[i..<i + 8].reduce(0) { $0 << 8 | UInt64($1) } }
        self = .digest(word(0), word(8), word(16), word(24))
    }

    /// The SHA-256 as 64 lowercase hex digits (a canonical one), or the text as it was given.
    public var text: String {
        switch self {
        case .digest: return Hex.encode(digestBytes!)
        case .text(let t): return t
        }
    }

    /// The 32 bytes of a canonical SHA-256; nil for a text that is not one.
    public var digestBytes: [UInt8]? {
        guard case .digest(let a, let b, let c, let d) = self else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for w in [a, b, c, d] { for i in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: w >> UInt64(i))) } }
        return bytes
    }

    public static func < (x: BlobRef, y: BlobRef) -> Bool {
        if case .digest(let a0, let a1, let a2, let a3) = x, case .digest(let b0, let b1, let b2, let b3) = y {
            return (a0, a1, a2, a3) < (b0, b1, b2, b3)
        }
        return x.text < y.text
    }
}
