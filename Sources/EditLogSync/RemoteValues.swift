import EditLog
import Foundation

/// A feature as the service answered it, keyed by GlobalID, its attributes in this log's spelling and types.
struct RemoteFeature: Sendable {
    var layer: Int
    var globalId: String
    var objectId: Int64?
    var attributes: [String: JSONValue]
    var geometry: JSONValue?
    /// The editor-tracking values: who last edited it and when (epoch ms).
    var editor: String?
    var editDate: Int64?

    /// Its layer, GlobalID and ObjectID alone: what a window keeps of it once its session is built.
    var identity: RemoteFeature { RemoteFeature(layer: layer, globalId: globalId, objectId: objectId, attributes: [:]) }
}

/// An attachment as the service lists it.
struct RemoteAttachment {
    var id: Int64
    var globalId: String
    var parentGlobalId: String
    var parentObjectId: Int64?
    var name: String
    var contentType: String
    var size: Int64
}

enum RemoteValues {
    /// A service feature (`{attributes, geometry}`) read against the log's layer: fields matched by name (any
    /// case), values converted to the log's types; the ObjectID, the GlobalID and editor tracking set apart.
    static func feature(_ f: JSONValue, layer: LayerSchema) -> RemoteFeature? {
        guard let attrs = f["attributes"]?.objectValue else { return nil }
        var byLower: [String: JSONValue] = [:]
        for (k, v) in attrs { byLower[k.lowercased()] = v }
        guard let gidField = layer.globalIdField, let g = byLower[gidField.lowercased()]?.stringValue.flatMap(GlobalID.normalize) else { return nil }
        var out: [String: JSONValue] = [:]
        for field in layer.attributeFields where !layer.isEditorTrackingField(field.name) {
            guard let v = byLower[field.name.lowercased()] else { continue }
            out[field.name] = normalize(v, field.type)
        }
        let oid = layer.objectIdField.flatMap { byLower[$0.lowercased()]?.intValue }
        let info = layer.editFieldsInfo
        let editor = info?.editorField.flatMap { byLower[$0.lowercased()]?.stringValue }
        let editDate = info?.editDateField.flatMap { byLower[$0.lowercased()] }.flatMap { v -> Int64? in
            if let i = v.intValue { return i }
            if let d = v.doubleValue { return Int64(d) }
            if let s = v.stringValue { return Timestamp.parse(s) }
            return nil
        }
        let geometry = layer.isTable ? nil : f["geometry"].flatMap { g -> JSONValue? in
            guard !g.isNull, var o = g.objectValue else { return nil }
            o["spatialReference"] = nil
            return .object(o)
        }
        return RemoteFeature(layer: layer.id, globalId: g, objectId: oid, attributes: out, geometry: geometry, editor: editor, editDate: editDate)
    }

    /// A value in the log's representation for a field type (dates as epoch ms, GUIDs normalized).
    static func normalize(_ v: JSONValue, _ type: FieldType) -> JSONValue {
        if v.isNull { return .null }
        switch type {
        case .date:
            if let i = v.intValue { return .int(i) }
            if let d = v.doubleValue { return .int(Int64(d)) }
            if let s = v.stringValue, let ms = Timestamp.parse(s) { return .int(ms) }
            return v
        case .smallInteger, .integer, .bigInteger, .oid:
            if let i = v.intValue { return .int(i) }
            if let d = v.doubleValue, d == d.rounded() { return .int(Int64(d)) }
            return v
        case .single, .double:
            if let d = v.doubleValue { return .double(d) }
            return v
        case .guid, .globalID:
            if let s = v.stringValue, let g = GlobalID.normalize(s) { return .string(g) }
            return v
        default:
            return v
        }
    }

    /// Equal as values: numbers by value, GUIDs in any spelling.
    static func same(_ a: JSONValue?, _ b: JSONValue?) -> Bool {
        let a = a ?? .null, b = b ?? .null
        if let x = a.doubleValue, let y = b.doubleValue { return x == y }
        if case .string(let x) = a, case .string(let y) = b, let gx = GlobalID.normalize(x), let gy = GlobalID.normalize(y) { return gx == gy }
        return a == b
    }

    static func attachment(_ a: JSONValue, parentGlobalId: String?, parentObjectId: Int64?) -> RemoteAttachment? {
        guard let id = a["id"]?.intValue, let g = a["globalId"]?.stringValue.flatMap(GlobalID.normalize),
              let parent = (a["parentGlobalId"]?.stringValue ?? parentGlobalId).flatMap(GlobalID.normalize) else { return nil }
        return RemoteAttachment(id: id, globalId: g, parentGlobalId: parent, parentObjectId: a["parentObjectId"]?.intValue ?? parentObjectId,
                                name: a["name"]?.stringValue ?? "attachment", contentType: a["contentType"]?.stringValue ?? "application/octet-stream",
                                size: a["size"]?.intValue ?? 0)
    }
}
