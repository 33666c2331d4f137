import EditLog
import EditLogSync
import Foundation

/// Replicas on `serve` (a hub of N trees in a process of its own, as `sync`'s): `replica-create` times
/// createReplica of every layer with its attachments (by URL), against the floor of the same features read
/// through `query` pages; `replica-sync` times a synchronizeReplica uploading 1,000 updates (each a session of
/// the replica, the record, the download of nothing else), against the floor of 1,000 other trees' same updates
/// through the service-level `applyEdits`.
enum ReplicaScenario: Scenario {
    static let name = "replica"
    static let summary = "createReplica of N trees with attachments (N: 100k full, 2k --quick) vs their query pages; synchronizeReplica of 1,000 uploaded updates vs the same through applyEdits"

    static func post(_ url: String, _ form: [(String, String)]) throws -> JSONValue {
        try SyncScenario.blocking {
            let r = try await HTTPTransport().postForm(url, form: form + [("f", "json"), ("token", SyncHub.token)])
            let v = try JSONParser.parse(r.body)
            if let e = v["error"] { throw RawError(description: "\(url): \(e.serialized())") }
            return v
        }
    }

    static func run(_ ctx: BenchContext) throws -> [Measurement] {
        let n = ctx.sizes.syncChanges
        let base = try ctx.baseLog(trees: n)
        let hubPath = ctx.path("replica-hub.editlog")
        ctx.remove(hubPath)
        try FileManager.default.copyItem(atPath: base, toPath: hubPath)
        defer { ctx.remove(hubPath) }
        let log = try EditLog.open(at: hubPath, readonly: true)
        let layers = log.schema.layers
        let trees = try log.queryFeatures(layer: "0", FeatureQuery(limit: 2 * 1_000 + 10)).features.compactMap { $0["attributes"]?["GlobalID"]?.stringValue }
        log.close()
        let hub = try SyncHub.Child(path: hubPath, recordTrees: 0, ctx: ctx)
        defer { hub.stop() }
        let url = hub.url
        let ids = layers.map { String($0.id) }.joined(separator: ",")

        ctx.note("timed: createReplica of every layer (\(n) trees), attachments by URL")
        var create = Stopwatch()
        let created = try create.time {
            try post(url + "/createReplica", [("replicaName", "bench"), ("layers", ids), ("syncModel", "perReplica"), ("returnAttachments", "true"),
                                              ("transportType", "esriTransportTypeEmbedded"), ("dataFormat", "json")])
        }
        let sent = created["layers"]?.arrayValue?.reduce(0) { $0 + ($1["features"]?.arrayValue?.count ?? 0) } ?? 0
        let attachments = created["layers"]?.arrayValue?.reduce(0) { $0 + ($1["attachments"]?.arrayValue?.count ?? 0) } ?? 0
        var c = Measurement(scenario: "replica-create", kind: .throughput, size: "\(Fmt.count(n)) trees, \(Fmt.count(sent)) features, \(Fmt.count(attachments)) attachments",
                            units: sent, unitName: "features", seconds: create.seconds, cpuSeconds: create.cpuSeconds, goal: .ratioAtLeast(0.5))
        if !ctx.prepareOnly {
            var pages = Stopwatch()
            let bytes = try pages.time { try SyncScenario.queryPages(url, layers: layers) }
            c.floorSeconds = pages.seconds
            c.floorCpuSeconds = pages.cpuSeconds
            c.floorDescription = "every layer's query pages (\(SyncHub.maxRecordCount) a page) downloaded and parsed over the same loopback (\(Fmt.mb(Int64(bytes))))"
        }

        let count = min(1_000, trees.count / 2)
        func updates(_ gids: ArraySlice<String>, dbh: Double) -> String {
            JSONValue.array(gids.map { ["attributes": ["GlobalID": .string($0), "DBH": .double(dbh)]] }).serialized()
        }
        let replicaId = created["replicaID"]?.stringValue ?? ""
        let gen = created["replicaServerGen"]?.intValue ?? 0
        ctx.note("timed: synchronizeReplica uploading \(count) updates")
        var sync = Stopwatch()
        _ = try sync.time {
            try post(url + "/synchronizeReplica", [("replicaID", replicaId), ("replicaServerGen", String(gen)), ("syncDirection", "bidirectional"),
                                                   ("edits", #"[{"id":0,"features":{"updates":\#(updates(trees[0..<count], dbh: 41.5))}}]"#)])
        }
        var u = Measurement(scenario: "replica-sync", kind: .throughput, size: "\(Fmt.count(count)) uploaded updates", units: count, unitName: "edits",
                            seconds: sync.seconds, cpuSeconds: sync.cpuSeconds, goal: .ratioAtLeast(0.5))
        if !ctx.prepareOnly {
            var apply = Stopwatch()
            _ = try apply.time {
                try post(url + "/applyEdits", [("useGlobalIds", "true"), ("edits", #"[{"id":0,"updates":\#(updates(trees[count..<(2 * count)], dbh: 42.5))}]"#)])
            }
            u.floorSeconds = apply.seconds
            u.floorCpuSeconds = apply.cpuSeconds
            u.floorDescription = "the same number of updates of other trees through the service-level applyEdits (useGlobalIds, one request)"
        }
        return [c, u]
    }
}
