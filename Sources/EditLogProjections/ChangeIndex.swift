import EditLogCore
import EditLogMerge
import EditLogStore
import GRDB

/// The change index: one row per event that changed a feature in this log's projection (as the projector applied
/// it, this log's decisions included), by position, with the editor-tracking values that event left in the row.
/// A feature's tracking at any position is then one short index range, not its stream's events folded
/// (`Audit.diff` reads it at its window's start).
///
/// It is derived like the projection tables and rebuilt with them, but it is not a `p_*` table: checkpoints and
/// replays at a moment copy those, and have no use for an index of the whole history. A log made before the index
/// has none until `editlog rebuild`; readers then fold the streams as before, and writers leave it absent (half an
/// index would answer wrongly).
public enum ChangeIndex {
    public static let table = EventStore.derivedTables[0]
    static let byFeature = "change_index_feature"

    /// A row's kind as stored: `FeatureEffect.Row`, and `revive` for a feature made live again by a write that
    /// changed no row (`revives` with `.none`).
    enum Kind: Int64 {
        case none = 0, create, update, delete, deleteAgain, revive

        init(_ f: FeatureEffect) {
            switch f.row {
            case .create: self = .create
            case .update: self = .update
            case .delete: self = .delete
            case .deleteAgain: self = .deleteAgain
            case .none: self = f.revives ? .revive : .none
            }
        }

        /// Whether the feature is live after such a row; nil when the row leaves it as it was (an unknown kind too).
        static func live(after stored: Int64) -> Bool? {
            switch Kind(rawValue: stored) {
            case .create?, .update?, .revive?: true
            case .delete?, .deleteAgain?: false
            case .none?, nil: nil
            }
        }
    }

    /// How a feature changed over a window, as `extractChanges` reports it.
    public enum Change: String, Sendable { case added, updated, deleted }

    /// The features of `layer` that changed after `from` up to `to`, in the order of their first change, with what the
    /// window did to each: added (not live at `from`, live at `to`), deleted (the reverse), updated (live at both and
    /// written in between). A feature added and deleted in the window is left out. It reads the window's rows of the
    /// index and, for each feature not created in it, its last row before: the work grows with the window's changes.
    /// Unlike `diff`, a write that left every value as it was is still an update (the row was written). nil when the
    /// log has no index.
    public static func changes(_ db: Database, layer: Int, after from: Int64, upTo to: Int64) throws -> [(globalId: String, change: Change)]? {
        guard try exists(db) else { return nil }
        struct Window { var first: Int64; var live: Bool?; var written = false }
        var order: [String] = []
        var window: [String: Window] = [:]
        let rows = try Row.fetchCursor(db.cachedStatement(sql: "SELECT global_id, kind FROM \(table) WHERE position > ? AND position <= ? AND layer = ? ORDER BY position"),
                                       arguments: [from, to, layer])
        while let r = try rows.next() {
            let g: String = r[0], k: Int64 = r[1]
            if window.index(forKey: g) == nil { order.append(g); window[g] = Window(first: k, live: nil) }
            if let now = Kind.live(after: k) { window[g]!.live = now; window[g]!.written = true }
        }
        let before = try db.cachedStatement(sql: "SELECT kind FROM \(table) WHERE global_id = ? AND position <= ? ORDER BY position DESC")
        var out: [(globalId: String, change: Change)] = []
        for g in order {
            let w = window[g]!
            guard w.written else { continue }
            var wasLive = false
            if w.first != Kind.create.rawValue {
                let kinds = try Int64.fetchCursor(before, arguments: [g, from])
                while let k = try kinds.next() { if let l = Kind.live(after: k) { wasLive = l; break } }
            }
            switch (wasLive, w.live ?? wasLive) {
            case (false, true): out.append((g, .added))
            case (true, false): out.append((g, .deleted))
            case (true, true): out.append((g, .updated))
            case (false, false): break
            }
        }
        return out
    }

    /// The table, and its index by feature unless `byFeature` is false (a replay of the whole log creates that index
    /// once at its end, `createFeatureIndex`: one sort instead of a random insert per row).
    static func create(_ db: Database, byFeature withIndex: Bool = true) throws {
        try db.execute(sql: """
            CREATE TABLE \(table) (
                position INTEGER PRIMARY KEY,
                layer INTEGER NOT NULL,
                global_id TEXT NOT NULL,
                kind INTEGER NOT NULL,
                tracking TEXT
            )
            """)
        if withIndex { try createFeatureIndex(db) }
    }

    /// The index by feature, when the table has none yet (SQLite keeps the definition without `IF NOT EXISTS`).
    static func createFeatureIndex(_ db: Database) throws {
        guard try exists(db) else { return }
        try db.execute(sql: "CREATE INDEX IF NOT EXISTS \(byFeature) ON \(table)(global_id, position)")
    }

    /// Read from `sqlite_master` itself, not GRDB's schema cache: a projector asks after creating the projection's
    /// tables in its transaction, and a cache filled then outlives that transaction's rollback.
    public static func exists(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)"), arguments: [table]) ?? false
    }

    static func drop(_ db: Database) throws {
        if try exists(db) { try db.execute(sql: "DROP TABLE \(table)") }
    }

    /// The tracking values a row holds after a write (`columns`' editor-tracking attribute columns, those at the
    /// indices `only` when given: the ones the write set), as a JSON object; nil when the layer tracks nothing or the
    /// write set none of them.
    /// Written straight to bytes, members in `c.tracking`'s order (the names' byte order): the bytes
    /// `JSONValue.object(…).serialized()` gives, without building a dictionary for every row written.
    static func tracking(_ c: LayerColumns, _ row: [DatabaseValue?], only: [Int]?) -> String? {
        guard !c.tracking.isEmpty, only?.isEmpty != true else { return nil }
        var out: [UInt8] = []
        for (name, i) in c.tracking where only?.contains(i) ?? true {
            guard let v = row[i] else { continue }
            if case .blob = v.storage { continue }
            out.append(out.isEmpty ? UInt8(ascii: "{") : UInt8(ascii: ","))
            JSONValue.writeString(name, to: &out)
            out.append(UInt8(ascii: ":"))
            ProjectedState.jsonValue(v).write(to: &out)
        }
        guard !out.isEmpty else { return nil }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    /// SHA-256 over the index's rows in position order (`verify` compares it with a rebuild's); nil without an index.
    public static func digest(_ db: Database) throws -> String? {
        guard try exists(db) else { return nil }
        var h = ContentDigest()
        try RowBytes.stream(db, sql: "SELECT * FROM \(table) ORDER BY position") { h.update($0) }
        return Hex.encode(h.finalize())
    }

    /// The values of `fields(layer)` (names as `layer` spells them) of each wanted feature at `position`, by GlobalID,
    /// from the index: each feature's rows read back from `position` until every field is found or the row that
    /// created the feature (which set them all). A feature not created by then has no entry; a field no row set is
    /// left out (null). nil when the log has no index.
    public static func values(_ db: Database, at position: Int64, of wanted: [(layer: LayerSchema, globalId: String)],
                              fields: (LayerSchema) -> Set<String>) throws -> [String: [String: JSONValue]]? {
        guard try exists(db) else { return nil }
        let statement = try db.cachedStatement(sql: "SELECT kind, tracking FROM \(table) WHERE global_id = ? AND position <= ? ORDER BY position DESC")
        var fieldSets: [Int: Set<String>] = [:]
        var out: [String: [String: JSONValue]] = [:]
        for (layer, g) in wanted {
            let wantedFields = fieldSets[layer.id] ?? fields(layer)
            fieldSets[layer.id] = wantedFields
            var values: [String: JSONValue] = [:]
            var seen = false
            let rows = try Row.fetchCursor(statement, arguments: [g, position])
            while let r = try rows.next() {
                seen = true
                if let text: String = r[1] {
                    guard case .object(let o)? = try? JSONParser.parse(text) else {
                        throw EditLogError(.corrupt, "the change index's row of \(g) holds no JSON object of tracking values; the index was altered: run `editlog rebuild`",
                                           at: "change_index before position \(position)")
                    }
                    for (k, v) in o {
                        let name = layer.field(k)?.name ?? k
                        if wantedFields.contains(name), values[name] == nil { values[name] = v }
                    }
                }
                if (r[0] as Int64) == Kind.create.rawValue {
                    for f in wantedFields where values[f] == nil { values[f] = .null }
                    break
                }
                if values.count == wantedFields.count { break }
            }
            if seen { out[g] = values }
        }
        return out
    }
}
