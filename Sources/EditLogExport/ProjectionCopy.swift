import EditLogProjections
import GRDB

/// Copies projection tables (`p_*`) between databases: the definitions exactly as `sqlite_master` holds
/// them, then every row with its stored type, then the indexes. The copy has the same `Projections.digest`
/// and the same definitions as the original (checkpoints, `.sqlite` exports).
public enum ProjectionCopy {
    /// `tick` is called once per row copied.
    public static func copy(from source: Database, to target: Database, include: (String) -> Bool = { _ in true }, tick: (() -> Void)? = nil) throws {
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
                tick?()
            }
        }
        for o in objects where (o[0] as String) == "index" && include(o[2]) { try target.execute(sql: o[3]) }
    }
}

/// Counts the rows a writer writes and reports (done, total) every 10,000 rows and at the end.
public final class ProgressTicker {
    public let total: Int64
    public private(set) var done: Int64 = 0
    let report: ((Int64, Int64) -> Void)?

    public init(total: Int64, report: ((Int64, Int64) -> Void)?) {
        self.total = total
        self.report = report
    }

    public func tick() {
        done += 1
        if let report, done % 10_000 == 0 { report(done, max(total, done)) }
    }

    public func finish() { report?(done, max(total, done)) }
}
