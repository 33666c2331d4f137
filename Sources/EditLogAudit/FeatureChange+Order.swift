import EditLogCore

/// The order of a diff's changes — by layer id, then GlobalID as text — computed from fixed-size keys. A
/// GlobalID in its canonical form (`{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}`, upper-case hex) orders by its
/// 128 bits exactly as by its text, so it is compared as two integers; any other text is compared as a
/// `String`. (String comparison was most of the time of sorting 10k changes.)
struct ChangeOrderKey {
    var layer: Int
    var high: UInt64
    var low: UInt64
    var canonical: Bool

    init(layer: Int, globalId: String) {
        self.layer = layer
        high = 0; low = 0; canonical = false
        var g = globalId
        canonical = g.withUTF8 { b -> Bool in
            guard b.count == 38, b[0] == UInt8(ascii: "{"), b[37] == UInt8(ascii: "}") else { return false }
            var words: (UInt64, UInt64) = (0, 0)
            var n = 0
            for i in 1..<37 {
                let c = b[i]
                if i == 9 || i == 14 || i == 19 || i == 24 {
                    guard c == UInt8(ascii: "-") else { return false }
                    continue
                }
                let v: UInt8
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0")
                case UInt8(ascii: "A")...UInt8(ascii: "F"): v = c - UInt8(ascii: "A") + 10
                default: return false
                }
                if n < 16 { words.0 = words.0 << 4 | UInt64(v) } else { words.1 = words.1 << 4 | UInt64(v) }
                n += 1
            }
            (high, low) = words
            return true
        }
    }

    /// Whether the change with key `a` (GlobalID `ga`) comes before the one with `b` (`gb`).
    static func precedes(_ a: ChangeOrderKey, _ ga: String, _ b: ChangeOrderKey, _ gb: String) -> Bool {
        if a.layer != b.layer { return a.layer < b.layer }
        if a.canonical && b.canonical { return a.high != b.high ? a.high < b.high : a.low < b.low }
        return ga < gb
    }
}

extension Array where Element == FeatureChange {
    /// Sorted by layer id, then GlobalID.
    func sortedByLayerAndGlobalId() -> [FeatureChange] {
        let keys = map { ChangeOrderKey(layer: $0.layer, globalId: $0.globalId) }
        let order = indices.sorted { a, b in ChangeOrderKey.precedes(keys[a], self[a].globalId, keys[b], self[b].globalId) }
        return order.map { self[$0] }
    }
}
