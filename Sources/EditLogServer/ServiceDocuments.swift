import EditLog
import Foundation

/// The service root, `/layers` and the layer and table definitions.
extension FeatureService {
    /// The layer's own definition as the log stored it (the `layers` response entry or a single layer
    /// document), or nil when the stored documents only hold a stub without fields.
    func storedDefinition(_ layer: LayerSchema, documents: [JSONValue]) -> [String: JSONValue]? {
        var found: [String: JSONValue]?
        for d in documents {
            guard let json = d["json"]?.objectValue else { continue }
            if json["layers"] != nil || json["tables"] != nil {
                for key in ["layers", "tables"] {
                    for item in json[key]?.arrayValue ?? [] {
                        if let o = item.objectValue, o["id"]?.intValue == Int64(layer.id), o["fields"] != nil { found = o }
                    }
                }
            } else if json["fields"] != nil, json["id"]?.intValue == Int64(layer.id) || (json["id"] == nil && json["name"]?.stringValue == layer.name) {
                found = json
            }
        }
        return found
    }

    func layerDefinition(_ layer: LayerSchema) throws -> JSONValue {
        let documents = handles.documents
        return .object(definition(layer, documents: documents))
    }

    func definition(_ layer: LayerSchema, documents: [JSONValue]) -> [String: JSONValue] {
        var d = storedDefinition(layer, documents: documents) ?? synthesized(layer)
        d["currentVersion"] = d["currentVersion"] ?? Self.currentVersion
        d["id"] = .int(Int64(layer.id))
        d["name"] = .string(layer.name)
        d["type"] = d["type"] ?? .string(layer.isTable ? "Table" : "Feature Layer")
        if let oid = layer.objectIdField { d["objectIdField"] = .string(oid); d["uniqueIdField"] = ["name": .string(oid), "isSystemMaintained": true] }
        if let gid = layer.globalIdField { d["globalIdField"] = .string(gid) }
        if let e = layer.editFieldsInfo {
            var o: [String: JSONValue] = [:]
            if let f = e.creationDateField { o["creationDateField"] = .string(f) }
            if let f = e.creatorField { o["creatorField"] = .string(f) }
            if let f = e.editDateField { o["editDateField"] = .string(f) }
            if let f = e.editorField { o["editorField"] = .string(f) }
            o["dateFieldsTimeReference"] = ["timeZone": "UTC", "respectsDaylightSaving": false]
            d["editFieldsInfo"] = .object(o)
        }
        d["maxRecordCount"] = .int(Int64(options.maxRecordCount))
        d["standardMaxRecordCount"] = .int(Int64(options.maxRecordCount))
        d["supportsAdvancedQueries"] = true
        d["supportsPagination"] = true
        d["useStandardizedQueries"] = true
        d["supportsApplyEditsWithGlobalIds"] = true
        d["supportsRollbackOnFailureParameter"] = true
        d["supportedQueryFormats"] = "JSON, geoJSON"
        // Pop-up sessions edit attributes, not shapes.
        d["allowGeometryUpdates"] = false
        var advanced = d["advancedQueryCapabilities"]?.objectValue ?? [:]
        advanced["supportsPagination"] = true
        advanced["supportsOrderBy"] = true
        advanced["supportsDistinct"] = false
        advanced["supportsQueryWithResultType"] = false
        advanced["supportsReturningGeometryCentroid"] = false
        advanced["supportsStatistics"] = false
        advanced["supportsPaginationOnAggregatedQueries"] = false
        advanced["supportsQueryWithDistance"] = false
        advanced["supportsSqlExpression"] = true
        advanced["supportsTrueCurve"] = false
        d["advancedQueryCapabilities"] = .object(advanced)
        d["supportsStatistics"] = false
        d["capabilities"] = .string(layer.capabilities.names.joined(separator: ","))
        // The time of the schema in force, so a client's cached definitions are known to be stale after a change.
        if let date = handles.schemaEditDate {
            var editing = d["editingInfo"]?.objectValue ?? [:]
            editing["schemaLastEditDate"] = .int(date)
            d["editingInfo"] = .object(editing)
        }
        // Every layer is archived: the log answers any moment since its earliest event time (`historicMoment`).
        d["isDataArchived"] = true
        d["archivingInfo"] = archivingInfo()
        let description = d["description"]?.stringValue ?? ""
        d["description"] = .string(description.isEmpty ? historicMomentNote : description + "\n\n" + historicMomentNote)
        return d
    }

    /// A definition from the decoded schema, for a layer stored only as a service-root stub.
    func synthesized(_ layer: LayerSchema) -> [String: JSONValue] {
        var d: [String: JSONValue] = ["fields": .array(layer.fields.map { f in
            var o: [String: JSONValue] = ["name": .string(f.name), "type": .string(f.type.esriName), "alias": .string(f.alias ?? f.name),
                                          "nullable": .bool(f.nullable), "editable": .bool(f.editable)]
            if let l = f.length { o["length"] = .int(Int64(l)) }
            if let v = f.defaultValue { o["defaultValue"] = v }
            return .object(o)
        }), "hasAttachments": .bool(layer.hasAttachments)]
        if let g = layer.geometryType { d["geometryType"] = .string(g) }
        if let f = layer.displayField { d["displayField"] = .string(f) }
        return d
    }

    /// `{"wkid": …}` of a layer's data: its extent's, else the service's, else nil.
    func spatialReference(_ layer: LayerSchema, documents: [JSONValue]) -> JSONValue? {
        let d = storedDefinition(layer, documents: documents)
        return d?["extent"]?["spatialReference"] ?? d?["sourceSpatialReference"] ?? d?["spatialReference"]
    }

    func serviceRoot() throws -> JSONValue {
        let documents = handles.documents
        // Its serverGen starts a device's sync: the hub's head, not a replica's behind it (`extractChanges` too).
        try handles.refresh()
        let serverGen = try handles.read { try $0.lastPosition() }
        var layers: [JSONValue] = [], tables: [JSONValue] = []
        var capabilities: [String] = []
        var extent: JSONValue?
        for l in schema.layers {
            for c in l.capabilities.names where !capabilities.contains(c) { capabilities.append(c) }
            if l.isTable {
                tables.append(["id": .int(Int64(l.id)), "name": .string(l.name)])
            } else {
                var o: [String: JSONValue] = ["id": .int(Int64(l.id)), "name": .string(l.name), "parentLayerId": -1, "defaultVisibility": true,
                                              "subLayerIds": .null, "minScale": 0, "maxScale": 0]
                if let g = l.geometryType { o["geometryType"] = .string(g) }
                layers.append(.object(o))
                if extent == nil { extent = storedDefinition(l, documents: documents)?["extent"] }
            }
        }
        if options.changeTracking, !capabilities.contains("ChangeTracking") { capabilities.append("ChangeTracking") }
        if !options.changeTracking { capabilities.removeAll { $0 == "ChangeTracking" } }
        if !capabilities.contains("Sync") { capabilities.append("Sync") }
        var root: [String: JSONValue] = [
            "currentVersion": Self.currentVersion,
            "serviceDescription": .string("EditLog: an audited, hash-chained edit log served as a feature service"),
            "hasVersionedData": false,
            "supportsDisconnectedEditing": true,
            "hasStaticData": false,
            "maxRecordCount": .int(Int64(options.maxRecordCount)),
            "supportedQueryFormats": "JSON, geoJSON",
            "capabilities": .string(capabilities.joined(separator: ",")),
            "syncEnabled": true,
            "syncCapabilities": Self.syncCapabilities,
            "supportsApplyEditsWithGlobalIds": true,
            "supportsRollbackOnFailureParameter": true,
            "allowGeometryUpdates": false,
            "layers": .array(layers),
            "tables": .array(tables),
            "changeTrackingInfo": [
                "layerServerGens": .array(schema.layers.map { ["id": .int(Int64($0.id)), "minServerGen": 0, "serverGen": .int(serverGen)] }),
            ],
            "extractChangesCapabilities": [
                "supportsReturnIdsOnly": true, "supportsReturnExtentOnly": false, "supportsReturnAttachments": true,
                "supportsLayerQueries": false, "supportsSpatialFilter": false, "supportsReturnFeature": true,
                "supportsReturnHasGeometryUpdates": false, "supportsFieldsToCompare": false, "supportsServerGens": true,
            ],
            "units": "esriDecimalDegrees",
        ]
        if !options.changeTracking {
            root["changeTrackingInfo"] = nil
            root["extractChangesCapabilities"] = nil
        }
        // The nodes of one hub are one service to a device, whichever URL it reached (`FeatureServiceClient.serviceKey`).
        if let item = options.serviceItemId { root["serviceItemId"] = .string(item) }
        if let extent {
            root["fullExtent"] = extent
            root["initialExtent"] = extent
            if let sr = extent["spatialReference"] { root["spatialReference"] = sr }
        }
        return .object(root)
    }

    func allLayers() throws -> JSONValue {
        let documents = handles.documents
        var layers: [JSONValue] = [], tables: [JSONValue] = []
        for l in schema.layers {
            let d = JSONValue.object(definition(l, documents: documents))
            if l.isTable { tables.append(d) } else { layers.append(d) }
        }
        return ["layers": .array(layers), "tables": .array(tables)]
    }
}
