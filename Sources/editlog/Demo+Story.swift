import EditLog
import EditLogServer
import EditLogSync
import Foundation
import Hummingbird

/// The demo after the day is recorded: replay as of a moment, a diff, two devices that edit one tree and exchange
/// bundles (and the conflict that makes), a hub served on loopback that a third device syncs with, the report,
/// and verify. Everything is written under `dir`; each step prints the command that does it by hand.
struct DemoStory {
    let log: EditLog
    let path: String
    let dir: String
    let fixtures: String
    let say: (String) -> Void
    var json: [String: JSONValue] = [:]

    func command(_ s: String) { say("  $ editlog " + s) }
    func section(_ s: String) { say("\n── \(s) " + String(repeating: "─", count: max(3, 72 - s.count))) }

    /// A new log from the fixtures (the same baseline, its own log id): another device.
    func device(_ name: String) throws(EditLogError) -> EditLog {
        var baseline: [BaselineSet] = []
        let baselineDir = fixtures + "/baseline"
        for f in ((try? FileManager.default.contentsOfDirectory(atPath: baselineDir)) ?? []).filter({ $0.hasSuffix(".json") }).sorted() {
            baseline.append(BaselineSet(name: f, layer: nil, json: try InputFiles.json(baselineDir + "/" + f)))
        }
        return try EditLog.create(at: dir + "/\(name).sqlite", service: [("service.json", try InputFiles.json(fixtures + "/service.json"))],
                                  webmap: try InputFiles.json(fixtures + "/webmap.json"), rules: try InputFiles.rules(fixtures + "/rules.json"),
                                  baseline: baseline, actor: "portland_parks", device: name)
    }

    /// One pop-up session setting `field` of a tree.
    func edit(_ log: EditLog, tree: String, field: String, value: String, actor: String, at: String, session: String) throws(EditLogError) {
        let lines = [#"{"op":"edit","layer":"Trees","globalId":"\#(tree)","session":"\#(session)","actor":"\#(actor)","device":"\#(actor)-tablet","at":"\#(at)"}"#,
                     #"{"op":"set","field":"\#(field)","value":\#(value),"session":"\#(session)","at":"\#(at)"}"#,
                     #"{"op":"finish","session":"\#(session)","at":"\#(at)"}"#]
        let bytes = Array(lines.joined(separator: "\n").utf8)
        _ = try log.record(try ScriptParser.parse(bytes), name: session, sha256: InputFiles.sha256(bytes))
    }

    mutating func replayAsOf(_ position: Int64, label: String) throws(EditLogError) {
        section("The dataset as of a moment")
        let out = dir + "/as-of-\(position).gpkg"
        command("replay \(path) --as-of \(position) --out \(out)")
        let (outcome, summary) = try log.replay(asOf: .position(position), to: out, overwrite: true)
        let counts = summary.features.map { "\($0.layer) \($0.count)" }.joined(separator: ", ")
        say("  every layer as it was at position \(outcome.position) (\(label)): \(counts)")
        json["replay"] = ["position": .int(outcome.position), "out": .string(out)]
    }

    mutating func diff(from: Int64, to: Int64) throws(EditLogError) {
        section("What changed between two moments")
        command("diff \(path) \(from) \(to)")
        let d = try log.diff(from: .position(from), to: .position(to))
        var kinds: [String: Int] = [:]
        for c in d.changes { kinds["\(c.layerName) \(c.kind.rawValue)", default: 0] += 1 }
        say("  \(d.events) events between them: " + kinds.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", "))
        for c in d.changes.prefix(4) {
            let layer = try log.layer(c.layerName)
            let fields = c.fields.prefix(3).map { "\($0.field) \(Diff.text($0, layer: layer, log: log, width: 14))" }.joined(separator: "; ")
            say("  \(c.kind.rawValue) \(c.layerName) \(c.globalId)  \(fields)")
        }
        if d.changes.count > 4 { say("  … \(d.changes.count - 4) more (--json or --format geojson for all)") }
        json["diff"] = ["from": .int(from), "to": .int(to), "features": .int(Int64(d.changes.count))]
    }

    /// Device B is made from the same fixtures and takes the day as a bundle; A and B edit one tree's SiteWidth
    /// offline; the bundles go both ways; the conflict is shown as `conflicts show` shows it.
    mutating func twoDevices(tree: String) throws(EditLogError) {
        section("Two devices edit the same tree and exchange bundles")
        let b = try device("device-b")
        defer { b.close() }
        let toB = dir + "/a-to-b.bundle", toA = dir + "/b-to-a.bundle"
        command("bundle export \(path) --out \(toB) --peer device-b")
        let ea = try log.exportBundle(to: toB, peer: "device-b", overwrite: true)
        command("bundle import \(b.path) \(toB)")
        let ia = try b.importBundle(at: toB, actor: "bob", device: "device-b")
        say("  device B took \(ia.report.imported) events (\(ea.bytes) bytes)")
        let mark = try b.lastPosition()
        try edit(log, tree: tree, field: "SiteWidth", value: "7.5", actor: "ann", at: "2026-06-02T12:00:00Z", session: "demo-ann-1")
        try edit(b, tree: tree, field: "SiteWidth", value: "2.5", actor: "bob", at: "2026-06-02T13:00:00Z", session: "demo-bob-1")
        say("  offline: ann sets SiteWidth 7.5 at 12:00 on A; bob sets it to 2.5 at 13:00 on B")
        command("bundle export \(b.path) --out \(toA) --since \(mark)")
        _ = try b.exportBundle(to: toA, since: .position(mark), overwrite: true)
        command("bundle import \(path) \(toA)")
        let ib = try log.importBundle(at: toA, actor: "ann", device: "device-a")
        _ = try log.exportBundle(to: toB, since: .lastExport(peer: "device-b"), peer: "device-b", overwrite: true)
        _ = try b.importBundle(at: toB, actor: "bob", device: "device-b")
        say("  A imported B's \(ib.report.imported) new events; B took A's edit back: both hold SiteWidth \(short(try Self.value(log, tree, "SiteWidth") ?? .null)) (A) / \(short(try Self.value(b, tree, "SiteWidth") ?? .null)) (B)")
        guard let r = try log.conflicts().last(where: { $0.conflict.globalId == tree && $0.conflict.field == "SiteWidth" }) else { return }
        let c = r.conflict
        command("conflicts \(path) list --feature \(tree)")
        command("conflicts \(path) show \(c.id)")
        func who(_ w: Author?) -> String { w.map { "\($0.actor) at \(Timestamp.human($0.time))" } ?? "the common base" }
        say("  conflict \(c.id) (\(c.kind.rawValue)) on \(c.field ?? "")")
        say("    base \(c.base.serialized()) · local \(c.local.value.serialized()) by \(who(c.local.writer)) · remote \(c.remote.value.serialized()) by \(who(c.remote.writer))")
        say("    \(c.ruleDescription) → \(c.winner.rawValue) won")
        json["conflict"] = c.json
    }

    /// The log served as a FeatureServer on 127.0.0.1 (a free port). Device C, made from the fixtures, syncs (it
    /// pulls the day); then ann edits the tree on the hub and cal edits it offline on C with an earlier clock; C's
    /// next sync uploads last, so its value wins (ArcGIS's last-in-wins), and the conflict names that rule.
    mutating func hubAndSync(tree: String) async throws(EditLogError) {
        section("A hub and a sync (ArcGIS REST on loopback)")
        let c = try device("device-c")
        defer { c.close() }
        command("serve \(path) --port 8080 --token-file tokens.txt      # tokens.txt: demo-token-0001 office")
        command("sync \(c.path) --service http://127.0.0.1:8080/arcgis/rest/services/Demo/FeatureServer --token-file token.txt")
        let first = try await Self.sync(log, c)
        say("  device C's first sync pulled \(first.pulled.count) changed features of the day")
        try edit(log, tree: tree, field: "SiteWidth", value: "6", actor: "ann", at: "2026-06-03T18:00:00Z", session: "demo-ann-2")
        try edit(c, tree: tree, field: "SiteWidth", value: "4", actor: "cal", at: "2026-06-03T09:00:00Z", session: "demo-cal-1")
        say("  ann sets SiteWidth 6 on the hub at 18:00; cal, offline, sets 4 on C at 09:00; C syncs again")
        let r = try await Self.sync(log, c)
        say("  pulled \(r.pulled.count), pushed \(r.pushed.count), \(r.conflicts.count) conflict(s): \(r.conflicts.first?.ruleDescription ?? "-") → \(r.conflicts.first?.winner.rawValue ?? "-") won")
        say("  SiteWidth now \(short(try Self.value(log, tree, "SiteWidth") ?? .null)) on the hub and \(short(try Self.value(c, tree, "SiteWidth") ?? .null)) on C")
        json["sync"] = r.json
    }

    /// A field of a tree as the log holds it now.
    static func value(_ log: EditLog, _ tree: String, _ field: String) throws(EditLogError) -> JSONValue? {
        try log.snapshot(layer: try log.layer("Trees").id, globalId: tree)?.attributes[field]
    }

    static func sync(_ hub: EditLog, _ device: EditLog) async throws(EditLogError) -> SyncReport {
        try await served(hub) { client throws(EditLogError) in
            try await SyncEngine(log: device, client: client, options: SyncOptions(policy: .lastInWins, actor: "cal", device: "device-c")).run()
        }
    }

    /// Serves `hub` on 127.0.0.1 (a free port) while `body` runs with a client of it.
    static func served<T>(_ hub: EditLog, _ body: (FeatureServiceClient) async throws(EditLogError) -> T) async throws(EditLogError) -> T {
        var options = ServerOptions(serviceName: "Demo")
        options.tokens = ["demo-token-0001": "office"]
        options.host = "127.0.0.1"
        options.port = 0
        let port = AsyncStream<Int>.makeStream()
        let app = makeApplication(log: hub, options: options, quiet: true) { p in port.continuation.yield(p); port.continuation.finish() }
        let server = Task { try await app.runService() }
        defer { server.cancel() }
        var bound: Int?
        for await p in port.stream { bound = p }
        guard let bound else { throw EditLogError(.io, "the demo's server did not start") }
        let client = try FeatureServiceClient(url: "http://127.0.0.1:\(bound)/arcgis/rest/services/Demo/FeatureServer", token: "demo-token-0001")
        let r = try await body(client)
        server.cancel()
        _ = await server.result
        return r
    }

    /// The hub's service gains a field (`schema apply`, as an administrator adds one to a live service); ann fills it on
    /// the hub; device C's next sync records the change before it pulls, and the value arrives.
    mutating func fieldAdded(tree: String) async throws(EditLogError) {
        section("The service changes: a field added on the hub")
        let c = try EditLog.open(at: dir + "/device-c.sqlite")
        defer { c.close() }
        var service = try InputFiles.json(fixtures + "/service.json").objectValue ?? [:]
        var layers = service["layers"]?.arrayValue ?? []
        if let i = layers.firstIndex(where: { $0["name"]?.stringValue == "Trees" }), var trees = layers[i].objectValue {
            trees["fields"] = .array((trees["fields"]?.arrayValue ?? []) + [.object([
                "name": "Notes", "type": "esriFieldTypeString", "alias": "Notes", "length": .int(500), "nullable": true, "editable": true])])
            layers[i] = .object(trees)
        }
        service["layers"] = .array(layers)
        let file = dir + "/service-with-notes.json"
        do { try Data(JSONValue.object(service).serialized().utf8).write(to: URL(fileURLWithPath: file)) } catch {
            throw EditLogError(.io, "cannot write \(file): \(error)")
        }
        command("schema \(path) apply --service \(file)")
        let applied = try log.changeSchema(service: [("service.json", .object(service))], cause: Cause.schemaApply, source: file, actor: "portland_parks", device: "office")
        say("  recorded at position \(applied.position ?? 0): " + applied.changes.map(\.text).joined(separator: "; "))
        try edit(log, tree: tree, field: "Notes", value: #""roots lifting the sidewalk""#, actor: "ann", at: "2026-06-04T09:00:00Z", session: "demo-ann-3")
        say("  ann fills Notes of the tree on the hub; device C syncs")
        command("sync \(c.path) --service http://127.0.0.1:8080/arcgis/rest/services/Demo/FeatureServer --token-file token.txt")
        let r = try await Self.sync(log, c)
        say("  C recorded the change at position \(r.schemaPosition ?? 0) (cause sync) before it pulled \(r.pulled.count) features: Notes = \(short(try Self.value(c, tree, "Notes") ?? .null))")
        command("schema \(c.path) diff 1 \(r.schemaPosition ?? 0)")
        json["schemaChange"] = ["hub": .int(applied.position ?? 0), "device": .int(r.schemaPosition ?? 0), "changes": .array(r.schemaChanges.map(\.json))]
    }

    /// The served log answers an ArcGIS `historicMoment` query: the tree's SiteWidth as of a moment of the day (client
    /// time), beside its value now.
    mutating func historicMoment(tree: String, at moment: String) async throws(EditLogError) {
        section("The service as of a moment (historicMoment)")
        guard let ms = Timestamp.parse(moment) else { throw EditLogError(.invalidInput, "not a moment: \(moment)") }
        let whereClause = "GlobalID='\(tree)'"
        say("  $ curl -g \"http://127.0.0.1:8080/arcgis/rest/services/Demo/FeatureServer/0/query?where=\(whereClause)&outFields=SiteWidth&historicMoment=\(ms)&token=demo-token-0001&f=json\"      # \(moment)")
        let (then, now) = try await Self.served(log) { client throws(EditLogError) in
            let q: [(String, String)] = [("where", whereClause), ("outFields", "SiteWidth"), ("returnGeometry", "false")]
            let a = try await client.json("0/query", q + [("historicMoment", String(ms))])
            let b = try await client.json("0/query", q)
            return (a["features"]?.arrayValue?.first?["attributes"]?["SiteWidth"] ?? .null, b["features"]?.arrayValue?.first?["attributes"]?["SiteWidth"] ?? .null)
        }
        say("  SiteWidth as of \(moment): \(short(then)); now: \(short(now))")
        json["historicMoment"] = ["moment": .int(ms), "then": then, "now": now]
    }

    mutating func report() throws(EditLogError) {
        section("The report")
        let out = dir + "/report.html"
        command("report \(path) --out \(out)")
        let r = try log.report()
        do { try r.writeHTML(to: out) } catch let e as EditLogError { throw e } catch { throw EditLogError(.io, "cannot write the report: \(error)", at: out) }
        say("  \(out): \(r.sessionCount) sessions; after the baseline (position \(r.baselineEnd)) features \(r.edited.created) created, \(r.edited.updated) updated, \(r.edited.deleted) deleted; \(r.conflicts.count) conflicts (one HTML file, no script)")
        json["report"] = .string(out)
    }
}
