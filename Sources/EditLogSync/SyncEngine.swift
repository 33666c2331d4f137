import EditLog
import Foundation

/// `editlog sync`: a log against an ArcGIS FeatureServer. One run:
/// 1. checks the service (a FeatureServer whose layers hold every layer and field of this log, the token);
/// 2. pulls the changes since the last recorded server generation (`extractChanges`; a replica when the service
///    has Sync but no change tracking; `query` by the edit date field when it has neither), attachments included, turns each changed
///    feature into a `sync-pull` session (actor: the service's editor field) and imports them through the
///    merge engine with this log's changes since the last sync as the other side: one transaction per window
///    of server generations, each closed by a `SyncPulled` event, the last (with every window's deletes)
///    recording the generation reached (`pullInWindows`);
/// 3. pushes what differs between this log and the service for the features this log changed since the last
///    sync (`applyEdits`, GlobalIDs, rollbackOnFailure, parents before children, attachments with their
///    GlobalIDs) and records a `SyncPushed` event with the answers.
/// Every step compares states by GlobalID, so a run interrupted anywhere is finished by the next without
/// duplicates: what the service already has is not sent again.
public final class SyncEngine {
    let log: EditLog
    var client: FeatureServiceClient
    let options: SyncOptions
    var report: SyncReport
    /// Per layer, how the service answers queries (`maxRecordCount`, pagination), read by `checkService`.
    var readLimits: [Int: LayerReadLimits] = [:]
    /// The service added fields or layers (`followSchema`): this run reads every feature first, so their values arrive.
    var readsEveryFeature = false

    public init(log: EditLog, client: FeatureServiceClient, options: SyncOptions) {
        self.log = log; self.client = client; self.options = options
        self.report = SyncReport(service: client.serviceKey, dryRun: options.dryRun, policy: options.policy)
    }

    /// Syncs `log` (opened read-write) with the service.
    public func run() async throws(EditLogError) -> SyncReport {
        let before = try log.lastPosition()
        var root = try await checkService()
        let tracking = root["extractChangesCapabilities"] != nil || root["changeTrackingInfo"] != nil
            || (root["capabilities"]?.stringValue ?? "").lowercased().contains("changetracking")
        for attempt in 1...Self.pullAttempts {
            let state = try SyncState(log: log, service: client.serviceKey)
            var pulledGen: Int64?
            if tracking {
                var from = state.serverGen ?? 0
                if readsEveryFeature || Self.needsSnapshot(root: root, recorded: state.serverGen, layers: log.schema.layers.map(\.id)) {
                    // extractChanges cannot answer from `from`: every feature is read as the common base first, and
                    // the changes continue from the generation the root named before that read.
                    let gen = FeatureServiceClient.serverGens(root: root).values.map(\.current).max()
                    try await pullSnapshot(state: state, gen: gen)
                    from = gen ?? from
                }
                let st = from == (state.serverGen ?? 0) ? state : try SyncState(log: log, service: client.serviceKey)
                pulledGen = try await pullInWindows(from: from, root: root, state: st)
                report.mode = "extractChanges"
            } else if root["syncEnabled"]?.boolValue == true {
                if readsEveryFeature { try await pullSnapshot(state: state, gen: nil) }
                try await pullByReplica(state: readsEveryFeature ? try SyncState(log: log, service: client.serviceKey) : state)
                report.mode = "replica"
            } else {
                if readsEveryFeature { try await pullSnapshot(state: state, gen: nil) }
                try await pullByQuery(state: readsEveryFeature ? try SyncState(log: log, service: client.serviceKey) : state)
            }
            readsEveryFeature = false
            try fail("pulled")
            if try await push(state: state, pulledGen: pulledGen, openConflicts: try openConflictFields()) { break }
            // The service changed features this push would send after the pull: pull again (they merge first).
            report.repulls += 1
            guard attempt < Self.pullAttempts else {
                throw EditLogError(.conflict, "the service changed features this sync would push after each of \(Self.pullAttempts) pulls; "
                                   + "nothing was pushed (the pulls are recorded): run sync again", at: client.baseURL)
            }
            root = try await client.json("")
        }
        report.eventsWritten = try log.lastPosition() - before
        return report
    }

    /// Pulls a run makes at most when the service keeps changing what it would push (see `push`).
    static let pullAttempts = 3

    /// `--dry-run`: the same run on a scratch copy of the log (the file and its WAL), sending no edit; the log
    /// itself is opened read-only and nothing is written to it.
    public static func plan(logAt path: String, client: FeatureServiceClient, options: SyncOptions) async throws(EditLogError) -> SyncReport {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("editlog-sync-plan-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sqlite").path
        defer { for s in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: scratch + s) } }
        do {
            // Read-only open first: a missing or foreign file is named as `open` names it.
            let original = try EditLog.open(at: path, readonly: true)
            original.close()
            try FileManager.default.copyItem(atPath: path, toPath: scratch)
            if FileManager.default.fileExists(atPath: path + "-wal") { try FileManager.default.copyItem(atPath: path + "-wal", toPath: scratch + "-wal") }
        } catch let e as EditLogError {
            throw e
        } catch {
            throw EditLogError(.io, "cannot copy the log for a dry run: \(error)", at: path)
        }
        let copy = try EditLog.open(at: scratch)
        defer { copy.close() }
        var o = options
        o.dryRun = true
        let engine = SyncEngine(log: copy, client: client, options: o)
        var r = try await engine.run()
        r.eventsWritten = 0
        return r
    }

    /// A failpoint (see `SyncOptions.failpoint`): its error is the run's.
    func fail(_ name: String) throws(EditLogError) {
        guard let f = options.failpoint else { return }
        do { try f(name) } catch let e as EditLogError { throw e } catch { throw EditLogError(.io, "\(error)") }
    }

    // MARK: The service

    /// The service root and its layers, checked: a FeatureServer, holding every layer and field of this log.
    func checkService() async throws(EditLogError) -> JSONValue {
        let (root, layers, remote) = try await client.definitions()
        client.identified(byRoot: root)
        report.service = client.serviceKey
        readLimits = LayerReadLimits.of(layers: layers)
        try followSchema(layers: layers, remote: remote)
        return root
    }

    /// Records the service's definitions as this log's schema when they changed (`SchemaChanged`, cause `sync`), before
    /// anything is pulled; what changed is compared field by field on every run (a service's `schemaLastEditDate` is
    /// not needed, and not every service gives it). The change is recorded with the local values it cannot keep, as
    /// conflicts `conflicts` lists: local edits since the last sync of a field the service removed (kept in history
    /// only: the service's schema wins), and local values a narrowed domain no longer has (kept here and pushed:
    /// ArcGIS stores them). A change that would lose data (a type changed, a string narrowed below a value) stops the
    /// sync with nothing written. A field or layer added makes this run read every feature (its values arrive).
    func followSchema(layers: JSONValue, remote: ServiceSchema) throws(EditLogError) {
        let changes = log.schema.changes(to: remote)
        guard !changes.isEmpty else { return }
        let found = try schemaConflicts(changes)
        let update: SchemaUpdate
        do {
            update = try log.changeSchema(service: [(name: "layers", json: layers)], cause: Cause.sync, source: client.baseURL,
                                          actor: options.actor, device: options.device) { _, _, _, ids in
                found.map { c in
                    Conflict(id: ids.next().lowercasedString, kind: c.kind, layer: c.layer, globalId: c.globalId, field: c.field, base: c.base,
                             local: SideValue(value: c.local, writer: nil), remote: SideValue(value: .null, writer: nil), policy: options.policy,
                             winner: c.kind == .fieldRemoved ? .remote : .local)
                }
            }
        } catch let error {
            throw EditLogError(error.kind, "the service's schema changed in a way this log cannot follow, so sync stopped before pulling and wrote nothing: "
                               + error.message, at: error.location ?? client.baseURL)
        }
        report.schemaChanges = update.changes
        report.schemaPosition = update.position
        report.conflicts += update.conflicts
        readsEveryFeature = update.changes.contains { $0.kind == .fieldAdded || $0.kind == .layerAdded }
    }

    /// The local values a schema change cannot keep as they are (see `followSchema`): features changed here since the
    /// last sync whose value of a removed field differs from the common base's, or whose value a narrowed domain lacks.
    func schemaConflicts(_ changes: [SchemaChange]) throws(EditLogError) -> [(kind: ConflictKind, layer: Int, globalId: String, field: String, base: JSONValue, local: JSONValue)] {
        let relevant = changes.filter { $0.kind == .fieldRemoved || !$0.removedCodes.isEmpty }
        guard !relevant.isEmpty else { return [] }
        let state = try SyncState(log: log, service: client.serviceKey)
        let basePosition = try commonBase(state)
        let changed = try log.changedFeatures(after: basePosition, excludingCauses: [], excludingTypes: [])
        var out: [(kind: ConflictKind, layer: Int, globalId: String, field: String, base: JSONValue, local: JSONValue)] = []
        for (layerId, g) in changed {
            guard let layer = log.schema.layer(id: layerId), let current = try log.snapshot(layer: layerId, globalId: g), !current.deleted else { continue }
            let base = try baseAttributes(layer, g, basePosition: basePosition, true, current: current, log)
            for c in relevant where c.layer == layerId {
                guard let field = c.field, let value = current.attributes[field], !value.isNull else { continue }
                let was = base?[field] ?? .null
                if c.kind == .fieldRemoved, value != was {
                    out.append((.fieldRemoved, layerId, g, field, was, value))
                } else if c.removedCodes.contains(value) {
                    out.append((.outsideDomain, layerId, g, field, was, value))
                }
            }
        }
        return out
    }

    /// How `layer` is read from the service (its definition's limits; ArcGIS's defaults when it gave none).
    func limits(_ layer: LayerSchema) -> LayerReadLimits {
        readLimits[layer.id] ?? LayerReadLimits(objectIdField: layer.objectIdField ?? "OBJECTID")
    }

    /// Whether a pull must start with a snapshot: on a first sync (`extractChanges` from 0 misses what the service
    /// held before its change tracking began, and names its deletes by ObjectIDs this log has never seen), and
    /// when the recorded generation is below a layer's `minServerGen` (tracking enabled again since: the gap's
    /// changes are not in `extractChanges`).
    static func needsSnapshot(root: JSONValue, recorded: Int64?, layers: [Int]) -> Bool {
        guard let recorded else { return true }
        let gens = FeatureServiceClient.serverGens(root: root)
        return layers.contains { id in gens[id]?.min.map { recorded < $0 } ?? false }
    }

    /// Layers in the order edits reach the service: origins of relationships (parents) before their destinations.
    var layerOrder: [LayerSchema] {
        let schema = log.schema
        var depth: [Int: Int] = [:]
        func d(_ l: LayerSchema, _ seen: Set<Int>) -> Int {
            if let v = depth[l.id] { return v }
            var best = 0
            for r in l.relationships where r.role == .destination {
                guard let (parent, _) = schema.counterpart(of: r, in: l), !seen.contains(parent.id) else { continue }
                best = max(best, d(parent, seen.union([l.id])) + 1)
            }
            depth[l.id] = best
            return best
        }
        return schema.layers.sorted { (d($0, []), $0.id) < (d($1, []), $1.id) }
    }

    /// Fields (and whole features, under "") with a conflict still open here: sync leaves them to `conflicts resolve`.
    func openConflictFields() throws(EditLogError) -> [String: Set<String>] {
        var out: [String: Set<String>] = [:]
        for c in try log.conflicts() where c.status == "open" {
            out[c.conflict.globalId, default: []].insert(c.conflict.field ?? "")
        }
        return out
    }

    /// Fields sync never sends or takes as a change of an existing feature: editor tracking (each side keeps its
    /// own), values rules derive (each side derives them), and fields no one edits.
    func derivedFields(_ layer: LayerSchema) -> Set<String> {
        var s = Set<String>()
        for rule in log.schema.rules { for (l, f) in rule.fieldsWritten where l == layer.id { s.insert(f) } }
        return s
    }
}
