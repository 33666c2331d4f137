import EditLog
import EditLogMerge
import Foundation
import Hummingbird

/// `synchronizeReplica` (JSON): the upload first, then the download, as ArcGIS does.
///
/// - Upload (`bidirectional`, `upload`): `edits=[{"id", "features": {"adds", "updates", "deleteIds"},
///   "attachments": {"adds", "updates", "deleteIds"}}]`, by GlobalID, recorded as edit sessions of the token's
///   user and the client's device with cause `replica:<id>`, planned and validated as applyEdits plans them. An add
///   whose GlobalID is here with the same content is already applied (a retried synchronize) and skipped; with
///   other content it is refused. Last-in wins for replicas: the upload wins over the service's edits made since
///   the client's generation, and every field it so overwrote is listed in the `ReplicaSynchronized` event.
/// - Download (`bidirectional`, `download`): the changes of the replica's layers between the client's generation
///   and the upload (so never the client's own edits back), adds and updates within the replica's queries and
///   area, deletes by GlobalID; `snapshot` sends the replica's features whole.
/// - The upload and its `ReplicaSynchronized` event are one transaction: with `rollbackOnFailure` (the default)
///   an edit that fails records nothing of the synchronize and answers the error.
extension FeatureService {
    /// The replica `id` of `user`. Without `syncs`, only its creation and closing are read (`registryTypes`): a
    /// synchronize's cost does not grow with the synchronizations before it.
    func replica(_ id: String?, user: String, openOnly: Bool = true, syncs: Bool = false) throws -> ReplicaRecord {
        guard let raw = id, let gid = GlobalID.normalize(raw) else { throw ServiceError.invalid("replicaID is required: the id createReplica answered") }
        let all = try handles.read { log in
            try ReplicaRecord.all(syncs ? log.streamEvents(StreamName.replicas) : log.streamEvents(StreamName.replicas, types: ReplicaRecord.registryTypes))
        }
        guard let rep = all.first(where: { $0.id == gid }) else { throw ServiceError(code: 400, message: "Replica does not exist.", details: ["no replica \(gid)"]) }
        guard rep.user == user else { throw ServiceError(code: 403, message: "You do not have permissions to access this resource or perform this operation.", details: ["replica \(gid) belongs to another user"]) }
        if openOnly && rep.closed { throw ServiceError(code: 400, message: "Replica does not exist.", details: ["replica \(gid) was unregistered (\(rep.closedBy ?? "closed"))"]) }
        return rep
    }

    func synchronizeReplica(_ r: ServiceRequest) throws -> Response {
        let user = try requireEdit(r)
        let p = r.params
        try handles.refresh()
        let rep = try replica(p["replicaID"], user: user)
        guard rep.syncModel != "none" else { throw ServiceError.invalid("replica \(rep.id) was created with syncModel none: it cannot be synchronized") }
        let format = p["dataFormat"]?.lowercased() ?? "json"
        guard format == "json" else { throw ServiceError.invalid("dataFormat \(format) is not supported: only json") }
        let direction = p["syncDirection"] ?? "bidirectional"
        guard Self.syncDirections.contains(direction) else { throw ServiceError.invalid("syncDirection must be bidirectional, upload, download or snapshot") }
        let head = try handles.read { try $0.lastPosition() }
        // The generation the client comes from: replicaServerGen, or the per-layer gens of syncLayers.
        var from: [Int: Int64] = [:]
        if let text = p["syncLayers"], text.hasPrefix("[") {
            guard let list = (try? JSONParser.parse(Array(text.utf8)))?.arrayValue else { throw ServiceError.invalid("syncLayers must be a JSON array") }
            for item in list {
                guard let id = item["id"]?.intValue.map(Int.init), rep.layers.contains(id) else { throw ServiceError.invalid("syncLayers: layer \(item["id"]?.serialized() ?? "?") is not in the replica") }
                if let g = item["serverGen"]?.intValue { from[id] = g }
            }
        }
        if let text = p["replicaServerGen"], !text.isEmpty {
            guard let g = Int64(text.trimmingCharacters(in: .whitespaces)) else { throw ServiceError.invalid("replicaServerGen must be a whole number") }
            for l in rep.layers where from[l] == nil { from[l] = g }
        }
        let downloads = direction == "bidirectional" || direction == "download"
        if downloads && from.isEmpty { throw ServiceError.invalid("replicaServerGen is required to download (syncDirection \(direction))") }
        for (l, g) in from {
            guard g <= head else { throw ServiceError.invalid("replicaServerGen \(g) (layer \(l)) is from the future: this service is at \(head)") }
            guard g >= rep.createdGen else { throw ServiceError.invalid("replicaServerGen \(g) (layer \(l)) is older than the replica (\(rep.createdGen))") }
        }

        // The upload, planned against the log as it is; values of fields removed since the replica was created are
        // left out and recorded as conflicts (`ReplicaSchemaDrift`).
        let drift = try schemaDrift(of: rep)
        var dropped: [ReplicaSchemaDrift.Dropped] = []
        var layers: [LayerEdits] = []
        var uploadedAttachments = 0
        if direction == "bidirectional" || direction == "upload", let text = p["edits"], !text.isEmpty {
            let value: JSONValue
            do { value = try JSONParser.parse(Array(text.utf8)) } catch { throw ServiceError.invalid("edits: \(error.description)") }
            guard let list = value.arrayValue else { throw ServiceError.invalid("edits must be an array of {id, features, attachments}") }
            for (n, item) in list.enumerated() {
                guard let id = item["id"]?.intValue.map(Int.init) else { throw ServiceError.invalid("edits[\(n)] has no layer id") }
                if let name = drift.removedLayers[id] {
                    throw ServiceError(code: 400, message: "Unable to synchronize replica.", details: [
                        "edits[\(n)]: layer \(id) (\(name)) was removed from the service after replica \(rep.id) was created; its edits cannot be applied "
                        + "(nothing was applied): upload the other layers' edits, then create a new replica"])
                }
                guard rep.layers.contains(id), let layer = schema.layer(id: id) else {
                    throw ServiceError.invalid("edits[\(n)]: layer \(id) is not in replica \(rep.id) (its layers: \(rep.layers.map(String.init).joined(separator: ", ")))")
                }
                guard !layers.contains(where: { $0.layer.id == id }) else { throw ServiceError.invalid("edits[\(n)]: layer \(id) is listed twice") }
                var e = LayerEdits(layer: layer)
                e.adds = try Self.features(item["features"]?["adds"], name: "edits[\(n)].features.adds")
                e.updates = try Self.features(item["features"]?["updates"], name: "edits[\(n)].features.updates")
                e.deletes = try Self.deleteIds(item["features"]?["deleteIds"], name: "edits[\(n)].features.deleteIds")
                dropped += drift.drop(from: &e.adds, layer: layer) + drift.drop(from: &e.updates, layer: layer)
                if let a = item["attachments"], a.objectValue != nil {
                    var o = a.objectValue!
                    o["deletes"] = o["deleteIds"] ?? o["deletes"]
                    o["deleteIds"] = nil
                    e.attachments = .object(o)
                    uploadedAttachments += (o["adds"]?.arrayValue?.count ?? 0) + (o["updates"]?.arrayValue?.count ?? 0) + (o["deletes"]?.arrayValue?.count ?? 0)
                }
                // Adds already here: the same content is a retried upload (skipped), other content is refused.
                let adds = e.adds
                e.adds = []
                for f in adds {
                    if let gid = layer.globalIdField.flatMap({ f["attributes"]?[$0]?.stringValue }).flatMap(GlobalID.normalize),
                       let current = try handles.read({ try self.currentFeature(layer, gid, log: $0) }) {
                        guard Self.sameContent(f, current, layer: layer) else {
                            throw ServiceError.invalid("edits[\(n)].features.adds: GlobalID \(gid) is already present with other content")
                        }
                        continue
                    }
                    e.adds.append(f)
                }
                layers.append(e)
            }
        }
        let rollback = p.bool("rollbackOnFailure", default: true)
        let plan = try handles.read { log in try self.plan(layers, useGlobalIds: true, deletesByGlobalId: true, log: log) }
        if rollback, let bad = plan.first(where: { $0.error != nil }) {
            throw ServiceError(code: 400, message: "Unable to synchronize replica.", details: ["\(bad.kind.rawValue) \(bad.globalId ?? ""): \(bad.error!) (rollbackOnFailure: nothing was applied)"])
        }

        // What the service changed since the client's generation: the download, and what the upload overwrites.
        var changes: [Int: [FeatureChange]] = [:]
        for l in rep.layers where drift.removedLayers[l] == nil {
            let g = from[l] ?? head
            if g < head { changes[l] = try handles.read { try $0.diff(from: .position(max(1, g)), to: .position(head), layer: String(l), clock: .recorded).changes.filter { $0.layer == l } } }
        }
        let overwrote = try overwrites(plan, changes: changes)
        dropped = try withBases(dropped)
        let logId = try handles.read { $0.logId }

        let close = p.bool("closeReplica", default: false)
        let closeEvent = SystemEvent(stream: StreamName.replicas, ReplicaUnregistered(replicaId: rep.id, user: user, device: r.device, by: "closeReplica"),
                                     cause: Cause.replicaOperation)
        // What to send is chosen from the service's changes before the upload; the features are read after it, so a
        // feature both changed is sent as the upload left it (the client keeps what won).
        var selection: [Int: DownloadSelection] = [:]
        if downloads || direction == "snapshot" { selection = try selectDownload(rep, direction: direction, changes: changes) }
        var downloaded: [String: JSONValue] = [
            "adds": .int(Int64(selection.values.reduce(0) { $0 + $1.adds.count })), "updates": .int(Int64(selection.values.reduce(0) { $0 + $1.updates.count })),
            "deletes": .int(Int64(selection.values.reduce(0) { $0 + $1.deletes.count })),
        ]
        if direction == "snapshot" { downloaded["snapshot"] = downloaded["adds"] }
        let fromGen = from.values.min()
        // Built from what was recorded (with rollbackOnFailure=false an edit can fail while it is recorded).
        func recordOf(_ sessions: [String], _ recorded: Set<Int>) -> SystemEvent {
            func refs(_ kind: EditKind) -> JSONValue {
                .array(plan.indices.filter { recorded.contains($0) && plan[$0].kind == kind && plan[$0].globalId != nil }
                    .map { ["layer": .int(Int64(plan[$0].layer.id)), "globalId": .string(plan[$0].globalId!)] })
            }
            let synchronized = ReplicaSynchronized(
                replicaId: rep.id, user: user, device: r.device, syncDirection: direction, fromServerGen: fromGen,
                uploaded: ["sessions": .array(sessions.map { .string($0) }), "adds": refs(.add), "updates": refs(.update), "deletes": refs(.delete),
                           "attachments": .int(Int64(uploadedAttachments))],
                downloaded: .object(downloaded), overwrote: overwrote.filter { recorded.contains($0.planIndex) }.map(\.json), closed: close)
            return SystemEvent(stream: StreamName.replicas, synchronized, cause: Cause.replicaOperation)
        }
        // The record comes after the upload's events in the same transaction: its position is the client's next
        // generation, past its own upload (which it is never sent back).
        var firstWritten: Int64?
        let (failures, _, error, written) = try commit(plan, rollback: rollback, user: user, device: r.device, name: "synchronizeReplica \(rep.id) by \(user)",
                                          cause: Cause.replica(rep.id)) { sessions, events, recorded in
            firstWritten = events.first?.position
            let won = overwrote.filter { recorded.contains($0.planIndex) }
            let kept = Set(recorded.compactMap { plan[$0].globalId })
            let removed = self.removedFieldConflicts(dropped, recorded: kept, upload: events, replicaId: rep.id)
            return self.overwriteDecisions(won, removedFields: removed, upload: events, logId: logId, replicaId: rep.id)
                + [recordOf(sessions, recorded)] + (close ? [closeEvent] : [])
        }
        if rollback, let error {
            throw ServiceError(code: 400, message: "Unable to synchronize replica.", details: ["\(error.description) (rollbackOnFailure: nothing was applied)"])
        }
        // The record just written, from the write's own answer (the `$replicas` stream is not read again).
        let record = written.last { e in
            guard e.type == EventType.replicaSynchronized.rawValue, case .replicaSynchronized(let p)? = try? e.body else { return false }
            return p.replicaId == rep.id
        }
        guard var after = record?.position else {
            throw ServiceError(code: 500, message: "Unable to synchronize replica.", details: ["the synchronize was not recorded"])
        }
        // Another writer (a hub's other node) appended between the download's end and this synchronize's first
        // event: the client continues from the download's end, so those edits reach it next time (with its own
        // upload again, which changes nothing there) rather than never.
        if (firstWritten ?? after) > head + 1 { after = head }
        let edits = try downloadEdits(rep, selection)
        var result: [String: JSONValue] = [
            "replicaName": .string(rep.name), "replicaID": .string(rep.id), "replicaServerGen": .int(after),
            "transportType": .string(p["transportType"] ?? "esriTransportTypeEmbedded"), "responseType": "esriReplicaResponseTypeEdits",
            "edits": .array(edits),
        ]
        if rep.syncModel == "perLayer" { result["layerServerGens"] = .array(rep.layers.map { ["id": .int(Int64($0)), "serverGen": .int(after)] }) }
        if p.bool("returnIdsForAdds", default: false) || !failures.isEmpty {
            var byLayer: [JSONValue] = []
            for e in layers {
                var o = try results(plan, failures: failures, layer: e.layer, attachments: e.attachments != nil)
                o["id"] = .int(Int64(e.layer.id))
                byLayer.append(.object(o))
            }
            result["editResults"] = .array(byLayer)
        }
        let transport = p["transportType"] ?? "esriTransportTypeEmbedded"
        return try answer(result, r, transport: transport, async: p.bool("async", default: false), user: user)
    }

    /// The feature `gid` of `layer` as served, or nil where it is not here (or deleted).
    func currentFeature(_ layer: LayerSchema, _ gid: String, log: EditLog) throws -> JSONValue? {
        guard let found = try log.objectId(layer: String(layer.id), globalId: gid), !found.deleted else { return nil }
        return try log.queryFeatures(layer: String(layer.id), FeatureQuery(objectIds: [found.objectId])).features.first
    }

    /// Whether an uploaded add holds what the feature here holds, in every field it names that a client edits.
    static func sameContent(_ upload: JSONValue, _ current: JSONValue, layer: LayerSchema) -> Bool {
        for (name, v) in upload["attributes"]?.objectValue ?? [:] {
            guard let f = layer.field(name), f.name != layer.objectIdField, !layer.isEditorTrackingField(f.name) else { continue }
            let here = current["attributes"]?[f.name] ?? .null
            if let a = v.doubleValue, let b = here.doubleValue { if a != b { return false } } else if v != here { return false }
        }
        return true
    }

    /// A field an uploaded update set to another value than the one the service wrote after the client's generation.
    struct Overwrite {
        /// The uploaded update's index in the plan.
        var planIndex: Int
        var layer: Int
        var globalId: String
        var field: String
        var base: JSONValue
        var service: JSONValue
        var upload: JSONValue
        /// The event that wrote the service's value.
        var serviceWriter: Author?

        var json: JSONValue {
            ["layer": .int(Int64(layer)), "globalId": .string(globalId), "field": .string(field), "base": base, "service": service,
             "serviceActor": serviceWriter.map { .string($0.actor) } ?? .null, "upload": upload]
        }
    }

    /// Every field an uploaded update sets to another value than the one the service wrote after the client's
    /// generation: the upload wins (last-in wins for replicas), and the synchronize records what it overwrote.
    func overwrites(_ plan: [PlannedEdit], changes: [Int: [FeatureChange]]) throws -> [Overwrite] {
        var out: [Overwrite] = []
        for (i, e) in plan.enumerated() where e.kind == .update && e.error == nil {
            guard let g = e.globalId, let change = changes[e.layer.id]?.first(where: { $0.globalId == g }) else { continue }
            var sets: [String: JSONValue] = [:]
            for c in e.commands { if case .set(let field, let value) = c { sets[field.lowercased()] = value } }
            var writers: (blame: Blame, stream: [RecordedEvent])?
            for f in change.fields where !f.field.hasPrefix("@") && !e.layer.isEditorTrackingField(f.field) {
                guard let up = sets[f.field.lowercased()] else { continue }
                if (up.doubleValue != nil && up.doubleValue == f.new.doubleValue) || up == f.new { continue }
                if writers == nil {
                    writers = try handles.read { log in (try log.blame(globalId: g), try log.streamEvents(StreamName.feature(layer: e.layer.id, globalId: g))) }
                }
                // The service's writer: the event `blame` names for the field's value (this log's decisions applied).
                let position = writers?.blame.fields.first { $0.field == f.field }?.position
                let writer = writers?.stream.first { $0.position == position }.map(Author.init)
                out.append(Overwrite(planIndex: i, layer: e.layer.id, globalId: g, field: f.field, base: f.old, service: f.new, upload: up, serviceWriter: writer))
            }
        }
        return out
    }

    /// Each feature's overwrites as a `MergeDecided` of this log (a standalone decision: no event of its own, no
    /// effect), one field conflict each, last-in wins by upload, the replica's upload the winner: so `editlog
    /// conflicts` lists what a replica overwrote, with who wrote each side, and can re-resolve it.
    /// `removedFields`: the upload's values of fields removed since the replica was created (`ReplicaSchemaDrift`), in
    /// the same feature's decision.
    func overwriteDecisions(_ overwrites: [Overwrite], removedFields: [Conflict] = [], upload events: [RecordedEvent], logId: String, replicaId: String) -> [SystemEvent] {
        var byFeature: [String: [Conflict]] = [:]
        var order: [String] = []
        func add(_ c: Conflict) {
            let key = StreamName.feature(layer: c.layer, globalId: c.globalId)
            if byFeature[key] == nil { order.append(key) }
            byFeature[key, default: []].append(c)
        }
        for o in overwrites {
            let stream = StreamName.feature(layer: o.layer, globalId: o.globalId)
            let committed = events.last { $0.stream == stream && $0.type == EventType.sessionCommitted.rawValue && $0.cause == Cause.replica(replicaId) }
            add(Conflict(id: handles.ids.next().lowercasedString, kind: .field, layer: o.layer, globalId: o.globalId, field: o.field, base: o.base,
                         local: SideValue(value: o.service, writer: o.serviceWriter), remote: SideValue(value: o.upload, writer: committed.map(Author.init)),
                         policy: .lastInWins, rule: .upload, winner: .remote))
        }
        for c in removedFields { add(c) }
        return order.map { stream in
            let list = byFeature[stream]!
            var d = MergeDecision(log: logId, event: nil, layer: list[0].layer, globalId: list[0].globalId)
            d.conflicts = list
            return SystemEvent(stream: stream, d, cause: Cause.merge(from: logId))
        }
    }

    /// What a synchronize sends of one layer: GlobalIDs added, updated (as they are after the upload) and deleted.
    struct DownloadSelection { var adds: [String] = []; var updates: [String] = []; var deletes: [String] = [] }

    func area(of rep: ReplicaRecord) -> ReplicaArea? {
        rep.geometry.flatMap { g in
            guard let rings = g["rings"]?.arrayValue else { return nil }
            return ReplicaArea(rings: rings.map { ring in (ring.arrayValue ?? []).compactMap { p in
                guard let a = p.arrayValue, a.count >= 2, let x = a[0].doubleValue, let y = a[1].doubleValue else { return nil }
                return (x, y)
            } })
        }
    }

    /// The download: for `snapshot` every feature the replica's queries and area select; else the service's changes
    /// since the client's generation, adds and updates of features its queries and area select, every delete.
    func selectDownload(_ rep: ReplicaRecord, direction: String, changes: [Int: [FeatureChange]]) throws -> [Int: DownloadSelection] {
        let area = area(of: rep)
        // Each layer still here, by its recorded query. One whose `where` names a field removed since cannot select
        // what the replica holds: the download is refused (an upload alone, `syncDirection=upload`, still goes).
        var queries: [Int: ReplicaLayerQuery] = [:]
        for (key, q) in rep.layerQueries {
            guard let id = Int(key), rep.layers.contains(id), let layer = schema.layer(id: id) else { continue }
            do { queries.merge(try Self.layerQueries(.object([key: q]), layers: [layer])) { _, new in new } } catch {
                throw ServiceError(code: 400, message: "Unable to synchronize replica.", details: [
                    "replica \(rep.id)'s query of layer \(id) (\(layer.name)) no longer fits the service's schema, which changed after the replica was "
                    + "created: \(error.details.joined(separator: "; ")); nothing was applied: upload with syncDirection=upload, then create a new replica"])
            }
        }
        var out: [Int: DownloadSelection] = [:]
        try handles.read { log in
            for id in rep.layers {
                guard let layer = schema.layer(id: id), let gf = layer.globalIdField else { continue }
                // A download tests only the features changed since the client's generation; a snapshot takes them all.
                let among = direction == "snapshot" ? nil : (changes[id] ?? []).filter { $0.kind != .deleted }.map(\.globalId)
                let selected = among?.isEmpty == true ? [] : Set(try self.replicaFeatures(layer, queries[id] ?? ReplicaLayerQuery(), area: area, among: among, log: log)
                    .compactMap { $0["attributes"]?[gf]?.stringValue.flatMap(GlobalID.normalize) })
                var s = DownloadSelection()
                if direction == "snapshot" {
                    s.adds = selected.sorted()
                } else {
                    for c in changes[id] ?? [] {
                        switch c.kind {
                        case .added: if selected.contains(c.globalId) { s.adds.append(c.globalId) }
                        case .updated: if selected.contains(c.globalId) { s.updates.append(c.globalId) }
                        case .deleted: s.deletes.append(c.globalId)
                        }
                    }
                }
                out[id] = s
            }
        }
        return out
    }

    /// The selected features as they are now, per replica layer: `{"id", "features": {"adds", "updates", "deleteIds"}}`.
    func downloadEdits(_ rep: ReplicaRecord, _ selection: [Int: DownloadSelection]) throws -> [JSONValue] {
        try handles.read { log in
            try rep.layers.compactMap { id -> JSONValue? in
                guard let layer = schema.layer(id: id), let s = selection[id] else { return nil }
                func load(_ gids: [String]) throws -> [JSONValue] {
                    try gids.compactMap { try self.currentFeature(layer, $0, log: log) }.map { f in
                        guard var o = f.objectValue else { return f }
                        if let g = o["geometry"] { o["geometry"] = Self.stripSpatialReference(g) }
                        return .object(o)
                    }
                }
                return ["id": .int(Int64(id)), "features": ["adds": .array(try load(s.adds)), "updates": .array(try load(s.updates)),
                                                             "deleteIds": .array(s.deletes.map { .string($0) })]]
            }
        }
    }

    /// `unRegisterReplica`: the replica is closed; a later synchronize is refused.
    func unRegisterReplica(_ r: ServiceRequest) throws -> JSONValue {
        let user = try requireEdit(r)
        try handles.refresh()
        let rep = try replica(r.params["replicaID"], user: user)
        _ = try handles.write { log in
            let closed = ReplicaUnregistered(replicaId: rep.id, user: user, device: r.device, by: "unRegisterReplica")
            try log.appendSystemEvents([SystemEvent(stream: StreamName.replicas, closed, cause: Cause.replicaOperation)], actor: user, device: r.device)
        }
        return ["success": true]
    }

    /// `…/replicas`: the caller's open replicas; `…/replicas/<id>`: one replica's info, as ArcGIS's, with its history.
    func replicaList(_ r: ServiceRequest) throws -> JSONValue {
        let user = try requireEdit(r)
        try handles.refresh()
        let all = try handles.read { try ReplicaRecord.all($0.streamEvents(StreamName.replicas)) }
        return .array(all.filter { $0.user == user && !$0.closed }.map { ["replicaName": .string($0.name), "replicaID": .string($0.id)] })
    }

    func replicaInfo(_ id: String, _ r: ServiceRequest) throws -> JSONValue {
        let user = try requireEdit(r)
        try handles.refresh()
        let rep = try replica(id, user: user, openOnly: false, syncs: true)
        let created = Timestamp.parse(rep.createdAt).map { JSONValue.int($0) } ?? .null
        let last = rep.syncs.last.flatMap { Timestamp.parse($0.at) }.map { JSONValue.int($0) } ?? created
        return ["replicaName": .string(rep.name), "replicaID": .string(rep.id), "replicaOwner": .string(rep.user), "layers": .array(rep.layers.map { .int(Int64($0)) }),
                "layerServerGens": .array(rep.layers.map { ["id": .int(Int64($0)), "serverGen": .int(rep.serverGen)] }), "creationDate": created, "lastSyncDate": last,
                "syncModel": .string(rep.syncModel), "syncDirection": .string(rep.syncDirection), "targetType": "client", "replicaServerGen": .int(rep.serverGen),
                "spatialReference": ["wkid": 4326], "closed": .bool(rep.closed), "history": rep.json]
    }
}
