import ArgumentParser
import EditLog
import EditLogHub
import EditLogStore
import Foundation

struct HubCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub",
        abstract: "A hub's event store on PostgreSQL.",
        discussion: """
            A store is named by postgres://USER@HOST[:PORT]/DATABASE. The password comes from the URL, PGPASSWORD or a \
            pgpass file (PGPASSFILE, else ~/.pgpass), never from another argument. `verify` accepts such a store too.
            """,
        subcommands: [HubInit.self])
}

struct HubInit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create a hub store in an empty PostgreSQL database from the same inputs as `init`.",
        discussion: """
            The events are those `init` would write to a log file (made first in a temporary file), copied in one \
            transaction: the same positions and hashes. The database gets the tables, the append-only triggers and the \
            editlog_appender role (read, insert events and blobs, move the head; no UPDATE or DELETE), which serve \
            nodes' logins are granted. On any error nothing is written.
            """)

    @Argument(help: "The store: postgres://USER@HOST[:PORT]/DATABASE (an empty database).")
    var store: String

    @OptionGroup var inputs: LogInputs

    @OptionGroup var output: JSONFlag

    func validate() throws {
        guard PostgresLocation.isPostgres(store) else {
            throw ValidationError("\(store) is not a postgres:// URL; a log file is created with `editlog init`")
        }
        if inputs.service.isEmpty { throw ValidationError("--service is required: give the service's layers JSON (or a root plus layer definitions).") }
        if let url = inputs.service.first(where: { $0.lowercased().hasPrefix("http://") || $0.lowercased().hasPrefix("https://") }) {
            throw ValidationError("--service \(url): hub init reads definition files; make a log from a live service with `editlog init`, then copy it")
        }
    }

    func run() async throws {
        try await handleErrors {
            let location = try PostgresLocation(store)
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("editlog-hub-init-\(UUID().uuidString)")
            try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let bar = ProgressBar(label: "baseline")
            let log = try EditLog.create(at: dir.appendingPathComponent("hub.editlog").path, service: try inputs.serviceDocuments(),
                                         webmap: try inputs.webmapJSON(), rules: try inputs.rulesJSON(), baseline: try inputs.baseline(),
                                         actor: inputs.actor, device: "editlog-cli", progress: { bar.update(Int64($0), Int64($1)) })
            bar.finish()
            let events = try log.events()
            let head = StoreHead(position: events.last?.position ?? 0, hash: events.last?.hash ?? EventHash.genesis)
            log.close()
            let hub = try await PostgresEventStore.create(location, logId: log.logId, initial: events.map { EventAppend(recorded: $0) })
            defer { hub.close() }
            let stored = try await hub.head()
            guard stored.position == head.position, stored.hash == head.hash else {
                throw EditLogError(.corrupt, "the hub's head (\(stored.position)) is not the log's (\(head.position)) after the copy", at: location.description)
            }
            if output.json {
                out(JSONValue.object(["logId": .string(hub.logId), "store": .string(location.description), "events": .int(stored.position),
                                      "head": .string(Hex.encode(stored.hash))]).serialized())
            } else {
                out("created \(location) (log \(hub.logId)): \(stored.position) events, chain head \(Hex.encode(stored.hash))")
            }
        }
    }
}
