import EditLog
import Foundation
import Hummingbird

/// The outermost middleware of every route: reads the request's parameters (the query string, and a POST's form or
/// multipart body up to `maxRequestBytes`) into `context.service`, answers every error a route or an inner
/// middleware throws as ArcGIS does (`ServiceError`; a store that does not answer is a 503 with `Retry-After`), and
/// marks every answer of a hub node with how stale its local copy is.
struct ArcGISRequestMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let service: FeatureService

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = await answer(request, context, next)
        if let stale = service.handles.staleness {
            response.headers[FeatureService.staleHeader] = String(format: "%.1f", stale)
        }
        return response
    }

    private func answer(_ request: Request, _ context: Context, _ next: (Request, Context) async throws -> Response) async -> Response {
        let options = service.options
        var params = Parameters(query: request.uri.query)
        if request.method == .post {
            let body: ByteBuffer
            do { body = try await request.body.collect(upTo: options.maxRequestBytes) } catch {
                return ArcGISResponse.error(413, "The request is larger than \(options.maxRequestBytes) bytes.", status: .contentTooLarge)
            }
            let bytes = Array(body.readableBytesView)
            let type = request.headers[.contentType]?.lowercased() ?? ""
            if type.hasPrefix("multipart/form-data") {
                guard let boundary = Parameters.headerParameter("boundary", in: request.headers[.contentType] ?? "") else {
                    return ArcGISResponse.error(400, "Invalid or missing input parameters.", details: ["multipart/form-data without a boundary"])
                }
                do { try params.merge(multipart: bytes, boundary: boundary) } catch {
                    return ArcGISResponse.error(400, "Invalid or missing input parameters.", details: [error.description])
                }
            } else if type.isEmpty || type.hasPrefix("application/x-www-form-urlencoded") || type.hasPrefix("text/plain") {
                params.merge(form: String(decoding: bytes, as: UTF8.self))
            }
        }
        let agent = request.headers[.userAgent].map { String($0.prefix(256)) } ?? "unknown"
        var req = ServiceRequest(params: params, user: nil, device: agent.isEmpty ? "unknown" : agent, address: context.remoteAddress)
        let logger = context.logger
        req.logError = { message in logger.error("\(message)") }
        let authority = request.head.authority ?? "\(options.host):\(options.port)"
        let prefix = request.uri.path.lowercased().hasPrefix("/arcgis/") ? "/arcgis" : ""
        req.rootURL = "http://\(authority)\(prefix)"
        req.serviceURL = "\(req.rootURL)/rest/services/\(options.serviceName.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? options.serviceName)/FeatureServer"
        var context = context
        context.service = req
        let pretty = req.pretty
        do {
            return try await next(request, context)
        } catch let e as ServiceError {
            return e.response(pretty: pretty)
        } catch let e as HTTPError where e.status == .notFound {
            return ServiceError.notFound.response(pretty: pretty)
        } catch let e as EditLogError where e.kind == .unavailable {
            return ServiceError.unavailable(e).response(pretty: pretty)
        } catch let e as EditLogError {
            return ArcGISResponse.error(500, "Unable to complete operation.", details: [e.description], pretty: pretty)
        } catch {
            return ArcGISResponse.error(500, "Unable to complete operation.", details: ["\(error)"], pretty: pretty)
        }
    }
}

/// Authentication, wherever ArcGIS clients send a token (`RequestToken`: the `token` parameter, an
/// `X-Esri-Authorization` or `Authorization` bearer, the `agstoken` cookie): one of the token file's, else one this
/// server signed. A token no user holds is refused (498) on every route behind it; no token leaves the request
/// anonymous, for `ReadAccessMiddleware` and the edits to decide. The token service itself is not behind it (a
/// login is not refused for a stale token it carries).
struct AuthenticationMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let options: ServerOptions

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let token = RequestToken.find(params: context.service.params, headers: request.headers) else { return try await next(request, context) }
        var context = context
        if let u = options.tokens[token] {
            context.service.user = u
        } else if let u = options.login?.user(forToken: token, address: context.remoteAddress, referer: request.headers[.referer], now: options.clock()) {
            context.service.user = u
        } else {
            throw ServiceError.invalidToken
        }
        return try await next(request, context)
    }
}

/// `--rate-limit`: requests per second per user (per client address for anonymous ones), 429 beyond it.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let limiter: RateLimiter

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard limiter.allow(context.service.user.map { "user:" + $0 } ?? "ip:" + context.remoteAddress) else {
            throw ServiceError(code: 429, message: "Too many requests.", details: ["at most \(limiter.perSecond) requests per second"], status: .tooManyRequests)
        }
        return try await next(request, context)
    }
}

/// The service catalog and everything under it need a user, unless the server was started with `--anonymous-reads`.
struct ReadAccessMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let anonymousReads: Bool

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if context.service.user == nil && !anonymousReads { throw ServiceError.tokenRequired() }
        return try await next(request, context)
    }
}

/// `rest/services/{name}/FeatureServer/…` answers only for this server's service name (percent-decoded, in any case).
struct ServiceNameMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let name: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let given = context.pathParameter("service")
        guard given?.lowercased() == name.lowercased() else { throw ServiceError.notFound }
        return try await next(request, context)
    }
}

extension RouterMethods where Context == ServerRequestContext {
    /// `path` answered for GET and POST alike, as ArcGIS answers its resources and operations.
    @discardableResult
    func getAndPost(_ path: RouterPath, use handler: @Sendable @escaping (Request, ServerRequestContext) async throws -> Response) -> Self {
        on(path, method: .get, use: handler)
        return on(path, method: .post, use: handler)
    }
}

extension ServerRequestContext {
    /// A parameter of the route's path, percent-decoded (a replica id comes as `%7B…%7D`).
    func pathParameter(_ name: String) -> String? {
        parameters.get(name).map { $0.removingPercentEncoding ?? $0 }
    }
}
