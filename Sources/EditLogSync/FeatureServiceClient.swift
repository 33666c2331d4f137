import EditLog
import Foundation

/// The ArcGIS REST calls `editlog sync` makes on one FeatureServer (`…/FeatureServer`), with its token. Every
/// failure is an `EditLogError` naming the URL: unreachable or a 5xx answer (`.io`), an answer that is not a
/// FeatureServer's JSON (`.invalidInput`), a refused token (`.invalidInput`).
public struct FeatureServiceClient: Sendable {
    public let baseURL: String
    public let token: String?
    public let transport: any ServiceTransport
    /// The key sync state is recorded under: the URL without query, trailing slash, scheme/host case (made once:
    /// sync names it in every pulled event); or, once the service root named the item the service is
    /// (`serviceItemId`), that item (`identified(byRoot:)`): every node of an EditLog hub, and every URL of one ArcGIS
    /// service, is the same service to a device.
    public private(set) var serviceKey: String

    /// Keys the state by the item the service root names, if it names one.
    public mutating func identified(byRoot root: JSONValue) {
        if let item = root["serviceItemId"]?.stringValue, !item.isEmpty { serviceKey = "item:" + item }
    }

    public init(url: String, token: String?, transport: any ServiceTransport = HTTPTransport()) throws(EditLogError) {
        var u = url.trimmingCharacters(in: .whitespacesAndNewlines)
        if let q = u.firstIndex(of: "?") { u = String(u[..<q]) }
        while u.hasSuffix("/") { u.removeLast() }
        guard let parsed = URL(string: u), let scheme = parsed.scheme?.lowercased(), scheme == "http" || scheme == "https", parsed.host != nil else {
            throw EditLogError(.invalidInput, "--service must be an http(s) URL of a FeatureServer (…/rest/services/NAME/FeatureServer), not \"\(url.prefix(120))\"")
        }
        guard u.lowercased().hasSuffix("/featureserver") else {
            throw EditLogError(.invalidInput, "--service must end with /FeatureServer (the service root), not \"\(url.prefix(120))\"")
        }
        self.baseURL = u; self.token = token; self.transport = transport
        self.serviceKey = Self.key(of: u)
    }

    static func key(of baseURL: String) -> String {
        guard let c = URLComponents(string: baseURL) else { return baseURL }
        var k = c
        k.scheme = c.scheme?.lowercased(); k.host = c.host?.lowercased()
        return k.string ?? baseURL
    }

    func params(_ p: [(String, String)]) -> [(String, String)] {
        var out = p
        out.append(("f", "json"))
        if let token { out.append(("token", token)) }
        return out
    }

    /// GET (or POST for edits and long parameter lists) `path` under the service root; the answer's JSON.
    /// `allowArray`: the answer may be a JSON array (the service-level `applyEdits` answers one entry per layer).
    public func json(_ path: String, _ p: [(String, String)] = [], post: Bool = false, allowArray: Bool = false) async throws(EditLogError) -> JSONValue {
        let url = path.isEmpty ? baseURL : baseURL + "/" + path
        let response: TransportResponse
        do {
            response = post ? try await transport.postForm(url, form: params(p)) : try await transport.get(url, query: params(p))
        } catch {
            throw EditLogError(.io, "cannot reach the service: \(error)", at: url)
        }
        if response.status >= 500 {
            throw EditLogError(.io, "the service answered HTTP \(response.status): \(String(decoding: response.body.prefix(200), as: UTF8.self))", at: url)
        }
        guard let v = try? JSONParser.parse(response.body), v.objectValue != nil || (allowArray && v.arrayValue != nil) else {
            throw EditLogError(.invalidInput, "the answer (HTTP \(response.status), \(response.contentType ?? "no content type")) is not a FeatureServer's JSON: "
                               + "\(String(decoding: response.body.prefix(120), as: UTF8.self))", at: url)
        }
        if let e = v["error"] {
            let code = e["code"]?.intValue ?? Int64(response.status)
            let message = e["message"]?.stringValue ?? "error"
            let details = (e["details"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: "; ")
            if code == 498 || code == 499 || response.status == 401 || response.status == 403 {
                throw EditLogError(.invalidInput, "the service refused the token (\(code) \(message)): pass a valid --token or --token-file", at: url)
            }
            if code >= 500 { throw EditLogError(.io, "the service failed (\(code) \(message)\(details.isEmpty ? "" : ": " + details))", at: url) }
            throw EditLogError(.invalidInput, "the service refused the request (\(code) \(message)\(details.isEmpty ? "" : ": " + details))", at: url)
        }
        if response.status >= 400 {
            throw EditLogError(.invalidInput, "the service answered HTTP \(response.status)", at: url)
        }
        return v
    }

    /// Raw bytes (an attachment).
    public func bytes(_ path: String) async throws(EditLogError) -> [UInt8] {
        let url = baseURL + "/" + path
        let response: TransportResponse
        do { response = try await transport.get(url, query: token.map { [("token", $0)] } ?? []) } catch {
            throw EditLogError(.io, "cannot reach the service: \(error)", at: url)
        }
        guard response.status == 200 else {
            throw EditLogError(response.status >= 500 ? .io : .invalidInput, "the service answered HTTP \(response.status) for an attachment", at: url)
        }
        if response.contentType?.contains("json") == true, let v = try? JSONParser.parse(response.body), v["error"] != nil {
            throw EditLogError(.invalidInput, "the service refused an attachment download: \(v["error"]!.serialized().prefix(200))", at: url)
        }
        return response.body
    }
}
