import EditLogCore
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

/// Filters for `log`.
public struct LogFilter: Sendable {
    public var layer: Int?
    public var globalId: String?
    public var session: String?
    public var actor: String?
    public var since: String?
    public var until: String?
    public var type: String?
    /// Set by `Audit.events` from the projections when `globalId` is given.
    var featureLayer: Int?
    public init(layer: Int? = nil, globalId: String? = nil, session: String? = nil, actor: String? = nil, since: String? = nil, until: String? = nil, type: String? = nil) {
        self.layer = layer; self.globalId = globalId; self.session = session; self.actor = actor; self.since = since; self.until = until; self.type = type
    }

    var sql: (String?, StatementArguments) {
        var parts: [String] = []
        var args: StatementArguments = []
        if let layer { parts.append("stream >= ? AND stream < ?"); args += ["\(layer):", "\(layer);"] }
        if let globalId {
            // One feature's stream (the (stream, version) index answers it); a GlobalID that is in no layer matches nothing.
            if let layer = featureLayer { parts.append("stream = ?"); args += [StreamName.feature(layer: layer, globalId: globalId)] } else { parts.append("0") }
        }
        if let session { parts.append("session = ?"); args += [session] }
        if let actor { parts.append("actor = ?"); args += [actor] }
        if let since { parts.append("recorded_time >= ?"); args += [since] }
        if let until { parts.append("recorded_time < ?"); args += [until] }
        if let type { parts.append("type = ?"); args += [type] }
        return (parts.isEmpty ? nil : parts.joined(separator: " AND "), args)
    }
}

/// One field-level change in a feature's history.
public struct HistoryEntry: Sendable, Hashable {
    public var position: Int64
    public var time: String
    public var recordedTime: String
    public var actor: String
    public var device: String
    public var session: String?
    public var field: String
    public var old: JSONValue
    public var new: JSONValue
    public var cause: String

    public var json: JSONValue {
        ["position": .int(position), "time": .string(time), "recordedTime": .string(recordedTime), "actor": .string(actor), "device": .string(device),
         "session": JSONValue(session), "field": .string(field), "old": old, "new": new, "cause": .string(cause)]
    }
}

/// One session as `sessions` lists it: its folded state and where it started and ended.
public struct SessionSummary: Sendable, Hashable {
    public var state: SessionState
    public var openedBy: String
    public var endedPosition: Int64?
    public var startedTime: String
    public var endedTime: String?

    public var id: String { state.id }
    public var status: SessionState.Status { state.status }
    public var startedPosition: Int64 { state.startedPosition }

    public var json: JSONValue {
        let st = state.json
        return .object([
            "id": .string(state.id), "layer": .int(Int64(state.layerId)), "globalId": .string(state.globalId), "kind": .string(state.kind.rawValue),
            "openedBy": .string(openedBy), "actor": .string(state.actor), "device": .string(state.device), "status": .string(state.status.rawValue),
            "startedPosition": .int(state.startedPosition), "endedPosition": endedPosition.map { .int($0) } ?? .null,
            "startedTime": .string(startedTime), "endedTime": JSONValue(endedTime),
            "staged": st["staged"] ?? .array([]), "relations": st["relations"] ?? .object([:]),
            "attachmentsAdded": st["attachmentsAdded"] ?? .array([]), "renames": st["renames"] ?? .object([:]),
            "detaches": st["detaches"] ?? .array([]),
        ])
    }
}

public enum Audit {
    public static func events(_ db: Database, schema: ServiceSchema, filter: LogFilter, _ body: (RecordedEvent) throws -> Void) throws {
        var filter = filter
        if let g = filter.globalId { filter.featureLayer = try ProjectedState(db: db, schema: schema).locate(globalId: g)?.id }
        let (clause, args) = filter.sql
        try EventReading.forEach(db, where: clause, arguments: args, body)
    }

    /// The field-level timeline of one feature: baseline values, committed session changes, rule-derived
    /// changes, attachments, deletion, and sessions that ended without a commit.
    public static func history(_ db: Database, schema: ServiceSchema, globalId: String) throws -> (layer: LayerSchema, entries: [HistoryEntry])? {
        let world = ProjectedState(db: db, schema: schema)
        guard let layer = try world.locate(globalId: globalId) else { return nil }
        var out: [HistoryEntry] = []
        try EventReading.forEach(db, where: "stream = ?", arguments: [StreamName.feature(layer: layer.id, globalId: globalId)]) { e in
            func add(_ field: String, _ old: JSONValue, _ new: JSONValue) {
                out.append(HistoryEntry(position: e.position, time: e.clientTime ?? e.recordedTime, recordedTime: e.recordedTime, actor: e.actor,
                                        device: e.device, session: e.session, field: field, old: old, new: new, cause: e.cause))
            }
            let p = e.fields
            switch e.eventType {
            case .featureBaselined?:
                for (k, v) in try p.object("attributes").sorted(by: { $0.key < $1.key }) where !v.isNull { add(k, .null, v) }
            case .sessionCommitted?, .featureDerived?:
                for (k, c) in try p.object("changes").sorted(by: { $0.key < $1.key }) { add(k, c["old"] ?? .null, c["new"] ?? .null) }
                if e.eventType == .sessionCommitted {
                    let atts = try p.object("attachments")
                    for a in try p.array("added", in: atts, parentKey: "attachments") { add("@attachment", .null, a["name"] ?? .null) }
                    for a in try p.array("renamed", in: atts, parentKey: "attachments") { add("@attachment", a["old"] ?? .null, a["new"] ?? .null) }
                    for a in try p.array("removed", in: atts, parentKey: "attachments") { add("@attachment", a["name"] ?? .null, .null) }
                }
            case .featureDeleted?:
                add("@deleted", false, true)
            case .sessionCanceled?:
                add("@session", "open", "canceled")
            case .sessionAbandoned?:
                add("@session", "open", "abandoned")
            default: break
            }
        }
        return (layer, out)
    }

    /// Sessions with their state and staged changes, in the order they were opened.
    public static func sessions(_ db: Database, status: String? = nil, actor: String? = nil, globalId: String? = nil) throws -> [SessionSummary] {
        var parts: [String] = []
        var args: StatementArguments = []
        if let status { parts.append("status = ?"); args += [status] }
        if let actor { parts.append("(actor = ? OR opened_by = ?)"); args += [actor, actor] }
        if let globalId { parts.append("global_id = ?"); args += [globalId] }
        let sql = """
            SELECT id, state, started_position, opened_by, ended_position, started_time, ended_time FROM p_sessions
            \(parts.isEmpty ? "" : "WHERE " + parts.joined(separator: " AND ")) ORDER BY started_position
            """
        return try Row.fetchAll(db, sql: sql, arguments: args).map { r in
            SessionSummary(state: try ProjectedState.decodeSession(state: r[1], startedPosition: r[2], id: r[0]), openedBy: r[3],
                           endedPosition: r[4], startedTime: r[5], endedTime: r[6])
        }
    }
}
