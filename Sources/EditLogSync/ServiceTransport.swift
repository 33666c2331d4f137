import AsyncHTTPClient
import EditLog
import Foundation

/// One HTTP answer: status, body, content type.
public struct TransportResponse: Sendable {
    public var status: Int
    public var body: [UInt8]
    public var contentType: String?
    public init(status: Int, body: [UInt8], contentType: String?) { self.status = status; self.body = body; self.contentType = contentType }
}

/// How the sync client reaches a service: a GET with a query string or a POST of a form (urlencoded). Kept
/// behind a protocol so tests can also answer from an in-process server or inject failures.
public protocol ServiceTransport: Sendable {
    func get(_ url: String, query: [(String, String)]) async throws -> TransportResponse
    func postForm(_ url: String, form: [(String, String)]) async throws -> TransportResponse
}

/// Percent-encoding for query strings and form bodies (RFC 3986 unreserved characters kept).
public enum FormEncoding {
    static let allowed: CharacterSet = {
        var s = CharacterSet.alphanumerics
        s.insert(charactersIn: "-._~")
        return s
    }()

    public static func encode(_ form: [(String, String)]) -> String {
        form.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }.joined(separator: "&")
    }
}

/// The process's client: no retry of a refused connection (an unreachable service is named at once, not after
/// the request's deadline), connections given 10 seconds. Never shut down (it lives as long as the process).
private let syncHTTPClient: HTTPClient = {
    var c = HTTPClient.Configuration()
    c.timeout = .init(connect: .seconds(10), read: .seconds(300))
    c.connectionPool.retryConnectionEstablishment = false
    return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: c)
}()

/// The real transport: swift-server/async-http-client.
public struct HTTPTransport: ServiceTransport {
    public var timeoutSeconds: Int64
    public var userAgent: String

    public init(timeoutSeconds: Int64 = 120, userAgent: String = "editlog-sync") {
        self.timeoutSeconds = timeoutSeconds; self.userAgent = userAgent
    }

    public func get(_ url: String, query: [(String, String)]) async throws -> TransportResponse {
        var request = HTTPClientRequest(url: query.isEmpty ? url : url + "?" + FormEncoding.encode(query))
        request.method = .GET
        request.headers.add(name: "User-Agent", value: userAgent)
        return try await execute(request)
    }

    public func postForm(_ url: String, form: [(String, String)]) async throws -> TransportResponse {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "User-Agent", value: userAgent)
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(Array(FormEncoding.encode(form).utf8))
        return try await execute(request)
    }

    func execute(_ request: HTTPClientRequest) async throws -> TransportResponse {
        let response = try await syncHTTPClient.execute(request, timeout: .seconds(timeoutSeconds))
        let body = try await response.body.collect(upTo: 1 << 30)
        return TransportResponse(status: Int(response.status.code), body: Array(body.readableBytesView), contentType: response.headers.first(name: "Content-Type"))
    }
}
