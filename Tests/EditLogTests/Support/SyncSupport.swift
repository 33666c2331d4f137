import EditLog
import EditLogServer
import EditLogSync
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// A hub log served by `editlog serve`'s application on 127.0.0.1 (a free port) and a device log, both made
/// from the Trees of Portland fixtures (the same baseline, as a device checked out from the hub would be).
enum SyncRig {
    static let token = "tok-sync-0001"
    static let hubUser = "hub_sync"
    static let tree1 = "{32F8DBAB-B462-43E8-9C41-8A83EB04159C}"

    static func hub(_ tmp: TempPath) throws -> EditLog {
        try Fixture.treesLog(at: tmp.path, seed: 11, logId: "log-hub", clockStart: 1_780_000_000_000)
    }

    static func device(_ tmp: TempPath, name: String = "device", seed: UInt64 = 22) throws -> EditLog {
        try Fixture.treesLog(at: tmp.path, seed: seed, logId: "log-\(name)", clockStart: 1_780_000_500_000)
    }

    /// Serves `hub` for the duration of `body`, which gets the FeatureServer URL. `configure` changes the options
    /// (the token file's one token, change tracking) before the server starts.
    static func serve(_ hub: EditLog, changeTracking: Bool = true, configure: (inout ServerOptions) throws -> Void = { _ in },
                      _ body: @escaping @Sendable (String) async throws -> Void) async throws {
        var options = ServerOptions(serviceName: "Trees")
        options.changeTracking = changeTracking
        options.tokens = [token: hubUser]
        try configure(&options)
        options.host = "127.0.0.1"
        options.port = 0
        let app = makeApplication(log: hub, options: options)
        try await app.test(.live) { client in
            let port = try #require(client.port)
            try await body("http://127.0.0.1:\(port)/arcgis/rest/services/Trees/FeatureServer")
        }
    }

    static func sync(_ log: EditLog, _ url: String, policy: MergePolicy = .lastInWins, token: String? = SyncRig.token,
                     transport: any ServiceTransport = HTTPTransport(),
                     failpoint: (@Sendable (String) throws -> Void)? = nil, generationWindow: Int64 = 20_000,
                     buildNextWindowFirst: Bool = false) async throws -> SyncReport {
        let client = try FeatureServiceClient(url: url, token: token, transport: transport)
        var options = SyncOptions(policy: policy, actor: "device_operator", device: "test")
        options.failpoint = failpoint
        options.generationWindow = generationWindow
        options.buildNextWindowFirst = buildNextWindowFirst
        return try await SyncEngine(log: log, client: client, options: options).run()
    }

    /// What both sides must agree on: every live feature by GlobalID with its attributes (editor tracking left
    /// out: each side stamps its own), geometry and live attachments (GlobalID, name, bytes).
    static func userState(_ log: EditLog) throws -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        for layer in log.schema.layers {
            for f in try log.allFeatures(layer: layer.id) where !f.deleted {
                var attrs: [String: JSONValue] = [:]
                for (k, v) in f.attributes where !layer.isEditorTrackingField(k) {
                    attrs[k] = v.doubleValue.map { JSONValue.double($0) } ?? v
                }
                let atts = try log.attachmentSnapshots(of: f.globalId).map { a -> JSONValue in
                    ["globalId": .string(a.globalId), "name": .string(a.name), "sha256": .string(a.sha256)]
                }
                out[f.globalId] = ["layer": .int(Int64(layer.id)), "attributes": .object(attrs), "geometry": f.geometry ?? .null,
                                   "attachments": .array(atts.sorted { $0.serialized() < $1.serialized() })]
            }
        }
        return out
    }

    /// The differences between two states, for a readable failure.
    static func differences(_ a: [String: JSONValue], _ b: [String: JSONValue]) -> [String] {
        var out: [String] = []
        for k in Set(a.keys).union(b.keys).sorted() where a[k] != b[k] {
            out.append("\(k): \(a[k].map { $0.serialized() } ?? "absent") vs \(b[k].map { $0.serialized() } ?? "absent")")
        }
        return out
    }

    /// A tree with an inspection (composite child) and a photo on each, added in two sessions.
    static func addTree(_ log: EditLog, _ n: Int, actor: String, at: String) throws -> (tree: String, inspection: String, photo: String, inspectionPhoto: String) {
        let tree = newGID(n), insp = newGID(n + 1), photo = newGID(n + 2), ip = newGID(n + 3)
        let lines = [
            #"{"op":"create","layer":"Trees","globalId":"\#(tree)","session":"\#(actor)-t\#(n)","at":"\#(at)","geometry":{"x":-122.63,"y":45.52},"attributes":{"DBH":3,"PlantedBy":"\#(actor)"}}"#,
            #"{"op":"attach","attachmentId":"\#(photo)","name":"tree-\#(actor).jpg","contentType":"image/jpeg","dataBase64":"\#(Data("tree of \(actor)".utf8).base64EncodedString())","session":"\#(actor)-t\#(n)"}"#,
            #"{"op":"finish","session":"\#(actor)-t\#(n)","at":"\#(at)"}"#,
            #"{"op":"create","layer":"Inspections","globalId":"\#(insp)","session":"\#(actor)-i\#(n)","at":"\#(at)","parent":{"relationship":"Tree_Inspections","globalId":"\#(tree)"},"attributes":{"Condition":"Poor","DBH":4,"CollectedDate":"2026-06-01T00:00:00Z"}}"#,
            #"{"op":"attach","attachmentId":"\#(ip)","name":"inspection-\#(actor).jpg","contentType":"image/jpeg","dataBase64":"\#(Data("inspection of \(actor)".utf8).base64EncodedString())","session":"\#(actor)-i\#(n)"}"#,
            #"{"op":"finish","session":"\#(actor)-i\#(n)","at":"\#(at)"}"#,
        ]
        for cmd in try script(lines, actor: actor) { _ = try log.apply(cmd) }
        return (tree, insp, photo, ip)
    }

    static func set(_ log: EditLog, _ gid: String, layer: String = "Trees", _ fields: [(String, String)], at: String, actor: String, session: String) throws {
        var lines = [#"{"op":"edit","layer":"\#(layer)","globalId":"\#(gid)","session":"\#(session)","actor":"\#(actor)","at":"\#(at)"}"#]
        for (f, v) in fields { lines.append(#"{"op":"set","field":"\#(f)","value":\#(v),"session":"\#(session)","at":"\#(at)"}"#) }
        lines.append(#"{"op":"finish","session":"\#(session)","at":"\#(at)"}"#)
        for cmd in try script(lines, actor: actor) { _ = try log.apply(cmd) }
    }
}

/// A transport that fails on chosen calls, then behaves: a connection dropped before the request, a response
/// lost after the service applied it, or a server 500.
final class FlakyTransport: ServiceTransport, @unchecked Sendable {
    enum Failure { case drop, lostResponse, status500 }
    let inner = HTTPTransport()
    let lock = NSLock()
    private var calls: [String: Int] = [:]
    /// Gets the endpoint (the URL's last path component: applyEdits, extractChanges, query…) and how many
    /// calls to it this one is (1-based).
    let failOn: @Sendable (String, Int) -> Failure?
    init(failOn: @escaping @Sendable (String, Int) -> Failure?) { self.failOn = failOn }

    func next(_ url: String) -> Failure? {
        lock.lock(); defer { lock.unlock() }
        let endpoint = String(url.split(separator: "/").last ?? "")
        calls[endpoint, default: 0] += 1
        return failOn(endpoint, calls[endpoint]!)
    }

    /// How many calls went to an endpoint.
    func count(_ endpoint: String) -> Int { lock.lock(); defer { lock.unlock() }; return calls[endpoint] ?? 0 }

    func run(_ url: String, _ send: () async throws -> TransportResponse) async throws -> TransportResponse {
        switch next(url) {
        case nil: return try await send()
        case .drop?: throw URLError(.networkConnectionLost)
        case .status500?: return TransportResponse(status: 500, body: Array("Internal Server Error".utf8), contentType: "text/plain")
        case .lostResponse?:
            _ = try await send()
            throw URLError(.networkConnectionLost)
        }
    }

    func get(_ url: String, query: [(String, String)]) async throws -> TransportResponse {
        try await run(url) { try await inner.get(url, query: query) }
    }

    func postForm(_ url: String, form: [(String, String)]) async throws -> TransportResponse {
        try await run(url) { try await inner.postForm(url, form: form) }
    }
}

/// A transport that answers the service root without change tracking (no `extractChangesCapabilities`,
/// `changeTrackingInfo` or ChangeTracking capability) and without Sync, as many FeatureServers do.
struct NoChangeTrackingTransport: ServiceTransport {
    let inner = HTTPTransport()

    func strip(_ url: String, _ r: TransportResponse) -> TransportResponse {
        guard url.hasSuffix("/FeatureServer"), case .object(var o)? = try? JSONParser.parse(r.body) else { return r }
        o["extractChangesCapabilities"] = nil
        o["changeTrackingInfo"] = nil
        // Nor Sync: with it, `sync` would take changes through a replica (`SyncReplicaTests`).
        o["syncEnabled"] = false
        o["syncCapabilities"] = nil
        if let c = o["capabilities"]?.stringValue {
            o["capabilities"] = .string(c.split(separator: ",").filter { !$0.lowercased().contains("changetracking") && $0.lowercased() != "sync" }.joined(separator: ","))
        }
        var out = r
        out.body = JSONValue.object(o).serializedBytes()
        return out
    }

    func get(_ url: String, query: [(String, String)]) async throws -> TransportResponse { strip(url, try await inner.get(url, query: query)) }
    func postForm(_ url: String, form: [(String, String)]) async throws -> TransportResponse { strip(url, try await inner.postForm(url, form: form)) }
}
