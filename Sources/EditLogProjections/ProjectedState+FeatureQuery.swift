import EditLogCore
import Foundation
import GRDB

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

/// A layer's features as a `FeatureQuery` selects them (the facade's `query…` methods, the feature service's
/// `query`), identity lookups in a feature table, and the live attachments the service lists.
extension ProjectedState {
    /// A page of the live features of a layer matching the query, in its order (then ObjectID order), as Esri JSON;
    /// whether more match beyond the page.
    public func featurePage(_ l: LayerSchema, _ q: FeatureQuery) throws -> (features: [JSONValue], exceeded: Bool) {
        let (sql, arguments) = try q.pageSQL("*", layer: l, oneMore: true)
        var features: [JSONValue] = []
        var exceeded = false
        let cursor = try Row.fetchCursor(db, sql: sql, arguments: arguments)
        while let row = try cursor.next() {
            if let limit = q.limit, features.count >= limit { exceeded = true; break }
            features.append(try esriFeature(l, row))
        }
        return (features, exceeded)
    }

    /// The page of `featurePage` as Esri JSON bytes (`writeEsriFeatures`): attributes limited to `fields`, in that
    /// order, and the geometry (when asked) without a spatial reference.
    public func featurePageBytes(_ l: LayerSchema, _ q: FeatureQuery, fields: [FieldSchema], returnGeometry: Bool) throws -> (bytes: [UInt8], count: Int, exceeded: Bool) {
        let (sql, arguments) = try q.pageSQL("*", layer: l, oneMore: true)
        let columns = Self.featureSetColumns(l, fields: fields)
        let statement = try db.makeStatement(sql: sql)
        try statement.setArguments(arguments)
        var out: [UInt8] = []
        out.reserveCapacity(16_384)
        let (n, exceeded) = try writeEsriFeatures(l, statement, columns: columns, returnGeometry: returnGeometry, limit: q.limit.map { max(0, $0) }, to: &out)
        return (out, n, exceeded)
    }

    /// The ObjectIDs of every live feature matching the query (offset and limit apply when given).
    public func objectIds(_ l: LayerSchema, _ q: FeatureQuery) throws -> [Int64] {
        let (sql, arguments) = try q.pageSQL("_oid", layer: l, oneMore: false)
        return try Int64.fetchAll(db, sql: sql, arguments: arguments)
    }

    /// The ObjectID and GlobalID of every live feature matching the query, in its order (offset and limit apply when given).
    public func identities(_ l: LayerSchema, _ q: FeatureQuery) throws -> [(objectId: Int64, globalId: String)] {
        let (sql, arguments) = try q.pageSQL("_oid, _globalid", layer: l, oneMore: false)
        return try Row.fetchAll(db, sql: sql, arguments: arguments).map { (objectId: $0[0], globalId: $0[1]) }
    }

    /// How many live features match (offset and limit ignored, as ArcGIS does).
    public func count(_ l: LayerSchema, _ q: FeatureQuery) throws -> Int {
        let (filter, arguments) = try q.filterSQL(layer: l)
        return try Int.fetchOne(db, sql: "SELECT COUNT(*) " + filter, arguments: arguments) ?? 0
    }

    /// The count and the envelope (xmin, ymin, xmax, ymax) of the matching features' geometries; nil when none has one.
    public func extent(_ l: LayerSchema, _ q: FeatureQuery) throws -> (count: Int, extent: [Double]?) {
        let (filter, arguments) = try q.filterSQL(layer: l)
        guard let r = try Row.fetchOne(db, sql: "SELECT COUNT(*), MIN(_xmin), MIN(_ymin), MAX(_xmax), MAX(_ymax) " + filter, arguments: arguments) else { return (0, nil) }
        let n: Int = r[0]
        guard let a: Double = r[1], let b: Double = r[2], let c: Double = r[3], let d: Double = r[4] else { return (n, nil) }
        return (n, [a, b, c, d])
    }

    /// The ObjectID of a feature by (normalized) GlobalID, if the layer has it (deleted or not), with whether it is deleted.
    public func objectId(layer: Int, globalId: String) throws -> (objectId: Int64, deleted: Bool)? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT _oid, _deleted FROM \(ProjectionTables.featureTable(layer)) WHERE _globalid = ?"), arguments: [globalId])
            .map { (objectId: $0[0], deleted: ($0[1] as Int64) != 0) }
    }

    /// The GlobalID of a feature by ObjectID, if the layer has it (deleted or not), with whether it is deleted.
    public func globalId(layer: Int, objectId: Int64) throws -> (globalId: String, deleted: Bool)? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT _globalid, _deleted FROM \(ProjectionTables.featureTable(layer)) WHERE _oid = ?"), arguments: [objectId])
            .map { (globalId: $0[0], deleted: ($0[1] as Int64) != 0) }
    }

    static let attachmentInfoColumns = "rowid, global_id, parent_global_id, name, content_type, size, sha256, keywords"

    static func attachmentInfo(_ r: Row) -> AttachmentInfo {
        AttachmentInfo(id: r[0], globalId: r[1], parentGlobalId: r[2], name: r[3], contentType: r[4], size: r[5], sha256: r[6], keywords: r[7])
    }

    /// The live attachments of features, by (normalized) parent GlobalID, in the order they were added.
    public func liveAttachmentInfos(parents ids: [String]) throws -> [String: [AttachmentInfo]] {
        var out: [String: [AttachmentInfo]] = [:]
        for chunk in stride(from: 0, to: ids.count, by: 500).map({ Array(ids[$0..<min($0 + 500, ids.count)]) }) {
            let sql = "SELECT \(Self.attachmentInfoColumns) FROM p_attachments WHERE deleted = 0 AND parent_global_id IN (\(Array(repeating: "?", count: chunk.count).joined(separator: ","))) ORDER BY rowid"
            for r in try Row.fetchAll(db, sql: sql, arguments: StatementArguments(chunk)) {
                let a = Self.attachmentInfo(r)
                out[a.parentGlobalId, default: []].append(a)
            }
        }
        return out
    }

    /// One live attachment by its (normalized) GlobalID.
    public func liveAttachmentInfo(globalId: String) throws -> AttachmentInfo? {
        try Row.fetchOne(db, sql: "SELECT \(Self.attachmentInfoColumns) FROM p_attachments WHERE deleted = 0 AND global_id = ?", arguments: [globalId]).map(Self.attachmentInfo)
    }

    /// One live attachment by its id.
    public func liveAttachmentInfo(id: Int64) throws -> AttachmentInfo? {
        try Row.fetchOne(db, sql: "SELECT \(Self.attachmentInfoColumns) FROM p_attachments WHERE deleted = 0 AND rowid = ?", arguments: [id]).map(Self.attachmentInfo)
    }
}
