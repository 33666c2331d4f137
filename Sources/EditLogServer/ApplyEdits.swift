import EditLog
import Foundation

/// `applyEdits`, `addFeatures`, `updateFeatures` and `deleteFeatures` on a layer. Each edited feature is one
/// edit session recorded through the facade exactly as a pop-up's: `create` (or `edit`), one `set` per
/// attribute, `finish`; a delete is `delete`; an attachment is `edit`, `attach`/`detach`, `finish`. The actor
/// is the token's user, the device the client's User-Agent, and every step is validated as a session's is
/// (domains, ranges, read-only fields, capabilities). With `rollbackOnFailure` (the default) the whole
/// request is one transaction: one failure records nothing. The service-level `applyEdits` uses the same
/// plan and commit over several layers (`ServiceApplyEdits.swift`).
extension FeatureService {
    enum EditMode { case applyEdits, add, update, delete }
    enum EditKind: String { case add, update, delete, attachmentAdd, attachmentUpdate, attachmentDelete }

    /// One edit of the request, with the commands that record it (or the error that refused it before).
    struct PlannedEdit {
        var layer: LayerSchema
        var kind: EditKind
        var objectId: Int64?
        var globalId: String?
        var commands: [ScriptCommand.Operation]
        var error: String?
        /// An attachment update that replaced the bytes: the GlobalID of the attachment it detached.
        var replaces: String?
    }

    /// One layer's part of a request: the features to add and update, the ids to delete, and the
    /// `attachments` object (`{"adds":[…],"updates":[…],"deletes":[…]}`), if any.
    struct LayerEdits {
        var layer: LayerSchema
        var adds: [JSONValue] = []
        var updates: [JSONValue] = []
        var deletes: [String] = []
        var attachments: JSONValue?
    }

    typealias EditFailure = (code: Int, description: String)

    static let rolledBack: EditFailure = (1003, "Operation rolled back.")

    /// A JSON parameter holding features: an array, or one feature.
    static func features(_ text: String?, name: String) throws(ServiceError) -> [JSONValue] {
        guard let text else { return [] }
        let v: JSONValue
        do { v = try JSONParser.parse(Array(text.utf8)) } catch { throw .invalid("\(name): \(error.description)") }
        return try features(v, name: name)
    }

    static func features(_ v: JSONValue?, name: String) throws(ServiceError) -> [JSONValue] {
        guard let v, !v.isNull else { return [] }
        if let a = v.arrayValue { return a }
        if v.objectValue != nil { return [v] }
        throw .invalid("\(name) must be an array of features")
    }

    func applyEdits(_ layer: LayerSchema, _ r: ServiceRequest, mode: EditMode) throws -> JSONValue {
        let user = try requireEdit(r)
        let p = r.params
        let useGlobalIds = p.bool("useGlobalIds", default: false)
        let rollback = p.bool("rollbackOnFailure", default: true)
        var edits = LayerEdits(layer: layer)
        switch mode {
        case .applyEdits:
            edits.adds = try Self.features(p["adds"], name: "adds")
            edits.updates = try Self.features(p["updates"], name: "updates")
            if let d = p["deletes"] { edits.deletes = try Self.idList(d) }
            if let a = p["attachments"] {
                do { edits.attachments = try JSONParser.parse(Array(a.utf8)) } catch { throw ServiceError.invalid("attachments: \(error.description)") }
            }
        case .add: edits.adds = try Self.features(p["features"], name: "features")
        case .update: edits.updates = try Self.features(p["features"], name: "features")
        case .delete:
            if let d = p["objectIds"] { edits.deletes = try Self.idList(d) }
            if let d = p["globalIds"] { edits.deletes += try Self.idList(d) }
            if p["where"] != nil {
                let q = try featureQuery(layer, p, paged: false)
                let ref = String(layer.id)
                edits.deletes += try handles.read { try $0.queryObjectIds(layer: ref, q) }.map(String.init)
            }
        }
        let deletesByGlobalId = useGlobalIds || (mode == .delete && p["globalIds"] != nil && p["objectIds"] == nil && p["where"] == nil)
        let plan = try handles.read { log in try self.plan([edits], useGlobalIds: useGlobalIds, deletesByGlobalId: deletesByGlobalId, log: log) }
        let (failures, moment, _, _) = try commit(plan, rollback: rollback, user: user, device: r.device, name: "applyEdits \(layer.name) by \(user)")
        var response = try results(plan, failures: failures, layer: layer, attachments: edits.attachments != nil)
        switch mode {
        case .applyEdits: break
        case .add: response = ["addResults": response["addResults"] ?? []]
        case .update: response = ["updateResults": response["updateResults"] ?? []]
        case .delete: response = ["deleteResults": response["deleteResults"] ?? []]
        }
        if p.bool("returnEditMoment", default: false) { response["editMoment"] = .int(moment) }
        return .object(response)
    }

    /// The plan of several layers' edits, in request order: per layer its adds, updates, deletes, then its
    /// attachment adds, updates and deletes. A feature added earlier in the plan may be a later edit's
    /// parent or related record, or an attachment's parent.
    func plan(_ layers: [LayerEdits], useGlobalIds: Bool, deletesByGlobalId: Bool, log: EditLog) throws -> [PlannedEdit] {
        var plan: [PlannedEdit] = []
        var added = Set<String>()
        for e in layers {
            for f in e.adds {
                let planned = planAdd(f, layer: e.layer, useGlobalIds: useGlobalIds, log: log)
                if planned.error == nil, let g = planned.globalId { added.insert(g) }
                plan.append(planned)
            }
            for f in e.updates { plan.append(planUpdate(f, layer: e.layer, useGlobalIds: useGlobalIds, log: log)) }
            for d in e.deletes { plan.append(planDelete(d, layer: e.layer, byGlobalId: deletesByGlobalId, log: log)) }
            if let a = e.attachments {
                plan += try planAttachments(a, layer: e.layer, useGlobalIds: useGlobalIds, addedInRequest: added, log: log)
            }
        }
        return plan
    }

    /// Records a plan as sessions of `user`. With `rollback`, everything is one `record` (one transaction):
    /// one failure, planned or met while recording, records nothing and every other edit answers
    /// `1003 Operation rolled back.`; without, each edit is its own transaction. Returns the failures by plan
    /// index, the edit moment (the sessions' time, epoch milliseconds), the first error, and the events written (at
    /// their positions in the log: a replica's record is read from them).
    ///
    /// `cause` marks the sessions (a replica's upload: `replica:<id>`). `then` gives system events to write in the
    /// same transaction as the last edits recorded, from what was recorded so far: the sessions, the events and the
    /// plan's indices (a replica's record of its upload); with nothing to record they are written alone.
    func commit(_ plan: [PlannedEdit], rollback: Bool, user: String, device: String, name: String, cause: String? = nil,
                then: (_ sessions: [String], _ events: [RecordedEvent], _ recorded: Set<Int>) -> [SystemEvent] = { _, _, _ in [] })
        throws -> (failures: [Int: EditFailure], moment: Int64, error: EditLogError?, events: [RecordedEvent]) {
        let now = handles.clock.now()
        let at = Timestamp.format(milliseconds: now)
        var sessions: [String] = []
        var recorded: [RecordedEvent] = []
        var done = Set<Int>()
        func script(_ edits: [Int]) -> (commands: [ScriptCommand], owner: [Int: Int], sessions: [String]) {
            var commands: [ScriptCommand] = []
            var owner: [Int: Int] = [:]
            var made: [String] = []
            for i in edits {
                let session = plan[i].kind == .delete ? nil : handles.ids.next().lowercasedString
                if let session { made.append(session) }
                for op in plan[i].commands {
                    var c = ScriptCommand(line: commands.count + 1, op: op, actor: user, device: device, at: at, session: session)
                    c.cause = cause
                    commands.append(c)
                    owner[commands.count] = i
                }
            }
            return (commands, owner, made)
        }
        func record(_ edits: [Int], last: Bool) throws -> (failed: Int?, error: EditLogError?) {
            let (commands, owner, made) = script(edits)
            if commands.isEmpty {
                let system = last ? then(sessions, recorded, done) : []
                if system.isEmpty { return (nil, nil) }
            }
            var bytes = Array("\(name) \(device) \(at) \(handles.ids.next().uuidString)\n".utf8)
            for c in commands { bytes += Array("\(c.op)\n".utf8) }
            do {
                let events = try handles.write { log in
                    if commands.isEmpty { return try log.appendSystemEvents(then(sessions, recorded, done), actor: user, device: device) }
                    let before = recorded
                    return try log.record(commands, name: name, sha256: InputFiles.sha256(bytes), allowRepeat: true,
                                          then: { last ? then(sessions + made, before + $0, done.union(edits)) : [] }).events
                }
                sessions += made
                recorded += events
                done.formUnion(edits)
                return (nil, nil)
            } catch let e as EditLogError where e.kind == .unavailable {
                // The store does not answer: the whole request gets 503, not a failure per edit.
                throw ServiceError.unavailable(e)
            } catch let e as EditLogError {
                return (e.scriptLine.flatMap { owner[$0] } ?? edits.first, e)
            } catch {
                return (edits.first, EditLogError(.io, "\(error)"))
            }
        }
        var failures: [Int: EditFailure] = [:]
        var firstError: EditLogError?
        for (i, e) in plan.enumerated() { if let err = e.error { failures[i] = (1000, err) } }
        let valid = plan.indices.filter { failures[$0] == nil }
        if rollback {
            if failures.isEmpty {
                let (failed, error) = try record(valid, last: true)
                if let error { firstError = error }
                if let failed, let error { failures[failed] = (Self.code(error), Self.message(error)) }
            }
            if !failures.isEmpty { for i in plan.indices where failures[i] == nil { failures[i] = Self.rolledBack } }
        } else {
            for i in valid {
                let (failed, error) = try record([i], last: false)
                if firstError == nil { firstError = error }
                if failed != nil, let error { failures[i] = (Self.code(error), Self.message(error)) }
            }
            let (_, error) = try record([], last: true)
            if firstError == nil { firstError = error }
        }
        return (failures, now, firstError, recorded)
    }

    /// One layer's results in ArcGIS's shape: `addResults`, `updateResults`, `deleteResults` (each
    /// `{objectId, globalId, success[, error{code, description}]}`) and, when the request had attachment
    /// edits, `attachments: {addResults, updateResults, deleteResults}`. The ObjectIDs of added features (and
    /// the ids of added attachments) are read once recorded.
    func results(_ plan: [PlannedEdit], failures: [Int: EditFailure], layer: LayerSchema, attachments: Bool) throws -> [String: JSONValue] {
        var results: [EditKind: [JSONValue]] = [:]
        try handles.read { log in
            for (i, e) in plan.enumerated() where e.layer.id == layer.id {
                var o: [String: JSONValue] = [:]
                var oid = e.objectId
                if failures[i] == nil, let g = e.globalId {
                    if e.kind == .add { oid = try log.objectId(layer: String(layer.id), globalId: g)?.objectId }
                    if e.kind == .attachmentAdd || (e.kind == .attachmentUpdate && e.replaces != nil) { oid = try log.attachmentInfo(globalId: g)?.id }
                }
                o["objectId"] = oid.map { .int($0) } ?? .null
                o["globalId"] = e.globalId.map { .string($0) } ?? .null
                if let f = failures[i] {
                    o["success"] = false
                    o["error"] = ["code": .int(Int64(f.code)), "description": .string(f.description)]
                } else {
                    o["success"] = true
                }
                results[e.kind, default: []].append(.object(o))
            }
        }
        var response: [String: JSONValue] = ["addResults": .array(results[.add] ?? []), "updateResults": .array(results[.update] ?? []),
                                             "deleteResults": .array(results[.delete] ?? [])]
        if attachments {
            response["attachments"] = ["addResults": .array(results[.attachmentAdd] ?? []), "updateResults": .array(results[.attachmentUpdate] ?? []),
                                       "deleteResults": .array(results[.attachmentDelete] ?? [])]
        }
        return response
    }
}
