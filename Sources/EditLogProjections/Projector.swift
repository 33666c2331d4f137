import EditLogCore
import EditLogMerge
import EditLogStore
import Foundation
import GRDB

/// Applies events to the projection tables. The same code maintains them at commit (incremental)
/// and replays the whole log (`rebuild`), so the two are equal byte for byte.
public final class Projector {
    public private(set) var schema: ServiceSchema?
    /// The position of the last schema change this projector adopted after its first schema (nil: none).
    public private(set) var adoptedAt: Int64?
    /// The log whose events these are: its own `MergeDecided` events apply, other logs' are records only.
    public var logId: String? { get { effects.ownLog } set { effects.ownLog = newValue } }
    /// Each event's typed body and effect, with this log's decisions held until their event.
    var effects: EffectFold
    /// Whether the target keeps a change index (`ChangeIndex`), looked up at the first feature write; nil before.
    var indexesChanges: Bool?
    /// Creates the change index with the projection tables (the log's own projection: a new log, a rebuild); a
    /// replay's or a checkpoint's tables have none.
    public var createsChangeIndex = false
    /// With `createsChangeIndex`, the index's lookup by feature is left to the caller (`Projections.replay` creates it
    /// after the whole log).
    var defersChangeIndexLookup = false
    /// Open sessions this projector has seen, so a staged step does not re-read and re-parse the session
    /// row. Only the projector writes `p_sessions`, and it lives for one transaction (or one rebuild).
    public internal(set) var openSessions: [String: SessionState] = [:]
    /// Features read in this transaction, by GlobalID; a write to a feature row drops its entry.
    public internal(set) var featureCache: [String: FeatureSnapshot] = [:]
    /// Features kept at most: an import's end reads every feature it touched (too many to keep for a large
    /// bundle), and a read after the cache is emptied simply goes to the table again. An import
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
    /// Values of another log's events for fields their layer does not have here, left out of the rows (`write`).
    public private(set) var unprojectedValues = 0

    public init(schema: ServiceSchema? = nil, logId: String? = nil) { self.schema = schema; effects = EffectFold(ownLog: logId) }

    /// Sets the schema when the projection tables already exist (incremental use).
    public func setSchema(_ s: ServiceSchema) { schema = s }

    /// Applies one event. A payload that lacks what its type needs, a layer the schema does not have, or a
    /// session step without its session is `.corrupt` naming the position: never skipped, so rebuild,
    /// incremental and `verify` all see it.
    public func apply(_ e: RecordedEvent, _ db: Database) throws {
        try project(e, db)
        try writePendingIfFull(db)
    }

    func project(_ e: RecordedEvent, _ db: Database) throws {
        let step = try effects.next(e)
        switch step.body {
        case .unknown:
            return  // a type from a newer EditLog changes no projection here (an older build can still read the log)
        case .schemaDefined(let s):
            // Another log's schema, imported with its events, never replaces this log's (the import checked they agree).
            if schema != nil, let logId, e.origin.logId != logId { return }
            try adopt(s.definitions, e, db)
        case .schemaChanged(let s):
            // Another log's change, imported with its events, is a record: this log adopts what its events need by a
            // change of its own (`Cause.schemaImport`).
            if let logId, e.origin.logId != logId { return }
            try adopt(s.definitions, e, db)
        case .sessionStarted(let started):
            let session = try e.requireSession()
            let st = SessionState(started: started, session: session, actor: e.actor, device: e.device, position: e.position)
            _ = try e.layer(started.layer, in: schema)
            // `index(forKey:)`: a subscript compared with nil copies the whole value out first.
            if pendingSessions.index(forKey: session) != nil || openSessions.index(forKey: session) != nil {
                throw e.corrupt("opens session \(session) a second time")
            }
            openSessions[session] = st
            pendingSessions[session] = PendingSession(inserted: true, startedPosition: st.startedPosition, state: nil, openedBy: e.actor,
                                                      startedTime: e.clientTime ?? e.recordedTime)
            sessionRowsStale = true
        case .attributeStaged, .relationStaged, .attachmentStaged, .attachmentRenameStaged, .attachmentDetachStaged, .sessionResumed,
             .sessionCanceled, .sessionAbandoned:
            try updateSession(e, step.body, db)
        case .sessionCommitted:
            try updateSession(e, step.body, db)
            if let effect = step.effect { try write(effect, e, db) }
        case .featureBaselined, .featureDeleted, .featureDerived, .conflictResolved, .mergeDecided:
            if let effect = step.effect { try write(effect, e, db) }
        case .syncPulled, .syncPushed, .replicaCreated, .replicaSynchronized, .replicaUnregistered:
            return  // sync state: read from the events by `editlog sync`; no projection
        case .scriptRecorded(let s):
            // The same script recorded by two logs (both imported here) is one row: the first.
            try execute(db, "INSERT INTO p_scripts (sha256, name, lines, position) VALUES (?, ?, ?, ?) ON CONFLICT(sha256) DO NOTHING",
                        [s.sha256, s.name, s.lines, e.position])
        }
    }

    /// Makes a schema event's definitions the schema in force: a new layer gets its table; a layer whose attribute
    /// fields changed gets its table reshaped (`ProjectionTables.reshapeLayer`), in this transaction. A removed layer's
    /// table stays as it is (its features stay in history). Rebuild and incremental run this same function at the same
    /// event, so their tables stay equal.
    func adopt(_ definitions: SchemaDefinitions, _ e: RecordedEvent, _ db: Database) throws {
        let s: ServiceSchema
        do { s = try definitions.decode() } catch { throw e.corrupt("the schema cannot be decoded: \(error.message)") }
        // Rows folded under the old layout are written with it first.
        if schema != nil { try flush(db) }
        try exclusive {
            if schema == nil, try !db.tableExists("p_sessions") {
                try ProjectionTables.createCommon(db)
                if createsChangeIndex, try !ChangeIndex.exists(db) { try ChangeIndex.create(db, byFeature: !defersChangeIndexLookup) }
            }
            for l in s.layers {
                if try !db.tableExists(ProjectionTables.featureTable(l.id)) {
                    try ProjectionTables.createLayer(db, l)
                } else if schema != nil, try ProjectionTables.reshapeLayer(db, l) {
                    layerColumns[l.id] = nil
                }
            }
        }
        if schema != nil { featureCache.removeAll(); adoptedAt = e.position }
        schema = s
    }

    /// Whether `e` was first recorded by another log (imported).
    func isOthers(_ e: RecordedEvent) -> Bool { logId.map { e.origin.logId != $0 } ?? false }

    /// Writes an event's effect on its feature (`FeatureEffect`: this log's decision applied) to the rows, and its
    /// row to the change index when the target keeps one (`ChangeIndex`).
    func write(_ f: FeatureEffect, _ e: RecordedEvent, _ db: Database) throws {
        if indexesChanges == nil { indexesChanges = try exclusive { try ChangeIndex.exists(db) } }
        let indexing = indexesChanges == true
        if f.revives || !f.revivedAttachments.isEmpty {
            try setDeleted(false, feature: f.revives ? f : nil, attachments: f.revivedAttachments, e, db)
        }
        // The effect's layer as the schema has it (the payload's reader names what is wrong when it does not).
        func layer() throws -> LayerSchema { try schema?.layer(id: f.layer) ?? e.layer(f.layer, in: schema) }
        var tracking: String?
        switch f.row {
        case .create:
            tracking = try insertFeature(e, try layer(), f, db, indexing: indexing)
        case .update:
            tracking = try updateFeature(try layer(), f, e, db, indexing: indexing)
        case .delete:
            let l = try layer()
            // The layer's editor-tracking fields stay the last edit's (a feature revived, here or where the delete lost,
            // shows the same on both sides); the internal columns name the delete.
            try fold(l, globalId: f.globalId, insertAt: nil) { c, row in
                row[c.deleted] = 1.databaseValue
                row[c.editor] = e.actor.databaseValue
                row[c.edited] = e.recordedTime.databaseValue
                row[c.position] = e.position.databaseValue
            }
            try execute(db, "UPDATE p_attachments SET deleted = 1, position = ? WHERE parent_global_id = ? AND deleted = 0", [e.position, f.globalId])
        case .deleteAgain, .none:
            break
        }
        if f.row == .deleteAgain || !f.detachedAttachments.isEmpty {
            try setDeleted(true, feature: f.row == .deleteAgain ? f : nil, attachments: f.detachedAttachments, e, db)
        }
        if indexing {
            try execute(db, "INSERT INTO \(ChangeIndex.table) (position, layer, global_id, kind, tracking) VALUES (?, ?, ?, ?, ?)",
                        [e.position, f.layer, f.globalId, ChangeIndex.Kind(f).rawValue, tracking])
        }
        guard let atts = f.attachments, !atts.isEmpty else { return }
        for s in atts.added {
            // The same attachment added again by another log (the import let only an identical one through): a no-op.
            try execute(db, """
                INSERT INTO p_attachments (global_id, parent_layer, parent_global_id, name, content_type, size, sha256, keywords, preferred_size, position)
                VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?) ON CONFLICT(global_id) DO NOTHING
                """, [s.attachmentId, f.layer, f.globalId, s.name, s.contentType, s.size, s.sha256, s.preferredSize, e.position])
        }
        for r in atts.renamed {
            try execute(db, "UPDATE p_attachments SET name = ?, position = ? WHERE global_id = ?", [r.new, e.position, r.attachmentId])
        }
        for r in atts.removed {
            try execute(db, "UPDATE p_attachments SET deleted = 1, position = ? WHERE global_id = ?", [e.position, r.attachmentId])
        }
    }

    func updateSession(_ e: RecordedEvent, _ body: EventBody, _ db: Database) throws {
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
                throw e.corrupt("names session \(session), which no SessionStarted event opened")
            }
            st = try ProjectedState.decodeSession(state: row[0], startedPosition: row[1], id: session)
        }
        do { try st.apply(body, actor: e.actor, device: e.device) } catch {
            if wasOpen { openSessions[session] = st }  // `apply` checks before it changes anything
            throw error.at("position \(e.position)")
        }
        let ended = st.status != .open
        if ended || { if case .sessionResumed = body { true } else { false } }() { sessionRowsStale = true }
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

    /// Returns the row's editor tracking for the change index when `indexing` (`ChangeIndex.tracking`).
    func insertFeature(_ e: RecordedEvent, _ layer: LayerSchema, _ f: FeatureEffect, _ db: Database, indexing: Bool) throws -> String? {
        let g = f.globalId
        var tracking: String?
        if let i = pendingFeatures.index(forKey: g), pendingFeatures.values[i].inserted { throw e.corrupt("creates feature \(g) a second time") }
        let tracked = layer.editorTrackingValues(of: e, f.tracking)
        try fold(layer, globalId: g, insertAt: e.position) { c, row in
            // Each field's value is the tracked one, else the given one, else NULL: every attribute column NULL, then
            // the given values, then the tracked ones (one lookup per value, not three per field of the layer).
            for i in c.attributeColumns { row[i] = .null }
            f.forEachValue { k, _, v in
                if let i = c.attribute[k] { row[i] = Projector.databaseValue(v)?.databaseValue ?? .null } else if isOthers(e) { unprojectedValues += 1 }
            }
            for (k, v) in tracked { if let i = c.attribute[k] { row[i] = Projector.databaseValue(v)?.databaseValue ?? .null } }
            Self.setGeometry(f.geometry, c, &row)
            row[c.creator] = e.actor.databaseValue
            row[c.created] = e.recordedTime.databaseValue
            row[c.editor] = e.actor.databaseValue
            row[c.edited] = e.recordedTime.databaseValue
            row[c.deleted] = 0.databaseValue
            row[c.version] = e.streamVersion.databaseValue
            row[c.position] = e.position.databaseValue
            if indexing { tracking = ChangeIndex.tracking(c, row, only: nil) }
        }
        return tracking
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

    /// Returns the editor tracking this write set, for the change index when `indexing` (`ChangeIndex.tracking`).
    func updateFeature(_ layer: LayerSchema, _ f: FeatureEffect, _ e: RecordedEvent, _ db: Database, indexing: Bool) throws -> String? {
        let tracking = f.tracking
        var indexed: String?
        let tracked = layer.editorTrackingValues(of: e, tracking)
        try fold(layer, globalId: f.globalId, insertAt: nil) { c, row in
            // The tracking columns this event writes (for the index: the pending row also holds earlier writes, more
            // of them in a rebuild than in one transaction, and the index must be the same both ways).
            var wrote: [Int] = []
            try f.forEachValue { k, _, new in
                guard let field = layer.field(k), let i = c.attribute[field.name] else {
                    // Another log's value for a field this log's schema lacks (removed here, or there before the
                    // export): kept in the event, not projected. This log's own events name only fields it had.
                    if isOthers(e) { unprojectedValues += 1; return }
                    if f.ignoresUnknownFields { return }
                    throw e.corrupt("changes field \"\(k)\", which layer \(layer.name) does not have as an attribute")
                }
                row[i] = Projector.databaseValue(new)?.databaseValue ?? .null
                if indexing, c.tracking.contains(where: { $0.index == i }) { wrote.append(i) }
            }
            // Editor tracking after the changes, as a field the tracking fills is not the crew's to set.
            for (k, v) in tracked {
                guard let i = c.attribute[k] else { continue }
                row[i] = Projector.databaseValue(v)?.databaseValue ?? .null
                if indexing { wrote.append(i) }
            }
            if let g = f.geometry { Self.setGeometry(g, c, &row) }
            if tracking.editor {
                row[c.editor] = e.actor.databaseValue
                row[c.edited] = e.recordedTime.databaseValue
            }
            if tracking.creator {
                row[c.creator] = e.actor.databaseValue
                row[c.created] = e.recordedTime.databaseValue
            }
            row[c.position] = e.position.databaseValue
            if indexing { indexed = ChangeIndex.tracking(c, row, only: wrote) }
        }
        return indexed
    }

    /// Starting after `last` (a replay from a checkpoint): a decision of this log recorded there still applies
    /// to the next event; `.corrupt` at its position when that decision cannot be read.
    public func resume(after last: RecordedEvent) throws(EditLogError) { try effects.resume(after: last) }

    /// Sets the deleted flag of the effect's feature (when given) and of the listed attachments, at the event.
    func setDeleted(_ deleted: Bool, feature f: FeatureEffect?, attachments: [String], _ e: RecordedEvent, _ db: Database) throws {
        if let f {
            guard let layer = schema?.layer(id: f.layer) else {
                throw e.corrupt("\(deleted ? "deletes again" : "revives") a feature of layer \(f.layer), which the schema does not have")
            }
            try fold(layer, globalId: f.globalId, insertAt: nil) { c, row in
                row[c.deleted] = (deleted ? 1 : 0).databaseValue
                row[c.position] = e.position.databaseValue
            }
        }
        for id in attachments {
            try execute(db, "UPDATE p_attachments SET deleted = ?, position = ? WHERE global_id = ?", [deleted ? 1 : 0, e.position, id])
        }
    }
}
