import EditLogCore
import GRDB

/// What a schema change would do to the values the projection holds (`EditLog.changeSchema` checks them before it
/// records the change).
extension ProjectedState {
    /// The first live feature of `layer` (by ObjectID) whose `field` holds a value, or one longer than `longerThan`
    /// characters.
    public func firstLiveValue(layer: LayerSchema, field: String, longerThan: Int? = nil) throws -> (globalId: String, value: JSONValue)? {
        let column = ProjectionTables.quoted(field)
        var sql = "SELECT _globalid, \(column) FROM \(ProjectionTables.featureTable(layer.id)) WHERE _deleted = 0 AND \(column) IS NOT NULL"
        var arguments: StatementArguments = []
        if let longerThan { sql += " AND length(\(column)) > ?"; _ = arguments.append(contentsOf: [longerThan]) }
        guard let row = try Row.fetchOne(db, sql: sql + " ORDER BY _oid LIMIT 1", arguments: arguments) else { return nil }
        return (row[0], ProjectedState.jsonValue(row[1]))
    }

    /// The live features of `layer` whose `field` holds one of `values`, by ObjectID.
    public func liveValues(layer: LayerSchema, field: String, in values: [JSONValue]) throws -> [(globalId: String, value: JSONValue)] {
        let wanted = values.compactMap { Projector.databaseValue($0)?.databaseValue }
        guard !wanted.isEmpty else { return [] }
        let column = ProjectionTables.quoted(field)
        let sql = "SELECT _globalid, \(column) FROM \(ProjectionTables.featureTable(layer.id)) WHERE _deleted = 0 AND \(column) IN "
            + "(\(Array(repeating: "?", count: wanted.count).joined(separator: ", "))) ORDER BY _oid"
        return try Row.fetchAll(db, sql: sql, arguments: StatementArguments(wanted)).map { ($0[0], ProjectedState.jsonValue($0[1])) }
    }
}
