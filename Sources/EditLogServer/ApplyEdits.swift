import EditLog
import Foundation

/// `applyEdits`, `addFeatures`, `updateFeatures` and `deleteFeatures` on a layer. Each edited feature is one
/// edit session recorded through the facade exactly as a pop-up's: `create` (or `edit`), one `set` per
/// attribute, `finish`; a delete is `delete`. The actor is the token's user, the device the client's
/// User-Agent, and every step is validated as a session's is (domains, ranges, read-only fields,
/// capabilities). With `rollbackOnFailure` (the default) the whole request is one transaction: one failure
/// records nothing.
extension FeatureService {
    enum EditMode { case applyEdits, add, update, delete }
    enum EditKind: String { case add, update, delete, attach, detach }

    /// One edit of the request, with the commands that record it (or the error that refused it before).
    struct PlannedEdit {
        var kind: EditKind
        var objectId: Int64?
        var globalId: String?
        var commands: [ScriptCommand.Operation]
        var error: String?
    }

    static let rolledBack = (code: 1003, description: "Operation rolled back.")

    func applyEdits(_ layer: LayerSchema, _ r: ServiceRequest, mode: EditMode) throws -> JSONValue {
        let user = try requireEdit(r)
        let p = r.params
        let useGlobalIds = p.bool("useGlobalIds", default: false)
        let rollback = p.bool("rollbackOnFailure", default: true)
        var adds: [JSONValue] = [], updates: [JSONValue] = [], deletes: [String] = []
        func features(_ name: String) throws(ServiceError) -> [JSONValue] {
            guard let text = p[name] else { return [] }
            let v: JSONValue
            do { v = try JSONParser.parse(Array(text.utf8)) } catch { throw .invalid("\(name): \(error.description)") }
            if let a = v.arrayValue { return a }
            if v.objectValue != nil { return [v] }
            throw .invalid("\(name) must be an array of features")
        }
        switch mode {
        case .applyEdits:
            adds = try features("adds"); updates = try features("updates")
            if let d = p["deletes"] { deletes = try Self.idList(d) }
        case .add: adds = try features("features")
        case .update: updates = try features("features")
        case .delete:
            if let d = p["objectIds"] { deletes = try Self.idList(d) }
            if let d = p["globalIds"] { deletes += try Self.idList(d) }
            if p["where"] != nil {
                let q = try featureQuery(layer, p, paged: false)
                let ref = String(layer.id)
                deletes += try handles.read { try $0.queryObjectIds(layer: ref, q) }.map(String.init)
            }
        }
        let deletesByGlobalId = useGlobalIds || (mode == .delete && p["globalIds"] != nil && p["objectIds"] == nil && p["where"] == nil)
        var plan: [PlannedEdit] = []
        try handles.read { log in
            for f in adds { plan.append(planAdd(f, layer: layer, useGlobalIds: useGlobalIds, log: log)) }
            for f in updates { plan.append(planUpdate(f, layer: layer, useGlobalIds: useGlobalIds, log: log)) }
            for d in deletes { plan.append(planDelete(d, layer: layer, byGlobalId: deletesByGlobalId, log: log)) }
            if mode == .applyEdits { plan += try planAttachments(p["attachments"], layer: layer, useGlobalIds: useGlobalIds, log: log) }
        }
        let now = Int64((Date().timeIntervalSince1970 * 1000).rounded())
        let at = Timestamp.format(milliseconds: now)
        func script(_ edits: [Int]) -> (commands: [ScriptCommand], owner: [Int: Int]) {
            var commands: [ScriptCommand] = []
            var owner: [Int: Int] = [:]
            for i in edits {
                let session = plan[i].kind == .delete ? nil : UUID().uuidString.lowercased()
                for op in plan[i].commands {
                    commands.append(ScriptCommand(line: commands.count + 1, op: op, actor: user, device: r.device, at: at, session: session))
                    owner[commands.count] = i
                }
            }
            return (commands, owner)
        }
        func record(_ edits: [Int]) -> (failed: Int?, error: EditLogError?) {
            let (commands, owner) = script(edits)
            if commands.isEmpty { return (nil, nil) }
            var bytes = Array("applyEdits \(user) \(r.device) \(at) \(UUID().uuidString)\n".utf8)
            for c in commands { bytes += Array("\(c.op)\n".utf8) }
            do {
                _ = try handles.write { log in
                    try log.record(commands, name: "applyEdits \(layer.name) by \(user)", sha256: InputFiles.sha256(bytes), allowRepeat: true)
                }
                return (nil, nil)
            } catch let e as EditLogError {
                let line = e.location.flatMap { loc -> Int? in
                    guard loc.hasPrefix("line ") else { return nil }
                    return Int(loc.dropFirst(5).prefix { $0.isNumber })
                }
                return (line.flatMap { owner[$0] } ?? edits.first, e)
            } catch {
                return (edits.first, EditLogError(.io, "\(error)"))
            }
        }
        var failures: [Int: (code: Int, description: String)] = [:]
        for (i, e) in plan.enumerated() { if let err = e.error { failures[i] = (1000, err) } }
        let valid = plan.indices.filter { failures[$0] == nil }
        if rollback {
            if failures.isEmpty {
                let (failed, error) = record(valid)
                if let failed, let error { failures[failed] = (Self.code(error), Self.message(error)) }
            }
            if !failures.isEmpty { for i in plan.indices where failures[i] == nil { failures[i] = Self.rolledBack } }
        } else {
            for i in valid {
                let (failed, error) = record([i])
                if failed != nil, let error { failures[i] = (Self.code(error), Self.message(error)) }
            }
        }
        // Results: the ObjectIDs of added features are known once recorded.
        var results: [EditKind: [JSONValue]] = [.add: [], .update: [], .delete: [], .attach: [], .detach: []]
        try handles.read { log in
            for (i, e) in plan.enumerated() {
                var o: [String: JSONValue] = [:]
                var oid = e.objectId
                if e.kind == .add, failures[i] == nil, let g = e.globalId { oid = try log.objectId(layer: String(layer.id), globalId: g)?.objectId }
                o["objectId"] = oid.map { .int($0) } ?? .null
                if let g = e.globalId { o["globalId"] = .string(g) } else { o["globalId"] = .null }
                if let f = failures[i] {
                    o["success"] = false
                    o["error"] = ["code": .int(Int64(f.code)), "description": .string(f.description)]
                } else {
                    o["success"] = true
                }
                results[e.kind, default: []].append(.object(o))
            }
        }
        var response: [String: JSONValue] = [:]
        switch mode {
        case .applyEdits:
            response = ["addResults": .array(results[.add]!), "updateResults": .array(results[.update]!), "deleteResults": .array(results[.delete]!)]
            if p["attachments"] != nil { response["attachments"] = ["addResults": .array(results[.attach]!), "deleteResults": .array(results[.detach]!)] }
        case .add: response = ["addResults": .array(results[.add]!)]
        case .update: response = ["updateResults": .array(results[.update]!)]
        case .delete: response = ["deleteResults": .array(results[.delete]!)]
        }
        if p.bool("returnEditMoment", default: false) { response["editMoment"] = .int(now) }
        return .object(response)
    }

    static func code(_ e: EditLogError) -> Int {
        switch e.kind {
        case .notFound: return 1019
        case .conflict: return 1017
        default: return 1000
        }
    }

    static func message(_ e: EditLogError) -> String {
        // The line number is the server's own script; the message is what the client needs.
        e.message
    }

    /// `"1,2"`, `"1, 2"`, `[1,2]`, `["{…}","{…}"]` or `{…},{…}`.
    static func idList(_ text: String) throws(ServiceError) -> [String] {
        var t = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if t.hasPrefix("[") && t.hasSuffix("]") { t = String(t.dropFirst().dropLast()) }
        return t.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet.whitespaces.union(CharacterSet(charactersIn: "\""))) }.filter { !$0.isEmpty }
    }

    /// The steps that give a feature these attributes: one `set` per attribute, except the ObjectID, the
    /// GlobalID and the editor-tracking fields (the service maintains those, as ArcGIS does), and values an
    /// update leaves as they are (clients send every field back; a read-only field sent unchanged is no
    /// edit). A relationship's key field (a GUID a pop-up cannot set) becomes `relate`, or the new record's
    /// `parent` for a composite relationship, pointing at the record whose key holds the value.
    func steps(_ attributes: [String: JSONValue], layer: LayerSchema, current: [String: JSONValue]?, log: EditLog) throws -> (sets: [ScriptCommand.Operation], parent: ScriptCommand.ParentRef?) {
        var ops: [ScriptCommand.Operation] = []
        var parent: ScriptCommand.ParentRef?
        for k in attributes.keys.sorted() {
            let v = attributes[k]!
            if let oid = layer.objectIdField, oid.lowercased() == k.lowercased() { continue }
            if let gid = layer.globalIdField, gid.lowercased() == k.lowercased() { continue }
            if layer.isEditorTrackingField(k) { continue }
            let name = layer.field(k)?.name ?? k
            if let current, Self.sameValue(current[name] ?? .null, v) { continue }
            if let rel = layer.relationships.first(where: { $0.role == .destination && $0.keyField?.lowercased() == k.lowercased() }),
               let (origin, originSide) = schema.counterpart(of: rel, in: layer), !v.isNull {
                let target = try relatedGlobalId(v, origin: origin, originKey: originSide.keyField, log: log)
                if current == nil && rel.composite && parent == nil {
                    parent = ScriptCommand.ParentRef(relationship: String(rel.id), globalId: target)
                } else {
                    ops.append(.relate(relationship: String(rel.id), globalId: target))
                }
                continue
            }
            ops.append(.set(field: k, value: v))
        }
        return (ops, parent)
    }

    /// The GlobalID of the origin record whose key holds `value` (the value itself when the key is the GlobalID).
    func relatedGlobalId(_ value: JSONValue, origin: LayerSchema, originKey: String?, log: EditLog) throws -> String {
        let key = originKey ?? origin.globalIdField
        if key == nil || key?.lowercased() == origin.globalIdField?.lowercased() {
            guard let s = value.stringValue, let g = GlobalID.normalize(s) else { throw EditLogError(.invalidInput, "\(value.serialized().prefix(60)) is not a GlobalID") }
            return g
        }
        let page = try log.queryFeatures(layer: String(origin.id), FeatureQuery(predicate: .compare(.field(key!), .equal, .value(value)), limit: 1))
        guard let g = page.features.first?["attributes"]?[origin.globalIdField ?? "GlobalID"]?.stringValue else {
            throw EditLogError(.notFound, "no \(origin.name) record has \(key!) = \(value.serialized().prefix(60))")
        }
        return g
    }

    static func sameValue(_ a: JSONValue, _ b: JSONValue) -> Bool {
        if let x = a.doubleValue, let y = b.doubleValue { return x == y }
        if case .string(let x) = a, case .string(let y) = b, let gx = GlobalID.normalize(x), let gy = GlobalID.normalize(y) { return gx == gy }
        return a == b
    }

    func planAdd(_ f: JSONValue, layer: LayerSchema, useGlobalIds: Bool, log: EditLog) -> PlannedEdit {
        var e = PlannedEdit(kind: .add, commands: [])
        guard let attributes = f["attributes"]?.objectValue ?? (f["geometry"] != nil ? [:] : nil) else {
            e.error = "a feature needs \"attributes\""; return e
        }
        var gid = "{\(UUID().uuidString)}"
        if useGlobalIds {
            let given = layer.globalIdField.flatMap { name in attributes.first { $0.key.lowercased() == name.lowercased() }?.value.stringValue }
            guard let given, let g = GlobalID.normalize(given) else { e.error = "useGlobalIds: the feature has no GlobalID"; return e }
            gid = g
        }
        e.globalId = gid
        let geometry = layer.isTable ? nil : f["geometry"].flatMap { $0.isNull ? nil : Self.stripSpatialReference($0) }
        do {
            let (sets, parent) = try steps(attributes, layer: layer, current: nil, log: log)
            e.commands = [.create(layer: String(layer.id), globalId: gid, geometry: geometry, attributes: [:], parent: parent)] + sets + [.finish]
        } catch let error as EditLogError {
            e.error = error.message
        } catch {
            e.error = "\(error)"
        }
        return e
    }

    func planUpdate(_ f: JSONValue, layer: LayerSchema, useGlobalIds: Bool, log: EditLog) -> PlannedEdit {
        var e = PlannedEdit(kind: .update, commands: [])
        guard let attributes = f["attributes"]?.objectValue else { e.error = "a feature needs \"attributes\""; return e }
        func value(_ name: String?) -> JSONValue? { name.flatMap { n in attributes.first { $0.key.lowercased() == n.lowercased() }?.value } }
        do {
            if useGlobalIds {
                guard let s = value(layer.globalIdField)?.stringValue, let g = GlobalID.normalize(s) else { e.error = "useGlobalIds: the feature has no GlobalID"; return e }
                e.globalId = g
                guard let found = try log.objectId(layer: String(layer.id), globalId: g), !found.deleted else { e.error = "Object is missing."; return e }
                e.objectId = found.objectId
            } else {
                guard let oid = value(layer.objectIdField)?.intValue else { e.error = "the feature has no \(layer.objectIdField ?? "ObjectID")"; return e }
                e.objectId = oid
                guard let found = try log.globalId(layer: String(layer.id), objectId: oid), !found.deleted else { e.error = "Object is missing."; return e }
                e.globalId = found.globalId
            }
            let shown = try log.show(globalId: e.globalId!)
            if let g = f["geometry"], !g.isNull, !layer.isTable {
                if !Self.sameGeometry(shown["geometry"], g) { e.error = "Geometry updates are not supported: pop-up sessions edit attributes."; return e }
            }
            let (sets, _) = try steps(attributes, layer: layer, current: shown["attributes"]?.objectValue ?? [:], log: log)
            e.commands = [.edit(layer: String(layer.id), globalId: e.globalId!)] + sets + [.finish]
        } catch let error as EditLogError {
            e.error = error.message
        } catch {
            e.error = "\(error)"
        }
        return e
    }

    /// The same shape: equal coordinates (as numbers) with the spatial reference left out.
    static func sameGeometry(_ a: JSONValue?, _ b: JSONValue) -> Bool {
        guard let a else { return false }
        func norm(_ v: JSONValue) -> JSONValue {
            switch v {
            case .int(let i): return .double(Double(i))
            case .array(let xs): return .array(xs.map(norm))
            case .object(let o): return .object(o.filter { $0.key != "spatialReference" }.mapValues(norm))
            default: return v
            }
        }
        return norm(a) == norm(b)
    }

    func planDelete(_ ref: String, layer: LayerSchema, byGlobalId: Bool, log: EditLog) -> PlannedEdit {
        var e = PlannedEdit(kind: .delete, commands: [])
        do {
            if byGlobalId {
                guard let g = GlobalID.normalize(ref) else { e.error = "\"\(ref.prefix(40))\" is not a GlobalID"; return e }
                e.globalId = g
                guard let found = try log.objectId(layer: String(layer.id), globalId: g), !found.deleted else { e.error = "Object is missing."; return e }
                e.objectId = found.objectId
            } else {
                guard let oid = Int64(ref) else { e.error = "\"\(ref.prefix(40))\" is not an ObjectID"; return e }
                e.objectId = oid
                guard let found = try log.globalId(layer: String(layer.id), objectId: oid), !found.deleted else { e.error = "Object is missing."; return e }
                e.globalId = found.globalId
            }
        } catch {
            e.error = "\(error)"; return e
        }
        e.commands = [.delete(layer: String(layer.id), globalId: e.globalId!)]
        return e
    }
}
