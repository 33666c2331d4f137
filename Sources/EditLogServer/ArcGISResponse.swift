import EditLog
import Foundation
import Hummingbird

/// Responses in ArcGIS's shapes: JSON (`f=json`, `f=pjson` indented) and errors as
/// `{"error":{"code":…,"message":…,"details":[…]}}` with HTTP 200, as ArcGIS Server answers — a refused
/// token too (498 invalid, 499 required) — except unknown paths (404), a body over the limit (413) and the
/// rate limit (429).
public enum ArcGISResponse {
    public static let queryErrorMessage = "Unable to perform query. Please check your parameters."

    public static func json(_ value: JSONValue, pretty: Bool = false, contentType: String = "application/json; charset=utf-8", status: HTTPResponse.Status = .ok) -> Response {
        var bytes: [UInt8] = []
        if pretty { prettyWrite(value, indent: 0, into: &bytes) } else { bytes = value.serializedBytes() }
        return Self.bytes(bytes, contentType: contentType, status: status)
    }

    /// A JSON answer already written to bytes.
    public static func bytes(_ bytes: [UInt8], contentType: String = "application/json; charset=utf-8", status: HTTPResponse.Status = .ok) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = contentType
        headers[.cacheControl] = "no-cache"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    public static func error(_ code: Int, _ message: String, details: [String] = [], status: HTTPResponse.Status = .ok, pretty: Bool = false) -> Response {
        json(["error": ["code": .int(Int64(code)), "message": .string(message), "details": .array(details.map { .string($0) })]], pretty: pretty, status: status)
    }

    static func prettyWrite(_ v: JSONValue, indent: Int, into out: inout [UInt8]) {
        func pad(_ n: Int) { out.append(contentsOf: Array(repeating: UInt8(ascii: " "), count: n)) }
        switch v {
        case .array(let a) where !a.isEmpty:
            out.append(contentsOf: Array("[\n".utf8))
            for (i, x) in a.enumerated() {
                pad(indent + 2); prettyWrite(x, indent: indent + 2, into: &out)
                out.append(contentsOf: Array((i + 1 < a.count ? ",\n" : "\n").utf8))
            }
            pad(indent); out.append(UInt8(ascii: "]"))
        case .object(let o) where !o.isEmpty:
            out.append(contentsOf: Array("{\n".utf8))
            let keys = o.keys.sorted()
            for (i, k) in keys.enumerated() {
                pad(indent + 2)
                out.append(contentsOf: JSONValue.string(k).serializedBytes())
                out.append(contentsOf: Array(" : ".utf8))
                prettyWrite(o[k]!, indent: indent + 2, into: &out)
                out.append(contentsOf: Array((i + 1 < keys.count ? ",\n" : "\n").utf8))
            }
            pad(indent); out.append(UInt8(ascii: "}"))
        default:
            out.append(contentsOf: v.serializedBytes())
        }
    }
}
