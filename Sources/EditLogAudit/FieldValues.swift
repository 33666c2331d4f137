import EditLogCore
import EditLogMerge
import EditLogProjections
import EditLogStore
import GRDB

/// Some fields of a feature folded from its stream: `BlameFold`'s rule (this log's decisions, a baseline's values as
/// data, `EditorTracking` for each write) for those fields only, without an entry per field and event. A delete keeps
/// the values (a deleted feature's are its last). `diff` reads editor tracking at its window's start with it, the
/// report a feature's display field at its window's end.
struct FieldValuesFold {
    let layer: LayerSchema
    let fields: Set<String>
    var values: [String: JSONValue] = [:]
    var effects: EffectFold

    init(layer: LayerSchema, fields: Set<String>, ownLog: String?) {
        self.layer = layer
        self.fields = fields
        effects = EffectFold(ownLog: ownLog)
    }

    mutating func apply(_ e: RecordedEvent) throws {
        guard let f = try effects.next(e).effect else { return }
        switch f.row {
        case .create:
            for t in fields { values[t] = .null }
        case .update:
            break
        case .delete, .deleteAgain, .none:
            return
        }
        f.forEachValue { k, _, v in
            let n = layer.field(k)?.name ?? k
            if fields.contains(n) { values[n] = v }
        }
        for (field, v) in layer.editorTrackingValues(of: e, f.tracking) where fields.contains(field) { values[field] = v }
    }
}

extension Audit {
    /// The values of `fields(layer)` of each wanted feature at `moment` (every event when nil), by GlobalID: each
    /// feature's stream folded (`FieldValuesFold`), 500 wanted streams at a time (one statement each, under SQLite's
    /// parameter limit), so only one batch's folds are held at once.
    static func fieldValues(_ db: Database, at moment: LogMoment?, clock: EventClock, ownLog: String?,
                            of wanted: [(layer: LayerSchema, globalId: String)], fields: (LayerSchema) -> Set<String>) throws -> [String: [String: JSONValue]] {
        var out: [String: [String: JSONValue]] = [:]
        var fieldSets: [Int: Set<String>] = [:]
        var i = 0
        while i < wanted.count {
            let batch = wanted[i..<min(i + 500, wanted.count)]
            i += batch.count
            var folds: [String: FieldValuesFold] = [:]
            var byStream: [String: String] = [:]
            for (layer, g) in batch {
                let f = fieldSets[layer.id] ?? fields(layer)
                fieldSets[layer.id] = f
                folds[g] = FieldValuesFold(layer: layer, fields: f, ownLog: ownLog)
                byStream[StreamName.feature(layer: layer.id, globalId: g)] = g
            }
            // Only the types that write values or decide about an event (not a session's staging).
            var sql = "stream IN (\(byStream.keys.map { _ in "?" }.joined(separator: ","))) AND type IN ('FeatureBaselined', 'SessionCommitted', "
                + "'ConflictResolved', 'FeatureDerived', 'MergeDecided')"
            var args = StatementArguments(Array(byStream.keys))
            if case .position(let p) = moment { sql += " AND position <= ?"; args += [p] }
            try EventReading.forEach(db, where: sql, arguments: args) { e in
                guard moment?.includes(e, clock: clock) ?? true, let g = byStream[e.stream] else { return }
                try folds[g]?.apply(e)
            }
            for (g, f) in folds { out[g] = f.values }
        }
        return out
    }

    /// A display field's value as people read it: text as it is, a date in the one human form, a number as JSON
    /// writes it; nil for null.
    public static func displayText(_ v: JSONValue, field: FieldSchema?) -> String? {
        switch v {
        case .null: return nil
        case .string(let s): return s
        default:
            if field?.type == .date, let ms = v.intValue { return Timestamp.human(milliseconds: ms) }
            return v.serialized()
        }
    }

    /// Each feature's display value: its layer's `displayField` (`displayText`) as of `moment` (the end when nil), by
    /// GlobalID; a deleted feature's is its last value. Left out: a feature whose layer has no display field, or whose
    /// value is null. The one home for naming a feature beside its GlobalID (the report, a related record in `history`).
    /// At the log's end the projection's row answers (deleted rows keep their values); before it, the feature's stream
    /// is folded up to `moment`.
    public static func displayValues(_ db: Database, schema: ServiceSchema, of features: [(layer: Int, globalId: String)],
                                     asOf moment: LogMoment? = nil, clock: EventClock = .default) throws -> [String: String] {
        var wanted: [(layer: LayerSchema, globalId: String)] = []
        var seen = Set<String>()
        for (l, g) in features {
            guard let layer = schema.layer(id: l), layer.displayField.flatMap(layer.field) != nil, seen.insert(g).inserted else { continue }
            wanted.append((layer, g))
        }
        guard !wanted.isEmpty else { return [:] }
        var out: [String: String] = [:]
        let atEnd: Bool = switch moment {
        case nil: true
        case .position(let p)?: p >= (try EventReading.count(db))
        case .time?: false
        }
        if atEnd {
            let world = ProjectedState(db: db, schema: schema)
            for (layer, g) in wanted {
                guard let field = layer.displayField.flatMap(layer.field), let f = try world.feature(layer: layer.id, globalId: g) else { continue }
                out[g] = f.attributes[field.name].flatMap { displayText($0, field: field) }
            }
            return out
        }
        let values = try fieldValues(db, at: moment, clock: clock, ownLog: try EventStore.logId(in: db), of: wanted) { layer in
            Set(layer.displayField.flatMap(layer.field).map { [$0.name] } ?? [])
        }
        for (layer, g) in wanted {
            guard let field = layer.displayField.flatMap(layer.field) else { continue }
            out[g] = values[g]?[field.name].flatMap { displayText($0, field: field) }
        }
        return out
    }
}
