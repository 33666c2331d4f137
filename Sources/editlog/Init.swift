import ArgumentParser
import EditLog
import EditLogSync
import Foundation

struct Init: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create a log for a feature service.",
        discussion: """
            --service takes the FeatureServer/layers?f=json response, or a service root plus layer definitions \
            (repeat --service). --data loads Esri JSON feature sets as the baseline; the layer is the file name's stem \
            or LAYER=FILE. --service URL (a live FeatureServer, with --token or --token-file) reads its definitions \
            and every feature (paged as each layer allows) as the baseline, and records the service's generation so \
            the first `sync` continues from there. On any error nothing is written.
            """)

    @Argument(help: "The log file to create (must not exist).")
    var db: String

    @OptionGroup var inputs: LogInputs

    @OptionGroup var tokens: TokenOptions

    @OptionGroup var output: JSONFlag

    func validate() throws {
        if inputs.service.isEmpty { throw ValidationError("--service is required: give the service's layers JSON (or a root plus layer definitions), or its URL.") }
        if let url = liveService {
            if inputs.service.count > 1 { throw ValidationError("--service \(url) is a live service: give it alone (its definitions are read from it)") }
            if !inputs.data.isEmpty { throw ValidationError("--data goes with definition files: the features of --service \(url) are read from it") }
        } else if tokens.given {
            throw ValidationError("--token, --token-file and --user go with --service URL")
        }
    }

    /// The FeatureServer URL `--service` names, if it names one (not a file).
    var liveService: String? {
        inputs.service.first { let l = $0.lowercased(); return (l.hasPrefix("http://") || l.hasPrefix("https://")) && !FileManager.default.fileExists(atPath: $0) }
    }

    func run() async throws {
        try await handleErrors {
            var live: (client: FeatureServiceClient, snapshot: ServiceSnapshot)?
            // The baseline is the service's features; its attachments and ObjectIDs come with the first `sync`,
            // whose snapshot finds this log holding the same features.
            if let url = liveService {
                let client = try tokens.client(url: url)
                let bar = ProgressBar(label: "features")
                let snap = try await ServiceSnapshot.read(client, progress: { bar.update($0, $1) })
                bar.finish()
                live = (client, snap)
            }
            let docs = try live.map { [(name: "layers", json: $0.snapshot.layers)] } ?? inputs.serviceDocuments()
            let bar = ProgressBar(label: "baseline")
            let log = try EditLog.create(at: db, service: docs, webmap: try inputs.webmapJSON(), rules: try inputs.rulesJSON(),
                                         baseline: (live?.snapshot.sets ?? []) + (try inputs.baseline()), actor: inputs.actor, device: "editlog-cli",
                                         progress: { bar.update(Int64($0), Int64($1)) })
            bar.finish()
            let counts = try log.eventCount()
            if output.json {
                out(JSONValue.object(["logId": .string(log.logId), "path": .string(db), "events": .int(counts),
                                      "layers": .array(log.schema.layers.map { .object(["id": .int(Int64($0.id)), "name": .string($0.name), "editable": .bool($0.popup != nil)]) })]).serialized())
            } else {
                out("created \(db) (log \(log.logId)): \(log.schema.layers.count) layers and tables, \(counts) events")
                for l in log.schema.layers {
                    out("  \(l.id) \(l.name)\(l.isTable ? " (table)" : "")\(l.popup == nil ? " — no pop-up, read-only" : "")")
                }
            }
        }
    }
}

/// What `init` and `hub init` make a log from: the service's definitions, pop-ups, rules and baseline.
struct LogInputs: ParsableArguments {
    @Option(name: .long, help: "A service, layers or layer definition JSON file (repeatable); for `init`, or one FeatureServer URL.")
    var service: [String] = []

    @Option(name: .long, help: "A web map JSON file giving each layer's pop-up.")
    var webmap: String?

    @Option(name: .long, help: "A rules file (latestChildRollup, pointInPolygonLookup, reverseGeocode).")
    var rules: String?

    @Option(name: .long, parsing: .upToNextOption, help: "Baseline feature sets: FILE or LAYER=FILE (repeatable).")
    var data: [String] = []

    @Option(name: .long, help: "Actor recorded on the schema and baseline events.")
    var actor = "editlog"

    func serviceDocuments() throws(EditLogError) -> [(name: String, json: JSONValue)] {
        try service.map { p throws(EditLogError) in (name: (p as NSString).lastPathComponent, json: try InputFiles.json(p)) }
    }

    func webmapJSON() throws(EditLogError) -> JSONValue? { try webmap.map { p throws(EditLogError) in try InputFiles.json(p) } }

    func rulesJSON() throws(EditLogError) -> JSONValue? { try rules.map { p throws(EditLogError) in try InputFiles.rules(p) } }

    /// `--data` values: FILE (the layer is the file name's stem) or LAYER=FILE.
    func baseline() throws(EditLogError) -> [BaselineSet] {
        try data.map { d throws(EditLogError) in
            var layer: String?
            var path = d
            if let eq = d.firstIndex(of: "="), !FileManager.default.fileExists(atPath: d) {
                layer = String(d[..<eq]); path = String(d[d.index(after: eq)...])
            }
            return BaselineSet(name: path, layer: layer, json: try InputFiles.json(path))
        }
    }
}
