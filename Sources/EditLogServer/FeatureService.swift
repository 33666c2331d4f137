import EditLog
import Foundation
import Hummingbird
import Logging
import Synchronization

/// The request context: Hummingbird's core storage plus the client's address (the rate limit's key for
/// anonymous requests).
public struct ServerRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: String
    /// The request as the handlers see it: its parameters and where it came from (`ArcGISRequestMiddleware`), its
    /// user (`AuthenticationMiddleware`).
    var service = ServiceRequest(params: Parameters(), user: nil, device: "unknown")

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress?.ipAddress ?? "unknown"
    }
}

/// Builds the router of the feature service over a log. `log` becomes the service's one writer; reads use
/// read-only handles of the same file (see `LogHandles`). Paths match in any case, with or without `/arcgis`;
/// every route is behind `ArcGISRequestMiddleware`, all but the token service behind authentication, and all
/// behind the rate limit; each resource's routes are its controller's.
public func makeRouter(log: EditLog, options: ServerOptions) -> Router<ServerRequestContext> {
    let service = FeatureService(handles: LogHandles(writer: log, keep: options.readers, through: options.writer, groupCommits: options.groupCommits), options: options)
    let router = Router(context: ServerRequestContext.self, options: .caseInsensitive)
    router.add(middleware: ArcGISRequestMiddleware(service: service))
    let limit = service.limiter.map(RateLimitMiddleware.init(limiter:))
    for root in [router.group(""), router.group("arcgis")] {
        let tokens = root.group("")
        if let limit { tokens.add(middleware: limit) }
        LoginController(service: service).addTokenRoutes(to: tokens)
    }
    router.add(middleware: AuthenticationMiddleware(options: options))
    if let limit { router.add(middleware: limit) }
    for root in [router.group(""), router.group("arcgis")] {
        LoginController(service: service).addInfoRoutes(to: root)
        let services = root.group("rest/services").add(middleware: ReadAccessMiddleware(anonymousReads: options.anonymousReads))
        QueryController(service: service).addCatalogRoutes(to: services)
        let server = services.group(":service/FeatureServer").add(middleware: ServiceNameMiddleware(name: options.serviceName))
        QueryController(service: service).addRoutes(to: server)
        ApplyEditsController(service: service).addRoutes(to: server)
        AttachmentsController(service: service).addRoutes(to: server)
        ExtractChangesController(service: service).addRoutes(to: server)
        ReplicasController(service: service).addRoutes(to: server)
    }
    return router
}

/// The whole application: the router on `options.host:options.port`. `onRunning` gets the bound port
/// (the real one when `options.port` is 0). `quiet`: the server logs nothing below errors (a server a command
/// runs for a moment, as the demo's, whose stdout is the command's).
public func makeApplication(log: EditLog, options: ServerOptions, quiet: Bool = false,
                            onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
    var logger = Logger(label: "EditLog")
    logger.logLevel = quiet ? .critical : .info
    return Application(router: makeRouter(log: log, options: options),
                       configuration: .init(address: .hostname(options.host, port: options.port), serverName: "EditLog"),
                       onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? options.port) }, logger: logger)
}

/// One request as the handlers see it.
struct ServiceRequest: Sendable {
    var params: Parameters
    var user: String?
    var device: String
    /// The client's address (a `client=requestip` token is bound to it).
    var address: String = "unknown"
    /// `http://host:port[/arcgis]` as the client addressed it.
    var rootURL: String = ""
    /// `http://host:port/arcgis/rest/services/<name>/FeatureServer` as the client addressed it (links in answers).
    var serviceURL: String = ""
    /// Reports a failure that no response can carry any more (a body that fails while it is sent), to the server's log.
    var logError: @Sendable (String) -> Void = { _ in }
    var pretty: Bool { params["f"]?.lowercased() == "pjson" }
    var format: String { params["f"]?.lowercased() ?? "json" }
}

/// An ArcGIS error to answer with.
struct ServiceError: Error {
    var code: Int
    var message: String
    var details: [String]
    var status: HTTPResponse.Status = .ok

    static func query(_ detail: String) -> ServiceError { ServiceError(code: 400, message: ArcGISResponse.queryErrorMessage, details: [detail]) }
    static func invalid(_ detail: String) -> ServiceError { ServiceError(code: 400, message: "Invalid or missing input parameters.", details: [detail]) }
    static let notFound = ServiceError(code: 404, message: "Requested URL not found.", details: [], status: .notFound)
    /// A token that no user holds, wherever it was sent. HTTP 200, as ArcGIS Server answers a `f=json`
    /// request: clients read the code in the body (bmi-arcgis-restapi raises on any other status before
    /// reading it).
    static let invalidToken = ServiceError(code: 498, message: "Invalid token.", details: [])
    /// No token where one is needed (an edit; a read without `--anonymous-reads`). HTTP 200, as above.
    static func tokenRequired(_ details: [String] = []) -> ServiceError { ServiceError(code: 499, message: "Token Required", details: details) }

    /// A hub's store that does not answer now (`EditLogError.Kind.unavailable`): HTTP 503 with `Retry-After`, as a
    /// server that is up but cannot serve the request.
    static func unavailable(_ e: EditLogError) -> ServiceError { unavailable(e.description) }

    /// ArcGIS's "try again": HTTP 503 with `Retry-After` (`response`), for a store that does not answer or a full queue.
    static func unavailable(_ detail: String) -> ServiceError {
        ServiceError(code: 503, message: "Service unavailable.", details: [detail], status: .serviceUnavailable)
    }

    func response(pretty: Bool) -> Response {
        var r = ArcGISResponse.error(code, message, details: details, status: status, pretty: pretty)
        if status == .serviceUnavailable { r.headers[.retryAfter] = "5" }
        return r
    }
}

final class FeatureService: Sendable {
    let handles: LogHandles
    let options: ServerOptions
    let limiter: RateLimiter?
    /// Replica answers fetched later (`responseUrl`, `resultUrl`).
    let replicaResults = ReplicaResults()
    /// The replayed states of `historicMoment` queries.
    let moments: HistoricMoments
    /// How many reads and edits are running or queued (`routeOffThePool`), each bounded.
    let readAdmission: Admission
    let editAdmission: Admission
    static let currentVersion: JSONValue = .double(11.1)

    init(handles: LogHandles, options: ServerOptions) {
        self.handles = handles
        self.options = options
        limiter = options.rateLimit.map(RateLimiter.init(perSecond:))
        moments = HistoricMoments(logPath: handles.path, capacity: options.historicMoments, clock: options.historicClock)
        readAdmission = Admission(limit: options.maxQueuedReads)
        editAdmission = Admission(limit: options.maxQueuedEdits)
    }

    var schema: ServiceSchema { handles.schema }

    static let staleHeader = HTTPFields.Element.Name("X-EditLog-Stale-Seconds")!

    /// A route's work, on its class's queue (`routeOffThePool`), answered with the schema in force: a schema change
    /// recorded since the last request is what this one is answered and validated with.
    func run(_ context: ServerRequestContext, write: Bool, followSchema: Bool = true,
             _ body: @escaping @Sendable (FeatureService, ServiceRequest) throws -> Response) async throws -> Response {
        let r = context.service
        return try await routeOffThePool(write: write) {
            if followSchema { try self.handles.followSchema() }
            return try body(self, r)
        }
    }

    /// `run` for a route under `…/FeatureServer/{layer}/…`: `body` gets the layer the path names, in the schema in
    /// force (a path naming no layer is a 404).
    func runOnLayer(_ context: ServerRequestContext, write: Bool,
                    _ body: @escaping @Sendable (FeatureService, LayerSchema, ServiceRequest) throws -> Response) async throws -> Response {
        let ref = context.pathParameter("layer")
        return try await run(context, write: write) { s, r in
            guard let ref, let id = Int(ref), let layer = s.schema.layer(id: id) else { throw ServiceError.notFound }
            return try body(s, layer, r)
        }
    }

    /// Reads run on a concurrent queue and edits in the log's writer loop (`LogHandles.submit`: group commit), not on
    /// Swift's cooperative pool: each is synchronous SQLite work, and on a machine with two cores the pool has two
    /// threads — one edit and one query in them held every other request back (a long p99 tail).
    static let reads = DispatchQueue(label: "editlog.serve.reads", qos: .userInitiated, attributes: .concurrent)

    /// Runs `body` on its class's queue when the class has room (`Admission`), else throws ArcGIS's 503.
    func routeOffThePool(write: Bool, _ body: @escaping @Sendable () throws -> Response) async throws -> Response {
        let admission = write ? editAdmission : readAdmission
        guard admission.enter() else {
            throw ServiceError.unavailable("\(admission.limit) \(write ? "edits" : "reads") are running or queued on this server: try again shortly")
        }
        defer { admission.leave() }
        return try await withCheckedThrowingContinuation { (c: CheckedContinuation<Response, any Error>) in
            if write {
                handles.submit(LogHandles.WriteJob(body: body, done: { c.resume(with: $0) }))
            } else {
                Self.reads.async { c.resume(with: Result { try body() }) }
            }
        }
    }

    func requireEdit(_ r: ServiceRequest) throws(ServiceError) -> String {
        guard let u = r.user else { throw ServiceError.tokenRequired(["editing needs a token"]) }
        return u
    }

    /// `/rest/info`: token-based security where there are tokens or users; with users, where to log in.
    func restInfo(_ r: ServiceRequest, tokensAt path: String) -> JSONValue {
        var auth: [String: JSONValue] = ["isTokenBasedSecurity": .bool(!options.tokens.isEmpty || options.login != nil)]
        if let login = options.login {
            auth["tokenServicesUrl"] = .string(r.rootURL + path)
            auth["shortLivedTokenValidity"] = .int(Int64(Login.defaultMinutes))
            auth["maxTokenExpiration"] = .int(Int64(login.maxMinutes))
        }
        return ["currentVersion": Self.currentVersion, "authInfo": .object(auth)]
    }

    func out(_ v: JSONValue, _ r: ServiceRequest) -> Response {
        ArcGISResponse.json(v, pretty: r.pretty, contentType: r.pretty ? "text/plain; charset=utf-8" : "application/json; charset=utf-8")
    }
}

/// A bounded count of requests in flight (running or queued): `enter` fails beyond `limit`.
final class Admission: Sendable {
    let limit: Int
    private let count = Atomic<Int>(0)

    init(limit: Int) { self.limit = max(0, limit) }

    func enter() -> Bool {
        if count.add(1, ordering: .acquiringAndReleasing).newValue <= limit { return true }
        count.subtract(1, ordering: .acquiringAndReleasing)
        return false
    }

    func leave() { count.subtract(1, ordering: .acquiringAndReleasing) }
}
