import EditLog
import Foundation

/// Logging in to a service with a user name and a password, as ArcGIS's field apps do: the service's
/// `rest/info` names its token service (`authInfo.tokenServicesUrl`), which is asked for a token by a POST of
/// `username`, `password`, `client=requestip`, `expiration` and `f=json`. When the service refuses the token
/// mid-sync (it expired), `FeatureServiceClient` asks `renew(after:)` for a new one and retries the request once.
///
/// The password is held in memory only, for those logins: it is never logged, recorded in an event, put in an
/// error message or written to a file.
public actor ServiceLogin {
    public nonisolated let user: String
    private let password: String
    /// The service root (`…/rest/services/NAME/FeatureServer`) whose `rest/info` names the token service.
    nonisolated let serviceURL: String
    let transport: any ServiceTransport
    private var tokenServicesURL: String?
    private var token: String?
    /// A login under way: requests that find the token refused while it runs wait for its token rather than
    /// logging in again each.
    private var pending: Task<Result<String, EditLogError>, Never>?
    /// How many tokens were asked for (the first login included).
    public private(set) var logins = 0

    /// The lifetime asked for, in minutes: ArcGIS's short-lived default. A sync that outlasts it logs in again
    /// when the service says the token expired.
    static let minutes = 60

    public init(user: String, password: String, serviceURL: String, transport: any ServiceTransport) {
        self.user = user; self.password = password; self.serviceURL = serviceURL; self.transport = transport
    }

    /// The token to send: the one held, after a first login where there is none yet.
    func currentToken() async throws(EditLogError) -> String {
        if let token { return token }
        return try await logIn()
    }

    /// A new token after the service refused `stale`; where another request already logged in again since
    /// `stale` was sent, that token.
    func renew(after stale: String) async throws(EditLogError) -> String {
        if let token, token != stale { return token }
        token = nil
        return try await logIn()
    }

    private func logIn() async throws(EditLogError) -> String {
        if let pending { return try await pending.value.get() }
        let task = Task { () async -> Result<String, EditLogError> in
            do throws(EditLogError) { return .success(try await self.requestToken()) } catch { return .failure(error) }
        }
        pending = task
        let result = await task.value
        pending = nil
        let t = try result.get()
        token = t
        return t
    }

    private func requestToken() async throws(EditLogError) -> String {
        let url = try await tokenService()
        logins += 1
        let form: [(String, String)] = [("username", user), ("password", password), ("client", "requestip"),
                                        ("expiration", String(Self.minutes)), ("f", "json")]
        let response: TransportResponse
        do { response = try await transport.postForm(url, form: form) } catch {
            throw EditLogError(.io, "cannot reach the token service to log in as \(user): \(error)", at: url)
        }
        if response.status >= 500 {
            throw EditLogError(.io, "the token service answered HTTP \(response.status) to the log in of \(user)", at: url)
        }
        let v = try? JSONParser.parse(response.body)
        if let e = v?["error"] {
            let code = e["code"]?.intValue ?? Int64(response.status)
            let details = (e["details"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: "; ")
            let what = "\(code) \(e["message"]?.stringValue ?? "error")\(details.isEmpty ? "" : ": " + details)"
            if code >= 500 { throw EditLogError(.io, "the token service failed to log in \(user) (\(what))", at: url) }
            throw EditLogError(.invalidInput, "the service \(serviceURL) refused the log in of user \(user) (\(what)): check the user name and the password", at: url)
        }
        guard let token = v?["token"]?.stringValue, !token.isEmpty else {
            throw EditLogError(.invalidInput, "the token service's answer (HTTP \(response.status)) to the log in of \(user) has no token", at: url)
        }
        return token
    }

    /// `authInfo.tokenServicesUrl` of the `rest/info` beside the service's `rest/services`, read once.
    private func tokenService() async throws(EditLogError) -> String {
        if let tokenServicesURL { return tokenServicesURL }
        let info = try Self.infoURL(ofService: serviceURL)
        let response: TransportResponse
        do { response = try await transport.get(info, query: [("f", "json")]) } catch {
            throw EditLogError(.io, "cannot reach the service to find its token service: \(error)", at: info)
        }
        if response.status >= 500 { throw EditLogError(.io, "the service answered HTTP \(response.status)", at: info) }
        guard let url = (try? JSONParser.parse(response.body))?["authInfo"]?["tokenServicesUrl"]?.stringValue, !url.isEmpty else {
            throw EditLogError(.invalidInput, "the service names no token service (rest/info has no authInfo.tokenServicesUrl), so --user "
                               + "cannot log in: give a token with --token or --token-file", at: info)
        }
        tokenServicesURL = Self.generateTokenURL(url)
        return tokenServicesURL!
    }

    /// The generateToken operation of a token service as `rest/info` names it: ArcGIS Server names its `tokens/`
    /// folder (`https://host/arcgis/tokens/`), a portal and `serve` the operation itself (`…/generateToken`).
    static func generateTokenURL(_ url: String) -> String {
        let trimmed = url.hasSuffix("/") ? String(url.dropLast()) : url
        if trimmed.lowercased().hasSuffix("/generatetoken") { return trimmed }
        return trimmed + "/generateToken"
    }

    /// `…/rest/info` for a service under `…/rest/services/`.
    static func infoURL(ofService url: String) throws(EditLogError) -> String {
        guard let r = url.range(of: "/rest/services/", options: .caseInsensitive) else {
            throw EditLogError(.invalidInput, "--user logs in through the rest/info beside the service's rest/services, and this URL has none: "
                               + "give a token with --token or --token-file", at: url)
        }
        return String(url[..<r.lowerBound]) + "/rest/info"
    }
}
