import EditLogCore

/// The order of a diff's changes — by layer id, then GlobalID as text — computed from fixed-size keys. A
/// GlobalID in its canonical form (`{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}`, upper-case hex) orders by its
/// 128 bits exactly as by its text, so it is compared as two integers; any other text is compared as a
/// `String`. (String comparison was most of the time of sorting a large diff's changes.)
struct ChangeOrderKey {
    var layer: Int
    var high: UInt64
    var low: UInt64
    var canonical: Bool

    init(layer: Int, globalId: String) {
        self.layer = layer
        if let (h, l) = GlobalID.bits(globalId) {
            (high, low, canonical) = (h, l, true)
        } else {
            (high, low, canonical) = (0, 0, false)
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
