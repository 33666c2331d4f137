import EditLog
import Foundation
import Hummingbird
import Synchronization

/// `createReplica` (JSON only): the features of the replica's layers that its queries and area select, with their
/// attachments if asked, at the log's head, which becomes the replica's first `replicaServerGen`. The replica is
/// a `ReplicaCreated` event of the token's user, so auditors see who took what offline. `transportType`
/// `esriTransportTypeEmbedded` answers the data; `esriTransportTypeUrl` answers a `responseUrl` to fetch it from;
/// `async=true` answers a `statusUrl` whose status names the `resultUrl`. Results are kept in memory for an hour.
extension FeatureService {
    /// The service root's sync capabilities: what the replica operations below do.
    static let syncCapabilities: JSONValue = [
        "supportsAsync": true, "supportsRegisteringExistingData": false, "supportsSyncDirectionControl": true, "supportsPerLayerSync": true,
        "supportsPerReplicaSync": true, "supportsSyncModelNone": true, "supportsRollbackOnFailure": true, "supportsAttachmentsSyncDirection": false,
        "supportsBiDirectionalSyncForServer": false,
    ]

    struct ReplicaLayerQuery {
        var option = "useFilter"
        var predicate: FeaturePredicate?
        var whereText: String?
        var useGeometry = true
    }

    func createReplica(_ r: ServiceRequest) throws -> Response {
        let user = try requireEdit(r)
        let p = r.params
        guard let layerText = p["layers"], !layerText.isEmpty else { throw ServiceError.invalid("layers is required: the ids of the layers and tables to take offline") }
        var layers: [LayerSchema] = []
        for id in try Self.objectIdList(layerText) {
            guard let l = schema.layer(id: Int(id)) else { throw ServiceError.invalid("layers: the service has no layer or table \(id)") }
            if !layers.contains(where: { $0.id == l.id }) { layers.append(l) }
        }
        guard !layers.isEmpty else { throw ServiceError.invalid("layers is empty") }
        let format = p["dataFormat"]?.lowercased() ?? "json"
        guard format == "json" else {
            throw ServiceError.invalid("dataFormat \(format) is not supported: only json (a mobile geodatabase, sqlite, is not made here)")
        }
        let syncModel = p["syncModel"] ?? "none"
        guard ["perReplica", "perLayer", "none"].contains(syncModel) else { throw ServiceError.invalid("syncModel must be perReplica, perLayer or none") }
        let direction = p["syncDirection"] ?? "bidirectional"
        guard Self.syncDirections.contains(direction) else { throw ServiceError.invalid("syncDirection must be bidirectional, upload, download or snapshot") }
        let transport = p["transportType"] ?? "esriTransportTypeEmbedded"
        guard transport == "esriTransportTypeEmbedded" || transport == "esriTransportTypeUrl" else {
            throw ServiceError.invalid("transportType must be esriTransportTypeEmbedded or esriTransportTypeUrl")
        }
        var area: ReplicaArea?, inSR: Int64?
        if let g = p["geometry"], !g.isEmpty {
            let parsed = try ReplicaArea.parse(geometry: g, type: p["geometryType"], inSR: p["inSR"])
            area = parsed.area
            inSR = parsed.inSR
        }
        let queries = try Self.layerQueries(p["layerQueries"], layers: layers)
        let withAttachments = p.bool("returnAttachments", default: false)
        let byURL = p.bool("returnAttachmentsDataByUrl", default: p.bool("returnAttachmentsDatabyUrl", default: true))
        let name = p["replicaName"].flatMap { $0.isEmpty ? nil : $0 } ?? "replica"

        try handles.refresh()
        // One edit at a time: the data and the generation are read where nothing is written in between.
        let replicaId = "{" + handles.ids.next().uuidString.uppercased() + "}"
        let (data, gen, counts) = try handles.read { log in
            let gen = try log.lastPosition()
            var out: [JSONValue] = []
            var counts: [String: JSONValue] = [:]
            for l in layers {
                let features = try self.replicaFeatures(l, queries[l.id] ?? ReplicaLayerQuery(), area: area, log: log)
                counts[String(l.id)] = .int(Int64(features.count))
                var o: [String: JSONValue] = ["id": .int(Int64(l.id)), "features": .array(features)]
                if withAttachments && l.hasAttachments { o["attachments"] = try self.replicaAttachments(l, features: features, byURL: byURL, log: log, r) }
                out.append(.object(o))
            }
            return (out, gen, counts)
        }
        let created = ReplicaCreated(replicaId: replicaId, replicaName: name, user: user, device: r.device, layers: layers.map(\.id),
                                     layerQueries: Self.layerQueriesJSON(queries), geometry: area?.json, inSR: inSR, syncModel: syncModel,
                                     syncDirection: direction, returnAttachments: withAttachments, serverGen: gen, features: counts)
        _ = try handles.write { log in
            try log.appendSystemEvents([SystemEvent(stream: StreamName.replicas, created, cause: Cause.replicaOperation)],
                                       actor: user, device: r.device)
        }
        var result: [String: JSONValue] = [
            "replicaName": .string(name), "replicaID": .string(replicaId), "replicaServerGen": .int(gen), "transportType": .string(transport),
            "responseType": "esriReplicaResponseTypeData", "layers": .array(data),
        ]
        if syncModel == "perLayer" { result["layerServerGens"] = .array(layers.map { ["id": .int(Int64($0.id)), "serverGen": .int(gen)] }) }
        return try answer(result, r, transport: transport, async: p.bool("async", default: false), user: user)
    }

    static let syncDirections: Set<String> = ["bidirectional", "upload", "download", "snapshot"]

    /// The answer of a replica operation as the client asked for it: embedded, by URL, or as an asynchronous job.
    func answer(_ result: [String: JSONValue], _ r: ServiceRequest, transport: String, async: Bool, user: String) throws -> Response {
        let key = handles.ids.next().lowercasedString
        if async {
            let resultURL = "\(r.serviceURL)/replicaResults/\(key)"
            replicaResults.put(key, user: user, value: .object(result))
            let status: JSONValue = ["status": "Completed", "resultUrl": .string(resultURL), "replicaName": result["replicaName"] ?? .null,
                                     "replicaID": result["replicaID"] ?? .null, "transportType": .string(transport)]
            replicaResults.put(key + "/status", user: user, value: status)
            return out(["statusUrl": .string("\(r.serviceURL)/replicaResults/\(key)/status")], r)
        }
        if transport == "esriTransportTypeUrl" {
            replicaResults.put(key, user: user, value: .object(result))
            var o = result.filter { $0.key != "layers" && $0.key != "edits" }
            o["responseUrl"] = .string("\(r.serviceURL)/replicaResults/\(key)")
            return out(.object(o), r)
        }
        return out(.object(result), r)
    }

    /// `layerQueries`: `{"<id>": {"where": …, "useGeometry": bool, "queryOption": "all"|"useFilter"|"none"}}`.
    static func layerQueries(_ text: String?, layers: [LayerSchema]) throws(ServiceError) -> [Int: ReplicaLayerQuery] {
        guard let text, !text.isEmpty else { return [:] }
        guard let v = try? JSONParser.parse(Array(text.utf8)) else { throw .invalid("layerQueries must be a JSON object by layer id") }
        return try layerQueries(v, layers: layers)
    }

    /// The same, parsed (a replica's, as its `ReplicaCreated` recorded them).
    static func layerQueries(_ v: JSONValue, layers: [LayerSchema]) throws(ServiceError) -> [Int: ReplicaLayerQuery] {
        guard let o = v.objectValue else { throw .invalid("layerQueries must be a JSON object by layer id") }
        var out: [Int: ReplicaLayerQuery] = [:]
        for (key, q) in o {
            guard let id = Int(key), let layer = layers.first(where: { $0.id == id }) else { throw .invalid("layerQueries: layer \(key) is not one of the replica's layers") }
            var lq = ReplicaLayerQuery()
            if let option = q["queryOption"]?.stringValue {
                guard ["all", "useFilter", "none"].contains(option) else { throw .invalid("layerQueries.\(key).queryOption must be all, useFilter or none") }
                lq.option = option
            }
            if let w = q["where"]?.stringValue, !w.isEmpty {
                do { lq.predicate = try WhereParser.parse(w) } catch { throw .invalid("layerQueries.\(key).where: \(error.description)") }
                if let pred = lq.predicate {
                    do { _ = try FeatureFilterCompiler.compile(pred, layer: layer) } catch { throw .invalid("layerQueries.\(key).where: \(error.message)") }
                }
                lq.whereText = w
            }
            if let g = q["useGeometry"]?.boolValue { lq.useGeometry = g }
            out[id] = lq
        }
        return out
    }

    static func layerQueriesJSON(_ q: [Int: ReplicaLayerQuery]) -> [String: JSONValue] {
        var o: [String: JSONValue] = [:]
        for (id, lq) in q {
            var x: [String: JSONValue] = ["queryOption": .string(lq.option), "useGeometry": .bool(lq.useGeometry)]
            if let w = lq.whereText { x["where"] = .string(w) }
            o[String(id)] = .object(x)
        }
        return o
    }

    /// The live features of `layer` the replica takes: none for `none`, every one for `all`, else those its where
    /// selects that lie in the area (when it uses the geometry and the layer has one).
    /// `among`: only these GlobalIDs are candidates (a synchronize's changed features), so the read grows with them,
    /// not with the layer; nil reads the whole layer (createReplica, a snapshot).
    func replicaFeatures(_ layer: LayerSchema, _ q: ReplicaLayerQuery, area: ReplicaArea?, among: [String]? = nil, log: EditLog) throws -> [JSONValue] {
        if q.option == "none" { return [] }
        var fq = FeatureQuery()
        if q.option == "useFilter" { fq.predicate = q.predicate }
        if let oid = layer.objectIdField { fq.orderBy = [(oid, false)] }
        var features: [JSONValue] = []
        if let among {
            let live = try log.objectIds(layer: String(layer.id), globalIds: among).values.filter { !$0.deleted }.map(\.objectId).sorted()
            // A query binds at most 30,000 ObjectIDs.
            for start in stride(from: 0, to: live.count, by: 30_000) {
                fq.objectIds = Array(live[start..<min(live.count, start + 30_000)])
                features += try log.queryFeatures(layer: String(layer.id), fq).features
            }
        } else {
            features = try log.queryFeatures(layer: String(layer.id), fq).features
        }
        let filterArea = q.option == "useFilter" && q.useGeometry && !layer.isTable ? area : nil
        return features.compactMap { f in
            if let filterArea, !filterArea.contains(geometry: f["geometry"]) { return nil }
            guard var o = f.objectValue else { return f }
            if let g = o["geometry"] { o["geometry"] = Self.stripSpatialReference(g) }
            return .object(o)
        }
    }

    /// The attachments of `features`, each with its parent's GlobalID and its bytes' URL here (or the bytes in base64).
    func replicaAttachments(_ layer: LayerSchema, features: [JSONValue], byURL: Bool, log: EditLog, _ r: ServiceRequest) throws -> JSONValue {
        guard let gidField = layer.globalIdField, let oidField = layer.objectIdField else { return [] }
        var oidOf: [String: Int64] = [:]
        for f in features {
            if let g = f["attributes"]?[gidField]?.stringValue, let oid = f["attributes"]?[oidField]?.intValue { oidOf[g] = oid }
        }
        var out: [JSONValue] = []
        var embedded: Int64 = 0
        let infos = try log.attachmentInfos(parents: Array(oidOf.keys))
        for g in oidOf.keys.sorted() {
            for a in infos[g] ?? [] {
                if let o = try Self.attachmentEntry(a, parentObjectId: oidOf[g]!, layer: layer, byURL: byURL, embedded: &embedded, log: log, r,
                                                    failure: "Unable to create replica.") { out.append(o) }
            }
        }
        return .array(out)
    }
}

/// Replica answers kept for `responseUrl`, `statusUrl` and `resultUrl`: in memory, an hour, the newest 200, each
/// readable only by the user it was made for.
final class ReplicaResults: Sendable {
    private let entries = Mutex<[String: (user: String, value: JSONValue, at: Double)]>([:])

    func put(_ key: String, user: String, value: JSONValue) {
        let now = ProcessInfo.processInfo.systemUptime
        entries.withLock { e in
            e[key] = (user, value, now)
            e = e.filter { now - $0.value.at < 3600 }
            if e.count > 200 {
                for k in e.sorted(by: { $0.value.at < $1.value.at }).prefix(e.count - 200).map(\.key) { e[k] = nil }
            }
        }
    }

    func get(_ key: String, user: String?) -> JSONValue? {
        entries.withLock { e in
            guard let x = e[key], x.user == user else { return nil }
            return x.value
        }
    }
}
