import EditLog
import Foundation

/// One layer's edits for the service.
struct LayerPush {
    var adds: [JSONValue] = []
    var updates: [JSONValue] = []
    var deletes: [String] = []
    var attachmentAdds: [JSONValue] = []
    var attachmentDeletes: [String] = []
    /// Renames: `{globalId, name, contentType, data}` with the attachment's unchanged bytes.
    var attachmentUpdates: [JSONValue] = []
    var changes: [SyncChange] = []
    /// GlobalIDs of the features with something to send (attachments count for their parent).
    var features: Set<String> = []
    var hasAttachments: Bool { !attachmentAdds.isEmpty || !attachmentUpdates.isEmpty || !attachmentDeletes.isEmpty }
    var isEmpty: Bool { adds.isEmpty && updates.isEmpty && deletes.isEmpty && !hasAttachments }
}

extension SyncEngine {
    /// Sends what differs between this log and the service for every feature this log changed since the last
    /// push (its own edits, imports, merge decisions that kept a local value), then records `SyncPushed`.
    /// Returns false, sending nothing, when the service changed one of those features after the pull
    /// (`changedSincePull`): the caller pulls again, so the change is merged instead of overwritten.
    func push(state: SyncState, pulledGen: Int64?, openConflicts: [String: Set<String>]) async throws(EditLogError) -> Bool {
        // Before the first push, since the common base once a snapshot was taken (this run's or an earlier one's): it
        // made every feature the base holds what the service holds, or deleted it here, so only what changed here
        // since needs reading there. Without one (a pull by edit date), since the start.
        let since = state.agreedPosition == 0 && (report.snapshot || state.snapshotTaken) ? try commonBase(state) : state.agreedPosition
        let agreed = try log.lastPosition()
        let candidates = try log.changedFeatures(after: since, excludingCauses: [Cause.syncPull], excludingTypes: [.featureDerived, .sessionStarted])
        if candidates.isEmpty && report.imported == 0 { return true }
        let byLayer = Dictionary(grouping: candidates, by: \.layer)
        var plans: [(LayerSchema, LayerPush)] = []
        for layer in layerOrder {
            guard let gids = byLayer[layer.id]?.map(\.globalId), !gids.isEmpty else { continue }
            plans.append((layer, try await plan(layer, gids, state: state, openConflicts: openConflicts)))
        }
        for (_, p) in plans { report.pushed += p.changes.filter { $0.kind != "kept" } ; report.notPushed += p.changes.filter { $0.kind == "kept" } }
        report.pushedAttachments = plans.reduce(0) { $0 + $1.1.attachmentAdds.count + $1.1.attachmentUpdates.count + $1.1.attachmentDeletes.count }
        if options.dryRun { return true }
        if let pulledGen, plans.contains(where: { !$0.1.isEmpty }),
           try await changedSincePull(pulledGen, state: state, pushing: plans.reduce(into: Set<String>()) { $0.formUnion($1.1.features) }) {
            report.pushed.removeAll(); report.notPushed.removeAll(); report.pushedAttachments = 0
            return false
        }

        // Two service-level applyEdits, each one transaction across every layer (rollbackOnFailure): adds,
        // updates and attachments with parents listed before children, then deletes with children first (a
        // parent's delete cascades). A failure in any layer applies nothing of that request.
        var results: [JSONValue] = []
        var objectIds: [Int: [Int64: String]] = [:]
        var editMoment: Int64?
        var requests = 0
        let forward: [(LayerSchema, JSONValue)] = plans.compactMap { layer, p in
            if p.adds.isEmpty && p.updates.isEmpty && !p.hasAttachments { return nil }
            var e: [String: JSONValue] = ["id": .int(Int64(layer.id))]
            if !p.adds.isEmpty { e["adds"] = .array(p.adds) }
            if !p.updates.isEmpty { e["updates"] = .array(p.updates) }
            if p.hasAttachments {
                var a: [String: JSONValue] = [:]
                if !p.attachmentAdds.isEmpty { a["adds"] = .array(p.attachmentAdds) }
                if !p.attachmentUpdates.isEmpty { a["updates"] = .array(p.attachmentUpdates) }
                if !p.attachmentDeletes.isEmpty { a["deletes"] = .array(p.attachmentDeletes.map(JSONValue.string)) }
                e["attachments"] = .object(a)
            }
            return (layer, .object(e))
        }
        let deletes: [(LayerSchema, JSONValue)] = plans.reversed().compactMap { layer, p in
            p.deletes.isEmpty ? nil : (layer, ["id": .int(Int64(layer.id)), "deletes": .array(p.deletes.map(JSONValue.string))])
        }
        for batch in [forward, deletes] where !batch.isEmpty {
            // Entries in order (the service applies them in the order listed); keys inside each are canonical.
            let edits = "[" + batch.map { $0.1.serialized() }.joined(separator: ",") + "]"
            let answer = try await client.json("applyEdits", [("useGlobalIds", "true"), ("rollbackOnFailure", "true"), ("returnEditMoment", "true"),
                                                               ("edits", edits)], post: true, allowArray: true)
            guard let entries = answer.arrayValue else {
                throw EditLogError(.invalidInput, "the service's applyEdits did not answer one entry per layer: \(answer.serialized().prefix(200))",
                                   at: client.baseURL + "/applyEdits")
            }
            var failures: [String] = []
            for (layer, _) in batch {
                guard let entry = entries.first(where: { $0["id"]?.intValue == Int64(layer.id) }) else {
                    throw EditLogError(.invalidInput, "the service's applyEdits answered nothing for \(layer.name) (layer \(layer.id))", at: client.baseURL + "/applyEdits")
                }
                failures += collect(entry, layer: layer, into: &results, objectIds: &objectIds)
                if let m = entry["editMoment"]?.intValue { editMoment = m }
            }
            if !failures.isEmpty {
                throw EditLogError(.conflict, "the service refused the push (nothing of that request applied, in any layer; run sync again after fixing): "
                                   + (failures.filter { !$0.hasSuffix("(1003)") } + failures.filter { $0.hasSuffix("(1003)") }).prefix(5).joined(separator: "; "),
                                   at: client.baseURL + "/applyEdits")
            }
            requests += 1
            try fail("pushed-request-\(requests)")
        }
        try fail("before-record")

        // The generation after the push, when everything the service changed since the pull is this push (or
        // already here): then the next pull starts after it and a sync with nothing new writes nothing.
        var gen: Int64? = nil
        if let pulledGen, plans.contains(where: { !$0.1.isEmpty }) {
            let after = try await extractChanges(from: pulledGen, root: try await client.json(""))
            let echo = try await pendingEvents(after, state: state, openConflicts: openConflicts)
            if echo.isEmpty { gen = after.toGen }
        } else if let pulledGen, pulledGen != state.serverGen {
            gen = pulledGen
        }
        let pushed = SyncPushed(service: client.serviceKey, agreedPosition: agreed, sincePosition: since, pushed: report.pushed.map(\.json), results: results,
                                objectIds: ObjectIdMappings(objectIds), serverGen: gen, editMoment: editMoment)
        try log.appendSystemEvents([SystemEvent(stream: StreamName.sync, pushed, cause: Cause.sync)],
                                   actor: options.actor, device: options.device)
        return true
    }

    /// Whether the service changed or deleted, after generation `pulledGen`, a feature this push would send
    /// something for (its attributes, its delete, or its attachments). ArcGIS has no conditional update, so the push compares against the
    /// service's state as planned; this check, just before sending, narrows the window in which another client's
    /// edit could be overwritten unseen from the whole sync to one round trip.
    func changedSincePull(_ pulledGen: Int64, state: SyncState, pushing: Set<String>) async throws(EditLogError) -> Bool {
        let now = try await extractChanges(from: pulledGen, root: try await client.json(""))
        if now.features.contains(where: { pushing.contains($0.globalId) }) { return true }
        let known = objectIdsPulled(now)
        for d in now.deletes {
            if let g = state.objectIds[d.layer]?[d.objectId] ?? known[d.layer]?[d.objectId], pushing.contains(g) { return true }
        }
        return false
    }

    /// One layer's results of an answer, recorded; the failures, described (one stops the sync: the service
    /// rolled that request back).
    func collect(_ answer: JSONValue, layer: LayerSchema, into results: inout [JSONValue], objectIds: inout [Int: [Int64: String]]) -> [String] {
        var failures: [String] = []
        let groups: [(String, JSONValue?)] = [("add", answer["addResults"]), ("update", answer["updateResults"]), ("delete", answer["deleteResults"]),
                                               ("attach", answer["attachments"]?["addResults"]), ("rename", answer["attachments"]?["updateResults"]),
                                               ("detach", answer["attachments"]?["deleteResults"])]
        for (kind, list) in groups {
            for r in list?.arrayValue ?? [] {
                let g = r["globalId"]?.stringValue.flatMap(GlobalID.normalize)
                let oid = r["objectId"]?.intValue
                let ok = r["success"]?.boolValue ?? false
                results.append(["layer": .int(Int64(layer.id)), "kind": .string(kind), "globalId": JSONValue(g), "objectId": oid.map(JSONValue.int) ?? .null, "success": .bool(ok)])
                if ok, let g, let oid, kind == "add" || kind == "update" { objectIds[layer.id, default: [:]][oid] = g }
                if !ok {
                    failures.append("\(layer.name) \(kind) \(g ?? "?"): \(r["error"]?["description"]?.stringValue ?? "failed") (\(r["error"]?["code"]?.intValue ?? 0))")
                }
            }
        }
        return failures
    }

    /// A field this log sends: edited by people (not editor tracking, not derived by a rule, editable), or a
    /// relationship key (the service turns it into the record's parent or relation).
    func pushable(_ f: FieldSchema, _ layer: LayerSchema, _ derived: Set<String>) -> Bool {
        if layer.isEditorTrackingField(f.name) || derived.contains(f.name) { return false }
        if layer.relationships.contains(where: { $0.role == .destination && $0.keyField?.lowercased() == f.name.lowercased() }) { return true }
        guard f.editable, !f.type.isUnsupportedInPopup else { return false }
        guard let popup = layer.popup else { return true }
        return popup.fieldInfo(f.name)?.isEditable == true
    }

    /// What one layer's changed features need on the service: the service's state read by GlobalID, compared.
    func plan(_ layer: LayerSchema, _ gids: [String], state: SyncState, openConflicts: [String: Set<String>]) async throws(EditLogError) -> LayerPush {
        var p = LayerPush()
        let gidField = layer.globalIdField ?? "GlobalID"
        let derived = derivedFields(layer)
        let known = Set(state.objectIds[layer.id]?.values.map { $0 } ?? [])
        // The service's state, read whole: batches no larger than the layer answers at once, each paged when the
        // service says it holds more (a feature missed here would be sent as an add: a duplicate GlobalID there).
        let readLimits = limits(layer)
        let size = max(1, min(options.batchSize, readLimits.maxRecordCount))
        var i = 0
        while i < gids.count {
            let batch = Array(gids[i..<min(i + size, gids.count)])
            i += batch.count
            let quoted = batch.map { "'\($0)'" }.joined(separator: ",")
            var remote: [String: RemoteFeature] = [:]
            try await client.queryAll(layer: layer.id, where: "\(gidField) IN (\(quoted))", returnGeometry: false, limits: readLimits) { page throws(EditLogError) in
                for f in page { if let rf = RemoteValues.feature(f, layer: layer) { remote[rf.globalId] = rf } }
            }
            let remoteAtts = try await remoteAttachments(layer: layer, features: batch.compactMap { g in remote[g].map { (g, $0.objectId) } })
            for g in batch {
                let changesBefore = p.changes.count
                defer { if p.changes.count > changesBefore { p.features.insert(g) } }
                guard let local = try log.snapshot(layer: layer.id, globalId: g) else { continue }
                let open = openConflicts[g] ?? []
                if open.contains("") { continue }
                let r = remote[g]
                if local.deleted {
                    if r != nil { p.deletes.append(g); p.changes.append(SyncChange(layer: layer.id, globalId: g, kind: "delete", fields: [], objectId: r?.objectId)) }
                    continue
                }
                var sent: [String] = []
                if let r {
                    var attrs: [String: JSONValue] = [gidField: .string(g)]
                    for f in layer.attributeFields where pushable(f, layer, derived) && !open.contains(f.name) {
                        let l = local.attributes[f.name] ?? .null
                        if !RemoteValues.same(l, r.attributes[f.name]) { attrs[f.name] = l; sent.append(f.name) }
                    }
                    if !sent.isEmpty {
                        p.updates.append(["attributes": .object(attrs)])
                        p.changes.append(SyncChange(layer: layer.id, globalId: g, kind: "update", fields: sent.sorted(), objectId: r.objectId))
                    }
                } else if known.contains(g) {
                    // The service had it and deleted it; kept here (a merge decision): not re-created there.
                    p.changes.append(SyncChange(layer: layer.id, globalId: g, kind: "kept", fields: [], objectId: nil))
                    continue
                } else {
                    var attrs: [String: JSONValue] = [gidField: .string(g)]
                    for f in layer.attributeFields where pushable(f, layer, derived) {
                        if let v = local.attributes[f.name], !v.isNull { attrs[f.name] = v; sent.append(f.name) }
                    }
                    var feature: [String: JSONValue] = ["attributes": .object(attrs)]
                    if let geom = local.geometry, !geom.isNull, !layer.isTable { feature["geometry"] = geom }
                    p.adds.append(.object(feature))
                    p.changes.append(SyncChange(layer: layer.id, globalId: g, kind: "add", fields: sent.sorted(), objectId: nil))
                }
                // Attachments: this log's live ones the service lacks are added with their GlobalIDs, those it has
                // under another name renamed (an update with the same bytes); detached ones it still has are deleted.
                if layer.hasAttachments {
                    var theirs: [String: RemoteAttachment] = [:]
                    for a in remoteAtts[g] ?? [] { theirs[a.globalId] = a }
                    for a in try log.attachmentSnapshots(of: g, includeDeleted: true) {
                        if !a.deleted, let r = theirs[a.globalId], r.name != a.name {
                            p.attachmentUpdates.append(try attachmentEntry(a, parent: g))
                            p.changes.append(SyncChange(layer: layer.id, globalId: a.globalId, kind: "rename", fields: [], objectId: r.id))
                        } else if !a.deleted && theirs[a.globalId] == nil {
                            p.attachmentAdds.append(try attachmentEntry(a, parent: g))
                            p.changes.append(SyncChange(layer: layer.id, globalId: a.globalId, kind: "attach", fields: [], objectId: nil))
                        } else if a.deleted && theirs[a.globalId] != nil {
                            p.attachmentDeletes.append(a.globalId)
                            p.changes.append(SyncChange(layer: layer.id, globalId: a.globalId, kind: "detach", fields: [], objectId: nil))
                        }
                    }
                }
            }
        }
        return p
    }

    /// An attachment as `applyEdits` takes it in `adds` and `updates`: its GlobalID, parent, name, type and bytes.
    func attachmentEntry(_ a: AttachmentSnapshot, parent g: String) throws(EditLogError) -> JSONValue {
        guard let bytes = try log.blob(sha256: a.sha256) else {
            throw EditLogError(.corrupt, "attachment \(a.globalId) of \(g) has no stored bytes (\(a.sha256))")
        }
        return ["globalId": .string(a.globalId), "parentGlobalId": .string(g), "name": .string(a.name),
                "contentType": .string(a.contentType), "data": .string(Data(bytes).base64EncodedString())]
    }
}
