import EditLog
import Foundation
import Hummingbird

/// A query's Esri JSON feature set (`f=json`) written straight to bytes: the header's keys as
/// `JSONValue` writes them, then each feature's attributes in the order of the requested fields (as ArcGIS
/// lists them) and its geometry without a spatial reference. The same document `JSONValue` would give, less
/// its canonical key order, without building and sorting a dictionary per feature (the hot path of
/// `tools/bench serve`: key sorting and dictionary filtering were a fifth of a 1,000-feature query).
public enum FeatureSetJSON {
    static func response(header: [String: JSONValue], fields: [FieldSchema], features: [JSONValue], returnGeometry: Bool) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.cacheControl] = "no-cache"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes(header: header, fields: fields, features: features, returnGeometry: returnGeometry))))
    }

    /// The document's bytes (public for `tools/bench serve`'s in-process floor).
    public static func bytes(header: [String: JSONValue], fields: [FieldSchema], features: [JSONValue], returnGeometry: Bool) -> [UInt8] {
        let keys: [(name: String, bytes: [UInt8])] = fields.map { f in
            var b: [UInt8] = [UInt8(ascii: ",")]
            JSONValue.string(f.name).write(to: &b)
            b.append(UInt8(ascii: ":"))
            return (f.name, b)
        }
        var out: [UInt8] = []
        out.reserveCapacity(256 + features.count * (64 + 24 * fields.count))
        out.append(UInt8(ascii: "{"))
        for (key, value) in header.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
            JSONValue.string(key).write(to: &out)
            out.append(UInt8(ascii: ":"))
            value.write(to: &out)
            out.append(UInt8(ascii: ","))
        }
        out.append(contentsOf: Array(#""features":["#.utf8))
        for (n, f) in features.enumerated() {
            if n > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: Array(#"{"attributes":{"#.utf8))
            let attributes = f["attributes"]?.objectValue ?? [:]
            var first = true
            for k in keys {
                guard let v = attributes[k.name] else { continue }
                if first { out.append(contentsOf: k.bytes.dropFirst()) } else { out.append(contentsOf: k.bytes) }
                first = false
                v.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
            if returnGeometry, let g = f["geometry"], !g.isNull {
                out.append(contentsOf: Array(#","geometry":"#.utf8))
                FeatureService.stripSpatialReference(g).write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
        out.append(contentsOf: Array("]}".utf8))
        return out
    }
}
