import EditLog
import Foundation

/// How the edits of a request become session commands: one plan entry per feature added, updated or
/// deleted, checked against the log before anything is recorded (the feature exists, the GlobalID is one,
/// a geometry is unchanged, a relationship key names a record).
extension FeatureService {
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
        var e = PlannedEdit(layer: layer, kind: .add, commands: [])
        guard let attributes = f["attributes"]?.objectValue ?? (f["geometry"] != nil ? [:] : nil) else {
            e.error = "a feature needs \"attributes\""; return e
        }
        var gid = "{" + handles.ids.next().uppercasedString + "}"
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
        var e = PlannedEdit(layer: layer, kind: .update, commands: [])
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
                if !Geometry.same(shown["geometry"], g) { e.error = "Geometry updates are not supported: pop-up sessions edit attributes."; return e }
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
    func planDelete(_ ref: String, layer: LayerSchema, byGlobalId: Bool, log: EditLog) -> PlannedEdit {
        var e = PlannedEdit(layer: layer, kind: .delete, commands: [])
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
