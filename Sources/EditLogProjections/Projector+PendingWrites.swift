import EditLogCore
import EditLogStore
import Foundation
import Synchronization
import GRDB

/// Projection writes folded in memory and written once per row: a feature created and edited five times in
/// a rebuild (or in one transaction) is one INSERT, a session that starts and ends is one INSERT. The same
/// code serves rebuild and incremental use; `ProjectedState` flushes before any query of the tables, so a
/// read never sees a stale row, and rows are inserted in the order of the events that created them, so
/// ObjectIDs stay in event order.
/// A feature table's columns in table order, and where each one sits in a pending row.
struct LayerColumns {
    let table: String
    /// Column names as SQL spells them (attribute fields quoted), in table order after `_oid`.
    let names: [String]
    /// Attribute field (schema spelling) to its index in `names`.
    let attribute: [String: Int]
    /// The attribute columns' indices in `names` (after `_globalid`, before the system columns).
    var attributeColumns: Range<Int> { 1..<geometry }
    let insertSQL: String
    /// UPDATE statements by the set of columns they assign.
    var updateSQL: [[UInt64]: String] = [:]

    static let globalId = 0
    // System columns after the attributes, at `attributeEnd + offset`.
    static let system = ["_geometry", "_wkb", "_xmin", "_ymin", "_xmax", "_ymax", "_creator", "_created", "_editor", "_edited",
                         "_deleted", "_version", "_position"]
    let geometry: Int, wkb: Int, xmin: Int, ymin: Int, xmax: Int, ymax: Int
    let creator: Int, created: Int, editor: Int, edited: Int, deleted: Int, version: Int, position: Int
    /// The layer's editor-tracking attribute fields and their indices (what `ChangeIndex` records of a write), in
    /// the order of their names' UTF-8 bytes: the order a JSON object's members are written in (`JSONValue.keyOrder`).
    let tracking: [(name: String, index: Int)]

    init(_ layer: LayerSchema) {
        table = ProjectionTables.featureTable(layer.id)
        var names = ["_globalid"]
        var attribute: [String: Int] = [:]
        for f in layer.attributeFields { attribute[f.name] = names.count; names.append(ProjectionTables.quoted(f.name)) }
        let base = names.count
        names += Self.system
        self.names = names
        self.attribute = attribute
        (geometry, wkb, xmin, ymin, xmax, ymax) = (base, base + 1, base + 2, base + 3, base + 4, base + 5)
        (creator, created, editor, edited) = (base + 6, base + 7, base + 8, base + 9)
        (deleted, version, position) = (base + 10, base + 11, base + 12)
        tracking = layer.attributeFields.filter { layer.isEditorTrackingField($0.name) }.map { ($0.name, attribute[$0.name]!) }
            .sorted { JSONValue.keyOrder($0.name, $1.name) }
        insertSQL = "INSERT INTO \(table) (\(names.joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: names.count).joined(separator: ", ")))"
    }

    /// Layouts made so far, by layer id and attribute field names (a schema that adds fields makes a new one).
    private static let made = Mutex<[LayoutKey: LayerColumns]>([:])
    struct LayoutKey: Hashable { var layer: Int; var fields: [String]; var tracking: [String] }

    static func shared(_ layer: LayerSchema) -> LayerColumns {
        let names = layer.attributeFields.map(\.name)
        let key = LayoutKey(layer: layer.id, fields: names, tracking: names.filter(layer.isEditorTrackingField))
        if let c = made.withLock({ $0[key] }) { return c }
        let c = LayerColumns(layer)
        made.withLock { if $0.count < 1_024 { $0[key] = c } }
        return c
    }

    mutating func update(assigning mask: [UInt64]) -> String {
        if let sql = updateSQL[mask] { return sql }
        var sets: [String] = []
        for i in 1..<names.count where i != version && mask[i >> 6] & (1 << UInt64(i & 63)) != 0 { sets.append("\(names[i]) = ?") }
        sets.append("_version = _version + ?")
        let sql = "UPDATE \(table) SET \(sets.joined(separator: ", ")) WHERE _globalid = ?"
        updateSQL[mask] = sql
        return sql
    }
}

/// A feature row not yet written: every column for a new row, the assigned ones (non-nil) for an update.
struct PendingFeature {
    var layer: Int
    /// Not yet in the table: `values` hold the whole row.
    var inserted: Bool
    /// The position of the event that created the row (insert order).
    var order: Int64
    var values: [DatabaseValue?]
    /// Updates since the row was last written (`_version` grows by one per update).
    var versionDelta: Int64
}

/// A statement of the projection deferred to the row writer's thread, with its arguments.
struct PendingStatement {
    var sql: String
    var arguments: [DatabaseValue]
}

struct PendingSession {
    /// Not yet in the table: INSERT every column.
    var inserted: Bool
    var startedPosition: Int64
    /// The session's state; nil while the session is open: then it is in `Projector.openSessions`, and
    /// `sessionsToWrite()` takes it from there.
    var state: SessionState?
    var openedBy: String
    var startedTime: String
    var endedPosition: Int64?
    var endedTime: String?
}

extension Projector {

    /// Writes every folded row: new rows in the order their first event came, then updates. With a row writer
    /// (`writingAside`), the rows and the deferred statements go to its thread instead, and this returns at once.
    public func writePending(_ db: Database) throws {
        if let writer {
            // The writer's thread sorts them (and frees them): this thread goes on folding.
            let features = pendingFeatures, sessions = sessionsToWrite(), statements = pendingStatements
            pendingFeatures = [:]; pendingFeatures.reserveCapacity(features.count)
            pendingSessions = [:]; pendingSessions.reserveCapacity(sessions.count)
            pendingStatements = []
            sessionRowsStale = false
            try writer.submit(statements: statements, features: features, sessions: sessions, layers: layerColumns)
            return
        }
        try writePendingFeatures(db)
        try writePendingSessions(db)
    }

    /// Feature rows in the order they are written: new rows in the order of the events that created them (so
    /// ObjectIDs follow the events), updates after them.
    static func sorted(_ features: [String: PendingFeature]) -> [PendingFeature] {
        features.values.sorted { $0.order < $1.order }
    }

    /// Session rows in the order the sessions started.
    static func sorted(_ sessions: [String: PendingSession]) -> [(key: String, value: PendingSession)] {
        sessions.sorted { $0.value.startedPosition < $1.value.startedPosition }
    }

    /// The pending session rows, each with its state (an open session's from `openSessions`).
    func sessionsToWrite() -> [String: PendingSession] {
        var sessions = pendingSessions
        for (id, s) in pendingSessions where s.state == nil { sessions[id]!.state = openSessions[id] }
        return sessions
    }

    func writePendingFeatures(_ db: Database) throws {
        guard !pendingFeatures.isEmpty else { return }
        let features = Self.sorted(pendingFeatures)
        pendingFeatures.removeAll(keepingCapacity: true)
        let connection = db.sqliteConnection
        var memo = StatementMemo()
        for f in features {
            try Self.write(f, columns: &layerColumns[f.layer]!, connection: connection, arena: arena) { key, sql in try memo.statement(key) { try db.cachedStatement(sql: sql).sqliteStatement } }
        }
    }

    /// Makes the table's row of one feature current (`ProjectedState.sync(globalId:)`). Nothing pending for it:
    /// nothing to write. A pending update is written alone. A pending new row is written with every other pending
    /// row, as new rows go in the order of the events that created them (ObjectIDs follow the events). With a row
    /// writer, everything pending is written, as before.
    func writePendingFeature(_ globalId: String, _ db: Database) throws {
        guard writer == nil else { return try writePendingFeatures(db) }
        guard let f = pendingFeatures[globalId] else { return }
        guard !f.inserted else { return try writePendingFeatures(db) }
        pendingFeatures[globalId] = nil
        try Self.write(f, columns: &layerColumns[f.layer]!, connection: db.sqliteConnection, arena: arena) { try db.cachedStatement(sql: $1).sqliteStatement }
    }

    func writePendingSessions(_ db: Database) throws {
        sessionRowsStale = false
        guard !pendingSessions.isEmpty else { return }
        let sessions = Self.sorted(sessionsToWrite())
        pendingSessions.removeAll(keepingCapacity: true)
        let connection = db.sqliteConnection
        var memo = StatementMemo()
        for (id, s) in sessions {
            try Self.write(id, s, connection: connection, arena: arena) { key, sql in try memo.statement(key) { try db.cachedStatement(sql: sql).sqliteStatement } }
        }
    }

    /// Writes one feature row with the prepared statements `statement` gives (by key and SQL) on `connection`.
    static func write(_ f: PendingFeature, columns: inout LayerColumns, connection: OpaquePointer?, arena: BindArena,
                      statement: (RowStatement, String) throws -> OpaquePointer) throws {
        if f.inserted {
            let version = columns.version
            try RawBindings.execute(try statement(.insertFeature(layer: f.layer), columns.insertSQL), on: connection, sql: columns.insertSQL, arena: arena) { b in
                for (i, v) in f.values.enumerated() {
                    if i == version, case .int64(let n)? = v?.storage {
                        b.bind(Int32(i + 1), n + f.versionDelta)
                    } else {
                        b.bind(Int32(i + 1), v ?? .null)
                    }
                }
            }
        } else {
            var mask = [UInt64](repeating: 0, count: (f.values.count + 63) >> 6)
            for i in 1..<f.values.count where i != columns.version && f.values[i] != nil { mask[i >> 6] |= 1 << UInt64(i & 63) }
            let sql = columns.update(assigning: mask)
            let version = columns.version
            // Parameters in the UPDATE's order: the assigned columns, the version delta, the GlobalID.
            try RawBindings.execute(try statement(.updateFeature(layer: f.layer, mask: mask), sql), on: connection, sql: sql, arena: arena) { b in
                var n: Int32 = 0
                for i in 1..<f.values.count where i != version {
                    guard let v = f.values[i] else { continue }
                    n += 1
                    b.bind(n, v)
                }
                b.bind(n + 1, f.versionDelta)
                b.bind(n + 2, f.values[LayerColumns.globalId]!)
            }
        }
    }

    static let insertSessionSQL = """
        INSERT INTO p_sessions (id, layer, global_id, kind, opened_by, actor, device, status, started_position, ended_position,
                                started_time, ended_time, state)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """
    static let updateSessionSQL = """
        UPDATE p_sessions SET status = ?, actor = ?, device = ?, state = ?,
            ended_position = COALESCE(?, ended_position), ended_time = COALESCE(?, ended_time)
        WHERE id = ?
        """

    /// Writes one session row with the prepared statements `statement` gives (by key and SQL) on `connection`.
    static func write(_ id: String, _ s: PendingSession, connection: OpaquePointer?, arena: BindArena,
                      statement: (RowStatement, String) throws -> OpaquePointer) throws {
        guard let st = s.state else { preconditionFailure("session \(id): a pending row is written with its state (sessionsToWrite)") }
        if s.inserted {
            try RawBindings.execute(try statement(.insertSession, insertSessionSQL), on: connection, sql: insertSessionSQL, arena: arena) { b in
                b.bind(1, id); b.bind(2, st.layerId); b.bind(3, st.globalId); b.bind(4, st.kind.rawValue); b.bind(5, s.openedBy)
                b.bind(6, st.actor); b.bind(7, st.device); b.bind(8, st.status.rawValue); b.bind(9, st.startedPosition)
                b.bind(10, s.endedPosition); b.bind(11, s.startedTime); b.bind(12, s.endedTime); b.bind(13, st.serializedState())
            }
        } else {
            try RawBindings.execute(try statement(.updateSession, updateSessionSQL), on: connection, sql: updateSessionSQL, arena: arena) { b in
                b.bind(1, st.status.rawValue); b.bind(2, st.actor); b.bind(3, st.device); b.bind(4, st.serializedState())
                b.bind(5, s.endedPosition); b.bind(6, s.endedTime); b.bind(7, id)
            }
        }
    }

    /// Runs a statement of the projection that is not a folded row (attachments, scripts): at once, or, with a row
    /// writer, queued for its thread in event order (before the rows of the same batch; the two never touch the same table).
    func execute(_ db: Database, _ sql: String, _ arguments: [(any DatabaseValueConvertible)?]) throws {
        if writer != nil {
            pendingStatements.append(PendingStatement(sql: sql, arguments: arguments.map { $0?.databaseValue ?? .null }))
        } else {
            try db.cachedStatement(sql: sql).execute(arguments: StatementArguments(arguments))
        }
    }

    /// Runs `body` with the connection to itself: waits until the row writer (if any) has written everything
    /// handed to it. Every direct use of `db` while replaying goes through here.
    func exclusive<T>(_ body: () throws -> T) throws -> T {
        try writer?.drain()
        return try body()
    }

    /// The column layout of a layer's table (made once per process and layout: a projector lives for one transaction).
    func columns(of layer: LayerSchema) -> LayerColumns {
        if let c = layerColumns[layer.id] { return c }
        let c = LayerColumns.shared(layer)
        layerColumns[layer.id] = c
        return c
    }

    /// Folds a write into the feature's pending row: `assign` sets the columns it writes (indices of
    /// `LayerColumns`); a new row (`insertAt`) starts from nothing and must set every column.
    func fold(_ layer: LayerSchema, globalId: String, insertAt position: Int64?, _ assign: (LayerColumns, inout [DatabaseValue?]) throws -> Void) throws {
        featureCache[globalId] = nil
        let columns = self.columns(of: layer)
        if let position {
            var values = [DatabaseValue?](repeating: nil, count: columns.names.count)
            values[LayerColumns.globalId] = globalId.databaseValue
            try assign(columns, &values)
            pendingFeatures[globalId] = PendingFeature(layer: layer.id, inserted: true, order: position, values: values, versionDelta: 0)
        } else if var p = pendingFeatures[globalId] {
            pendingFeatures[globalId] = nil  // unique storage while it is mutated
            try assign(columns, &p.values)
            p.versionDelta += 1
            pendingFeatures[globalId] = p
        } else {
            var values = [DatabaseValue?](repeating: nil, count: columns.names.count)
            values[LayerColumns.globalId] = globalId.databaseValue
            try assign(columns, &values)
            pendingFeatures[globalId] = PendingFeature(layer: layer.id, inserted: false, order: .max, values: values, versionDelta: 1)
        }
    }

    /// Writes the folded rows out once they reach `pendingLimit` (a rebuild's memory stays bounded).
    func writePendingIfFull(_ db: Database) throws {
        if pendingFeatures.count + pendingSessions.count + pendingStatements.count >= pendingLimit { try writePending(db) }
    }
}
