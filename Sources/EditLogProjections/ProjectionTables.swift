import EditLogCore
import GRDB

/// The projection tables: one per layer (`p_layer_<id>`), plus sessions, attachments and recorded scripts.
/// All are derived from events and can be dropped and rebuilt at any time.
public enum ProjectionTables {
    public static func featureTable(_ layerId: Int) -> String { featureTablePrefix + String(layerId) }
    static let featureTablePrefix = "p_layer_"
    /// The layer whose feature table `name` is, nil for another table.
    public static func featureLayer(_ name: String) -> Int? {
        name.hasPrefix(featureTablePrefix) ? Int(name.dropFirst(featureTablePrefix.count)) : nil
    }

    static func affinity(_ t: FieldType) -> String {
        switch t {
        case .oid, .smallInteger, .integer, .bigInteger, .date: return "INTEGER"
        case .single, .double: return "REAL"
        case .string, .guid, .globalID, .dateOnly, .timeOnly, .timestampOffset: return "TEXT"
        default: return ""
        }
    }

    public static func quoted(_ name: String) -> String {
        // Foundation's replacingOccurrences only for a name with a quote: every transaction quotes its layers' fields.
        guard name.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + name + "\"" }
        return "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    public static func createCommon(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE p_sessions (
                id TEXT PRIMARY KEY NOT NULL,
                layer INTEGER NOT NULL,
                global_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                opened_by TEXT NOT NULL,
                actor TEXT NOT NULL,
                device TEXT NOT NULL,
                status TEXT NOT NULL,
                started_position INTEGER NOT NULL,
                ended_position INTEGER,
                started_time TEXT NOT NULL,
                ended_time TEXT,
                state TEXT NOT NULL
            );
            CREATE INDEX p_sessions_feature ON p_sessions(global_id, status);
            CREATE INDEX p_sessions_actor ON p_sessions(actor, status);
            CREATE TABLE p_attachments (
                global_id TEXT PRIMARY KEY NOT NULL,
                parent_layer INTEGER NOT NULL,
                parent_global_id TEXT NOT NULL,
                name TEXT NOT NULL,
                content_type TEXT NOT NULL,
                size INTEGER NOT NULL,
                sha256 TEXT NOT NULL,
                keywords TEXT,
                preferred_size TEXT NOT NULL,
                deleted INTEGER NOT NULL DEFAULT 0,
                position INTEGER NOT NULL
            );
            CREATE INDEX p_attachments_parent ON p_attachments(parent_global_id);
            CREATE TABLE p_scripts (
                sha256 TEXT PRIMARY KEY NOT NULL,
                name TEXT NOT NULL,
                lines INTEGER NOT NULL,
                position INTEGER NOT NULL
            );
            """)
    }

    public static func createLayer(_ db: Database, _ layer: LayerSchema, indexes: Bool = true) throws {
        let table = featureTable(layer.id)
        var cols = ["_oid INTEGER PRIMARY KEY", "_globalid TEXT NOT NULL UNIQUE"]
        for f in layer.attributeFields { cols.append("\(quoted(f.name)) \(affinity(f.type))") }
        cols += ["_geometry TEXT", "_wkb BLOB", "_xmin REAL", "_ymin REAL", "_xmax REAL", "_ymax REAL",
                 "_creator TEXT", "_created TEXT", "_editor TEXT", "_edited TEXT",
                 "_deleted INTEGER NOT NULL DEFAULT 0", "_version INTEGER NOT NULL", "_position INTEGER NOT NULL"]
        try db.execute(sql: "CREATE TABLE \(table) (\(cols.joined(separator: ", ")))")
        guard indexes else { return }
        // Keys of relationships (children look up their parent's key).
        var indexed = Set<String>()
        for r in layer.relationships {
            guard let k = layer.field(named: r.keyField), layer.attributeFields.contains(where: { $0.name == k.name }),
                  indexed.insert(k.name).inserted else { continue }
            try db.execute(sql: "CREATE INDEX \(table)_\(indexed.count) ON \(table)(\(quoted(k.name)))")
        }
    }

    /// Gives a layer's table the attribute columns of `layer` when they differ (a field added or removed): the rows are
    /// copied into a new table of the new layout (the columns both have), and the old table's indexes whose columns
    /// remain are made again. Returns whether it changed the table. A removed field's values stay in the events.
    @discardableResult
    public static func reshapeLayer(_ db: Database, _ layer: LayerSchema) throws -> Bool {
        let table = featureTable(layer.id)
        let columns = try db.columns(in: table).map(\.name)
        guard let gid = columns.firstIndex(of: "_globalid"), let geometry = columns.firstIndex(of: "_geometry"),
              Array(columns[(gid + 1)..<geometry]) != layer.attributeFields.map(\.name) else { return false }
        let indexes = try Row.fetchAll(db, sql: "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL ORDER BY name",
                                       arguments: [table]).map { (name: $0["name"] as String, sql: $0["sql"] as String) }
        for i in indexes { try db.execute(sql: "DROP INDEX \(quoted(i.name))") }
        let old = table + "_reshaping"
        try db.execute(sql: "ALTER TABLE \(table) RENAME TO \(old)")
        try createLayer(db, layer, indexes: false)
        let kept = Set(columns)
        let common = try db.columns(in: table).map(\.name).filter { kept.contains($0) }.map(quoted).joined(separator: ", ")
        try db.execute(sql: "INSERT INTO \(table) (\(common)) SELECT \(common) FROM \(old) ORDER BY _oid")
        try db.execute(sql: "DROP TABLE \(old)")
        let now = Set(try db.columns(in: table).map(\.name))
        for i in indexes where ProjectionTables.indexedColumns(i.sql).allSatisfy(now.contains) { try db.execute(sql: i.sql) }
        return true
    }

    /// The column names an index definition (`CREATE INDEX … ON t(a, "b")`) names.
    static func indexedColumns(_ sql: String) -> [String] {
        guard let open = sql.lastIndex(of: "("), let close = sql.lastIndex(of: ")"), open < close else { return [] }
        return sql[sql.index(after: open)..<close].split(separator: ",").map {
            String($0.filter { $0 != " " && $0 != "\"" })
        }
    }

    /// The indexes a large import creates once, after its events, instead of row by row (`dropIndexes`,
    /// `createIndexes`): the sessions' by feature, which only a pop-up edit's check reads (an open session on a
    /// feature; an import reads sessions by id), and the feature tables' relationship keys, which only the import's
    /// end reads (children of a deleted parent, rules derived again). Each is a random insert per row, competing with
    /// the events' stream index for the page cache; created afterwards, each costs one pass over its table. The
    /// sessions' index by actor stays: its misses during the bench's import cost less than that pass over the
    /// sessions' rows. The change index's by feature (`ChangeIndex`) is read only by `diff`, after the import.
    public static func importDeferredIndexes(_ db: Database) throws -> [String] {
        try ["p_sessions_feature", ChangeIndex.byFeature] + String.fetchAll(db, sql: """
            SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name LIKE 'p\\_layer\\_%' ESCAPE '\\' ORDER BY name
            """)
    }

    /// Drops the named indexes that exist, and returns their definitions as `sqlite_master` holds them, for
    /// `createIndexes` to create them again, the same, before the transaction ends.
    public static func dropIndexes(_ db: Database, _ names: [String]) throws -> [String] {
        var definitions: [String] = []
        for name in names {
            guard let sql = try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?", arguments: [name]) else { continue }
            try db.execute(sql: "DROP INDEX \(quoted(name))")
            definitions.append(sql)
        }
        return definitions
    }

    /// Creates indexes from their definitions (`dropIndexes`' result): SQLite sorts the table's keys once and writes
    /// each index page in turn.
    public static func createIndexes(_ db: Database, _ definitions: [String]) throws {
        for sql in definitions { try db.execute(sql: sql) }
    }

    /// Every projection table of the database `schema` (`main`, or an attached one), in name order.
    public static func all(_ db: Database, in schema: String = "main") throws -> [String] {
        try String.fetchAll(db, sql: "SELECT name FROM \(schema).sqlite_master WHERE type = 'table' AND name LIKE 'p\\_%' ESCAPE '\\' ORDER BY name")
    }

    public static func dropAll(_ db: Database) throws {
        for t in try all(db) { try db.execute(sql: "DROP TABLE \(t)") }
    }
}
