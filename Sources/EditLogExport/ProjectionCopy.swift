import EditLogProjections
import GRDB

/// Copies projection tables (`p_*`) between databases: the definitions exactly as `sqlite_master` holds
/// them, then every row with its stored type, then the indexes. The copy has the same `Projections.digest`
/// and the same definitions as the original (checkpoints, `.sqlite` exports).
public enum ProjectionCopy {
    public static func copy(from source: Database, to target: Database, include: (String) -> Bool = { _ in true }) throws {
        let objects = try Row.fetchAll(source, sql: """
            SELECT type, name, tbl_name, sql FROM sqlite_master
            WHERE tbl_name LIKE 'p\\_%' ESCAPE '\\' AND sql IS NOT NULL AND type IN ('table', 'index')
            ORDER BY CASE type WHEN 'table' THEN 0 ELSE 1 END, name
            """)
        for o in objects where (o[0] as String) == "table" && include(o[2]) {
            let table: String = o[1]
            try target.execute(sql: o[3])
            let columns = try source.columns(in: table).count
            let insert = try target.makeStatement(sql: "INSERT INTO \(ProjectionTables.quoted(table)) VALUES (\(Array(repeating: "?", count: columns).joined(separator: ", ")))")
            let rows = try Row.fetchCursor(source, sql: "SELECT * FROM \(ProjectionTables.quoted(table))")
            while let row = try rows.next() {
                try insert.execute(arguments: StatementArguments(Array(row.databaseValues)))
            }
        }
        for o in objects where (o[0] as String) == "index" && include(o[2]) { try target.execute(sql: o[3]) }
    }
}
