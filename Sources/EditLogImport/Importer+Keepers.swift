import EditLogCore
import EditLogMerge
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

/// What keeps a record live against the deletes that reached it, so that every log that merged the same events
/// holds the same records, whichever order they came in: a record is live when no delete after its latest write
/// (last-in-wins order) still applies, a cascaded delete (cause `cascade:<parent>`) applying only while its parent
/// is deleted; a parent is also live while a record that is live by itself points at it (the orphan rule).
extension Importer {
    /// The deletes after a record's latest write that apply (its parent's cascade only while that parent is deleted),
    /// and the standalone decision of this log that holds it live against them, if one does.
    struct Standing {
        /// Their causes, each once.
        var deletes: [String] = []
        /// This log's latest decision that made the record live, when it was a standalone one (kept for an orphan, or
        /// live again with its parent); nil once it was deleted again, or revived by a decision about an event.
        var keptBy: MergeDecision?

        /// Whether the record lives only because `parent` does: the deletes that apply are all that parent's cascade.
        func held(onlyBy parent: String) -> Bool {
            !deletes.isEmpty && deletes.allSatisfy { $0 == Cause.cascade(from: parent) }
        }
    }

    /// How the record stands here; `gone`: a parent taken as deleted (its cascade applies) whatever it is now.
    mutating func standing(of layer: LayerSchema, _ g: String, gone: String? = nil, db: Database, world: ProjectedState) throws -> Standing {
        let stream = StreamName.feature(layer: layer.id, globalId: g)
        var s = Standing()
        var deletes: [(cause: String, writer: Author)] = []
        let ownLog = engine.ownLog
        try EventReading.forEach(db, where: "stream = ? AND type IN (?, ?)", arguments: [stream, EventType.featureDeleted.rawValue, EventType.mergeDecided.rawValue],
                                 cached: true) { e in
            if e.type == EventType.featureDeleted.rawValue {
                deletes.append((e.cause, Author(e)))
            } else {
                guard case .mergeDecided(let d) = try e.body else { return }
                guard d.log == ownLog else { return }
                switch d.liveness {
                case .keptLive?: s.keptBy = d
                case .liveWithEvent?, .deletedAgain?: s.keptBy = nil
                case nil: break
                }
            }
        }
        guard !deletes.isEmpty else { return s }  // never deleted: its history is not read
        let lastWrite = try history(of: stream, db).lastWrite
        for (cause, w) in deletes where lastWrite.map({ $0.isBefore(w) }) ?? true && !s.deletes.contains(cause) {
            if let p = try cascadeParent(of: cause, layer: layer, world), !p.deleted, p.globalId != gone { continue }
            s.deletes.append(cause)
        }
        return s
    }

    /// The parent a cascaded delete's cause names (`cascade:<parent>`), as this log holds it; nil for another cause.
    func cascadeParent(of cause: String, layer: LayerSchema, _ world: ProjectedState) throws -> FeatureSnapshot? {
        guard cause.hasPrefix(Self.cascadePrefix), let parent = GlobalID.normalize(String(cause.dropFirst(Self.cascadePrefix.count))) else { return nil }
        for rel in layer.relationships where rel.role == .destination {
            guard let (parentLayer, _) = schema.counterpart(of: rel, in: layer), let p = try world.feature(layer: parentLayer.id, globalId: parent) else { continue }
            return p
        }
        return nil
    }

    /// The streams of the records a delete of `g` took along (cause `cascade:<g>`), in log order, each once, whatever
    /// key they have held since (the partial index `events_cascade`).
    static func cascadedStreams(of g: String, _ db: Database) throws -> [String] {
        let streams = try String.fetchAll(db.cachedStatement(sql: "SELECT stream FROM events WHERE cause = ? AND cause GLOB 'cascade:*' AND type = ? ORDER BY position"),
                                          arguments: [Cause.cascade(from: g), EventType.featureDeleted.rawValue])
        var seen = Set<String>()
        return streams.filter { seen.insert($0).inserted }
    }

    /// Whether a live record keeps `parent` live: it would live were the parent deleted (no delete that applies, or one
    /// that something else answers for: a delete of its own another policy skipped, another parent's cascade). A record
    /// live only by the parent's own liveness (its cascade skipped or undone) does not.
    mutating func keeps(_ layer: LayerSchema, _ c: FeatureSnapshot, parent: String, db: Database, world: ProjectedState) throws -> Bool {
        if c.deleted { return false }
        return try !standing(of: layer, c.globalId, gone: parent, db: db, world: world).held(onlyBy: parent)
    }

    /// Whether a live record points at `p` that keeps it (`keeps`), through any relationship `p` is the origin of.
    mutating func hasKeeper(_ layer: LayerSchema, _ p: FeatureSnapshot, db: Database, world: ProjectedState) throws -> Bool {
        for rel in layer.relationships where rel.role == .origin {
            guard let (child, side) = schema.counterpart(of: rel, in: layer), let fk = child.field(named: side.keyField)?.name else { continue }
            for c in try world.features(layer: child.id, where: fk, equals: ServiceSchema.keyValue(of: p, originSide: rel, origin: layer)) {
                if try keeps(child, c, parent: p.globalId, db: db, world: world) { return true }
            }
        }
        return false
    }

    /// Notes the parents a record this log held pointed at (GlobalID keys), when the import deletes it or changes its
    /// key: one of them may have lost what kept it (`releaseKeptParents`).
    mutating func noteLeaving(_ layer: LayerSchema, _ before: FeatureSnapshot) {
        for rel in layer.relationships where rel.role == .destination {
            guard let fk = layer.field(named: rel.keyField)?.name, let v = before.attributes[fk]?.stringValue, let g = GlobalID.normalize(v),
                  let (parent, side) = schema.counterpart(of: rel, in: layer) else { continue }
            if let k = side.keyField, k.lowercased() != parent.globalIdField?.lowercased() { continue }  // keyed by an attribute: never kept
            if leftParentsListed.insert(g).inserted { leftParents.append((parent.id, g)) }
        }
    }

    /// A parent this log kept for an orphan (`keepRelationshipsWhole`) that nothing keeps any more is deleted again, as
    /// its deletes say: a standalone `MergeDecided` (`deleteAgain`), with the records that live only because it lived
    /// (revived with it, or whose cascade was skipped while it lived: `cascadeOf`), and so on down. A log that received
    /// the same events in an order that never needed the parent kept holds them deleted too. Only parents the import's
    /// records left (deleted, or pointed elsewhere) are looked at, and those the records deleted again pointed at.
    mutating func releaseKeptParents(unit: inout WriteUnit) throws {
        let (db, projector) = (unit.db, unit.projector)
        // A log that held no feature held no decision either: a parent this import kept has the keeper it was kept for.
        // Debug builds (the tests) look anyway, and fail on a parent deleted again.
        #if !DEBUG
        if startedEmpty == true { return }
        #else
        let decided = report.decisions
        #endif
        var i = 0
        while i < leftParents.count {
            let (lid, g) = leftParents[i]
            i += 1
            let world = ProjectedState(db: db, schema: schema, projector: projector)
            guard let layer = schema.layer(id: lid), let p = try world.feature(layer: lid, globalId: g), !p.deleted else { continue }
            let s = try standing(of: layer, g, db: db, world: world)
            guard let kept = s.keptBy, kept.keepsForAnOrphan, !s.deletes.isEmpty,
                  try !hasKeeper(layer, p, db: db, world: world) else { continue }
            let log = try history(of: StreamName.feature(layer: lid, globalId: g), db).lastDelete?.logId ?? engine.ownLog
            try deleteAgain(layer, p, cascadeOf: nil, keptBy: kept, from: log, unit: &unit)
        }
        #if DEBUG
        if startedEmpty == true, report.decisions != decided {
            throw EditLogError(.corrupt, "the import deleted again a parent it kept, in a log that held no feature")
        }
        #endif
    }

    /// Records that lived only because a feature this import deleted did (their earlier cascade undone while it lived,
    /// pointing elsewhere since: its new delete's cascade did not reach them) go again (`releaseHeld`). Before the orphan
    /// rule looks for keepers (`keepRelationshipsWhole`), so that such a record keeps nothing. Most deleted features took
    /// nothing along: one lookup of the cascade index each.
    mutating func releaseHeldByDeleted(unit: inout WriteUnit) throws {
        let (db, projector) = (unit.db, unit.projector)
        for (lid, g) in deletedParents where try !Self.cascadedStreams(of: g, db).isEmpty {
            let world = ProjectedState(db: db, schema: schema, projector: projector)
            guard let p = try world.feature(layer: lid, globalId: g), p.deleted else { continue }
            try releaseHeld(by: g, from: try history(of: StreamName.feature(layer: lid, globalId: g), db).lastDelete?.logId ?? engine.ownLog,
                            unit: &unit)
        }
    }

    /// Records and applies the decision that deletes `f` again, then does so for each record its cascade took along that
    /// lives only because `f` did (and keeps nothing itself).
    mutating func deleteAgain(_ layer: LayerSchema, _ f: FeatureSnapshot, cascadeOf: String?, keptBy: MergeDecision?, from logId: String,
                              unit: inout WriteUnit) throws {
        let world = unit.world
        // The attachments the keeping decision brought back (those still attached); all of them for a record whose
        // cascaded delete was skipped rather than undone (its attachments were never detached here).
        let live = try world.attachments(of: f.globalId).map(\.globalId)
        let d = MergeDecision.deletingAgain(log: engine.ownLog, layer: layer.id, globalId: f.globalId, cascadeOf: cascadeOf, keptBy: keptBy, live: live)
        try recordStandalone(d, layer: layer, before: f, from: logId, unit: &unit)
        // A parent it kept may be free now.
        for rel in layer.relationships where rel.role == .destination {
            guard let fk = layer.field(named: rel.keyField)?.name, let v = f.attributes[fk]?.stringValue, let g = GlobalID.normalize(v),
                  let (parent, _) = schema.counterpart(of: rel, in: layer) else { continue }
            leftParents.append((parent.id, g))
        }
        try releaseHeld(by: f.globalId, from: logId, unit: &unit)
    }

    /// Deletes again each live record that a delete of `g` (deleted here) took along and that lives only because `g`
    /// did (`Standing.held(onlyBy:)`), unless it keeps a record of its own.
    mutating func releaseHeld(by g: String, from logId: String, unit: inout WriteUnit) throws {
        let (db, projector) = (unit.db, unit.projector)
        for childStream in try Self.cascadedStreams(of: g, db) {
            let world = ProjectedState(db: db, schema: schema, projector: projector)
            guard let cf = StreamName.parseFeature(childStream), let child = schema.layer(id: cf.layer),
                  let c = try world.feature(layer: child.id, globalId: cf.globalId), !c.deleted else { continue }
            let s = try standing(of: child, c.globalId, gone: g, db: db, world: world)
            guard s.held(onlyBy: g), try !hasKeeper(child, c, db: db, world: world) else { continue }
            try deleteAgain(child, c, cascadeOf: g, keptBy: s.keptBy, from: logId, unit: &unit)
        }
    }

    /// After a change recorded in this log (a script's, an app's, a service client's), in its transaction: the features
    /// it deleted (`deleted`), and the parents its records pointed at before it deleted them or pointed them elsewhere
    /// (`left`). A record that lived only because a deleted feature did goes again, a parent kept for an orphan that
    /// nothing keeps any more is deleted again (`releaseKeptParents`), and the rules derive again after them. Nothing
    /// to do in a log that never merged: a log records such decisions only after an import kept or revived something.
    public mutating func release(deleted: [(layer: Int, globalId: String)], left: [(layer: Int, globalId: String)], unit: inout WriteUnit) throws {
        let world = unit.world
        for (lid, g) in deleted {
            guard let layer = schema.layer(id: lid), let f = try world.feature(layer: lid, globalId: g) else { continue }
            noteLeaving(layer, f)
            try releaseHeld(by: f.globalId, from: engine.ownLog, unit: &unit)
        }
        for (lid, g) in left where leftParentsListed.insert(g).inserted { leftParents.append((lid, g)) }
        try releaseKeptParents(unit: &unit)
        if report.decisions > 0 { try deriveAgain(unit: &unit) }
    }

    /// Whether a change recorded here may leave a record that lives only because a deleted feature did, or a parent kept
    /// for an orphan with nothing to keep it (`release`): it deleted a feature whose deletes took records along (now or
    /// before), or a record that points at a parent, or pointed a record elsewhere. Cheap: the recording path asks it for
    /// every change.
    public static func mayRelease(deleted: [(layer: Int, globalId: String)], left: [(layer: Int, globalId: String)], schema: ServiceSchema, db: Database) throws -> Bool {
        if !left.isEmpty { return true }
        for (lid, g) in deleted {
            if schema.layer(id: lid)?.relationships.contains(where: { $0.role == .destination }) == true { return true }
            if try !cascadedStreams(of: g, db).isEmpty { return true }
        }
        return false
    }
}
