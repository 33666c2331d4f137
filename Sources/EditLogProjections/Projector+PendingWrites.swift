import EditLogCore
import Foundation
import GRDB

/// Projection writes folded in memory and written once per row: a feature created and edited five times in
/// a rebuild (or in one transaction) is one INSERT, a session that starts and ends is one INSERT. The same
/// code serves rebuild and incremental use; `ProjectedState` flushes before any query of the tables, so a
/// read never sees a stale row, and rows are inserted in the order of the events that created them, so
/// ObjectIDs stay in event order.
struct PendingFeature {
    var layer: LayerSchema
    /// Not yet in the table: `columns` hold the whole row.
    var inserted: Bool
    /// The position of the event that created the row (insert order).
    var order: Int64
    var columns: [String: DatabaseValue]
    /// Updates since the row was last written (`_version` grows by one per update).
    var versionDelta: Int64
}

struct PendingSession {
    /// Not yet in the table: INSERT every column.
    var inserted: Bool
    var state: SessionState
    var openedBy: String
    var startedTime: String
    var endedPosition: Int64?
    var endedTime: String?
}

extension Projector {
    /// Rows held before a rebuild writes them out (bounds memory on large logs).
    static let pendingLimit = 10_000

    var hasPendingWrites: Bool { !pendingFeatures.isEmpty || !pendingSessions.isEmpty }

    /// Writes every folded row: new rows in the order their first event came, then updates.
    public func writePending(_ db: Database) throws {
        try writePendingFeatures(db)
        try writePendingSessions(db)
    }

    func writePendingFeatures(_ db: Database) throws {
        guard !pendingFeatures.isEmpty else { return }
        let features = pendingFeatures.values.sorted { $0.order < $1.order }
        pendingFeatures.removeAll(keepingCapacity: true)
        for f in features { try write(f, db) }
    }

    func writePendingSessions(_ db: Database) throws {
        sessionRowsStale = false
        guard !pendingSessions.isEmpty else { return }
        let sessions = pendingSessions.sorted { $0.value.state.startedPosition < $1.value.state.startedPosition }
        pendingSessions.removeAll(keepingCapacity: true)
        for (id, s) in sessions { try write(id, s, db) }
    }

    func write(_ f: PendingFeature, _ db: Database) throws {
        let table = ProjectionTables.featureTable(f.layer.id)
        let names = f.columns.keys.sorted()
        var args: [DatabaseValueConvertible?] = []
        args.reserveCapacity(names.count + 2)
        if f.inserted {
            for n in names {
                if n == "_version", case .int64(let v) = f.columns[n]!.storage { args.append(v + f.versionDelta) } else { args.append(f.columns[n]!) }
            }
            let key = "I\(f.layer.id):" + names.joined(separator: ",")
            let sql = statementSQL[key] ?? {
                let s = "INSERT INTO \(table) (\(names.joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: names.count).joined(separator: ", ")))"
                statementSQL[key] = s
                return s
            }()
            try db.cachedStatement(sql: sql).execute(arguments: StatementArguments(args))
        } else {
            for n in names where n != "_globalid" { args.append(f.columns[n]!) }
            args.append(f.versionDelta)
            args.append(f.columns["_globalid"]!)
            let key = "U\(f.layer.id):" + names.joined(separator: ",")
            let sql = statementSQL[key] ?? {
                let sets = names.filter { $0 != "_globalid" }.map { "\($0) = ?" } + ["_version = _version + ?"]
                let s = "UPDATE \(table) SET \(sets.joined(separator: ", ")) WHERE _globalid = ?"
                statementSQL[key] = s
                return s
            }()
            try db.cachedStatement(sql: sql).execute(arguments: StatementArguments(args))
        }
    }

    func write(_ id: String, _ s: PendingSession, _ db: Database) throws {
        let st = s.state
        if s.inserted {
            try db.cachedStatement(sql: """
                INSERT INTO p_sessions (id, layer, global_id, kind, opened_by, actor, device, status, started_position, ended_position,
                                        started_time, ended_time, state)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """).execute(arguments: [id, st.layerId, st.globalId, st.kind.rawValue, s.openedBy, st.actor, st.device, st.status.rawValue,
                                         st.startedPosition, s.endedPosition, s.startedTime, s.endedTime, st.serializedState()])
        } else {
            try db.cachedStatement(sql: """
                UPDATE p_sessions SET status = ?, actor = ?, device = ?, state = ?,
                    ended_position = COALESCE(?, ended_position), ended_time = COALESCE(?, ended_time)
                WHERE id = ?
                """).execute(arguments: [st.status.rawValue, st.actor, st.device, st.serializedState(), s.endedPosition, s.endedTime, id])
        }
    }

    /// Folds a write of `columns` into the feature's pending row.
    func fold(_ layer: LayerSchema, globalId: String, columns: [String: DatabaseValue], insertAt position: Int64?, _ db: Database) throws {
        featureCache[globalId] = nil
        if let position {
            pendingFeatures[globalId] = PendingFeature(layer: layer, inserted: true, order: position, columns: columns, versionDelta: 0)
        } else if var p = pendingFeatures[globalId] {
            for (k, v) in columns { p.columns[k] = v }
            p.versionDelta += 1
            pendingFeatures[globalId] = p
        } else {
            var c = columns
            c["_globalid"] = globalId.databaseValue
            pendingFeatures[globalId] = PendingFeature(layer: layer, inserted: false, order: .max, columns: c, versionDelta: 1)
        }
    }

    /// Writes the folded rows out once they reach `pendingLimit` (a rebuild's memory stays bounded).
    func writePendingIfFull(_ db: Database) throws {
        if pendingFeatures.count + pendingSessions.count >= Self.pendingLimit { try writePending(db) }
    }
}
