import EditLog
import Foundation
import Hummingbird

/// A query's Esri JSON feature set (`f=json`) written straight to bytes: the header's keys as `JSONValue`
/// writes them, then the features as `EditLog.queryFeatureBytes` wrote them from the rows (attributes in the
/// order of the requested fields, as ArcGIS lists them, the geometry without a spatial reference). The same
/// document `JSONValue` would give, less its canonical key order, without a dictionary per feature (the hot
/// path of `tools/bench serve`).
public enum FeatureSetJSON {
    static func response(header: [String: JSONValue], features: [UInt8]) -> Response {
        ArcGISResponse.bytes(bytes(header: header, features: features))
    }

    /// The document's bytes (public for `tools/bench serve`'s in-process floor).
    public static func bytes(header: [String: JSONValue], features: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256 + features.count)
        out.append(UInt8(ascii: "{"))
        for (key, value) in header.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
            JSONValue.string(key).write(to: &out)
            out.append(UInt8(ascii: ":"))
            value.write(to: &out)
            out.append(UInt8(ascii: ","))
        }
        out.append(contentsOf: #""features":["#.utf8)
        out.append(contentsOf: features)
        out.append(contentsOf: "]}".utf8)
        return out
    }
}
