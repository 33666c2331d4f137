import EditLogCore
import EditLogMerge
import EditLogStore
import Foundation
import GRDB

/// Applies events to the projection tables. The same code maintains them at commit (incremental)
/// and replays the whole log (`rebuild`), so the two are equal byte for byte.
public final class Projector {
    public private(set) var schema: ServiceSchema?
    /// The log whose events these are: its own `MergeDecided` events apply, other logs' are records only.
    public var logId: String?
    /// Decisions of this log waiting for their imported event (by event id).
    var decisions: [String: MergeDecision] = [:]
    /// Open sessions this projector has seen, so a staged step does not re-read and re-parse the session
    /// row. Only the projector writes `p_sessions`, and it lives for one transaction (or one rebuild).
    public internal(set) var openSessions: [String: SessionState] = [:]
    /// Features read in this transaction, by GlobalID; a write to a feature row drops its entry.
    public internal(set) var featureCache: [String: FeatureSnapshot] = [:]
    /// Features kept at most: an import's end reads every feature it touched (a million-event bundle: 97k
    /// snapshots, 150 MB), and a read after the cache is emptied simply goes to the table again. An import
    /// lowers it (`Importer.featureCacheLimit`): its reads come in bursts about one feature.
    public var featureCacheLimit = 5_000

    func cacheFeature(_ f: FeatureSnapshot, key globalId: String) {
        if featureCache.count >= featureCacheLimit { featureCache.removeAll(keepingCapacity: true) }
        featureCache[globalId] = f
    }
    /// Rows held before they are written out (bounds memory on large logs). An import lowers it
    /// (`Importer.pendingRowLimit`).
    public var pendingLimit = Projector.defaultPendingLimit
    public static let defaultPendingLimit = 10_000
    /// Feature and session rows not yet written (`Projector+PendingWrites.swift`).
    var pendingFeatures: [String: PendingFeature] = [:]
    var pendingSessions: [String: PendingSession] = [:]
    /// Statements deferred to the row writer (attachments, scripts), in event order; empty without one.
    var pendingStatements: [PendingStatement] = []
    /// Writes the folded rows on a second thread during `writingAside` (`Projector+RowWriter.swift`).
    var writer: RowWriter?
    /// A pending session row differs from the table in what session queries read (a new session, a status,
    /// an actor): those queries write the pending rows first. Staged steps alone leave this false, so a
    /// session's state JSON is not rewritten per step.
    var sessionRowsStale = false
    /// Per layer: the feature table's column layout and its statements.
    var layerColumns: [Int: LayerColumns] = [:]
    /// Where the rows written on this projector's thread bind their texts and blobs from.
    let arena = BindArena()

    public init(schema: ServiceSchema? = nil, logId: String? = nil) { self.schema = schema; self.logId = logId }

    /// Sets the schema when the projection tables already exist (incremental use).
    public func setSchema(_ s: ServiceSchema) { schema = s }

    /// Decodes the schema recorded by a `SchemaDefined` event.
    public static func decodeSchema(_ payload: JSONValue) throws(EditLogError) -> ServiceSchema {
        var docs: [(name: String, json: JSONValue)] = []
        for d in payload["service"]?.arrayValue ?? [] {
            docs.append((d["name"]?.stringValue ?? "service", d["json"] ?? .null))
        }
        let webmap = payload["webmap"].flatMap { $0.isNull ? nil : $0 }
        let rules = payload["rules"].flatMap { $0.isNull ? nil : $0 }
        return try ArcGISSchemaDecoder.decode(service: docs, webmap: webmap, rules: rules)
    }

    /// Applies one event. A payload that lacks what its type needs, a layer the schema does not have, or a
    /// session step without its session is `.corrupt` naming the position: never skipped, so rebuild,
    /// incremental and `verify` all see it.
    public func apply(_ e: RecordedEvent, _ db: Database) throws {
        try project(e, db)
        try writePendingIfFull(db)
    }

    func project(_ e: RecordedEvent, _ db: Database) throws {
        // Types from a newer EditLog change no projection here (an older build can still read the log).
        guard let type = e.eventType else { return }
        let p = e.fields
        let decision = decisions.isEmpty ? nil : decisions.removeValue(forKey: e.id.lowercasedString)
        switch type {
        case .schemaDefined:
            // Another log's schema, imported with its events, never replaces this log's (the import checked they agree).
            if schema != nil, let logId, e.origin.logId != logId { return }
            let s: ServiceSchema
            do { s = try Projector.decodeSchema(e.payload) } catch { throw p.corrupt("the schema cannot be decoded: \(error.message)") }
            try exclusive {
                if schema == nil, try !db.tableExists("p_sessions") { try ProjectionTables.createCommon(db) }
                for l in s.layers where try !db.tableExists(ProjectionTables.featureTable(l.id)) {
                    try ProjectionTables.createLayer(db, l)
                }
            }
            schema = s
        case .featureBaselined:
            if let decision, decision.asUpdate {
                try applyAsUpdate(e, attributes: try p.object("attributes"), decision, db)
            } else {
                try insertFeature(e, attributes: try p.object("attributes"), geometry: p.optional("geometry"), db, tracking: .of(e, decision: decision))
            }
        case .sessionStarted:
            let session = try e.requireSession()
            let st: SessionState
            do { st = try SessionState(started: e.payload, session: session, actor: e.actor, device: e.device, position: e.position) } catch {
                throw error.at("position \(e.position)")
            }
            _ = try p.layer(in: schema)
            // `index(forKey:)`: a subscript compared with nil copies the whole value out first.
            if pendingSessions.index(forKey: session) != nil || openSessions.index(forKey: session) != nil {
                throw p.corrupt("opens session \(session) a second time")
            }
            openSessions[session] = st
            pendingSessions[session] = PendingSession(inserted: true, startedPosition: st.startedPosition, state: nil, openedBy: e.actor,
                                                      startedTime: e.clientTime ?? e.recordedTime)
            sessionRowsStale = true
        case .attributeStaged, .relationStaged, .attachmentStaged, .attachmentRenameStaged, .attachmentDetachStaged, .sessionResumed,
             .sessionCanceled, .sessionAbandoned:
            try updateSession(e, type, db)
        case .sessionCommitted:
            try updateSession(e, type, db)
            try commit(e, decision, db)
        case .featureDeleted:
            if decision?.skipDelete == true { return }
            let l = try p.layer(in: schema), g = try p.string("globalId")
            // The layer's editor-tracking fields stay the last edit's (a feature revived, here or where the delete lost,
            // shows the same on both sides); the internal columns name the delete.
            try fold(l, globalId: g, insertAt: nil) { c, row in
                row[c.deleted] = 1.databaseValue
                row[c.editor] = e.actor.databaseValue
                row[c.edited] = e.recordedTime.databaseValue
                row[c.position] = e.position.databaseValue
            }
            try execute(db, "UPDATE p_attachments SET deleted = 1, position = ? WHERE parent_global_id = ? AND deleted = 0", [e.position, g])
        case .featureDerived:
            // A rule's values derived again after an import (`keepTracking` in the payload) leave the tracking as it is:
            // every log that merged the same events names the same editor, whichever of them derived again.
            try updateFeature(try p.layer(in: schema), globalId: try p.string("globalId"), changes: Self.without(decision?.skipFields, try p.object("changes")), geometry: nil, e, db,
                              tracking: .of(e, decision: decision))
        case .mergeDecided:
            let d: MergeDecision
            do { d = try MergeDecision(json: e.payload) } catch { throw p.corrupt(error.message) }
            guard d.log == logId else { return }
            if let target = d.event {
                decisions[target] = d
            } else {
                try revive(d, e, db)
                try deleteAgain(d, e, db)
            }
        case .conflictResolved:
            // A conflict closed as this log held it (no field): nothing changes, not even editor tracking.
            if e.payload["field"] == nil { return }
            let l = try p.layer(in: schema), g = try p.string("globalId")
            try revive(decision, e, db)
            try updateFeature(l, globalId: g, changes: Self.without(decision?.skipFields, try p.object("changes")), geometry: nil, e, db,
                              tracking: .of(e, decision: decision))
        case .syncPulled, .syncPushed:
            return  // sync state: read from the events by `editlog sync`; no projection
        case .scriptRecorded:
            // The same script recorded by two logs (both imported here) is one row: the first.
            try execute(db, "INSERT INTO p_scripts (sha256, name, lines, position) VALUES (?, ?, ?, ?) ON CONFLICT(sha256) DO NOTHING",
                        [try p.string("sha256"), try p.string("name"), try p.int("lines"), e.position])
        }
    }

    func updateSession(_ e: RecordedEvent, _ type: EventType, _ db: Database) throws {
        let session = try e.requireSession()
        // The open session's state is taken out of `openSessions` (its pending row holds none meanwhile), so the
        // step below changes it in place: a shared copy made every staged step copy the whole staged list.
        var st: SessionState
        var wasOpen = false
        if let cached = openSessions.removeValue(forKey: session) {
            st = cached
            wasOpen = true
        } else if let i = pendingSessions.index(forKey: session), let pending = pendingSessions.values[i].state {
            st = pending
        } else {
            guard let row = try exclusive({ try Row.fetchOne(db.cachedStatement(sql: "SELECT state, started_position FROM p_sessions WHERE id = ?"), arguments: [session]) }) else {
                throw e.fields.corrupt("names session \(session), which no SessionStarted event opened")
            }
            st = try ProjectedState.decodeSession(state: row[0], startedPosition: row[1], id: session)
        }
        do { try st.apply(type: type, payload: e.payload, actor: e.actor, device: e.device) } catch {
            if wasOpen { openSessions[session] = st }  // `apply` checks before it changes anything
            throw error.at("position \(e.position)")
        }
        let ended = st.status != .open
        if ended || type == .sessionResumed { sessionRowsStale = true }
        if let i = pendingSessions.index(forKey: session) {
            // An open session's pending row takes its state from `openSessions` when it is written.
            pendingSessions.values[i].state = ended ? st : nil
            if ended {
                pendingSessions.values[i].endedPosition = e.position
                pendingSessions.values[i].endedTime = e.clientTime ?? e.recordedTime
            }
        } else {
            pendingSessions[session] = PendingSession(inserted: false, startedPosition: st.startedPosition, state: ended ? st : nil, openedBy: "",
                                                      startedTime: "", endedPosition: ended ? e.position : nil,
                                                      endedTime: ended ? e.clientTime ?? e.recordedTime : nil)
        }
        if !ended { openSessions[session] = st }
    }

    /// Writes every folded row; call before the transaction commits (and `ProjectedState` calls it before
    /// each query of the tables).
    public func flush(_ db: Database) throws {
        try writePending(db)
        try writer?.drain()
    }

    static func databaseValue(_ v: JSONValue) -> DatabaseValueConvertible? {
        switch v {
        case .null: return nil
        case .bool(let b): return b
        case .int(let i): return i
        case .double(let d): return d
        case .string(let s): return s
        case .array, .object: return v.serialized()
        }
    }

    func insertFeature(_ e: RecordedEvent, attributes: [String: JSONValue], geometry: JSONValue?, _ db: Database, tracking: EditorTracking) throws {
        let layer = try e.fields.layer(in: schema), g = try e.fields.string("globalId")
        if let i = pendingFeatures.index(forKey: g), pendingFeatures.values[i].inserted { throw e.fields.corrupt("creates feature \(g) a second time") }
        let tracked = layer.editorTrackingValues(of: e, tracking)
        try fold(layer, globalId: g, insertAt: e.position) { c, row in
            // Each field's value is the tracked one, else the given one, else NULL: every attribute column NULL, then
            // the given values, then the tracked ones (one lookup per value, not three per field of the layer).
            for i in c.attributeColumns { row[i] = .null }
            for (k, v) in attributes { if let i = c.attribute[k] { row[i] = Projector.databaseValue(v)?.databaseValue ?? .null } }
            for (k, v) in tracked { if let i = c.attribute[k] { row[i] = Projector.databaseValue(v)?.databaseValue ?? .null } }
            Self.setGeometry(geometry.flatMap { $0.isNull ? nil : $0 }, c, &row)
            row[c.creator] = e.actor.databaseValue
            row[c.created] = e.recordedTime.databaseValue
            row[c.editor] = e.actor.databaseValue
            row[c.edited] = e.recordedTime.databaseValue
            row[c.deleted] = 0.databaseValue
            row[c.version] = e.streamVersion.databaseValue
            row[c.position] = e.position.databaseValue
        }
    }

    /// The geometry columns of a feature row: Esri JSON, WKB and the bounding box (all NULL without a geometry).
    static func setGeometry(_ geometry: JSONValue?, _ c: LayerColumns, _ row: inout [DatabaseValue?]) {
        let b = Geometry.bounds(geometry)
        row[c.geometry] = geometry?.serialized().databaseValue ?? .null
        row[c.wkb] = Geometry.wkb(geometry).map { Data($0).databaseValue } ?? .null
        row[c.xmin] = b?.minX.databaseValue ?? .null
        row[c.ymin] = b?.minY.databaseValue ?? .null
        row[c.xmax] = b?.maxX.databaseValue ?? .null
        row[c.ymax] = b?.maxY.databaseValue ?? .null
    }

    func updateFeature(_ layer: LayerSchema, globalId: String, changes: [String: JSONValue], geometry: JSONValue?, _ e: RecordedEvent, _ db: Database,
                       tracking: EditorTracking) throws {
        let editor = tracking.editor, creator = tracking.creator
        let tracked = layer.editorTrackingValues(of: e, tracking)
        try fold(layer, globalId: globalId, insertAt: nil) { c, row in
            for (k, change) in changes {
                guard let f = layer.field(k), let i = c.attribute[f.name] else {
                    throw e.fields.corrupt("changes field \"\(k)\", which layer \(layer.name) does not have as an attribute")
                }
                row[i] = Projector.databaseValue(change["new"] ?? .null)?.databaseValue ?? .null
            }
            // Editor tracking after the changes, as a field the tracking fills is not the crew's to set.
            for (k, v) in tracked { if let i = c.attribute[k] { row[i] = Projector.databaseValue(v)?.databaseValue ?? .null } }
            if let g = geometry, !g.isNull { Self.setGeometry(g, c, &row) }
            if editor {
                row[c.editor] = e.actor.databaseValue
                row[c.edited] = e.recordedTime.databaseValue
            }
            if creator {
                row[c.creator] = e.actor.databaseValue
                row[c.created] = e.recordedTime.databaseValue
            }
            row[c.position] = e.position.databaseValue
        }
    }

    func commit(_ e: RecordedEvent, _ decision: MergeDecision?, _ db: Database) throws {
        let p = e.fields
        let layer = try p.layer(in: schema), g = try p.string("globalId")
        let changes = try p.object("changes")
        try revive(decision, e, db)
        let skipAttachments = Set(decision?.skipAttachments ?? [])
        let tracking = EditorTracking.of(e, decision: decision)
        if let decision, decision.asUpdate {
            try applyAsUpdate(e, attributes: changes.mapValues { $0["new"] ?? .null }, decision, db)
        } else if let decision, !decision.skipFields.isEmpty {
            try updateFeature(layer, globalId: g, changes: Self.without(decision.skipFields, changes), geometry: nil, e, db, tracking: tracking)
        } else if try p.string("kind") == "create" {
            try insertFeature(e, attributes: changes.mapValues { $0["new"] ?? .null }, geometry: p.optional("geometry"), db, tracking: tracking)
        } else {
            try updateFeature(layer, globalId: g, changes: changes, geometry: nil, e, db, tracking: tracking)
        }
        let atts = try p.object("attachments")
        for a in try p.array("added", in: atts, parentKey: "attachments") {
            guard let s = SessionState.StagedAttachment(json: a) else { throw p.corrupt("payload \"attachments.added\" holds an entry that is not an attachment") }
            // The same attachment added again by another log (the import let only an identical one through): a no-op.
            try execute(db, """
                INSERT INTO p_attachments (global_id, parent_layer, parent_global_id, name, content_type, size, sha256, keywords, preferred_size, position)
                VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?) ON CONFLICT(global_id) DO NOTHING
                """, [s.attachmentId, layer.id, g, s.name, s.contentType, s.size, s.sha256, s.preferredSize, e.position])
        }
        for r in try p.array("renamed", in: atts, parentKey: "attachments") {
            guard let id = r["attachmentId"]?.stringValue, let name = r["new"]?.stringValue else {
                throw p.corrupt("payload \"attachments.renamed\" needs attachmentId and new")
            }
            if skipAttachments.contains(id) { continue }
            try execute(db, "UPDATE p_attachments SET name = ?, position = ? WHERE global_id = ?", [name, e.position, id])
        }
        for r in try p.array("removed", in: atts, parentKey: "attachments") {
            guard let id = r["attachmentId"]?.stringValue else { throw p.corrupt("payload \"attachments.removed\" needs attachmentId") }
            if skipAttachments.contains(id) { continue }
            try execute(db, "UPDATE p_attachments SET deleted = 1, position = ? WHERE global_id = ?", [e.position, id])
        }
    }

    // MARK: Merge decisions (EditLogMerge)

    /// Starting after `last` (a replay from a checkpoint): a decision of this log recorded there still applies
    /// to the next event.
    public func resume(after last: RecordedEvent) {
        guard last.eventType == .mergeDecided, let d = try? MergeDecision(json: last.payload), d.log == logId, let target = d.event else { return }
        decisions[target] = d
    }

    static func without(_ skip: [String]?, _ changes: [String: JSONValue]) -> [String: JSONValue] {
        guard let skip, !skip.isEmpty else { return changes }
        return changes.filter { !skip.contains($0.key) }
    }

    /// A create of a GlobalID this log already has, merged: the fields the decision did not keep, as an update.
    func applyAsUpdate(_ e: RecordedEvent, attributes: [String: JSONValue], _ d: MergeDecision, _ db: Database) throws {
        let layer = try e.fields.layer(in: schema), g = try e.fields.string("globalId")
        try revive(d, e, db)
        var changes: [String: JSONValue] = [:]
        for (k, v) in attributes where !d.skipFields.contains(k) && layer.field(k) != nil { changes[k] = ["new": v] }
        let geometry = d.skipFields.contains(MergeEngine.geometryField) ? nil : e.fields.optional("geometry")
        // The tracking follows the later writer; a baseline's editor-tracking fields are data (the service's), merged
        // with the rest, so only the internal columns follow it (`keepTrackingFields`; older decisions lack it and
        // set the fields, as they did when recorded, so a rebuild of an older log gives what it held).
        try updateFeature(layer, globalId: g, changes: changes, geometry: geometry, e, db, tracking: .asUpdate(d))
    }

    /// A feature kept by an earlier decision of this log deleted again (and the attachments that decision made live
    /// again detached), when a standalone decision says so. The internal editor columns are left as they are.
    func deleteAgain(_ d: MergeDecision, _ e: RecordedEvent, _ db: Database) throws {
        try setDeleted(true, feature: d.deleteAgain ? d : nil, attachments: d.detachAttachments, e, db)
    }

    /// A feature (and the attachments its delete detached) live again, when a decision says so.
    func revive(_ d: MergeDecision?, _ e: RecordedEvent, _ db: Database) throws {
        guard let d else { return }
        try setDeleted(false, feature: d.revive ? d : nil, attachments: d.reviveAttachments, e, db)
    }

    /// Sets the deleted flag of the decision's feature (when given) and of the listed attachments, at the decision.
    func setDeleted(_ deleted: Bool, feature d: MergeDecision?, attachments: [String], _ e: RecordedEvent, _ db: Database) throws {
        if let d {
            guard let layer = schema?.layer(id: d.layer) else {
                throw e.fields.corrupt("\(deleted ? "deletes again" : "revives") a feature of layer \(d.layer), which the schema does not have")
            }
            try fold(layer, globalId: d.globalId, insertAt: nil) { c, row in
                row[c.deleted] = (deleted ? 1 : 0).databaseValue
                row[c.position] = e.position.databaseValue
            }
        }
        for id in attachments {
            try execute(db, "UPDATE p_attachments SET deleted = ?, position = ? WHERE global_id = ?", [deleted ? 1 : 0, e.position, id])
        }
    }
}
