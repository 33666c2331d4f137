import EditLogCore
import EditLogExport
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

@_exported import enum EditLogProjections.FeaturePredicate
@_exported import enum EditLogProjections.FeatureOperand
@_exported import struct EditLogProjections.FeatureQuery
@_exported import struct EditLogProjections.CompiledFilter
@_exported import enum EditLogProjections.FeatureFilterCompiler

/// A page of features.
public struct FeaturePage: Sendable {
    /// Esri JSON features (`attributes`, and `geometry` when asked).
    public var features: [JSONValue]
    /// More features match beyond this page.
    public var exceededTransferLimit: Bool
}

extension EditLog {
    /// A page of the live features of a layer matching the query, in its order (then ObjectID order).
    public func queryFeatures(layer ref: String, _ q: FeatureQuery) throws(EditLogError) -> FeaturePage {
        let l = try layer(ref)
        let (sql, arguments) = try q.pageSQL("*", layer: l, oneMore: true)
        let schema = self.schema
        return try read { db in
            let state = ProjectedState(db: db, schema: schema)
            var features: [JSONValue] = []
            var exceeded = false
            let cursor = try Row.fetchCursor(db, sql: sql, arguments: arguments)
            while let row = try cursor.next() {
                if let limit = q.limit, features.count >= limit { exceeded = true; break }
                features.append(try state.esriFeature(l, row))
            }
            return FeaturePage(features: features, exceededTransferLimit: exceeded)
        }
    }

    /// A page of the query's features as Esri JSON bytes: the features of `queryFeatures` with their attributes
    /// limited to `fields` (in that order) and the geometry (when asked) without a spatial reference, written
    /// comma-separated straight from the rows (the feature service's `f=json` query, its hot path).
    public func queryFeatureBytes(layer ref: String, _ q: FeatureQuery, fields: [FieldSchema], returnGeometry: Bool) throws(EditLogError) -> (bytes: [UInt8], count: Int, exceededTransferLimit: Bool) {
        let l = try layer(ref)
        let (sql, arguments) = try q.pageSQL("*", layer: l, oneMore: true)
        let schema = self.schema
        let columns = ProjectedState.featureSetColumns(l, fields: fields)
        return try read { db in
            let statement = try db.makeStatement(sql: sql)
            try statement.setArguments(arguments)
            var out: [UInt8] = []
            out.reserveCapacity(16_384)
            let (n, exceeded) = try ProjectedState(db: db, schema: schema)
                .writeEsriFeatures(l, statement, columns: columns, returnGeometry: returnGeometry, limit: q.limit.map { max(0, $0) }, to: &out)
            return (out, n, exceeded)
        }
    }

    /// The ObjectIDs of every live feature matching the query (offset and limit apply when given).
    public func queryObjectIds(layer ref: String, _ q: FeatureQuery) throws(EditLogError) -> [Int64] {
        let l = try layer(ref)
        let (sql, arguments) = try q.pageSQL("_oid", layer: l, oneMore: false)
        return try read { db in try Int64.fetchAll(db, sql: sql, arguments: arguments) }
    }

    /// The ObjectID and GlobalID of every live feature matching the query, in its order (offset and limit
    /// apply when given): what `queryAttachments` needs of the parents, without reading their rows.
    public func queryIdentities(layer ref: String, _ q: FeatureQuery) throws(EditLogError) -> [(objectId: Int64, globalId: String)] {
        let l = try layer(ref)
        let (sql, arguments) = try q.pageSQL("_oid, _globalid", layer: l, oneMore: false)
        return try read { db in try Row.fetchAll(db, sql: sql, arguments: arguments).map { (objectId: $0[0], globalId: $0[1]) } }
    }

    /// How many live features match (offset and limit ignored, as ArcGIS does).
    public func queryCount(layer ref: String, _ q: FeatureQuery) throws(EditLogError) -> Int {
        let l = try layer(ref)
        let (filter, arguments) = try q.filterSQL(layer: l)
        return try read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) " + filter, arguments: arguments) ?? 0 }
    }

    /// The count and the envelope (xmin, ymin, xmax, ymax) of the matching features' geometries; nil when none has one.
    public func queryExtent(layer ref: String, _ q: FeatureQuery) throws(EditLogError) -> (count: Int, extent: [Double]?) {
        let l = try layer(ref)
        let (filter, arguments) = try q.filterSQL(layer: l)
        return try read { db in
            guard let r = try Row.fetchOne(db, sql: "SELECT COUNT(*), MIN(_xmin), MIN(_ymin), MAX(_xmax), MAX(_ymax) " + filter, arguments: arguments) else { return (0, nil) }
            let n: Int = r[0]
            guard let a: Double = r[1], let b: Double = r[2], let c: Double = r[3], let d: Double = r[4] else { return (n, nil) }
            return (n, [a, b, c, d])
        }
    }

    /// The ObjectID of a feature by GlobalID, if the layer has it (deleted or not), with whether it is deleted.
    public func objectId(layer ref: String, globalId: String) throws(EditLogError) -> (objectId: Int64, deleted: Bool)? {
        let l = try layer(ref)
        guard let g = GlobalID.normalize(globalId) else { return nil }
        return try read { db in
            try Row.fetchOne(db, sql: "SELECT _oid, _deleted FROM \(ProjectionTables.featureTable(l.id)) WHERE _globalid = ?", arguments: [g])
                .map { (objectId: $0[0], deleted: ($0[1] as Int64) != 0) }
        }
    }

    /// The GlobalID of a feature by ObjectID, if the layer has it (deleted or not), with whether it is deleted.
    public func globalId(layer ref: String, objectId: Int64) throws(EditLogError) -> (globalId: String, deleted: Bool)? {
        let l = try layer(ref)
        return try read { db in
            try Row.fetchOne(db, sql: "SELECT _globalid, _deleted FROM \(ProjectionTables.featureTable(l.id)) WHERE _oid = ?", arguments: [objectId])
                .map { (globalId: $0[0], deleted: ($0[1] as Int64) != 0) }
        }
    }

    /// The position of the last event (positions are gap-free, so this is also the number of events).
    public func lastPosition() throws(EditLogError) -> Int64 {
        try read { db in try Int64.fetchOne(db, sql: "SELECT COALESCE(MAX(position), 0) FROM events") ?? 0 }
    }

    /// The service documents the log's schema was decoded from, exactly as stored in its newest
    /// own `SchemaDefined` event (never one imported from another log): `[{"name": …, "json": …}]`.
    public func serviceDocuments() throws(EditLogError) -> [JSONValue] {
        let event = try read { db in try EventReading.ownSchemaEvent(db) }
        return event?.payload["service"]?.arrayValue ?? []
    }
}

extension EditLog {
    /// Esri JSON geometry as GeoJSON, as `export` writes it (coordinates as stored, no reprojection).
    public static func geoJSONGeometry(_ g: JSONValue?) -> JSONValue? { GeoJSONWriter.geometry(g) }
}

/// A live attachment as the feature service lists it. `id` is its row in `p_attachments`: replay inserts
/// attachments in log order, so a rebuild gives every attachment the same id again.
public struct AttachmentInfo: Sendable, Hashable {
    public var id: Int64
    public var globalId: String
    public var parentGlobalId: String
    public var name: String
    public var contentType: String
    public var size: Int64
    public var sha256: String
    public var keywords: String?
}

extension EditLog {
    static let attachmentColumns = "rowid, global_id, parent_global_id, name, content_type, size, sha256, keywords"

    static func attachmentInfo(_ r: Row) -> AttachmentInfo {
        AttachmentInfo(id: r[0], globalId: r[1], parentGlobalId: r[2], name: r[3], contentType: r[4], size: r[5], sha256: r[6], keywords: r[7])
    }

    /// The live attachments of features, by parent GlobalID, in the order they were added.
    public func attachmentInfos(parents: [String]) throws(EditLogError) -> [String: [AttachmentInfo]] {
        let ids = parents.compactMap(GlobalID.normalize)
        if ids.isEmpty { return [:] }
        return try read { db in
            var out: [String: [AttachmentInfo]] = [:]
            for chunk in stride(from: 0, to: ids.count, by: 500).map({ Array(ids[$0..<min($0 + 500, ids.count)]) }) {
                let sql = "SELECT \(Self.attachmentColumns) FROM p_attachments WHERE deleted = 0 AND parent_global_id IN (\(Array(repeating: "?", count: chunk.count).joined(separator: ","))) ORDER BY rowid"
                for r in try Row.fetchAll(db, sql: sql, arguments: StatementArguments(chunk)) {
                    let a = Self.attachmentInfo(r)
                    out[a.parentGlobalId, default: []].append(a)
                }
            }
            return out
        }
    }

    /// One live attachment by its GlobalID.
    public func attachmentInfo(globalId: String) throws(EditLogError) -> AttachmentInfo? {
        guard let g = GlobalID.normalize(globalId) else { return nil }
        return try read { db in
            try Row.fetchOne(db, sql: "SELECT \(Self.attachmentColumns) FROM p_attachments WHERE deleted = 0 AND global_id = ?", arguments: [g]).map(Self.attachmentInfo)
        }
    }

    /// One live attachment by its id.
    public func attachmentInfo(id: Int64) throws(EditLogError) -> AttachmentInfo? {
        try read { db in
            try Row.fetchOne(db, sql: "SELECT \(Self.attachmentColumns) FROM p_attachments WHERE deleted = 0 AND rowid = ?", arguments: [id]).map(Self.attachmentInfo)
        }
    }
}
