import EditLogCore
import GRDB

extension EventReading {
    /// This log's own `SchemaDefined` event, the newest at or before `position` (nil: the newest of all). A bundle
    /// from position 0 carries the exporting log's schema event too, which is stored like any event but never
    /// becomes this log's schema: the import checked that this log's can hold its data, not that they are equal.
    public static func ownSchemaEvent(_ db: Database, atOrBefore position: Int64? = nil) throws -> RecordedEvent? {
        var clause = "stream = ?"
        var arguments: StatementArguments = [StreamName.schema]
        if let logId = try EventStore.logId(in: db) {
            clause += " AND origin_log = ?"
            _ = arguments.append(contentsOf: [logId])
        }
        if let position {
            clause += " AND position <= ?"
            _ = arguments.append(contentsOf: [position])
        }
        return try first(db, where: clause, arguments: arguments, newest: true)
    }

    /// The position of log `logId`'s newest own schema event (`ownSchemaEvent`'s), read through the stream index.
    /// Every read and write transaction of a handle asks it, so its statement is prepared once per connection.
    public static func ownSchemaPosition(_ db: Database, logId: String) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT MAX(position) FROM events WHERE stream = ? AND origin_log = ?"), arguments: [StreamName.schema, logId])
    }
}
