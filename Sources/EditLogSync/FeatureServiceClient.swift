import EditLog
import Foundation

/// The ArcGIS REST calls `editlog sync` makes on one FeatureServer (`…/FeatureServer`), with its token. Every
/// failure is an `EditLogError` naming the URL: unreachable or a 5xx answer (`.io`), an answer that is not a
/// FeatureServer's JSON (`.invalidInput`), a refused token (`.invalidInput`; logged in, after one new log in).
public struct FeatureServiceClient: Sendable {
    public let baseURL: String
    /// The fixed token (`--token`), or nil: none, or a `login` gives them.
    public let token: String?
    /// The user this client logs in as (`--user`), where it logs in.
    public private(set) var login: ServiceLogin?
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

    /// Logs in with a user name and a password (`--user`) instead of a fixed token: the service's token
    /// service gives the token, and a new one when the service refuses it mid-sync (`ServiceLogin`).
    public init(url: String, user: String, password: String, transport: any ServiceTransport = HTTPTransport()) throws(EditLogError) {
        try self.init(url: url, token: nil, transport: transport)
        login = ServiceLogin(user: user, password: password, serviceURL: baseURL, transport: transport)
    }

    func params(_ p: [(String, String)], token: String?) -> [(String, String)] {
        var out = p
        out.append(("f", "json"))
        if let token { out.append(("token", token)) }
        return out
    }

    /// The code of a refused token in an answer, ArcGIS's either way: HTTP 200 with
    /// `{"error":{"code":498|499,…}}` (498 invalid or expired, 499 required), or HTTP 498/499 itself.
    static func tokenRefusal(_ response: TransportResponse, _ v: JSONValue?) -> Int64? {
        if let code = v?["error"]?["code"]?.intValue, code == 498 || code == 499 { return code }
        return response.status == 498 || response.status == 499 ? Int64(response.status) : nil
    }

    /// Sends a request with the token (`send` gets it) and reads its answer (`read`: the JSON where there is
    /// some). Logged in with `--user`, a refused token means it expired: the client logs in again once and
    /// sends the request once more (a refused request applied nothing), and a second refusal is an error.
    func authorized(_ url: String, _ send: (String?) async throws -> TransportResponse,
                    read: (TransportResponse) -> JSONValue?) async throws(EditLogError) -> (TransportResponse, JSONValue?) {
        func exchange(_ token: String?) async throws(EditLogError) -> (TransportResponse, JSONValue?) {
            let response: TransportResponse
            do { response = try await send(token) } catch { throw EditLogError(.io, "cannot reach the service: \(error)", at: url) }
            return (response, read(response))
        }
        guard let login else { return try await exchange(token) }
        let sent = try await login.currentToken()
        let first = try await exchange(sent)
        guard Self.tokenRefusal(first.0, first.1) != nil else { return first }
        let again = try await exchange(try await login.renew(after: sent))
        if let code = Self.tokenRefusal(again.0, again.1) {
            throw EditLogError(.invalidInput, "the service refused the token of user \(login.user) (\(code)) again right after a new log in: "
                               + "check that \(login.user) may use this service, then run sync again", at: url)
        }
        return again
    }

    /// GET (or POST for edits and long parameter lists) `path` under the service root; the answer's JSON.
    /// `allowArray`: the answer may be a JSON array (the service-level `applyEdits` answers one entry per layer).
    public func json(_ path: String, _ p: [(String, String)] = [], post: Bool = false, allowArray: Bool = false) async throws(EditLogError) -> JSONValue {
        let url = path.isEmpty ? baseURL : baseURL + "/" + path
        let (response, parsed) = try await authorized(url, { token in
            post ? try await transport.postForm(url, form: params(p, token: token)) : try await transport.get(url, query: params(p, token: token))
        }, read: { try? JSONParser.parse($0.body) })
        return try checked(response, parsed, url: url, allowArray: allowArray)
    }

    /// POST `path` as `json` does, for an answer too large to hold as one tree (`extractChanges`): its bytes and
    /// top-level members, for a `JSONSlicer` to read a part at a time, checked as `json` checks an answer (HTTP
    /// status, token, an `error` member).
    func largeJSON(_ path: String, _ p: [(String, String)]) async throws(EditLogError) -> (slicer: JSONSlicer, members: [String: Range<Int>]) {
        let url = baseURL + "/" + path
        // Only a small answer can be an ArcGIS error (a refused token among them): parsed whole as `json` does.
        let (response, small) = try await authorized(url, { token in try await transport.postForm(url, form: params(p, token: token)) },
                                                     read: { $0.body.count <= 1 << 16 ? try? JSONParser.parse($0.body) : nil })
        if let small { _ = try checked(response, small, url: url, allowArray: false) }
        let slicer = JSONSlicer(bytes: response.body, url: url)
        var members: [String: Range<Int>] = [:]
        var error: JSONValue?
        if small == nil {
            guard let top = try? slicer.members(try slicer.document()) else {
                _ = try checked(response, nil, url: url, allowArray: false)
                throw slicer.malformed(0)
            }
            for (k, r) in top where members[k] == nil { members[k] = r }
            if let r = members["error"] { error = try slicer.value(r) }
            _ = try checked(response, .object(error.map { ["error": $0] } ?? [:]), url: url, allowArray: false)
        } else {
            for (k, r) in try slicer.members(try slicer.document()) ?? [] where members[k] == nil { members[k] = r }
        }
        return (slicer, members)
    }

    /// An answer (`parsed`: its JSON, nil when it is none) checked: a server failure, a refused token, an answer
    /// that is not a FeatureServer's JSON, an ArcGIS error or an HTTP error status is an error.
    func checked(_ response: TransportResponse, _ parsed: JSONValue?, url: String, allowArray: Bool) throws(EditLogError) -> JSONValue {
        if response.status >= 500 {
            throw EditLogError(.io, "the service answered HTTP \(response.status): \(String(decoding: response.body.prefix(200), as: UTF8.self))", at: url)
        }
        if let code = Self.tokenRefusal(response, parsed) {
            let message = parsed?["error"]?["message"]?.stringValue ?? "HTTP \(response.status)"
            throw EditLogError(.invalidInput, "the service refused the token (\(code) \(message)): pass a valid --token or --token-file, or log in with --user", at: url)
        }
        guard let v = parsed, v.objectValue != nil || (allowArray && v.arrayValue != nil) else {
            throw EditLogError(.invalidInput, "the answer (HTTP \(response.status), \(response.contentType ?? "no content type")) is not a FeatureServer's JSON: "
                               + "\(String(decoding: response.body.prefix(120), as: UTF8.self))", at: url)
        }
        if let e = v["error"] {
            let code = e["code"]?.intValue ?? Int64(response.status)
            let message = e["message"]?.stringValue ?? "error"
            let details = (e["details"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: "; ")
            if response.status == 401 || response.status == 403 {
                throw EditLogError(.invalidInput, "the service refused the token (\(code) \(message)): pass a valid --token or --token-file, or log in with --user", at: url)
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
        let (response, error) = try await authorized(url, { token in
            try await transport.get(url, query: token.map { [("token", $0)] } ?? [])
        }, read: { r in
            // An attachment's bytes are not JSON; an ArcGIS error about it is.
            guard r.contentType?.contains("json") == true, let v = try? JSONParser.parse(r.body), v["error"] != nil else { return nil }
            return v
        })
        if let code = Self.tokenRefusal(response, error) {
            throw EditLogError(.invalidInput, "the service refused the token (\(code)) for an attachment download: pass a valid --token or --token-file, or log in with --user", at: url)
        }
        guard response.status == 200 else {
            throw EditLogError(response.status >= 500 ? .io : .invalidInput, "the service answered HTTP \(response.status) for an attachment", at: url)
        }
        if let error {
            throw EditLogError(.invalidInput, "the service refused an attachment download: \(error["error"]!.serialized().prefix(200))", at: url)
        }
        return response.body
    }
}
