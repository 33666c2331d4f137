import EditLogCore
import EditLogMerge
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
    /// The clock `since` and `until` read.
    public var clock: EventClock
    /// Set by `Audit.events` from the projections when `globalId` is given.
    var featureLayer: Int?
    public init(layer: Int? = nil, globalId: String? = nil, session: String? = nil, actor: String? = nil, since: String? = nil, until: String? = nil, type: String? = nil, clock: EventClock = .default) {
        self.layer = layer; self.globalId = globalId; self.session = session; self.actor = actor; self.since = since; self.until = until; self.type = type
        self.clock = clock
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
        if let since { parts.append("\(clock.column) >= ?"); args += [since] }
        if let until { parts.append("\(clock.column) < ?"); args += [until] }
        if let type { parts.append("type = ?"); args += [type] }
        return (parts.isEmpty ? nil : parts.joined(separator: " AND "), args)
    }
}

/// One field-level change in a feature's history.
public struct HistoryEntry: Sendable, Hashable {
    public var position: Int64
    /// The time on `clock`.
    public var time: String
    public var recordedTime: String
    public var clock: EventClock = .default
    public var actor: String
    public var device: String
    public var session: String?
    /// An attribute (editor-tracking fields included), or `@attachment`, `@deleted`, `@session` (a session that ended
    /// without a commit, or committed and changed nothing), `@related:<child layer>` (a child added or deleted under this feature),
    /// `@schema` (a `SchemaChanged` that changed the feature's layer: a field added, removed or altered…).
    public var field: String
    public var old: JSONValue
    public var new: JSONValue
    public var cause: String
    /// The relationship this change re-points or adds to (a many-to-one key field, or a child of this feature).
    public var relationship: String?
    /// For `@schema`: the change of the layer's definition (`new` is its text).
    public var schemaChange: SchemaChange?
    public var json: JSONValue {
        var o: [String: JSONValue] = ["position": .int(position), "time": .string(time), "clock": .string(clock.rawValue), "recordedTime": .string(recordedTime),
                                      "actor": .string(actor), "device": .string(device), "session": JSONValue(session), "field": .string(field),
                                      "old": old, "new": new, "cause": .string(cause)]
        if let relationship { o["relationship"] = .string(relationship) }
        if let schemaChange { o["schemaChange"] = schemaChange.json; o["type"] = .string(EventType.schemaChanged.rawValue) }
        return .object(o)
    }
}

/// A staged relationship choice of a session: the relationship's name and the related GlobalID.
public struct RelationChoice: Sendable, Hashable {
    public var id: Int
    public var name: String
    public var globalId: String
    public var json: JSONValue { ["relationship": .string(name), "relationshipId": .int(Int64(id)), "globalId": .string(globalId)] }
}

/// One session as `sessions` lists it: its folded state and where it started and ended.
public struct SessionSummary: Sendable, Hashable {
    public var state: SessionState
    public var openedBy: String
    public var endedPosition: Int64?
    public var startedTime: String
    public var endedTime: String?
    /// The clock of `startedTime` and `endedTime`.
    public var clock: EventClock = .default
    /// The staged relationship choices, named by the schema.
    public var relationships: [RelationChoice] = []

    public var id: String { state.id }
    public var status: SessionState.Status { state.status }
    public var startedPosition: Int64 { state.startedPosition }

    public var json: JSONValue {
        let st = state.json
        var o: [String: JSONValue] = [
            "id": .string(state.id), "layer": .int(Int64(state.layerId)), "globalId": .string(state.globalId), "kind": .string(state.kind.rawValue),
            "openedBy": .string(openedBy), "actor": .string(state.actor), "device": .string(state.device), "status": .string(state.status.rawValue),
        ]
        o["startedPosition"] = .int(state.startedPosition)
        o["endedPosition"] = endedPosition.map { .int($0) } ?? .null
        o["startedTime"] = .string(startedTime)
        o["endedTime"] = JSONValue(endedTime)
        o["clock"] = .string(clock.rawValue)
        o["staged"] = st["staged"] ?? .array([])
        o["relations"] = st["relations"] ?? .object([:])
        o["relationships"] = .array(relationships.map(\.json))
        o["attachmentsAdded"] = st["attachmentsAdded"] ?? .array([])
        o["renames"] = st["renames"] ?? .object([:])
        o["detaches"] = st["detaches"] ?? .array([])
        return .object(o)
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
    /// changes, each event's editor-tracking change, attachments, relationship changes (a re-pointed key; children added or deleted under it),
    /// deletion, and sessions that ended without a commit. With `asOf`, only what happened up to that moment.
    public static func history(_ db: Database, schema: ServiceSchema, globalId: String, clock: EventClock = .default,
                               asOf: LogMoment? = nil) throws -> (layer: LayerSchema, entries: [HistoryEntry])? {
        let world = ProjectedState(db: db, schema: schema)
        guard let layer = try world.locate(globalId: globalId) else { return nil }
        // Each event read with its layer as it was then (editor tracking); one count when the schema never changed.
        let timeline = try SchemaTimeline.read(db, newest: schema)
        var firstPosition: Int64?
        // A many-to-one key field (destination side) reads as its relationship.
        var keyRelationship: [String: String] = [:]
        for r in layer.relationships where r.role == .destination { if let k = r.keyField { keyRelationship[k.lowercased()] = r.name } }
        var out: [HistoryEntry] = []
        func entry(_ e: RecordedEvent, _ field: String, _ old: JSONValue, _ new: JSONValue, relationship: String? = nil) -> HistoryEntry {
            HistoryEntry(position: e.position, time: clock.time(of: e), recordedTime: e.recordedTime, clock: clock, actor: e.actor,
                         device: e.device, session: e.session, field: field, old: old, new: new, cause: e.cause, relationship: relationship)
        }
        // This log's merge decisions: an imported event's value that the merge did not take is not history here.
        let ownLog = try EventStore.logId(in: db)
        var effects = EffectFold(ownLog: ownLog)
        // The feature's editor-tracking values so far, so each event's tracking change shows old → new.
        var tracked: [String: JSONValue] = [:]
        try EventReading.forEach(db, where: "stream = ?", arguments: [StreamName.feature(layer: layer.id, globalId: globalId)]) { e in
            guard asOf?.includes(e, clock: clock) ?? true else { return }
            if firstPosition == nil { firstPosition = e.position }
            let layer = timeline.changed ? timeline.layer(layer.id, at: e.position) ?? layer : layer
            let step = try effects.next(e)
            let effect = step.effect
            let before = out.count
            // A hand resolution names its conflict and what it took; a rule's value derived after one names it too.
            var cause: String?
            switch step.body {
            case .conflictResolved(let r): if let id = r.conflictId { cause = "\(e.cause) of conflict \(id) (took \(r.take ?? "a value"))" }
            case .featureDerived(let d): if let id = d.conflictId { cause = "\(e.cause) after the resolution of conflict \(id)" }
            default: break
            }
            func add(_ field: String, _ old: JSONValue, _ new: JSONValue) {
                if let effect, effect.kept(field) { return }
                var h = entry(e, field, old, new, relationship: keyRelationship[field.lowercased()])
                if let cause { h.cause = cause }
                out.append(h)
                if let f = layer.field(field), layer.isEditorTrackingField(f.name) { tracked[f.name] = new }
            }
            // Editor tracking as the projector writes it (the effect's): each field that moved.
            func track() {
                guard let effect else { return }
                for (k, v) in layer.editorTrackingValues(of: e, effect.tracking).sorted(by: { $0.key < $1.key }) where (tracked[k] ?? .null) != v {
                    add(k, tracked[k] ?? .null, v)
                }
            }
            if effect?.revives == true { add("@deleted", true, false) }
            switch step.body {
            case .featureBaselined(let b):
                for (k, v) in b.attributes.sorted(by: { $0.key < $1.key }) where !v.isNull { add(k, .null, v) }
                track()
            case .mergeDecided:
                // Every conflict an import met on this feature, by whichever log decided it, and who won. For this
                // log's own decision the line is the value before it and the one kept: a change only where the remote
                // side won (local won or open: the same value twice, the conflict named). Another log's decision,
                // carried here in a bundle, changed nothing here: its line is the value that log kept, twice. The base
                // and both sides are `conflicts show`'s.
                guard let d = step.decision else { break }
                if effect?.row == .deleteAgain { add("@deleted", false, true) }
                for c in d.conflicts {
                    let kept = c.winner == .remote ? c.remote.value : c.local.value
                    var h = entry(e, c.field ?? c.attachmentId.map { "@attachment:\($0)" } ?? "@\(c.kind.rawValue)", d.log == ownLog ? c.local.value : kept, kept)
                    h.cause = "\(e.cause) conflict \(c.id) (\(c.kind.rawValue), \(c.policy.rawValue): \(c.winner == .open ? "open" : "\(c.winner.rawValue) won")"
                        + (d.log == ownLog ? ")" : ", decided in log \(d.log))")
                    out.append(h)
                }
            case .sessionCommitted(let c):
                for (k, o, n) in c.changes.sorted { add(k, o, n) }
                for a in c.attachments.added { add("@attachment", .null, .string(a.name)) }
                for a in c.attachments.renamed { add("@attachment", a.old, .string(a.new)) }
                for a in c.attachments.removed { add("@attachment", a.name, .null) }
                track()
                // A commit that changed nothing (not even editor tracking) still touched the feature.
                if out.count == before { add("@session", "open", "committed") }
            case .featureDerived(let x):
                for (k, o, n) in x.changes.sorted { add(k, o, n) }
                track()
            case .conflictResolved(let r):
                for (k, o, n) in r.changes.sorted { add(k, o, n) }
                track()
            case .featureDeleted:
                if effect?.row == .delete { add("@deleted", false, true) }
            case .sessionCanceled:
                add("@session", "open", "canceled")
            case .sessionAbandoned:
                add("@session", "open", "abandoned")
            default: break
            }
        }
        // Children (one-to-many, origin side): each child whose key points here now (the projection finds them,
        // deleted ones too), from when its stream says it came under this feature (created or baselined here,
        // re-pointed here, revived) and whenever it left (deleted, re-pointed away and back). A child re-pointed away
        // for good is not found here (no index leads from a key to the children it had; reading every child's events
        // would make a history's cost grow with the whole layer): its own history shows the re-point.
        // Composite relationships only (the child belongs to the parent: an inspection under its tree). A species'
        // trees are not its history; each tree's history shows its re-point instead, and listing hundreds of
        // children would make a lookup table's history cost grow with its use.
        for r in layer.relationships where r.role == .origin && r.composite {
            guard let child = schema.layer(id: r.relatedTableId),
                  let fk = child.field(named: child.relationships.first(where: { $0.id == r.id && $0.role == .destination })?.keyField) else { continue }
            let key: String?
            if let k = r.keyField, k.lowercased() != layer.globalIdField?.lowercased(), let f = layer.field(k) {
                key = try world.feature(layer: layer.id, globalId: globalId)?.attributes[f.name]?.stringValue
            } else {
                key = globalId
            }
            guard let key else { continue }
            // Keys are stored as validated (GUIDs in `{UPPER}` form): an exact match, so the key's index answers it.
            let candidates = Array(Set([key, GlobalID.normalize(key) ?? key])).sorted()
            func pointsHere(_ v: JSONValue?) -> Bool {
                guard let s = v?.stringValue else { return false }
                return candidates.contains(s) || GlobalID.normalize(s).map(candidates.contains) == true
            }
            let children = try String.fetchAll(db, sql: """
                SELECT _globalid FROM \(ProjectionTables.featureTable(child.id))
                WHERE \(ProjectionTables.quoted(fk.name)) IN (\(candidates.map { _ in "?" }.joined(separator: ", "))) ORDER BY _oid
                """, arguments: StatementArguments(candidates))
            let field = "@related:\(child.name)"
            for c in children {
                // The child's key and life as this log applied them, event by event (this log's decisions honoured).
                var pointing = false, live = false, here = false
                var effects = EffectFold(ownLog: ownLog)
                try EventReading.forEach(db, where: "stream = ? AND type IN ('FeatureBaselined', 'SessionCommitted', 'ConflictResolved', 'FeatureDeleted', 'MergeDecided')",
                                         arguments: [StreamName.feature(layer: child.id, globalId: c)]) { e in
                    guard asOf?.includes(e, clock: clock) ?? true else { return }
                    let step = try effects.next(e)
                    guard let f = step.effect else { return }
                    if f.revives { live = true }
                    switch step.body {
                    case .featureBaselined(let b):
                        if !f.kept(fk.name) { pointing = pointsHere(b.attributes[fk.name]) }
                        live = true
                    case .sessionCommitted(let x):
                        if let new = x.changes.new(fk.name), !f.kept(fk.name) { pointing = pointsHere(new) }
                        if x.isCreate { live = true }
                    case .conflictResolved(let x):
                        if let new = x.changes.new(fk.name), !f.kept(fk.name) { pointing = pointsHere(new) }
                    default: break
                    }
                    if f.row == .delete || f.row == .deleteAgain { live = false }
                    let now = pointing && live
                    if now != here { out.append(entry(e, field, here ? .string(c) : .null, now ? .string(c) : .null, relationship: r.name)) }
                    here = now
                }
            }
        }
        // The changes of the layer's definition since the feature's first event, each at its position: a field added
        // (its values follow), removed (its earlier values stay above), altered.
        if let firstPosition {
            for c in timeline.changes(after: .position(firstPosition), upTo: asOf, layer: layer.id, clock: clock) {
                out.append(HistoryEntry(position: c.position, time: c.time, recordedTime: c.recordedTime, clock: clock, actor: c.actor, device: c.device,
                                        session: nil, field: "@schema", old: .null, new: .string(c.text), cause: c.cause, schemaChange: c.change))
            }
        }
        out.sort { $0.position < $1.position }  // stable: a feature's own entries keep their order
        return (timeline.schema(at: asOf, clock: clock).layer(id: layer.id) ?? layer, out)
    }

    /// Sessions with their state and staged changes, in the order they were opened; times on `clock`.
    public static func sessions(_ db: Database, schema: ServiceSchema? = nil, status: String? = nil, actor: String? = nil, globalId: String? = nil,
                                clock: EventClock = .default) throws -> [SessionSummary] {
        var out: [SessionSummary] = []
        try forEachSession(db, schema: schema, status: status, actor: actor, globalId: globalId, clock: clock) { out.append($0) }
        return out
    }

    /// `sessions(…)` one at a time, from a cursor (a report of a long window reads every canceled session: they are
    /// decoded one by one instead of all rows and all states at once). `ended`: only sessions whose end position
    /// lies in this range.
    public static func forEachSession(_ db: Database, schema: ServiceSchema? = nil, status: String? = nil, actor: String? = nil, globalId: String? = nil,
                                      endedAfter: Int64? = nil, endedUpTo: Int64? = nil, clock: EventClock = .default,
                                      _ body: (SessionSummary) throws -> Void) throws {
        var parts: [String] = []
        var args: StatementArguments = []
        if let status { parts.append("status = ?"); args += [status] }
        if let actor { parts.append("(actor = ? OR opened_by = ?)"); args += [actor, actor] }
        if let globalId { parts.append("global_id = ?"); args += [globalId] }
        if let endedAfter { parts.append("ended_position > ?"); args += [endedAfter] }
        if let endedUpTo { parts.append("ended_position <= ?"); args += [endedUpTo] }
        // The projection keeps client times (falling back to recorded); the recorded clock reads the events.
        let times = clock == .client ? "started_time, ended_time"
            : "(SELECT recorded_time FROM events WHERE position = started_position), (SELECT recorded_time FROM events WHERE position = ended_position)"
        let sql = """
            SELECT id, state, started_position, opened_by, ended_position, \(times) FROM p_sessions
            \(parts.isEmpty ? "" : "WHERE " + parts.joined(separator: " AND ")) ORDER BY started_position
            """
        let rows = try Row.fetchCursor(db, sql: sql, arguments: args)
        while let r = try rows.next() {
            let state = try ProjectedState.decodeSession(state: r[1], startedPosition: r[2], id: r[0])
            let layer = schema?.layer(id: state.layerId)
            let relationships = state.relations.sorted { $0.key < $1.key }.map { id, g in
                RelationChoice(id: id, name: layer?.relationships.first { $0.id == id }?.name ?? "relationship \(id)", globalId: g)
            }
            try body(SessionSummary(state: state, openedBy: r[3], endedPosition: r[4], startedTime: r[5], endedTime: r[6], clock: clock, relationships: relationships))
        }
    }
}
