import EditLogCore
import EditLogStore
import Foundation
import GRDB

/// The current state as the projections hold it, for the state machine and for readers.
public struct ProjectedState: CurrentState {
    public let db: Database
    public let schema: ServiceSchema
    /// The projector maintaining these tables in this transaction, if any: its open sessions answer
    /// session lookups without a query and a parse.
    public let projector: Projector?

    public init(db: Database, schema: ServiceSchema, projector: Projector? = nil) { self.db = db; self.schema = schema; self.projector = projector }

    /// A stored column value as JSON (blobs as base64).
    public static func jsonValue(_ dbv: DatabaseValue) -> JSONValue {
        switch dbv.storage {
        case .null: return .null
        case .int64(let i): return .int(i)
        case .double(let d): return .double(d)
        case .string(let s): return .string(s)
        case .blob(let b): return .string(b.base64EncodedString())
        }
    }

    /// Reads a `SELECT *` row of a feature table by column position (see `ProjectionTables.createLayer`):
    /// _oid, _globalid, the attribute fields in schema order, _geometry, _wkb, the bounds, editor tracking, _deleted, …
    func snapshot(_ layer: LayerSchema, _ row: Row) throws -> FeatureSnapshot {
        let fields = layer.attributeFields
        var attrs: [String: JSONValue] = Dictionary(minimumCapacity: fields.count)
        for (i, f) in fields.enumerated() { attrs[f.name] = ProjectedState.jsonValue(row[2 + i] as DatabaseValue) }
        let geomText: String? = row[2 + fields.count]
        let deleted: Int64 = row[2 + fields.count + 10]
        let globalId: String = row[1]
        var geometry: JSONValue?
        if let geomText {
            do { geometry = try JSONParser.parse(geomText) } catch {
                let position: Int64 = row[2 + fields.count + 12]
                throw EditLogError(.corrupt, "the projected geometry of \(layer.name) \(globalId) is not JSON (\(error.description)); the projection was altered: run `editlog rebuild`",
                                   at: "position \(position)")
            }
        }
        return FeatureSnapshot(layerId: layer.id, globalId: globalId, objectId: row[0], attributes: attrs, geometry: geometry, deleted: deleted != 0)
    }

    public func describe(_ error: any Error) -> EditLogError {
        EditLogError.wrapping(error, at: "the log")
    }

    /// Writes the projector's folded rows before a query of the tables, so no read sees a stale row.
    func sync() throws { try projector?.writePendingFeatures(db) }

    /// Before a query of one feature's row (by GlobalID): writes only what that row needs. Its table row is
    /// current when the projector holds nothing for it, so the other pending rows stay folded in memory.
    func sync(globalId: String) throws { try projector?.writePendingFeature(globalId, db) }

    /// Before a query of `p_sessions`: writes the pending session rows when one differs in what such a query
    /// reads (a staged step alone does not; its state is read from the projector's memory).
    func syncSessions() throws { if let projector, projector.sessionRowsStale { try projector.writePendingSessions(db) } }

    public func row(layer: Int, globalId: String) throws -> Row? {
        try sync(globalId: globalId)
        return try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM \(ProjectionTables.featureTable(layer)) WHERE _globalid = ?"), arguments: [globalId])
    }

    public func feature(layer: Int, globalId: String) throws -> FeatureSnapshot? {
        if let f = projector?.featureCache[globalId], f.layerId == layer { return f }
        guard let l = schema.layer(id: layer) else { return nil }
        try sync(globalId: globalId)
        let statement = try db.cachedStatement(sql: "SELECT * FROM \(ProjectionTables.featureTable(layer)) WHERE _globalid = ?")
        guard let f = try Self.stepOnce(statement, db: db, binding: [globalId], { try snapshot(l, stmt: $0) }) else { return nil }
        projector?.cacheFeature(f, key: globalId)
        return f
    }

    /// Whether any feature table holds a row (a live or a deleted feature).
    public func holdsAnyFeature() throws -> Bool {
        try sync()
        for l in schema.layers where try db.tableExists(ProjectionTables.featureTable(l.id)) {
            if try Int64.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM \(ProjectionTables.featureTable(l.id)) LIMIT 1")) != nil { return true }
        }
        return false
    }

    /// The layer that holds a GlobalID, if any.
    public func locate(globalId: String) throws -> LayerSchema? {
        try sync(globalId: globalId)
        // The schema event creates a table for every layer, so each lookup is one indexed query per layer.
        for l in schema.layers {
            if try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM \(ProjectionTables.featureTable(l.id)) WHERE _globalid = ?"), arguments: [globalId]) == true {
                return l
            }
        }
        return nil
    }

    public func featureExists(globalId: String) throws -> Bool { try locate(globalId: globalId) != nil }

    /// A `p_sessions` row's state. The projection is not covered by the hash chain: an unreadable state is
    /// `.corrupt`, pointing at the session's first event.
    public static func decodeSession(state text: String, startedPosition: Int64, id: String) throws -> SessionState {
        let problem: String
        do {
            if var s = SessionState(json: try JSONParser.parse(text)), s.id == id {
                s.startedPosition = startedPosition
                return s
            }
            problem = "is not a session state"
        } catch { problem = "is not JSON (\(error.description))" }
        throw EditLogError(.corrupt, "the projected state of session \(id) \(problem); the projection was altered: run `editlog rebuild`",
                           at: "position \(startedPosition)")
    }

    static let sessionColumns = "id, state, started_position"
    /// Up to this many sessions open in the projector's memory, `openSession` scans them instead of writing the
    /// pending session rows before its query.
    static let openSessionScanLimit = 64

    /// A session from its row, or from the projector's memory when the row's staged state is not yet flushed.
    func session(_ row: Row?) throws -> SessionState? {
        guard let row else { return nil }
        let id: String = row[0]
        if let s = projector?.openSessions[id] { return s }
        return try Self.decodeSession(state: row[1], startedPosition: row[2], id: id)
    }

    public func session(id: String) throws -> SessionState? {
        if let s = projector?.openSessions[id] { return s }
        if let p = projector, p.writer == nil {
            // A pending row's state is in memory (an open one's in `openSessions`, above); any other row is current
            // in the table. So no pending row is written first: a new session's id check stays a lookup. (A pending
            // row with neither state would be the projector's bug: then the rows are written and read, as before.)
            if let i = p.pendingSessions.index(forKey: id) {
                if let s = p.pendingSessions.values[i].state { return s }
            } else {
                return try sessionRow(id: id)
            }
        }
        try syncSessions()
        return try sessionRow(id: id)
    }

    /// A session as its row has it.
    func sessionRow(id: String) throws -> SessionState? {
        try sessionRow(db.cachedStatement(sql: "SELECT \(Self.sessionColumns) FROM p_sessions WHERE id = ?"), binding: [id])
    }

    /// The feature a session (open or ended) is about, or nil when this log has no such session. Unlike
    /// `session(id:)` it writes no pending session row first: a session's feature never changes, and the ones not
    /// yet written are in the projector's memory (an import asks this for every session it brings).
    public func sessionGlobalId(id: String) throws -> String? {
        if let s = projector?.openSessions[id] { return s.globalId }
        if let p = projector, let i = p.pendingSessions.index(forKey: id), let s = p.pendingSessions.values[i].state { return s.globalId }
        return try Self.stepOnce(db.cachedStatement(sql: "SELECT global_id FROM p_sessions WHERE id = ?"), db: db, binding: [id]) { Self.text($0, 0) } ?? nil
    }

    public func openSession(layer: Int, globalId: String) throws -> SessionState? {
        if let p = projector, p.writer == nil, p.openSessions.count <= Self.openSessionScanLimit {
            // Without writing the pending rows first: an open session this projector holds is in `openSessions`;
            // a row the table calls open is current unless it is pending (then it ended here), and only then are
            // the pending rows written and the table asked again.
            for s in p.openSessions.values where s.layerId == layer && s.globalId == globalId && s.status == .open { return s }
            guard let s = try openSessionRow(layer: layer, globalId: globalId) else { return nil }
            if p.pendingSessions.index(forKey: s.id) == nil { return s }
        }
        try syncSessions()
        return try openSessionRow(layer: layer, globalId: globalId)
    }

    /// The session the table holds open on a feature, as its row has it.
    func openSessionRow(layer: Int, globalId: String) throws -> SessionState? {
        let statement = try db.cachedStatement(sql: "SELECT \(Self.sessionColumns) FROM p_sessions WHERE global_id = ? AND status = 'open' AND layer = ?")
        return try sessionRow(statement, binding: [globalId], ints: [(2, Int64(layer))])
    }

    public func openSessions(actor: String) throws -> [SessionState] {
        try syncSessions()
        return try Row.fetchAll(db.cachedStatement(sql: "SELECT \(Self.sessionColumns) FROM p_sessions WHERE actor = ? AND status = 'open' ORDER BY started_position"), arguments: [actor])
            .compactMap { try session($0) }
    }

    /// The live features of `layer` whose `field` equals `value`, in ObjectID order.
    public func features(layer: Int, where field: String, equals value: JSONValue) throws -> [FeatureSnapshot] {
        guard let l = schema.layer(id: layer), let f = l.field(field) else { return [] }
        try sync()
        let column = f.name.lowercased() == l.globalIdField?.lowercased() ? "_globalid" : ProjectionTables.quoted(f.name)
        let statement = try db.cachedStatement(sql: "SELECT * FROM \(ProjectionTables.featureTable(layer)) WHERE \(column) = ? AND _deleted = 0 ORDER BY _oid")
        try statement.setArguments([Projector.databaseValue(value)])
        return try featureRows(l, statement)
    }

    public func features(layer: Int, containing x: Double, _ y: Double) throws -> [FeatureSnapshot] {
        guard let l = schema.layer(id: layer), try db.tableExists(ProjectionTables.featureTable(layer)) else { return [] }
        try sync()
        let statement = try db.cachedStatement(sql: "SELECT * FROM \(ProjectionTables.featureTable(layer)) WHERE _xmin <= ? AND _xmax >= ? AND _ymin <= ? AND _ymax >= ? AND _deleted = 0 ORDER BY _oid")
        try statement.setArguments([x, x, y, y])
        return try featureRows(l, statement)
    }

    public func attachment(globalId: String) throws -> AttachmentSnapshot? {
        guard let r = try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM p_attachments WHERE global_id = ?"), arguments: [globalId]) else { return nil }
        return AttachmentSnapshot(r)
    }

    public func attachments(of globalId: String, includeDeleted: Bool = false) throws -> [AttachmentSnapshot] {
        // A cached statement: the importer asks this for every imported event about a feature it already holds.
        try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM p_attachments WHERE parent_global_id = ?\(includeDeleted ? "" : " AND deleted = 0") ORDER BY position, global_id"),
                         arguments: [globalId])
            .map(AttachmentSnapshot.init)
    }

    /// All live features of a layer in ObjectID order, as rows (for `query`).
    public func rows(layer: Int) throws -> RowCursor {
        try sync()
        return try Row.fetchCursor(db, sql: "SELECT * FROM \(ProjectionTables.featureTable(layer)) WHERE _deleted = 0 ORDER BY _oid")
    }

    /// The feature as Esri JSON (`{"attributes":{...},"geometry":{...}}`).
    public func esriFeature(_ layer: LayerSchema, _ row: Row) throws -> JSONValue {
        let snap = try snapshot(layer, row)
        var attrs = snap.attributes
        if let oid = layer.objectIdField { attrs[oid] = .int(snap.objectId) }
        if let gid = layer.globalIdField { attrs[gid] = .string(snap.globalId) }
        var o: [String: JSONValue] = ["attributes": .object(attrs)]
        if !layer.isTable, let g = snap.geometry { o["geometry"] = g }
        return .object(o)
    }
}

extension AttachmentSnapshot {
    init(_ r: Row) {
        self.init(globalId: r["global_id"], parentLayer: r["parent_layer"], parentGlobalId: r["parent_global_id"], name: r["name"],
                  contentType: r["content_type"], size: r["size"], sha256: r["sha256"], deleted: (r["deleted"] as Int64) != 0)
    }
}
