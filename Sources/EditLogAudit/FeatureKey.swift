import EditLogCore
import Foundation

/// A GlobalID as a window's fold and the report's rows keep it: a `{UUID}` as normalized in its 16 bytes (no string on
/// the heap per feature), any other spelling as it is. `string` gives back the GlobalID as it came.
struct FeatureKey: Hashable, Sendable {
    private let uuid: UUID
    private let other: String?

    init(_ g: String) {
        if let u = GlobalID.uuid(ofNormal: g) { uuid = u; other = nil } else { uuid = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)); other = g }
    }

    var string: String { other ?? "{" + uuid.uppercasedString + "}" }

    /// In the GlobalIDs' string order (for two `{UUID}`s, the order of their bytes).
    static func precedes(_ a: FeatureKey, _ b: FeatureKey) -> Bool {
        if a.other == nil, b.other == nil {
            return withUnsafeBytes(of: a.uuid.uuid) { pa in withUnsafeBytes(of: b.uuid.uuid) { pb in memcmp(pa.baseAddress!, pb.baseAddress!, 16) < 0 } }
        }
        return a.string < b.string
    }
}
