import EditLogCore
import EditLogExport
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

/// A filter over a layer's features, as a tree (the feature service's `where` parses into one). The facade
/// compiles it to SQL itself: column names come from the layer's schema (never from the request text) and
/// every value is a bound parameter, so no text of a request ever reaches SQL.
public indirect enum FeaturePredicate: Sendable, Hashable {
    case and(FeaturePredicate, FeaturePredicate)
    case or(FeaturePredicate, FeaturePredicate)
    case not(FeaturePredicate)
    case compare(FeatureOperand, ComparisonOperator, FeatureOperand)
    case between(FeatureOperand, low: FeatureOperand, high: FeatureOperand, negated: Bool)
    case inList(FeatureOperand, [FeatureOperand], negated: Bool)
    case like(FeatureOperand, pattern: FeatureOperand, escape: String?, negated: Bool)
    case isNull(FeatureOperand, negated: Bool)

    public enum ComparisonOperator: String, Sendable, Hashable, CaseIterable {
        case equal = "=", notEqual = "<>", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
    }
}

/// One side of a comparison: a field of the layer, a literal, or UPPER/LOWER of an operand.
public indirect enum FeatureOperand: Sendable, Hashable {
    case field(String)
    case value(JSONValue)
    case upper(FeatureOperand)
    case lower(FeatureOperand)
}

/// What `queryFeatures` and friends select: the live features of a layer matching a predicate and/or
/// ObjectIDs, in an order, a page at a time.
public struct FeatureQuery: Sendable {
    public var predicate: FeaturePredicate?
    public var objectIds: [Int64]?
    public var orderBy: [(field: String, descending: Bool)]
    public var offset: Int
    public var limit: Int?

    public init(predicate: FeaturePredicate? = nil, objectIds: [Int64]? = nil, orderBy: [(field: String, descending: Bool)] = [], offset: Int = 0, limit: Int? = nil) {
        self.predicate = predicate; self.objectIds = objectIds; self.orderBy = orderBy; self.offset = offset; self.limit = limit
    }
}

/// The SQL a predicate compiles to: text with `?` placeholders and the values bound to them.
public struct CompiledFilter: Sendable, Hashable {
    public var sql: String
    public var arguments: [JSONValue]
}

public enum FeatureFilterCompiler {
    /// The column of a field in the layer's projection table: `_oid`, `_globalid`, or the schema's own field
    /// name quoted. Unknown fields (and geometry, blob, raster and XML fields) are `.invalidInput`.
    public static func column(_ name: String, in layer: LayerSchema) throws(EditLogError) -> (sql: String, field: FieldSchema?) {
        if let oid = layer.objectIdField, oid.lowercased() == name.lowercased() { return ("_oid", layer.field(oid)) }
        if let gid = layer.globalIdField, gid.lowercased() == name.lowercased() { return ("_globalid", layer.field(gid)) }
        guard let f = layer.field(name), layer.attributeFields.contains(where: { $0.name == f.name }) else {
            throw EditLogError(.invalidInput, "\(layer.name) has no field \"\(name.prefix(60))\"")
        }
        switch f.type {
        case .geometry, .blob, .raster, .xml: throw EditLogError(.invalidInput, "field \(f.name) of \(layer.name) cannot be queried")
        default: return (ProjectionTables.quoted(f.name), f)
        }
    }

    public static func compile(_ p: FeaturePredicate, layer: LayerSchema) throws(EditLogError) -> CompiledFilter {
        var args: [JSONValue] = []
        let sql = try predicate(p, layer, &args)
        return CompiledFilter(sql: sql, arguments: args)
    }

    static func predicate(_ p: FeaturePredicate, _ l: LayerSchema, _ args: inout [JSONValue]) throws(EditLogError) -> String {
        switch p {
        case .and(let a, let b): return "(\(try predicate(a, l, &args)) AND \(try predicate(b, l, &args)))"
        case .or(let a, let b): return "(\(try predicate(a, l, &args)) OR \(try predicate(b, l, &args)))"
        case .not(let a): return "(NOT \(try predicate(a, l, &args)))"
        case .compare(let a, let op, let b):
            let hint = fieldType(a, l) ?? fieldType(b, l)
            return "(\(try operand(a, l, hint, &args)) \(op.rawValue) \(try operand(b, l, hint, &args)))"
        case .between(let a, let lo, let hi, let negated):
            let hint = fieldType(a, l)
            return "(\(try operand(a, l, hint, &args))\(negated ? " NOT" : "") BETWEEN \(try operand(lo, l, hint, &args)) AND \(try operand(hi, l, hint, &args)))"
        case .inList(let a, let list, let negated):
            guard !list.isEmpty else { throw EditLogError(.invalidInput, "IN needs at least one value") }
            let hint = fieldType(a, l)
            var items: [String] = []
            for x in list { items.append(try operand(x, l, hint, &args)) }
            return "(\(try operand(a, l, hint, &args))\(negated ? " NOT" : "") IN (\(items.joined(separator: ", "))))"
        case .like(let a, let pattern, let escape, let negated):
            // SQLite's LIKE is case-insensitive for ASCII, as ArcGIS's hosted services are.
            var s = "(\(try operand(a, l, nil, &args))\(negated ? " NOT" : "") LIKE \(try operand(pattern, l, nil, &args))"
            if let escape {
                guard escape.count == 1 else { throw EditLogError(.invalidInput, "ESCAPE takes one character") }
                args.append(.string(escape)); s += " ESCAPE ?"
            }
            return s + ")"
        case .isNull(let a, let negated):
            return "(\(try operand(a, l, nil, &args)) IS \(negated ? "NOT " : "")NULL)"
        }
    }

    static func fieldType(_ o: FeatureOperand, _ l: LayerSchema) -> FieldType? {
        switch o {
        case .field(let n):
            if let gid = l.globalIdField, gid.lowercased() == n.lowercased() { return .globalID }
            return l.field(n)?.type
        case .upper(let x), .lower(let x): return fieldType(x, l)
        case .value: return nil
        }
    }

    static func operand(_ o: FeatureOperand, _ l: LayerSchema, _ hint: FieldType?, _ args: inout [JSONValue]) throws(EditLogError) -> String {
        switch o {
        case .field(let n): return try column(n, in: l).sql
        case .upper(let x): return "UPPER(\(try operand(x, l, nil, &args)))"
        case .lower(let x): return "LOWER(\(try operand(x, l, nil, &args)))"
        case .value(let v):
            var v = v
            // GlobalIDs and GUIDs are stored as {UPPER-CASE}; a client may write them in any case, with or without braces.
            if hint == .globalID || hint == .guid, case .string(let s) = v, let g = GlobalID.normalize(s) { v = .string(g) }
            switch v {
            case .null, .int, .double, .string: args.append(v)
            case .bool(let b): args.append(.int(b ? 1 : 0))
            case .array, .object: throw EditLogError(.invalidInput, "a value in a filter must be a number or a string")
            }
            return "?"
        }
    }
}

/// A page of features.
public struct FeaturePage: Sendable {
    /// Esri JSON features (`attributes`, and `geometry` when asked).
    public var features: [JSONValue]
    /// More features match beyond this page.
    public var exceededTransferLimit: Bool
}

extension EditLog {
    static func databaseValue(_ v: JSONValue) -> (any DatabaseValueConvertible)? {
        switch v {
        case .null: return nil
        case .bool(let b): return b
        case .int(let i): return i
        case .double(let d): return d
        case .string(let s): return s
        case .array, .object: return v.serialized()
        }
    }

    /// `FROM p_layer_N WHERE _deleted = 0 AND …` with its arguments.
    func filterSQL(_ q: FeatureQuery, layer l: LayerSchema) throws(EditLogError) -> (sql: String, arguments: StatementArguments) {
        var sql = "FROM \(ProjectionTables.featureTable(l.id)) WHERE _deleted = 0"
        var args: [(any DatabaseValueConvertible)?] = []
        if let p = q.predicate {
            let c = try FeatureFilterCompiler.compile(p, layer: l)
            sql += " AND \(c.sql)"
            args += c.arguments.map(Self.databaseValue)
        }
        if let ids = q.objectIds {
            if ids.isEmpty { sql += " AND 0" } else {
                // The ids bound as one JSON array: the SQL stays short whatever the list's length (SQLite parsed a
                // placeholder per id, and GRDB boxed each argument) and SQLite looks each id up by rowid.
                guard ids.count <= 30_000 else { throw EditLogError(.invalidInput, "at most 30000 objectIds per request") }
                var list: [UInt8] = [UInt8(ascii: "[")]
                list.reserveCapacity(ids.count * 8 + 2)
                for (i, id) in ids.enumerated() {
                    if i > 0 { list.append(UInt8(ascii: ",")) }
                    JSONValue.writeInt(id, to: &list)
                }
                list.append(UInt8(ascii: "]"))
                sql += " AND _oid IN (SELECT value FROM json_each(?))"
                args.append(String(decoding: list, as: UTF8.self))
            }
        }
        return (sql, StatementArguments(args))
    }

    func orderSQL(_ q: FeatureQuery, layer l: LayerSchema) throws(EditLogError) -> String {
        var parts: [String] = []
        for o in q.orderBy { parts.append("\(try FeatureFilterCompiler.column(o.field, in: l).sql) \(o.descending ? "DESC" : "ASC")") }
        parts.append("_oid")
        return " ORDER BY " + parts.joined(separator: ", ")
    }

    /// `SELECT <columns> FROM … WHERE … ORDER BY … LIMIT … OFFSET …` of a query's page, with its arguments;
    /// `oneMore` reads one row past the limit (to tell `exceededTransferLimit`).
    func pageSQL(_ columns: String, _ q: FeatureQuery, layer l: LayerSchema, oneMore: Bool) throws(EditLogError) -> (sql: String, arguments: StatementArguments) {
        let (filter, arguments) = try filterSQL(q, layer: l)
        var sql = "SELECT \(columns) " + filter + (try orderSQL(q, layer: l))
        if let limit = q.limit { sql += " LIMIT \(max(0, limit) + (oneMore ? 1 : 0))" } else if q.offset > 0 { sql += " LIMIT -1" }
        if q.offset > 0 { sql += " OFFSET \(q.offset)" }
        return (sql, arguments)
    }

    /// A page of the live features of a layer matching the query, in its order (then ObjectID order).
    public func queryFeatures(layer ref: String, _ q: FeatureQuery) throws(EditLogError) -> FeaturePage {
        let l = try layer(ref)
        let (sql, arguments) = try pageSQL("*", q, layer: l, oneMore: true)
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
        let (sql, arguments) = try pageSQL("*", q, layer: l, oneMore: true)
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
        let (sql, arguments) = try pageSQL("_oid", q, layer: l, oneMore: false)
        return try read { db in try Int64.fetchAll(db, sql: sql, arguments: arguments) }
    }

    /// The ObjectID and GlobalID of every live feature matching the query, in its order (offset and limit
    /// apply when given): what `queryAttachments` needs of the parents, without reading their rows.
    public func queryIdentities(layer ref: String, _ q: FeatureQuery) throws(EditLogError) -> [(objectId: Int64, globalId: String)] {
        let l = try layer(ref)
        let (sql, arguments) = try pageSQL("_oid, _globalid", q, layer: l, oneMore: false)
        return try read { db in try Row.fetchAll(db, sql: sql, arguments: arguments).map { (objectId: $0[0], globalId: $0[1]) } }
    }

    /// How many live features match (offset and limit ignored, as ArcGIS does).
    public func queryCount(layer ref: String, _ q: FeatureQuery) throws(EditLogError) -> Int {
        let l = try layer(ref)
        let (filter, arguments) = try filterSQL(q, layer: l)
        return try read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) " + filter, arguments: arguments) ?? 0 }
    }

    /// The count and the envelope (xmin, ymin, xmax, ymax) of the matching features' geometries; nil when none has one.
    public func queryExtent(layer ref: String, _ q: FeatureQuery) throws(EditLogError) -> (count: Int, extent: [Double]?) {
        let l = try layer(ref)
        let (filter, arguments) = try filterSQL(q, layer: l)
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
