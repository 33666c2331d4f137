import EditLog
import Foundation
import Hummingbird

/// `…/<id>/queryRelatedRecords`: for each feature of `objectIds`, the live records of the other side of
/// relationship `relationshipId` (one-to-one and one-to-many; keys as the layer definitions name them).
extension FeatureService {
    func queryRelatedRecords(_ layer: LayerSchema, _ r: ServiceRequest) throws -> Response {
        let p = r.params
        guard let relText = p["relationshipId"], let relId = Int(relText.trimmingCharacters(in: .whitespaces)),
              let rel = layer.relationships.first(where: { $0.id == relId }) else {
            throw ServiceError.invalid("relationshipId: \(layer.name) has no such relationship")
        }
        guard let counterpart = schema.counterpart(of: rel, in: layer), rel.cardinality != .manyToMany else {
            throw ServiceError(code: 400, message: "Requested operation is not supported by this service.", details: ["relationship \(rel.name) cannot be followed"])
        }
        let (other, side) = counterpart
        guard let idsText = p["objectIds"] else { throw ServiceError.invalid("objectIds is required") }
        let ids = try Self.objectIdList(idsText)
        // The key on this side and the field on the other side that holds the same value.
        let (thisKey, otherKey): (String?, String?) = rel.role == .origin ? (rel.keyField ?? layer.globalIdField, side.keyField)
                                                                         : (rel.keyField, side.keyField ?? other.globalIdField)
        guard let thisKey, let otherKey else { throw ServiceError(code: 400, message: "Requested operation is not supported by this service.", details: ["relationship \(rel.name) names no keys"]) }
        var definition: FeaturePredicate?
        if let w = p["definitionExpression"] {
            do { definition = try WhereParser.parse(w) } catch { throw ServiceError.query("definitionExpression: \(error.description)") }
        }
        let fields = try outFields(other, p)
        let keep = Set(fields.map(\.name))
        let returnGeometry = !other.isTable && p.bool("returnGeometry", default: true)
        let oidField = layer.objectIdField ?? "OBJECTID"
        let groups: [JSONValue] = try withReader(layer, r) { log, _ in
            let sources = try log.queryFeatures(layer: String(layer.id), FeatureQuery(objectIds: ids)).features
            var groups: [JSONValue] = []
            for s in sources {
                guard let oid = s["attributes"]?[oidField]?.intValue else { continue }
                let attrs = s["attributes"]?.objectValue ?? [:]
                guard let key = attrs.first(where: { $0.key.lowercased() == thisKey.lowercased() })?.value, !key.isNull else { continue }
                var pred = FeaturePredicate.compare(.field(otherKey), .equal, .value(key))
                if let definition { pred = .and(pred, definition) }
                let related: FeaturePage
                do { related = try log.queryFeatures(layer: String(other.id), FeatureQuery(predicate: pred)) } catch let e as EditLogError {
                    throw ServiceError.query("definitionExpression: \(e.message)")
                }
                if related.features.isEmpty { continue }
                groups.append(["objectId": .int(oid), "relatedRecords": .array(related.features.map { f in
                    var o: [String: JSONValue] = ["attributes": .object((f["attributes"]?.objectValue ?? [:]).filter { keep.contains($0.key) })]
                    if returnGeometry, let g = f["geometry"] { o["geometry"] = Self.stripSpatialReference(g) }
                    return .object(o)
                })])
            }
            return groups
        }
        var result: [String: JSONValue] = [
            "fields": .array(fields.map { ["name": .string($0.name), "type": .string($0.type.esriName), "alias": .string($0.alias ?? $0.name)] }),
            "relatedRecordGroups": .array(groups),
        ]
        if !other.isTable, let gt = other.geometryType {
            result["geometryType"] = .string(gt)
            let documents = handles.documents
            if let sr = spatialReference(other, documents: documents) { result["spatialReference"] = sr }
        }
        return out(.object(result), r)
    }
}
