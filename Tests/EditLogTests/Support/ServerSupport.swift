import EditLog
import EditLogServer
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// Lets a non-Sendable value (an `EditLog`) into the test client's `@Sendable` closure; the tests use it
/// from one task at a time.
final class Unchecked<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// A served Trees of Portland log and the in-process test client.
struct ServedLog {
    static let base = "/arcgis/rest/services/Trees/FeatureServer"
    static let editorToken = "tok-editor-0001"
    static let viewerToken = "tok-viewer-0002"

    /// Runs `body` against the service of a fresh fixture log (anonymous reads on unless `configure` says otherwise).
    static func run(configure: (inout ServerOptions) -> Void = { _ in },
                    _ body: @escaping @Sendable (any TestClientProtocol, Unchecked<EditLog>) async throws -> Void) async throws {
        let temp = TempPath("serve")
        let log = try Fixture.treesLog(at: temp.path)
        defer { log.close(); _ = temp }
        var options = ServerOptions(serviceName: "Trees")
        options.tokens = [editorToken: "alice_pdx", viewerToken: "victor"]
        options.anonymousReads = true
        configure(&options)
        let app = Application(router: makeRouter(log: log, options: options))
        let box = Unchecked(log)
        try await app.test(.router) { client in try await body(client, box) }
    }
}

struct ServiceResponse {
    var status: HTTPResponse.Status
    var json: JSONValue
    var contentType: String?
    var text: String
    var retryAfter: String? = nil
}

extension TestClientProtocol {
    func getJSON(_ uri: String, headers: HTTPFields = [:]) async throws -> ServiceResponse {
        try await execute(uri: uri, method: .get, headers: headers) { r in
            let bytes = Array(r.body.readableBytesView)
            return ServiceResponse(status: r.status, json: (try? JSONParser.parse(bytes)) ?? .null, contentType: r.headers[.contentType],
                                   text: String(decoding: bytes, as: UTF8.self))
        }
    }

    /// A form-urlencoded POST, as ArcGIS clients send edits.
    func postForm(_ uri: String, _ form: [(String, String)], headers: HTTPFields = [:]) async throws -> ServiceResponse {
        var h = headers
        h[.contentType] = "application/x-www-form-urlencoded"
        let body = formEncode(form)
        return try await execute(uri: uri, method: .post, headers: h, body: ByteBuffer(string: body)) { r in
            let bytes = Array(r.body.readableBytesView)
            return ServiceResponse(status: r.status, json: (try? JSONParser.parse(bytes)) ?? .null, contentType: r.headers[.contentType],
                                   text: String(decoding: bytes, as: UTF8.self), retryAfter: r.headers[.retryAfter])
        }
    }
}

func formEncode(_ form: [(String, String)]) -> String {
    var allowed = CharacterSet.alphanumerics
    allowed.insert(charactersIn: "-._~")
    return form.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }.joined(separator: "&")
}

/// `?a=b&c=d` with the values percent-encoded.
func queryString(_ form: [(String, String)]) -> String { "?" + formEncode(form) }

extension JSONValue {
    /// The element at `i` of an array (nil out of range or for a non-array), for chaining in assertions.
    func at(_ i: Int) -> JSONValue? {
        guard let a = arrayValue, a.indices.contains(i) else { return nil }
        return a[i]
    }
}
