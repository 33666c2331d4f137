import EditLogCore

/// An attachment's SHA-256 as an imported event names it, kept until the import's end checks that its bytes are
/// here: the 32 bytes when the text is canonical (64 lowercase hex digits), else the text itself. Ordered as the
/// text is. A million-event bundle names tens of thousands: 40 bytes each instead of a heap string.
enum BlobRef: Hashable, Comparable {
    case digest(UInt64, UInt64, UInt64, UInt64)
    case text(String)

    init(_ sha: String) {
        var words: [UInt64] = []
        var utf8 = sha.utf8.makeIterator()
        var valid = sha.utf8.count == 64
        while valid, words.count < 4 {
            var w: UInt64 = 0
            for _ in 0..<16 {
                guard let c = utf8.next() else { valid = false; break }
                switch c {
                case 48...57: w = w << 4 | UInt64(c - 48)
                case 97...102: w = w << 4 | UInt64(c - 87)
                default: valid = false
                }
                if !valid { break }
            }
            if valid { words.append(w) }
        }
        self = valid ? .digest(words[0], words[1], words[2], words[3]) : .text(sha)
    }

    var text: String {
        switch self {
        case .digest(let a, let b, let c, let d):
            var bytes: [UInt8] = []
            bytes.reserveCapacity(32)
            for w in [a, b, c, d] { for i in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: w >> UInt64(i))) } }
            return Hex.encode(bytes)
        case .text(let t): return t
        }
    }

    static func < (x: BlobRef, y: BlobRef) -> Bool {
        if case .digest(let a0, let a1, let a2, let a3) = x, case .digest(let b0, let b1, let b2, let b3) = y {
            return (a0, a1, a2, a3) < (b0, b1, b2, b3)
        }
        return x.text < y.text
    }
}
