import ArgumentParser
import EditLog
import EditLogHub
import EditLogServer
import Foundation
import Hummingbird

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the log as an ArcGIS FeatureServer: queries read the projections; edits are recorded as edit sessions of the token's user.",
        discussion: """
            Given a postgres:// store, the server is one node of a hub: its read models are a local copy in --cache, kept \
            up with the store; every edit is decided on the local copy caught up to the store's head and appended to the \
            store before it is answered. Run as many nodes as needed on one store; devices sync through any of them.
            Paths as ArcGIS Server: /arcgis/rest/services/NAME/FeatureServer[/ID[/query|/applyEdits|…]].
            The token file holds one `TOKEN USER` pair per line; clients send it as `token=`, `X-Esri-Authorization: Bearer`, `Authorization: Bearer` or the `agstoken` cookie.
            With --users, clients log in as ArcGIS's do: POST /arcgis/tokens/generateToken (or /arcgis/sharing/rest/generateToken) \
            with username and password gives a token signed by --token-key, bound to the client's address or referer, good \
            for `expiration` minutes; /arcgis/rest/info names the token service. After 5 failed logins for a name (20 from an \
            address) logins are refused for 30 s, doubling up to 15 minutes.
            """)

    @OptionGroup var log: LogOptions

    @Option(name: .long, help: "The port to listen on (0: any free port, printed).")
    var port: Int = 8080

    @Option(name: .long, help: "The address to listen on.")
    var host: String = "127.0.0.1"

    @Option(name: .long, help: "The service name in the URL (default: the log file's base name).")
    var name: String?

    @Option(name: .customLong("token-file"), help: "A file of `TOKEN USER` lines; edits need one of these tokens.")
    var tokenFile: String?

    @Option(name: .customLong("users"), help: ArgumentHelp(
        "A users file (`editlog users add`): its users log in with a name and a password at /arcgis/tokens/generateToken.",
        valueName: "file"))
    var usersFile: String?

    @Option(name: .customLong("token-key"), help: ArgumentHelp(
        "The key that signs login tokens, created (mode 0600) where there is none. Default: LOG.token-key beside a log file; for a postgres:// store, <logId>.token-key in --cache. Nodes of one hub that share devices share one key file.",
        valueName: "file"))
    var tokenKey: String?

    @Option(name: .customLong("token-max-minutes"), help: "The longest lifetime a login token can be asked for.")
    var tokenMaxMinutes: Int = 1440

    @Flag(name: .customLong("no-change-tracking"), help: "Serve without change tracking (no extractChanges), as an ArcGIS Server service published with Sync only: clients take changes through replicas.")
    var noChangeTracking = false

    @Flag(name: .customLong("anonymous-reads"), help: "Allow definitions and queries without a token.")
    var anonymousReads = false

    @Option(name: .customLong("max-record-count"), help: "The most features one query returns.")
    var maxRecordCount: Int = 1000

    @Option(name: .customLong("max-request-bytes"), help: "The largest request body accepted.")
    var maxRequestBytes: Int = 16 << 20

    @Option(name: .customLong("rate-limit"), help: "Requests per second allowed per client (user, else address).")
    var rateLimit: Double?

    @Option(name: .customLong("max-queued-reads"), help: "Reads running or waiting at once; one more gets ArcGIS's 503 with Retry-After.")
    var maxQueuedReads: Int = 256

    @Option(name: .customLong("max-queued-edits"), help: "Edits running or waiting at once; one more gets ArcGIS's 503 with Retry-After.")
    var maxQueuedEdits: Int = 64

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        guard maxRecordCount >= 1 else { throw ValidationError("--max-record-count must be at least 1") }
        guard maxRequestBytes >= 1024 else { throw ValidationError("--max-request-bytes must be at least 1024") }
        guard tokenMaxMinutes >= 1 else { throw ValidationError("--token-max-minutes must be at least 1") }
        if tokenKey != nil && usersFile == nil { throw ValidationError("--token-key goes with --users FILE") }
        if let rateLimit, !(rateLimit > 0) { throw ValidationError("--rate-limit must be positive") }
        guard maxQueuedReads >= 1, maxQueuedEdits >= 1 else { throw ValidationError("--max-queued-reads and --max-queued-edits must be at least 1") }
        if let name, name.isEmpty || name.contains("/") { throw ValidationError("--name must be a non-empty name without \"/\"") }
    }

    func run() async throws {
        try await handleErrors {
            var options = ServerOptions(serviceName: name ?? ServerOptions.defaultServiceName(forLogAt: log.db))
            options.host = host
            options.port = port
            options.anonymousReads = anonymousReads
            options.changeTracking = !noChangeTracking
            options.maxRecordCount = maxRecordCount
            options.maxRequestBytes = maxRequestBytes
            options.rateLimit = rateLimit
            options.maxQueuedReads = maxQueuedReads
            options.maxQueuedEdits = maxQueuedEdits
            if let tokenFile {
                guard let data = FileManager.default.contents(atPath: tokenFile) else {
                    throw EditLogError(.notFound, "cannot read the token file", at: tokenFile)
                }
                options.tokens = try TokenFile.parse(String(decoding: data, as: UTF8.self))
            }
            let editLog: EditLog
            var node: HubNode?
            if PostgresLocation.isPostgres(log.db) {
                // A node of the hub: its local copy in --cache, caught up, kept up by the store's notifications.
                let n = try log.openNode()
                n.startFollowing()
                options.writer = n
                options.serviceItemId = n.store.logId
                if name == nil { options.serviceName = ServerOptions.defaultServiceName(forLogAt: try PostgresLocation(log.db).database) }
                editLog = n.local
                node = n
            } else {
                editLog = try EditLog.open(at: log.db)
            }
            if let usersFile {
                let keyPath = tokenKey ?? (node.map { (log.cacheDirectory as NSString).appendingPathComponent("\($0.store.logId).token-key") } ?? log.db + ".token-key")
                options.login = try Login(usersPath: usersFile, signer: try TokenSigner.loadOrCreate(at: keyPath), maxMinutes: tokenMaxMinutes)
            }
            defer { node?.close() }
            // Asked to stop, a node first ends its waits (a store that does not answer, its lock), so requests in
            // flight get their 503 at once and the server's graceful shutdown does not wait for them.
            let stopSignals: [any DispatchSourceSignal] = node.map { n in
                [SIGTERM, SIGINT].map { sig -> any DispatchSourceSignal in
                    let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
                    source.setEventHandler { n.stop() }
                    source.resume()
                    return source
                }
            } ?? []
            defer { stopSignals.forEach { $0.cancel() } }
            let serviceName = options.serviceName, shownHost = host
            let app = makeApplication(log: editLog, options: options) { port in
                out("editlog: serving http://\(shownHost):\(port)/arcgis/rest/services/\(serviceName)/FeatureServer")
            }
            do { try await app.runService() } catch { throw EditLogError(.io, "the server stopped: \(error)") }
            out("editlog: writer figures \(options.groupCommits.figures.serialized())")
            if let node {
                out("editlog: node stopped: \(node.stats.writes) writes, \(node.stats.redecided) decided again after another node appended first")
                out("editlog: node figures \(node.figures.serialized())")
            }
        }
    }
}
