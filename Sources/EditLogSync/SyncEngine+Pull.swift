import EditLog
import Foundation

/// What the service changed since the last pull.
struct PulledChanges: Sendable {
    /// The mode of a pull that read every feature (`pullSnapshot`), as its `SyncPulled` records it.
    static let snapshot = "snapshot"
    var mode: String
    var fromGen: Int64?
    var toGen: Int64?
    /// Adds and updates (the service's current state), per layer.
    var features: [RemoteFeature] = []
    /// Deletes, by the service's ObjectID.
    var deletes: [(layer: Int, objectId: Int64)] = []
    /// Deletes by GlobalID: features a snapshot did not find on the service that it held at the common base.
    var gone: [(layer: Int, globalId: String)] = []
    var lastEditDate: Int64?
    /// The replica the changes came through (recorded, so the next run synchronizes it).
    var replicaId: String?
}

/// A pulled change ready to import: its events (a sync-pull session or a delete) and the bytes of its new attachments.
struct PendingChange: Sendable {
    var change: SyncChange
    /// Unstamped until `stamp`: ids, the session id, the recorded time and origin positions come from this log's
    /// generators just before the import, in order (so they do not depend on when the events were built).
    var events: [RecordedEvent]
    var blobs: [[UInt8]]
    /// Attachments added, renamed or removed.
    var attachments = 0
}

/// A value handed to the task that builds the next window while this one imports: the engine (whose mutable
/// report that task never touches) and the read-only log handle, used by that task alone.
final class UncheckedSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

extension SyncEngine {
    // MARK: Download

    /// `extractChanges` since `from` (every layer of this log), with the features themselves, in windows of
    /// generations up to the service's current one (read from the root's `changeTrackingInfo`); a feature changed
    /// in several windows is taken from the last (each answer holds the current state).
    func extractChanges(from: Int64, root: JSONValue? = nil) async throws(EditLogError) -> PulledChanges {
        var current: Int64?
        if let gens = root?["changeTrackingInfo"]?["layerServerGens"]?.arrayValue {
            current = gens.compactMap { $0["serverGen"]?.intValue }.max()
        }
        var out = PulledChanges(mode: "extractChanges", fromGen: from)
        var start = from
        var index: [String: Int] = [:]
        repeat {
            let end = current.map { min($0, start + options.generationWindow) }
            let part = try await extractWindow(from: start, to: end)
            for f in part.features {
                if let i = index[f.globalId] { out.features[i] = f } else { index[f.globalId] = out.features.count; out.features.append(f) }
            }
            out.deletes += part.deletes
            if let d = part.lastEditDate { out.lastEditDate = max(out.lastEditDate ?? d, d) }
            out.toGen = part.toGen ?? end
            guard let end, let reached = part.toGen, reached >= end, end < current! else { break }
            start = end
        } while true
        // A feature deleted in a later window than its last change is not listed as changed.
        let deleted = Set(out.deletes.map { "\($0.layer):\($0.objectId)" })
        out.features.removeAll { f in f.objectId.map { deleted.contains("\(f.layer):\($0)") } ?? false }
        return out
    }

    func extractWindow(from: Int64, to: Int64?) async throws(EditLogError) -> PulledChanges {
        try await Self.extractWindow(client: client, schema: log.schema, from: from, to: to)
    }

    /// One `extractChanges` request (generations `from` to `to`, every layer of `schema`), with the features
    /// themselves. Static, so a window can download while the engine imports the one before. The answer is read
    /// a feature at a time (`JSONSlicer`): each becomes a `RemoteFeature` as it is parsed, and no tree of the
    /// whole answer is built.
    static func extractWindow(client: FeatureServiceClient, schema: ServiceSchema, from: Int64, to: Int64?) async throws(EditLogError) -> PulledChanges {
        let ids = schema.layers.map { String($0.id) }.joined(separator: ",")
        let (answer, top) = try await client.largeJSON("extractChanges", [
            ("layers", "[\(ids)]"), ("serverGens", to.map { "[\(from),\($0)]" } ?? "[\(from)]"), ("returnInserts", "true"), ("returnUpdates", "true"),
            ("returnDeletes", "true"), ("returnIdsOnly", "false"), ("returnAttachments", "false"), ("dataFormat", "json"),
        ])
        guard let editsRange = top["edits"], let edits = try answer.elements(editsRange) else {
            throw EditLogError(.invalidInput, "the extractChanges answer has no \"edits\": \(String(decoding: answer.bytes.prefix(160), as: UTF8.self))", at: client.baseURL + "/extractChanges")
        }
        var out = PulledChanges(mode: "extractChanges", fromGen: from)
        out.toGen = try top["layerServerGens"].map { r throws(EditLogError) in try answer.value(r) }.flatMap(\.arrayValue).map { $0.compactMap { $0["serverGen"]?.intValue }.max() } ?? nil
        for e in edits {
            var members: [String: Range<Int>] = [:]
            for (k, r) in try answer.members(e) ?? [] where members[k] == nil { members[k] = r }
            guard let lid = try members["id"].map({ r throws(EditLogError) in try answer.value(r) })?.intValue, let layer = schema.layer(id: Int(lid)) else { continue }
            var lists: [String: Range<Int>] = [:]
            if let f = members["features"] { for (k, r) in try answer.members(f) ?? [] where lists[k] == nil { lists[k] = r } }
            for list in ["adds", "updates"] {
                for r in try lists[list].map({ r throws(EditLogError) in try answer.elements(r) ?? [] }) ?? [] {
                    let item = try answer.value(r)
                    guard let rf = RemoteValues.feature(item, layer: layer) else {
                        throw EditLogError(.invalidInput, "a changed \(layer.name) feature has no GlobalID: \(item.serialized().prefix(160))", at: client.baseURL + "/extractChanges")
                    }
                    out.features.append(rf)
                    if let d = rf.editDate { out.lastEditDate = max(out.lastEditDate ?? d, d) }
                }
            }
            let deleteIds = try lists["deleteIds"].map { r throws(EditLogError) in try answer.value(r) }
            for d in deleteIds?.arrayValue ?? [] { if let oid = d.intValue { out.deletes.append((layer.id, oid)) } }
        }
        return out
    }

    // MARK: Pull and import

    /// A pull through `extractChanges`, in windows of generations up to the service's current one (read from the
    /// root's `changeTrackingInfo`). Each window's adds and updates are merged and committed as soon as it has
    /// arrived; meanwhile the next window downloads and its sessions are built from a read-only handle on this log
    /// (the sessions of features that import then touched are built again after it). The deletes of every window
    /// are imported with the last one (children first, so a parent deleted with its children is never kept for
    /// children still to come), and only that last transaction records the server generation reached. A run
    /// stopped between windows starts from the same generation next time: the windows it committed are echoes
    /// then and write nothing. Memory holds about three windows, not the whole pull: what must be known across
    /// windows (which features changed since the common base, which the last import touched) is asked of the log,
    /// and the changes pulled are listed on disk (`SyncChangeList`). Returns the generation reached.
    func pullInWindows(from: Int64, root: JSONValue?, state initial: SyncState) async throws(EditLogError) -> Int64? {
        var current: Int64?
        if let gens = root?["changeTrackingInfo"]?["layerServerGens"]?.arrayValue {
            current = gens.compactMap { $0["serverGen"]?.intValue }.max()
        }
        var state = initial
        var openConflicts = try openConflictFields()
        let basePosition = try commonBase(state)
        var deletes: [(layer: Int, objectId: Int64)] = []
        var mappingsAdded = 0
        var lastEditDate: Int64?
        var reader: UncheckedSendable<EditLog>?
        defer { reader?.value.close() }
        let engine = UncheckedSendable(self)
        if report.repulls == 0 { report.fromServerGen = from }
        // The first window is a quarter of the others: nothing can be merged before it arrives.
        var built = try await receiveWindow(Self.download(client: client, schema: log.schema, from: from, size: options.generationWindow / 4, current: current),
                                            current: current, state: state, openConflicts: openConflicts, basePosition: basePosition, reader: nil)
        defer { built.next?.task.cancel() }
        while true {
            // Taken out of `built`, so the import holds one copy of the window; its sessions are built (and built
            // again where the import before touched them), so of its features only their ids are needed now.
            var unit = built.unit, pending = built.pending
            built.unit.features = []; built.pending = []
            unit.features = unit.features.map(\.identity)
            deletes += built.part.deletes
            if let d = built.part.lastEditDate { lastEditDate = max(lastEditDate ?? d, d) }
            // The next window: downloaded and its sessions built while this one imports.
            var ahead: Task<BuiltWindow, any Error>?
            if let next = built.next {
                if reader == nil { reader = UncheckedSendable(try EditLog.open(at: log.path, readonly: true)) }
                let st = state, oc = openConflicts, rd = reader
                ahead = Task { try await engine.value.receiveWindow(next, current: current, state: st, openConflicts: oc, basePosition: basePosition, reader: rd?.value) }
                if options.buildNextWindowFirst, let ahead { _ = await ahead.result }
            }
            // The position before this window's import when it imported events: features with an event after it were touched.
            var touchedAfter: Int64?
            do {
                if !built.more {
                    // The last window: features deleted in any window are not listed as changed; every delete goes here.
                    let deleted = Set(deletes.map { "\($0.layer):\($0.objectId)" })
                    unit.features.removeAll { f in f.objectId.map { deleted.contains("\(f.layer):\($0)") } ?? false }
                    pending.removeAll { p in p.change.objectId.map { deleted.contains("\(p.change.layer):\($0)") } ?? false }
                    unit.deletes = deletes; unit.lastEditDate = lastEditDate
                    var gone = PulledChanges(mode: unit.mode, fromGen: unit.fromGen, toGen: unit.toGen)
                    gone.deletes = deletes
                    pending += try await pendingEvents(gone, state: state, openConflicts: openConflicts, basePosition: basePosition)
                }
                let before = try log.lastPosition()
                options.windowProbe?(pending.count, deletes.count + mappingsAdded)
                let imported = try importPulled(consume pending, pull: unit, state: state, partial: built.more)
                if built.more {
                    for (l, m) in imported.mappings { state.objectIds[l, default: [:]].merge(m) { _, new in new }; mappingsAdded += m.count }
                    if imported.events > 0 { touchedAfter = before }
                    if imported.conflicts > 0 { openConflicts = try openConflictFields() }
                    try fail("pulled-window")
                }
            } catch {
                if let ahead {
                    ahead.cancel()
                    if case .success(let b) = await ahead.result { b.next?.task.cancel() }
                }
                throw error
            }
            guard let ahead else { return unit.toGen }
            var next: BuiltWindow
            do { next = try await ahead.value } catch let e as EditLogError { throw e } catch {
                throw EditLogError(.io, "extractChanges failed: \(error)", at: client.baseURL + "/extractChanges")
            }
            // Sessions of features the import just touched were built against the state before it: built again.
            let stale = try touchedAfter.map { after throws(EditLogError) in
                try log.streams(among: next.unit.features.lazy.map { StreamName.feature(layer: $0.layer, globalId: $0.globalId) }, withEventsAfter: after)
            } ?? []
            if !stale.isEmpty {
                next.pending.removeAll { stale.contains(StreamName.feature(layer: $0.change.layer, globalId: $0.change.globalId)) }
                var redo = PulledChanges(mode: next.unit.mode, fromGen: next.unit.fromGen, toGen: next.unit.toGen)
                redo.features = next.unit.features.filter { stale.contains(StreamName.feature(layer: $0.layer, globalId: $0.globalId)) }
                next.pending += try await pendingEvents(redo, state: state, openConflicts: openConflicts, basePosition: basePosition)
                next.pending = ordered(next.pending, as: next.unit.features)
            }
            built = next
        }
    }

    /// One window of a pull: its answer, whether another window follows (and its download, started), the
    /// features to merge (those it also lists as deleted left out) and their sessions, unstamped.
    struct BuiltWindow: Sendable {
        var part: PulledChanges
        var more: Bool
        var next: (task: Task<PulledChanges, any Error>, from: Int64, to: Int64?)?
        var unit: PulledChanges
        var pending: [PendingChange]
    }

    /// Starts the download of the window from `start` (at most `size` generations, up to `current`).
    static func download(client: FeatureServiceClient, schema: ServiceSchema, from start: Int64, size: Int64, current: Int64?)
        -> (task: Task<PulledChanges, any Error>, from: Int64, to: Int64?) {
        let end = current.map { min($0, start + max(1, size)) }
        return (Task { try await extractWindow(client: client, schema: schema, from: start, to: end) }, start, end)
    }

    /// Waits for a window's answer, starts the next window's download, and builds the window's sessions (through
    /// `reader` when given). Touches nothing of the engine's mutable state: it runs while another window imports.
    func receiveWindow(_ window: (task: Task<PulledChanges, any Error>, from: Int64, to: Int64?), current: Int64?, state: SyncState,
                       openConflicts: [String: Set<String>], basePosition: Int64, reader: EditLog?) async throws(EditLogError) -> BuiltWindow {
        var part: PulledChanges
        do { part = try await window.task.value } catch let e as EditLogError { throw e } catch {
            throw EditLogError(.io, "extractChanges failed: \(error)", at: client.baseURL + "/extractChanges")
        }
        var more = false
        if let end = window.to, let got = part.toGen, let current, got >= end, end < current { more = true }
        let next = more ? Self.download(client: client, schema: log.schema, from: window.to!, size: options.generationWindow, current: current) : nil
        var unit = PulledChanges(mode: "extractChanges", fromGen: window.from, toGen: part.toGen ?? window.to)
        let deleted = Set(part.deletes.map { "\($0.layer):\($0.objectId)" })
        unit.features = part.features.filter { f in !(f.objectId.map { deleted.contains("\(f.layer):\($0)") } ?? false) }
        part.features = []  // kept in `unit`; the answer keeps its deletes, generation and edit date
        do {
            let pending = try await pendingEvents(unit, state: state, openConflicts: openConflicts, basePosition: basePosition, reader: reader)
            return BuiltWindow(part: part, more: more, next: next, unit: unit, pending: pending)
        } catch {
            next?.task.cancel()
            throw error
        }
    }

    /// Pulled sessions in the order `pendingEvents` builds them: layers parents first, then the answer's order.
    func ordered(_ pending: [PendingChange], as features: [RemoteFeature]) -> [PendingChange] {
        var rank: [String: Int] = [:]
        for (i, f) in features.enumerated() { rank["\(f.layer):\(f.globalId)"] = i }
        var layerRank: [Int: Int] = [:]
        for (i, l) in layerOrder.enumerated() { layerRank[l.id] = i }
        return pending.sorted {
            (layerRank[$0.change.layer] ?? 0, rank["\($0.change.layer):\($0.change.globalId)"] ?? 0)
                < (layerRank[$1.change.layer] ?? 0, rank["\($1.change.layer):\($1.change.globalId)"] ?? 0)
        }
    }

    /// A pull through `query` (a service without change tracking): one answer, one transaction.
    func pullByQuery(state: SyncState) async throws(EditLogError) {
        let pull = try await queryChanges(since: state.lastEditDate)
        if report.repulls == 0 { report.fromServerGen = pull.fromGen }
        let pending = try await pendingEvents(pull, state: state, openConflicts: try openConflictFields())
        _ = try importPulled(pending, pull: pull, state: state, partial: false)
    }

    /// A pull through a replica (a service with Sync but no change tracking, which `query` cannot show deletes
    /// of): the first run registers a replica of every layer (`queryOption` all) and takes its data as a snapshot
    /// at its generation; each later run synchronizes it (`download`): adds and
    /// updates as the service holds them, deletes by GlobalID, up to the generation it answers. A replica the
    /// service no longer knows is registered again. The replica id is recorded in `SyncPulled`.
    func pullByReplica(state: SyncState) async throws(EditLogError) {
        if let id = state.replicaId, let gen = state.serverGen {
            do throws(EditLogError) {
                let answer = try await client.json("synchronizeReplica", [("replicaID", id), ("replicaServerGen", String(gen)), ("syncDirection", "download"),
                                                                           ("transportType", "esriTransportTypeEmbedded"), ("dataFormat", "json")], post: true)
                var pull = PulledChanges(mode: "replica", fromGen: gen, toGen: answer["replicaServerGen"]?.intValue)
                pull.replicaId = id
                for edits in answer["edits"]?.arrayValue ?? [] {
                    guard let lid = edits["id"]?.intValue, let layer = log.schema.layer(id: Int(lid)) else { continue }
                    pull.features += try remoteFeatures((edits["features"]?["adds"]?.arrayValue ?? []) + (edits["features"]?["updates"]?.arrayValue ?? []),
                                                        layer: layer, at: "/synchronizeReplica")
                    for g in edits["features"]?["deleteIds"]?.arrayValue ?? [] {
                        if let gid = g.stringValue.flatMap(GlobalID.normalize) { pull.gone.append((layer.id, gid)) }
                    }
                }
                if report.repulls == 0 { report.fromServerGen = gen }
                let pending = try await pendingEvents(pull, state: state, openConflicts: try openConflictFields())
                _ = try importPulled(pending, pull: pull, state: state, partial: false, always: true)
                return
            } catch {
                // Unregistered on the service: registered again below, from a snapshot.
                guard error.description.contains("Replica does not exist") else { throw error }
            }
        }
        let layers = log.schema.layers.map(\.id)
        let all = JSONValue.object(Dictionary(uniqueKeysWithValues: layers.map { (String($0), JSONValue.object(["queryOption": "all"])) }))
        let created = try await client.json("createReplica", [("replicaName", "editlog \(log.logId)"), ("layers", layers.map(String.init).joined(separator: ",")),
                                                              ("layerQueries", all.serialized()), ("syncModel", "perReplica"), ("dataFormat", "json"),
                                                              ("transportType", "esriTransportTypeEmbedded"), ("returnAttachments", "false")], post: true)
        guard let id = created["replicaID"]?.stringValue, let gen = created["replicaServerGen"]?.intValue else {
            throw EditLogError(.invalidInput, "the createReplica answer names no replicaID and replicaServerGen: \(created.serialized().prefix(160))", at: client.baseURL + "/createReplica")
        }
        try await pullSnapshot(state: state, gen: gen, replica: (id, created))
    }

    /// Every feature a replica's data holds, as a snapshot pull.
    func replicaFeatures(_ data: JSONValue) throws(EditLogError) -> PulledChanges {
        var pull = PulledChanges(mode: PulledChanges.snapshot)
        for l in data["layers"]?.arrayValue ?? [] {
            guard let lid = l["id"]?.intValue, let layer = log.schema.layer(id: Int(lid)) else { continue }
            pull.features += try remoteFeatures(l["features"]?.arrayValue ?? [], layer: layer, at: "/createReplica")
        }
        return pull
    }

    /// A replica answer's features of `layer`; one without a GlobalID is refused, naming the operation.
    func remoteFeatures(_ items: [JSONValue], layer: LayerSchema, at operation: String) throws(EditLogError) -> [RemoteFeature] {
        try items.map { item throws(EditLogError) in
            guard let rf = RemoteValues.feature(item, layer: layer) else {
                throw EditLogError(.invalidInput, "a \(layer.name) feature has no GlobalID: \(item.serialized().prefix(160))", at: client.baseURL + operation)
            }
            return rf
        }
    }

    /// Whether a feature stream (`layer:GlobalID`) has an event after `position`, asked of `log` (this log when nil).
    func changedSince(_ position: Int64, _ stream: String, _ log: EditLog? = nil) throws(EditLogError) -> Bool {
        try (log ?? self.log).streams(among: CollectionOfOne(stream), withEventsAfter: position).contains(stream)
    }

    /// For a service without change tracking: every feature whose edit date is after `since` (all the first
    /// time), paged as the layer allows. Deletes cannot be seen this way.
    func queryChanges(since: Int64?, mode: String = "query") async throws(EditLogError) -> PulledChanges {
        var out = PulledChanges(mode: mode)
        var total: Int64 = 0, done: Int64 = 0
        if let progress = options.progress {
            for layer in log.schema.layers {
                let c = try await client.json("\(layer.id)/query", [("where", changedWhere(layer, since: since)), ("returnCountOnly", "true")], post: true)
                total += c["count"]?.intValue ?? 0
            }
            progress(mode, 0, total)
        }
        for layer in log.schema.layers {
            try await client.queryAll(layer: layer.id, where: changedWhere(layer, since: since), returnGeometry: true, limits: limits(layer)) { page throws(EditLogError) in
                for item in page {
                    guard let rf = RemoteValues.feature(item, layer: layer) else {
                        throw EditLogError(.invalidInput, "a \(layer.name) feature has no GlobalID: \(item.serialized().prefix(160))", at: client.baseURL + "/\(layer.id)/query")
                    }
                    out.features.append(rf)
                    if let d = rf.editDate { out.lastEditDate = max(out.lastEditDate ?? d, d) }
                }
                done += Int64(page.count)
                options.progress?(mode, done, max(total, done))
            }
        }
        return out
    }

    /// The where clause of features edited at or after `since` (every feature when nil or the layer has no edit date field).
    func changedWhere(_ layer: LayerSchema, since: Int64?) -> String {
        guard let since, let f = layer.editFieldsInfo?.editDateField else { return "1=1" }
        return "\(f) >= TIMESTAMP '\(Timestamp.format(milliseconds: since).replacingOccurrences(of: "T", with: " ").replacingOccurrences(of: "Z", with: ""))'"
    }

    /// A snapshot pull: every feature of every layer, paged, merged as the service's state (one transaction,
    /// closed by a `SyncPulled` of mode `snapshot` recording `gen`, the generation the root named before the
    /// read, so `extractChanges` continues from there). A feature live here that the service held at the common
    /// base (the log's baseline on a first sync) and that the snapshot lacks was deleted there: it is pulled as
    /// a delete (merged like any other: a change here since is an update/delete conflict). One made here since
    /// the base is this log's, pushed as an add.
    /// `replica`: the features come from a replica just created (its data, read at `gen`), not from queries.
    func pullSnapshot(state: SyncState, gen: Int64?, replica: (id: String, data: JSONValue)? = nil) async throws(EditLogError) {
        var pull: PulledChanges
        if let replica { pull = try replicaFeatures(replica.data) } else { pull = try await queryChanges(since: nil, mode: PulledChanges.snapshot) }
        pull.fromGen = state.serverGen
        pull.toGen = gen
        pull.replicaId = replica?.id
        pull.lastEditDate = nil
        let present = Set(pull.features.map(\.globalId))
        let basePosition = try commonBase(state)
        for layer in log.schema.layers {
            for f in try log.allFeatures(layer: layer.id) where !f.deleted && !present.contains(f.globalId) {
                let stream = StreamName.feature(layer: layer.id, globalId: f.globalId)
                if try changedSince(basePosition, stream), try baseAttributes(layer, f.globalId, basePosition: basePosition, true, current: f, log) == nil { continue }
                pull.gone.append((layer.id, f.globalId))
            }
        }
        if report.repulls == 0 { report.fromServerGen = state.serverGen }
        report.snapshot = true
        let pending = try await pendingEvents(pull, state: state, openConflicts: try openConflictFields())
        _ = try importPulled(pending, pull: pull, state: state, partial: false, always: true)
    }

    /// The service's attachments of features (their GlobalIDs and, where known, the service's ObjectIDs), by
    /// the parent's GlobalID. Asked by ObjectID when every one is known (an indexed lookup on any server).
    func remoteAttachments(layer: LayerSchema, features: [(globalId: String, objectId: Int64?)]) async throws(EditLogError) -> [String: [RemoteAttachment]] {
        guard layer.hasAttachments, !features.isEmpty else { return [:] }
        var out: [String: [RemoteAttachment]] = [:]
        var i = 0
        while i < features.count {
            let batch = Array(features[i..<min(i + options.batchSize, features.count)])
            i += batch.count
            let wanted = Set(batch.map(\.globalId))
            for group in try await attachmentGroups(layer, batch[...]) {
                let pg = group["parentGlobalId"]?.stringValue, po = group["parentObjectId"]?.intValue
                for a in group["attachmentInfos"]?.arrayValue ?? [] {
                    if let ra = RemoteValues.attachment(a, parentGlobalId: pg, parentObjectId: po), wanted.contains(ra.parentGlobalId) { out[ra.parentGlobalId, default: []].append(ra) }
                }
            }
        }
        return out
    }

    /// The `queryAttachments` groups of `batch`; a batch the service answers in part (`exceededTransferLimit`)
    /// is asked again in halves, so no attachment is missed.
    func attachmentGroups(_ layer: LayerSchema, _ batch: ArraySlice<(globalId: String, objectId: Int64?)>) async throws(EditLogError) -> [JSONValue] {
        let oids = batch.compactMap(\.objectId)
        let param = oids.count == batch.count ? ("objectIds", oids.map(String.init).joined(separator: ",")) : ("globalIds", batch.map(\.globalId).joined(separator: ","))
        let answer = try await client.json("\(layer.id)/queryAttachments", [param, ("returnMetadata", "false")], post: true)
        if answer["exceededTransferLimit"]?.boolValue == true {
            guard batch.count > 1 else {
                throw EditLogError(.invalidInput, "the service holds more attachments of \(layer.name) \(batch.first!.globalId) than one queryAttachments answer gives",
                                   at: client.baseURL + "/\(layer.id)/queryAttachments")
            }
            let mid = batch.startIndex + batch.count / 2
            return try await attachmentGroups(layer, batch[..<mid]) + attachmentGroups(layer, batch[mid...])
        }
        return answer["attachmentGroups"]?.arrayValue ?? []
    }

    // MARK: Changes to events

    /// The pulled changes as events for the merge, parents before children, echoes of this log's own pushes and
    /// changes this log already has left out.
    /// `basePosition` is computed when not given; whether a feature changed here since it is asked of the log.
    /// Reads go through `reader` when given (a read-only handle on this log: the next window is built while this
    /// one imports); events come unstamped (see `stamp`), so building them draws no id and reads no clock.
    func pendingEvents(_ pull: PulledChanges, state: SyncState, openConflicts: [String: Set<String>],
                       basePosition base: Int64? = nil, reader: EditLog? = nil) async throws(EditLogError) -> [PendingChange] {
        let log = reader ?? self.log
        let basePosition: Int64
        if let base { basePosition = base } else { basePosition = try commonBase(state) }
        let origin = "service:" + client.serviceKey
        var out: [PendingChange] = []
        func event(_ stream: String, _ payload: some EventPayload, actor: String, time: String?, session: String?) -> RecordedEvent {
            let body = payload.body, bytes = body.canonicalBytes
            return RecordedEvent(position: 0, id: Self.unstamped, stream: stream, streamVersion: 0, body: body,
                                 actor: actor, device: client.serviceKey, session: session, cause: Cause.syncPull, clientTime: time, recordedTime: "",
                                 origin: EventOrigin(logId: origin, position: 0, hash: EventHash.sha256(bytes)), hash: [])
        }
        let byLayer = Dictionary(grouping: pull.features, by: \.layer)
        for layer in layerOrder {
            let features = byLayer[layer.id] ?? []
            if features.isEmpty { continue }
            let atts = try await remoteAttachments(layer: layer, features: features.map { ($0.globalId, $0.objectId) })
            let derived = derivedFields(layer)
            let here = try log.snapshots(layer: layer.id, globalIds: features.map(\.globalId))
            let changedSinceBase = try log.streams(among: features.lazy.map { StreamName.feature(layer: layer.id, globalId: $0.globalId) }, withEventsAfter: basePosition)
            for rf in features {
                let stream = StreamName.feature(layer: layer.id, globalId: rf.globalId)
                let local = here[rf.globalId]?.feature
                let actor = rf.editor ?? "service"
                let time = rf.editDate.map { Timestamp.format(milliseconds: $0) }
                let session = ""  // stamped
                let open = openConflicts[rf.globalId] ?? []
                if open.contains("") { continue }  // an open update/delete conflict: left to `conflicts resolve`
                // Attachments the service has and this log never had (a detached one stays detached here).
                let mine = here[rf.globalId]?.attachments ?? []
                let known = Set(mine.map(\.globalId))
                var added: [SessionState.StagedAttachment] = [], blobs: [[UInt8]] = []
                for a in atts[rf.globalId] ?? [] where !known.contains(a.globalId) {
                    guard let oid = a.parentObjectId ?? rf.objectId else { continue }
                    let bytes = try await client.bytes("\(layer.id)/\(oid)/attachments/\(a.id)")
                    blobs.append(bytes)
                    added.append(.init(attachmentId: a.globalId, name: a.name, contentType: a.contentType, size: Int64(bytes.count),
                                       sha256: Hex.encode(EventHash.sha256(bytes)), preferredSize: "actual"))
                }
                // Attachments both have, renamed there since the common base, or there at the base and gone there now.
                var renamed: [AttachmentChanges.Renamed] = [], removed: [AttachmentChanges.Removed] = []
                if local != nil, layer.hasAttachments {
                    var theirs: [String: RemoteAttachment] = [:]
                    for a in atts[rf.globalId] ?? [] { theirs[a.globalId] = a }
                    var base: [String: String]?
                    for a in mine where !a.deleted {
                        if let r = theirs[a.globalId], r.name == a.name { continue }
                        if base == nil { base = try attachmentNames(stream, at: basePosition, log) }
                        if let r = theirs[a.globalId] {
                            let old = base?[a.globalId]
                            if old == r.name { continue }  // the service kept the base name: the rename is this log's (pushed next)
                            renamed.append(.init(attachmentId: a.globalId, old: JSONValue(old ?? a.name), new: r.name))
                        } else if let old = base?[a.globalId] {
                            removed.append(.init(attachmentId: a.globalId, name: .string(old)))
                        }
                    }
                }
                let attachments = AttachmentChanges(added: added, renamed: renamed, removed: removed)
                let started: SessionStarted, committed: SessionCommitted
                var fields: [String] = []
                if local == nil {
                    var changes = FieldChanges()
                    for (k, v) in rf.attributes where !v.isNull { changes[k] = .init(old: .null, new: v); fields.append(k) }
                    started = SessionStarted(layer: layer.id, globalId: rf.globalId, kind: .create, geometry: rf.geometry)
                    committed = SessionCommitted(layer: layer.id, globalId: rf.globalId, isCreate: true, changes: changes, geometry: rf.geometry, attachments: attachments)
                } else {
                    let current = local!
                    let base = try baseAttributes(layer, rf.globalId, basePosition: basePosition, changedSinceBase.contains(stream), current: current, log)
                    var changes = FieldChanges()
                    for (k, r) in rf.attributes where !derived.contains(k) && !open.contains(k) {
                        let b = base?[k] ?? .null, l = current.attributes[k] ?? .null
                        if RemoteValues.same(r, b) || RemoteValues.same(r, l) { continue }
                        changes[k] = .init(old: b, new: r); fields.append(k)
                    }
                    if changes.isEmpty && added.isEmpty && renamed.isEmpty && removed.isEmpty { continue }  // nothing new: an echo of this log's push, or already here
                    started = SessionStarted(layer: layer.id, globalId: rf.globalId, kind: .edit)
                    committed = SessionCommitted(layer: layer.id, globalId: rf.globalId, isCreate: false, changes: changes, geometry: nil, attachments: attachments)
                }
                fields.sort()
                out.append(PendingChange(change: SyncChange(layer: layer.id, globalId: rf.globalId, kind: local == nil ? "add" : "update", fields: fields, objectId: rf.objectId),
                                         events: [event(stream, started, actor: actor, time: time, session: session),
                                                  event(stream, committed, actor: actor, time: time, session: session)],
                                         blobs: blobs, attachments: added.count + renamed.count + removed.count))
            }
        }
        // Deletes: the service names them by its ObjectIDs; known ones map to GlobalIDs (children first). A
        // snapshot names the features it no longer found by GlobalID.
        let pulledIds = objectIdsPulled(pull)
        for layer in layerOrder.reversed() {
            let named: [(g: String?, objectId: Int64?)] = pull.deletes.filter { $0.layer == layer.id }.map { d in
                (state.objectIds[layer.id]?[d.objectId] ?? pulledIds[layer.id]?[d.objectId], d.objectId)
            } + pull.gone.filter { $0.layer == layer.id }.map { ($0.globalId, nil) }
            for d in named {
                guard let g = d.g else { continue }
                guard let local = try log.snapshot(layer: layer.id, globalId: g), !local.deleted else { continue }
                if openConflicts[g]?.contains("") == true { continue }
                let stream = StreamName.feature(layer: layer.id, globalId: g)
                let base = try baseAttributes(layer, g, basePosition: basePosition, changedSince(basePosition, stream, log), current: local, log) ?? local.attributes
                var attrs: [String: JSONValue] = [:]
                for f in layer.attributeFields { attrs[f.name] = base[f.name] ?? .null }
                let deleted = FeatureDeleted(layer: layer.id, globalId: g, attributes: attrs)
                out.append(PendingChange(change: SyncChange(layer: layer.id, globalId: g, kind: "delete", fields: [], objectId: d.objectId ?? state.objectIds[layer.id]?.first { $0.value == g }?.key),
                                         events: [event(stream, deleted, actor: "service", time: nil, session: nil)], blobs: []))
            }
        }
        return out
    }

    /// A feature's live attachments and their names at a position of this log, folded from its stream (a rename
    /// or detach this log's merge decided not to apply left out).
    func attachmentNames(_ stream: String, at position: Int64, _ log: EditLog) throws(EditLogError) -> [String: String] {
        var names: [String: String] = [:]
        var effects = EffectFold(ownLog: log.logId)
        for e in try log.streamEvents(stream) where e.position <= position {
            guard let atts = try effects.next(e).effect?.attachments else { continue }
            for a in atts.added { names[a.attachmentId] = a.name }
            for a in atts.renamed { names[a.attachmentId] = a.new }
            for a in atts.removed { names[a.attachmentId] = nil }
        }
        return names
    }

    func objectIdsPulled(_ pull: PulledChanges) -> [Int: [Int64: String]] {
        var m: [Int: [Int64: String]] = [:]
        for f in pull.features { if let o = f.objectId { m[f.layer, default: [:]][o] = f.globalId } }
        return m
    }

    /// The local position both sides last agreed on: the last push's, else (first sync) the end of the baseline
    /// the log was made from (the data the service had too).
    func commonBase(_ state: SyncState) throws(EditLogError) -> Int64 {
        if state.agreedPosition > 0 { return state.agreedPosition }
        return try log.baselineEnd()
    }

    /// The feature's attributes at the common base (nil: it did not exist then). Any other failure to read it (an
    /// event of its stream that cannot be read) is an error, naming the feature and the event's position.
    func baseAttributes(_ layer: LayerSchema, _ g: String, basePosition: Int64, _ changedSince: Bool, current: FeatureSnapshot, _ log: EditLog) throws(EditLogError) -> [String: JSONValue]? {
        if !changedSince { return current.attributes }
        let b: Blame
        do { b = try log.blame(globalId: g, asOf: .position(basePosition)) } catch {
            if error.kind == .notFound { return nil }
            throw EditLogError(error.kind, "feature \(g) at the sync's base (position \(basePosition)): \(error.message)", at: error.location)
        }
        guard b.exists else { return nil }
        var out: [String: JSONValue] = [:]
        for e in b.fields where !e.field.hasPrefix("@") { out[e.field] = e.value }
        return out
    }

    // MARK: Import

    /// One transaction: the pulled events through the merge engine, then the `SyncPulled` state event. Nothing
    /// new (no event to import and no ObjectID not known yet) writes nothing. A `partial` pull (a window the run
    /// continues after) records no server generation: only the pull's last transaction does. Returns what it
    /// wrote: the events imported, the conflicts met and the ObjectIDs newly recorded.
    @discardableResult
    func importPulled(_ taken: consuming [PendingChange], pull: PulledChanges, state: SyncState, partial: Bool, always: Bool = false) throws(EditLogError)
        -> (events: Int, conflicts: Int, mappings: [Int: [Int64: String]]) {
        // Taken, not copied: `stamp` changes every event of a window in place.
        var pending = consume taken
        // A run's windows, and its second or third pull (see `run`), add to the first's.
        report.mode = pull.mode
        report.toServerGen = pull.toGen
        try report.pulled.append(contentsOf: pending.map(\.change))
        report.pulledAttachments += pending.reduce(0) { $0 + $1.attachments }
        var newMappings: [Int: [Int64: String]] = [:]
        for (l, m) in objectIdsPulled(pull) {
            for (oid, g) in m where state.objectIds[l]?[oid] != g { newMappings[l, default: [:]][oid] = g }
        }
        // Nothing new here (only echoes of this log's own pushes, or nothing at all): nothing is written; the
        // generation moves with the push (or the next pull that brings something).
        // A snapshot (`always`) records the generation it reached even so: the next run must not take it again.
        if pending.isEmpty && newMappings.isEmpty && !(always && pull.toGen != state.serverGen) { return (0, 0, [:]) }
        stamp(&pending, toGen: pull.toGen)
        var pulled = SyncPulled(service: client.serviceKey, mode: pull.mode, fromServerGen: pull.fromGen, serverGen: partial ? nil : pull.toGen,
                                changes: pending.map(\.change.json), lastEditDate: pull.lastEditDate, objectIds: ObjectIdMappings(newMappings),
                                partial: partial, windowServerGen: partial ? pull.toGen : nil, replicaId: pull.replicaId)
        let source = "sync:" + client.serviceKey
        // ArcGIS's "last in wins": this log's upload is the last in (`LastInRule.upload`).
        let r = try log.importEvents(policy: options.policy, rule: .upload, actor: options.actor, device: options.device, source: source, { event, blob in
            for p in pending {
                for b in p.blobs { try blob(b) }
                for e in p.events { try event(e) }
            }
        }, closing: { r in
            pulled.imported = Int64(r.imported)
            pulled.conflicts = r.conflicts.map(\.id)
            return [SystemEvent(stream: StreamName.sync, pulled, cause: Cause.sync)]
        })
        report.imported += r.imported
        report.conflicts += r.conflicts
        return (r.imported, r.conflicts.count, newMappings)
    }

    /// An id no stamped event has: the placeholder of events `pendingEvents` builds.
    static let unstamped = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))

    /// Gives pulled events, in order, their ids (a session pair's session id first), the recorded time and origin
    /// positions (`toGen` × 10⁶ + their rank in the import) from this log's generators, just before the import.
    func stamp(_ pending: inout [PendingChange], toGen: Int64?) {
        let now = log.nowString()
        var seq: Int64 = 0
        for i in pending.indices {
            let session = pending[i].events.first?.session == nil ? nil : log.nextEventId().lowercasedString
            for j in pending[i].events.indices {
                seq += 1
                pending[i].events[j].id = log.nextEventId()
                pending[i].events[j].session = session
                pending[i].events[j].recordedTime = now
                pending[i].events[j].origin.position = (toGen ?? 0) * 1_000_000 + seq
            }
        }
    }

}
