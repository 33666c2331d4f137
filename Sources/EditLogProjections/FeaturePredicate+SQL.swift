import EditLogCore
import GRDB

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

extension FeatureQuery {
    /// `FROM p_layer_N WHERE _deleted = 0 AND …` with its arguments: the predicate's values bound as the projection
    /// stores them (`Projector.databaseValue`).
    public func filterSQL(layer l: LayerSchema) throws(EditLogError) -> (sql: String, arguments: StatementArguments) {
        var sql = "FROM \(ProjectionTables.featureTable(l.id)) WHERE _deleted = 0"
        var args: [(any DatabaseValueConvertible)?] = []
        if let p = predicate {
            let c = try FeatureFilterCompiler.compile(p, layer: l)
            sql += " AND \(c.sql)"
            args += c.arguments.map(Projector.databaseValue)
        }
        if let ids = objectIds {
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

    /// ` ORDER BY …, _oid`: the query's order, then ObjectID order.
    public func orderSQL(layer l: LayerSchema) throws(EditLogError) -> String {
        var parts: [String] = []
        for o in orderBy { parts.append("\(try FeatureFilterCompiler.column(o.field, in: l).sql) \(o.descending ? "DESC" : "ASC")") }
        parts.append("_oid")
        return " ORDER BY " + parts.joined(separator: ", ")
    }

    /// `SELECT <columns> FROM … WHERE … ORDER BY … LIMIT … OFFSET …` of a query's page, with its arguments;
    /// `oneMore` reads one row past the limit (to tell `exceededTransferLimit`).
    public func pageSQL(_ columns: String, layer l: LayerSchema, oneMore: Bool) throws(EditLogError) -> (sql: String, arguments: StatementArguments) {
        let (filter, arguments) = try filterSQL(layer: l)
        var sql = "SELECT \(columns) " + filter + (try orderSQL(layer: l))
        if let limit { sql += " LIMIT \(max(0, limit) + (oneMore ? 1 : 0))" } else if offset > 0 { sql += " LIMIT -1" }
        if offset > 0 { sql += " OFFSET \(offset)" }
        return (sql, arguments)
    }
}
