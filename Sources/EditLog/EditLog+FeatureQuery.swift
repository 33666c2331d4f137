import EditLogCore
import EditLogExport
import EditLogProjections
import EditLogStore
import Foundation

@_exported import enum EditLogProjections.FeaturePredicate
@_exported import enum EditLogProjections.FeatureOperand
@_exported import struct EditLogProjections.FeatureQuery
@_exported import struct EditLogProjections.CompiledFilter
@_exported import enum EditLogProjections.FeatureFilterCompiler
@_exported import struct EditLogProjections.AttachmentInfo

/// A page of features.
public struct FeaturePage: Sendable {
    /// Esri JSON features (`attributes`, and `geometry` when asked).
    public var features: [JSONValue]
    /// More features match beyond this page.
    public var exceededTransferLimit: Bool
}

/// Whatever reads projection tables through `ProjectedState`: the log's own (its live state) and a `HistoricState`
/// (a moment of it replayed into a scratch file). The feature and attachment queries below are written once, for both.
public protocol ProjectionReader {
    /// The schema the tables were written with (the log's, or the one that applied at the moment).
    var schema: ServiceSchema { get }
    /// One read transaction of the tables.
    func readProjections<T>(_ body: (ProjectedState) throws -> T) throws(EditLogError) -> T
}

extension EditLog: ProjectionReader {
    public func readProjections<T>(_ body: (ProjectedState) throws -> T) throws(EditLogError) -> T { try projected(body) }
}

extension ProjectionReader {
    /// A page of the live features of a layer matching the query, in its order (then ObjectID order).
    public func queryFeatures(layer ref: String, _ q: FeatureQuery) throws(EditLogError) -> FeaturePage {
        let l = try schema.requireLayer(ref)
        return try readProjections { state in
            let (features, exceeded) = try state.featurePage(l, q)
            return FeaturePage(features: features, exceededTransferLimit: exceeded)
        }
    }

    /// A page of the query's features as Esri JSON bytes: the features of `queryFeatures` with their attributes
    /// limited to `fields` (in that order) and the geometry (when asked) without a spatial reference, written
    /// comma-separated straight from the rows (the feature service's `f=json` query, its hot path).
    public func queryFeatureBytes(layer ref: String, _ q: FeatureQuery, fields: [FieldSchema], returnGeometry: Bool) throws(EditLogError) -> (bytes: [UInt8], count: Int, exceededTransferLimit: Bool) {
        let l = try schema.requireLayer(ref)
        return try readProjections { state in
            let page = try state.featurePageBytes(l, q, fields: fields, returnGeometry: returnGeometry)
            return (page.bytes, page.count, page.exceeded)
        }
    }

    /// The ObjectIDs of every live feature matching the query (offset and limit apply when given).
    public func queryObjectIds(layer ref: String, _ q: FeatureQuery) throws(EditLogError) -> [Int64] {
        let l = try schema.requireLayer(ref)
        return try readProjections { state in try state.objectIds(l, q) }
    }

    /// The ObjectID and GlobalID of every live feature matching the query, in its order (offset and limit
    /// apply when given): what `queryAttachments` needs of the parents, without reading their rows.
    public func queryIdentities(layer ref: String, _ q: FeatureQuery) throws(EditLogError) -> [(objectId: Int64, globalId: String)] {
        let l = try schema.requireLayer(ref)
        return try readProjections { state in try state.identities(l, q) }
    }

    /// How many live features match (offset and limit ignored, as ArcGIS does).
    public func queryCount(layer ref: String, _ q: FeatureQuery) throws(EditLogError) -> Int {
        let l = try schema.requireLayer(ref)
        return try readProjections { state in try state.count(l, q) }
    }

    /// The count and the envelope (xmin, ymin, xmax, ymax) of the matching features' geometries; nil when none has one.
    public func queryExtent(layer ref: String, _ q: FeatureQuery) throws(EditLogError) -> (count: Int, extent: [Double]?) {
        let l = try schema.requireLayer(ref)
        return try readProjections { state in try state.extent(l, q) }
    }

    /// The ObjectID of a feature by GlobalID, if the layer has it (deleted or not), with whether it is deleted.
    public func objectId(layer ref: String, globalId: String) throws(EditLogError) -> (objectId: Int64, deleted: Bool)? {
        let l = try schema.requireLayer(ref)
        guard let g = GlobalID.normalize(globalId) else { return nil }
        return try readProjections { state in try state.objectId(layer: l.id, globalId: g) }
    }

    /// `objectId(layer:globalId:)` of many features in one read, by normalized GlobalID (those the layer lacks are left out).
    public func objectIds(layer ref: String, globalIds: [String]) throws(EditLogError) -> [String: (objectId: Int64, deleted: Bool)] {
        let l = try schema.requireLayer(ref)
        return try readProjections { state in
            var out: [String: (objectId: Int64, deleted: Bool)] = [:]
            for g in globalIds { if let n = GlobalID.normalize(g), let found = try state.objectId(layer: l.id, globalId: n) { out[n] = found } }
            return out
        }
    }

    /// The GlobalID of a feature by ObjectID, if the layer has it (deleted or not), with whether it is deleted.
    public func globalId(layer ref: String, objectId: Int64) throws(EditLogError) -> (globalId: String, deleted: Bool)? {
        let l = try schema.requireLayer(ref)
        return try readProjections { state in try state.globalId(layer: l.id, objectId: objectId) }
    }
}

extension EditLog {
    /// The position of the last event (positions are gap-free, so this is also the number of events).
    public func lastPosition() throws(EditLogError) -> Int64 {
        try read { db in try EventReading.count(db) }
    }

    /// The service documents the log's schema was decoded from, exactly as stored in its newest
    /// own `SchemaDefined` event (never one imported from another log): `[{"name": …, "json": …}]`.
    public func serviceDocuments() throws(EditLogError) -> [JSONValue] {
        guard let event = try read({ db in try EventReading.ownSchemaEvent(db) }), let defs = try event.body.schemaDefinitions else { return [] }
        return defs.service.map { .object(["name": .string($0.name), "json": $0.json]) }
    }
}

extension ProjectionReader {
    /// The live attachments of features, by parent GlobalID, in the order they were added.
    public func attachmentInfos(parents: [String]) throws(EditLogError) -> [String: [AttachmentInfo]] {
        let ids = parents.compactMap(GlobalID.normalize)
        if ids.isEmpty { return [:] }
        return try readProjections { state in try state.liveAttachmentInfos(parents: ids) }
    }

    /// One live attachment by its GlobalID.
    public func attachmentInfo(globalId: String) throws(EditLogError) -> AttachmentInfo? {
        guard let g = GlobalID.normalize(globalId) else { return nil }
        return try readProjections { state in try state.liveAttachmentInfo(globalId: g) }
    }

    /// One live attachment by its id.
    public func attachmentInfo(id: Int64) throws(EditLogError) -> AttachmentInfo? {
        try readProjections { state in try state.liveAttachmentInfo(id: id) }
    }
}
