import EditLogCore
import GRDB

/// Plain reads of the current state for `show` and `query`.
extension ProjectedState {
    /// One feature (`show`) with its attachments, also after deletion.
    public func featureDocument(globalId: String) throws -> JSONValue? {
        guard let layer = try locate(globalId: globalId), let row = try row(layer: layer.id, globalId: globalId) else { return nil }
        let f = try esriFeature(layer, row)
        let atts = try attachments(of: globalId).map { a -> JSONValue in
            ["globalId": .string(a.globalId), "name": .string(a.name), "contentType": .string(a.contentType), "size": .int(a.size), "sha256": .string(a.sha256)]
        }
        return .object([
            "layer": .string(layer.name), "globalId": .string(globalId), "attributes": f["attributes"] ?? .null,
            "geometry": f["geometry"] ?? .null, "attachments": .array(atts), "deleted": .bool((row["_deleted"] as Int64) != 0),
        ])
    }

    /// `query`: an Esri JSON feature set of a layer's live features.
    public func featureSet(layer: LayerSchema) throws -> JSONValue {
        var features: [JSONValue] = []
        let cursor = try rows(layer: layer.id)
        while let row = try cursor.next() { features.append(try esriFeature(layer, row)) }
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
