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
            switch e.eventType {
            case .featureBaselined?:
                let attrs = e.payload["attributes"]?.objectValue ?? [:]
                for k in attrs.keys.sorted() where !(attrs[k]!.isNull) { add(k, .null, attrs[k]!) }
            case .sessionCommitted?, .featureDerived?:
                let changes = e.payload["changes"]?.objectValue ?? [:]
                for k in changes.keys.sorted() { add(k, changes[k]!["old"] ?? .null, changes[k]!["new"] ?? .null) }
                if let atts = e.payload["attachments"] {
                    for a in atts["added"]?.arrayValue ?? [] { add("@attachment", .null, a["name"] ?? .null) }
                    for a in atts["renamed"]?.arrayValue ?? [] { add("@attachment", a["old"] ?? .null, a["new"] ?? .null) }
                    for a in atts["removed"]?.arrayValue ?? [] { add("@attachment", a["name"] ?? .null, .null) }
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
    public static func sessions(_ db: Database, status: String? = nil, actor: String? = nil, globalId: String? = nil) throws -> [JSONValue] {
        var parts: [String] = []
        var args: StatementArguments = []
        if let status { parts.append("status = ?"); args += [status] }
        if let actor { parts.append("(actor = ? OR opened_by = ?)"); args += [actor, actor] }
        if let globalId { parts.append("global_id = ?"); args += [globalId] }
        let sql = "SELECT * FROM p_sessions\(parts.isEmpty ? "" : " WHERE " + parts.joined(separator: " AND ")) ORDER BY started_position"
        return try Row.fetchAll(db, sql: sql, arguments: args).map { r in
            let state = (try? JSONParser.parse(r["state"] as String)) ?? .null
            return .object([
                "id": .string(r["id"]), "layer": .int(r["layer"]), "globalId": .string(r["global_id"]), "kind": .string(r["kind"]),
                "openedBy": .string(r["opened_by"]), "actor": .string(r["actor"]), "device": .string(r["device"]), "status": .string(r["status"]),
                "startedPosition": .int(r["started_position"]), "endedPosition": (r["ended_position"] as Int64?).map { .int($0) } ?? .null,
                "startedTime": .string(r["started_time"]), "endedTime": JSONValue(r["ended_time"] as String?),
                "staged": state["staged"] ?? .array([]), "relations": state["relations"] ?? .object([:]),
                "attachmentsAdded": state["attachmentsAdded"] ?? .array([]), "renames": state["renames"] ?? .object([:]),
                "detaches": state["detaches"] ?? .array([]),
            ])
        }
    }

    /// `show`: one feature with its attachments, also after deletion.
    public static func show(_ db: Database, schema: ServiceSchema, globalId: String) throws -> JSONValue? {
        let world = ProjectedState(db: db, schema: schema)
        guard let layer = try world.locate(globalId: globalId), let row = try world.row(layer: layer.id, globalId: globalId) else { return nil }
        let f = world.esriFeature(layer, row)
        let atts = try world.attachments(of: globalId).map { a -> JSONValue in
            ["globalId": .string(a.globalId), "name": .string(a.name), "contentType": .string(a.contentType), "size": .int(a.size), "sha256": .string(a.sha256)]
        }
        return .object([
            "layer": .string(layer.name), "globalId": .string(globalId), "attributes": f["attributes"] ?? .null,
            "geometry": f["geometry"] ?? .null, "attachments": .array(atts), "deleted": .bool((row["_deleted"] as Int64) != 0),
        ])
    }

    /// `query`: an Esri JSON feature set of a layer's live features.
    public static func query(_ db: Database, schema: ServiceSchema, layer: LayerSchema) throws -> JSONValue {
        let world = ProjectedState(db: db, schema: schema)
        var features: [JSONValue] = []
        let cursor = try world.rows(layer: layer.id)
        while let row = try cursor.next() { features.append(world.esriFeature(layer, row)) }
        var fields: [JSONValue] = []
        for f in layer.fields {
            var o: [String: JSONValue] = ["name": .string(f.name), "type": .string(f.type.esriName), "alias": .string(f.alias ?? f.name)]
            if let l = f.length { o["length"] = .int(Int64(l)) }
            fields.append(.object(o))
        }
        var fs: [String: JSONValue] = ["fields": .array(fields), "features": .array(features)]
        if let oid = layer.objectIdField { fs["objectIdFieldName"] = .string(oid) }
        if let gid = layer.globalIdField { fs["globalIdFieldName"] = .string(gid) }
        if !layer.isTable, let gt = layer.geometryType {
            fs["geometryType"] = .string(gt)
            if let sr = features.lazy.compactMap({ $0["geometry"]?["spatialReference"] }).first { fs["spatialReference"] = sr }
        }
        return .object(fs)
    }
}
