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

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress?.ipAddress ?? "unknown"
    }
}

/// Builds the router of the feature service over a log. `log` becomes the service's one writer; reads use
/// read-only handles of the same file (see `LogHandles`).
public func makeRouter(log: EditLog, options: ServerOptions) -> Router<ServerRequestContext> {
    let service = FeatureService(handles: LogHandles(writer: log, keep: options.readers, through: options.writer, groupCommits: options.groupCommits), options: options)
    let router = Router(context: ServerRequestContext.self)
    router.get("**") { request, context in await service.respond(request, context) }
    router.post("**") { request, context in await service.respond(request, context) }
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

    /// Every answer; on a hub node, with `X-EditLog-Stale-Seconds`: how long ago its local copy, which every read
    /// answers from, was last known to hold the store's head (growing while PostgreSQL is unreachable).
    func respond(_ request: Request, _ context: ServerRequestContext) async -> Response {
        var response = await answer(request, context)
        if let stale = handles.staleness {
            response.headers[Self.staleHeader] = String(format: "%.1f", stale)
        }
        return response
    }

    static let staleHeader = HTTPFields.Element.Name("X-EditLog-Stale-Seconds")!

    func answer(_ request: Request, _ context: ServerRequestContext) async -> Response {
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
        let pretty = params["f"]?.lowercased() == "pjson"
        let parts = Self.pathParts(request.uri.path)
        let referer = request.headers[.referer]
        // Authentication: wherever ArcGIS clients send a token (see `RequestToken`): one of the token file's, else
        // one this server signed. A login is not refused for a stale token it carries.
        var user: String?
        if !Self.isTokenService(parts), let token = RequestToken.find(params: params, headers: request.headers) {
            if let u = options.tokens[token] {
                user = u
            } else if let u = options.login?.user(forToken: token, address: context.remoteAddress, referer: referer, now: options.clock()) {
                user = u
            } else {
                return ServiceError.invalidToken.response(pretty: pretty)
            }
        }
        if let limiter, !limiter.allow(user.map { "user:" + $0 } ?? "ip:" + context.remoteAddress) {
            return ArcGISResponse.error(429, "Too many requests.", details: ["at most \(limiter.perSecond) requests per second"], status: .tooManyRequests, pretty: pretty)
        }
        let agent = request.headers[.userAgent].map { String($0.prefix(256)) } ?? "unknown"
        var req = ServiceRequest(params: params, user: user, device: agent.isEmpty ? "unknown" : agent, address: context.remoteAddress)
        let logger = context.logger
        req.logError = { message in logger.error("\(message)") }
        let authority = request.head.authority ?? "\(options.host):\(options.port)"
        let prefix = request.uri.path.lowercased().hasPrefix("/arcgis/") ? "/arcgis" : ""
        req.rootURL = "http://\(authority)\(prefix)"
        req.serviceURL = "\(req.rootURL)/rest/services/\(options.serviceName.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? options.serviceName)/FeatureServer"
        let r = req
        do {
            if Self.isTokenService(parts) {
                // Off the event loop: checking a password is PBKDF2's deliberate work.
                let method = request.method.rawValue
                return try await routeOffThePool(write: false) { self.out(try self.generateToken(r, method: method), r) }
            }
            return try await routeOffThePool(write: request.method == .post && Self.isEdit(request.uri.path)) {
                // A schema change recorded since the last request is what this one is answered and validated with.
                try self.handles.followSchema()
                return try self.route(parts, r)
            }
        } catch let e as ServiceError {
            return e.response(pretty: pretty)
        } catch let e as EditLogError where e.kind == .unavailable {
            return ServiceError.unavailable(e).response(pretty: pretty)
        } catch let e as EditLogError {
            return ArcGISResponse.error(500, "Unable to complete operation.", details: [e.description], pretty: pretty)
        } catch {
            return ArcGISResponse.error(500, "Unable to complete operation.", details: ["\(error)"], pretty: pretty)
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

    /// The operations that record (a POST of one of them goes to the edit queue; a POSTed query is a read).
    static func isEdit(_ path: String) -> Bool {
        guard let last = path.split(separator: "/").last?.lowercased() else { return false }
        return ["applyedits", "addfeatures", "updatefeatures", "deletefeatures", "addattachment", "deleteattachments", "updateattachment",
                "createreplica", "synchronizereplica", "unregisterreplica"].contains(last)
    }

    func requireRead(_ r: ServiceRequest) throws(ServiceError) {
        if r.user == nil && !options.anonymousReads {
            throw ServiceError.tokenRequired()
        }
    }

    func requireEdit(_ r: ServiceRequest) throws(ServiceError) -> String {
        guard let u = r.user else { throw ServiceError.tokenRequired(["editing needs a token"]) }
        return u
    }

    func route(_ parts: [String], _ r: ServiceRequest) throws -> Response {
        if parts.map({ $0.lowercased() }) == ["sharing", "rest", "info"] { return out(restInfo(r, tokensAt: "/sharing/rest/generateToken"), r) }
        guard parts.count >= 2, parts[0].lowercased() == "rest" else { throw ServiceError.notFound }
        if parts.count == 2, parts[1].lowercased() == "info" { return out(restInfo(r, tokensAt: "/tokens/generateToken"), r) }
        guard parts[1].lowercased() == "services" else { throw ServiceError.notFound }
        try requireRead(r)
        if parts.count == 2 {
            return out(["currentVersion": Self.currentVersion, "folders": [], "services": [["name": .string(options.serviceName), "type": "FeatureServer"]]], r)
        }
        guard parts.count >= 4, parts[2].lowercased() == options.serviceName.lowercased(), parts[3].lowercased() == "featureserver" else {
            throw ServiceError.notFound
        }
        let rest = Array(parts.dropFirst(4))
        if rest.isEmpty { return out(try serviceRoot(), r) }
        if rest.count == 1, rest[0].lowercased() == "layers" { return out(try allLayers(), r) }
        if rest.count == 1, rest[0].lowercased() == "extractchanges" {
            guard options.changeTracking else { throw ServiceError(code: 400, message: "Requested operation is not supported by this service.", details: ["extractChanges: this service has no change tracking; use a replica"]) }
            return try extractChanges(r)
        }
        if rest.count == 1, rest[0].lowercased() == "applyedits" { return out(try serviceApplyEdits(r), r) }
        switch (rest.count, rest[0].lowercased()) {
        case (1, "createreplica"): return try createReplica(r)
        case (1, "synchronizereplica"): return try synchronizeReplica(r)
        case (1, "unregisterreplica"): return out(try unRegisterReplica(r), r)
        case (1, "replicas"): return out(try replicaList(r), r)
        case (2, "replicas"): return out(try replicaInfo(rest[1], r), r)
        case (2, "replicaresults"), (3, "replicaresults"):
            let key = rest.dropFirst().joined(separator: "/").lowercased()
            guard let v = replicaResults.get(key, user: r.user) else { throw ServiceError.notFound }
            return out(v, r)
        default: break
        }
        guard let id = Int(rest[0]), let layer = schema.layer(id: id) else { throw ServiceError.notFound }
        if rest.count == 1 { return out(try layerDefinition(layer), r) }
        let op = rest[1].lowercased()
        if rest.count == 2 {
            switch op {
            case "query": return try query(layer, r)
            case "applyedits": return out(try applyEdits(layer, r, mode: .applyEdits), r)
            case "addfeatures": return out(try applyEdits(layer, r, mode: .add), r)
            case "updatefeatures": return out(try applyEdits(layer, r, mode: .update), r)
            case "deletefeatures": return out(try applyEdits(layer, r, mode: .delete), r)
            case "queryattachments": return try queryAttachments(layer, r)
            case "queryrelatedrecords": return try queryRelatedRecords(layer, r)
            default: break
            }
        }
        if rest.count >= 3, let oid = Int64(rest[1]), rest[2].lowercased() == "attachments" {
            if rest.count == 3 { return try attachmentInfos(layer, oid: oid, r) }
            if rest.count == 4, let id = Int64(rest[3]) { return try attachmentBytes(layer, oid: oid, id: id, r) }
        }
        if rest.count == 3, let oid = Int64(rest[1]) {
            switch rest[2].lowercased() {
            case "addattachment": return try addAttachment(layer, oid: oid, r)
            case "updateattachment": return try updateAttachment(layer, oid: oid, r)
            case "deleteattachments": return try deleteAttachments(layer, oid: oid, r)
            default: break
            }
        }
        throw ServiceError.notFound
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
