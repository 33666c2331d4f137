import EditLogCore
import EditLogMerge
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

extension Importer {
    /// A parent deleted on one side while the other side related a record to it is kept, whatever the policy:
    /// a merge never leaves an orphan. The decision (a standalone `MergeDecided` reviving the parent) names the
    /// child as the conflict's local or remote side.
    mutating func keepRelationshipsWhole(unit: inout WriteUnit) throws {
        let (db, projector) = (unit.db, unit.projector)
        let world = ProjectedState(db: db, schema: schema, projector: projector)
        var revived = Set<String>()
        func revive(_ parent: LayerSchema, _ p: FeatureSnapshot, child: LayerSchema, _ c: FeatureSnapshot) throws {
            guard p.deleted, revived.insert(p.globalId).inserted else { return }
            let stream = StreamName.feature(layer: parent.id, globalId: p.globalId)
            var d = MergeDecision.reviving(log: engine.ownLog, layer: parent.id, globalId: p.globalId,
                                         attachments: try detachedWithFeature(stream, p.globalId, db))
            let parentHistory = try history(of: stream, db)
            let childHistory = try history(of: StreamName.feature(layer: child.id, globalId: c.globalId), db)
            let childWriter = childHistory.lastWrite
            let childIsLocal = childWriter.map { $0.logId == engine.ownLog } ?? true
            // The other log of the conflict: the delete's when the child is this log's, else the child's.
            let remoteLog = (childIsLocal ? parentHistory.lastDelete?.logId : childWriter?.logId) ?? engine.ownLog
            let del = SideValue(value: .null, writer: parentHistory.lastDelete)
            let kept = SideValue(value: .string(c.globalId), writer: childWriter)
            d.conflicts = [Conflict(id: unit.ids.next().lowercasedString, kind: .orphan, layer: parent.id, globalId: p.globalId,
                                    field: nil, attachmentId: nil, base: .string(p.globalId),
                                    local: childIsLocal ? kept : del, remote: childIsLocal ? del : kept,
                                    policy: engine.policy, winner: childIsLocal ? .local : .remote)]
            let e = NewEvent(id: unit.ids.next(), stream: stream, body: d.body, context: context,
                             session: nil, cause: Cause.merge(from: remoteLog))
            let r = try unit.emit(e)
            appended(r)
            report.decisions += 1
            report.conflicts += d.conflicts
            try reviveCascaded(parent, p.globalId, from: remoteLog, unit: &unit)
        }
        // Parents this import deleted that live children still point at (a child that lives only because the parent
        // did, its cascade skipped or undone, keeps nothing: it goes with the parent).
        for (lid, g) in deletedParents {
            guard let layer = schema.layer(id: lid), let p = try world.feature(layer: lid, globalId: g), p.deleted else { continue }
            search: for rel in layer.relationships where rel.role == .origin {
                guard let (child, side) = schema.counterpart(of: rel, in: layer), let fk = child.field(named: side.keyField)?.name else { continue }
                let key = ServiceSchema.keyValue(of: p, originSide: rel, origin: layer)
                for c in try world.features(layer: child.id, where: fk, equals: key) where try keeps(child, c, parent: g, db: db, world: world) {
                    try revive(layer, p, child: child, c)
                    break search
                }
            }
        }
        // Children this import created or changed that point at a parent deleted here (a feature of a layer that is
        // no relationship's destination has no parent: it is not read). In a log that held no feature, every parent
        // deleted here was deleted by this import, and the loop above kept each one a live child points at.
        #if DEBUG
        let checkOnly = startedEmpty == true  // debug builds (the tests) look anyway, and fail on a parent left deleted
        #else
        if startedEmpty == true { return }
        let checkOnly = false
        #endif
        // Again while it kept a parent: a record revived with it (`reviveCascaded`) may point at another deleted one.
        var kept = -1
        while kept < revived.count {
            kept = revived.count
            for (key, entry) in touched.sorted(by: { $0.key < $1.key }) {
                let g = key.globalId
                let layer = schema.layers[Int(entry.layerIndex)]
                guard layer.relationships.contains(where: { $0.role == .destination }),
                      let c = try world.feature(layer: layer.id, globalId: g), !c.deleted else { continue }
                for rel in layer.relationships where rel.role == .destination {
                    guard let fk = layer.field(named: rel.keyField)?.name, let v = c.attributes[fk], !v.isNull,
                          let (parent, side) = schema.counterpart(of: rel, in: layer) else { continue }
                    let p: FeatureSnapshot?
                    if let k = side.keyField, k.lowercased() != parent.globalIdField?.lowercased() {
                        p = nil  // keyed by an attribute: only live parents can be found by it
                    } else {
                        p = try v.stringValue.flatMap(GlobalID.normalize).flatMap { try world.feature(layer: parent.id, globalId: $0) }
                    }
                    if let p, checkOnly {
                        if p.deleted { throw EditLogError(.corrupt, "the import left parent \(p.globalId) deleted, which child \(c.globalId) points at") }
                    } else if let p, p.deleted, try keeps(layer, c, parent: p.globalId, db: db, world: world) {
                        try revive(parent, p, child: layer, c)
                    }
                }
            }
        }
    }

    /// Values that rules derive never conflict: after the merge they are derived again from the merged state, as
    /// `FeatureDerived` events naming the rule (cause) and the import (`import` in the payload). A feature new to
    /// this log came with the values its own log derived (and any later hand edit of them): it is left as it came.
    mutating func deriveAgain(unit: inout WriteUnit) throws {
        guard !schema.rules.isEmpty else { return }
        // In a log that held no feature, every parent a rollup can derive for was created by the import (and keeps the
        // values it came with) or is not in the log: nothing is derived. Debug builds (the tests) derive and check.
        #if !DEBUG
        if startedEmpty == true { return }
        #endif
        let world = unit.world
        #if DEBUG
        let rules = unit.rules
        #endif
        var emitted = 0
        func derive(after trigger: RuleEngine.Trigger) throws {
            let derived = try unit.derive(after: trigger, context: context) { p in
                guard case .featureDerived(var d) = p.body, !created(d.globalId) else { return nil }
                d.importSource = source
                // Derived again here, not written by anyone: the editor tracking stays the latest write's (so logs that
                // merged the same events show the same editors, whichever derived again).
                d.keepsTracking = true
                var p = p
                p.body = d.body
                return p
            }
            for r in derived { appended(r) }
            emitted += derived.count
        }
        for (key, entry) in touched.sorted(by: { $0.key < $1.key }) {
            let g = key.globalId
            let lid = schema.layers[Int(entry.layerIndex)].id
            // Each earlier key value once, so every parent the child left is derived again too.
            let befores: [[String: JSONValue]] = entry.keys.isEmpty ? [[:]] : entry.keys.map { [$0.field: $0.value.json] }
            if try !mayDeriveForOthers(layer: lid, g, keys: entry.keys, world) {
                #if DEBUG
                // Debug builds (the tests) check the skip: deriving would have given nothing that is kept.
                for before in befores {
                    for p in try rules.derive(after: .committed(layer: lid, globalId: g, kind: .edit, before: before, session: nil)) {
                        guard case .featureDerived(let d) = p.body, created(d.globalId) else {
                            throw EditLogError(.corrupt, "the import skipped deriving again after \(g), which derives \(p.body.json.serialized())")
                        }
                    }
                }
                #endif
                continue
            }
            for before in befores {
                try derive(after: .committed(layer: lid, globalId: g, kind: .edit, before: before, session: nil))
            }
        }
        for (lid, g) in rederive where !created(g) {
            guard let layer = schema.layer(id: lid), let p = try world.feature(layer: lid, globalId: g), !p.deleted else { continue }
            for rule in schema.rules {
                guard case .latestChildRollup(let relId, let parentLayer, let childLayer, _, _) = rule.kind, parentLayer == lid,
                      let rel = layer.relationships.first(where: { $0.id == relId && $0.role == .origin }),
                      let child = schema.layer(id: childLayer), let (_, side) = schema.counterpart(of: rel, in: layer),
                      let fk = child.field(named: side.keyField)?.name else { continue }
                let key = ServiceSchema.keyValue(of: p, originSide: rel, origin: layer)
                guard let c = try world.features(layer: child.id, where: fk, equals: key).first else { continue }
                try derive(after: .committed(layer: child.id, globalId: c.globalId, kind: .edit, before: [:], session: nil))
            }
        }
        #if DEBUG
        if startedEmpty == true, emitted > 0 {
            throw EditLogError(.corrupt, "the import derived \(emitted) values again in a log that held no feature, where it derives none")
        }
        #endif
        report.derived += emitted
    }

    /// Whether deriving again after a change of this feature (`RuleEngine.derive(after: .committed(kind: .edit))`)
    /// can give an event that `deriveAgain` keeps. Such a trigger runs only the rollups, whose events are about the
    /// child's parents, by the key values it had (`keys`) and has; a parent the import created keeps the values it
    /// came with. When every such parent was created by the import, the child is not derived again (that reads all
    /// of each parent's children).
    func mayDeriveForOthers(layer: Int, _ g: String, keys: [(field: String, value: NotedValue)], _ world: ProjectedState) throws -> Bool {
        var now: FeatureSnapshot??
        for rule in schema.rules {
            switch rule.kind {
            case .latestChildRollup(let relId, _, let childLayer, _, _):
                guard childLayer == layer, let child = schema.layer(id: childLayer),
                      let side = child.relationships.first(where: { $0.id == relId && $0.role == .destination }),
                      let fk = child.field(named: side.keyField)?.name else { continue }
                if now == nil { now = .some(try world.feature(layer: layer, globalId: g)) }
                var values = keys.filter { $0.field == fk }.map(\.value.json)
                if let v = now??.attributes[fk] { values.append(v) }
                for v in values where !v.isNull {
                    // A key that is no GlobalID finds no parent: the rollup skips it too.
                    if let parent = v.stringValue.flatMap(GlobalID.normalize), !created(parent) { return true }
                }
            case .pointInPolygonLookup, .reverseGeocode:
                continue  // only on a create
            }
        }
        return false
    }
}

extension Importer {
    /// The parent a cascaded delete came with (cause `cascade:<parent>`), when that parent lives here: its own
    /// delete, earlier in the same commit of the other log, was not applied (or it was revived since). nil for any
    /// other delete, or when the parent is deleted here too.
    func liveCascadeParent(of e: RecordedEvent, layer: LayerSchema, _ world: ProjectedState) throws -> String? {
        guard let p = try cascadeParent(of: e.cause, layer: layer, world), !p.deleted else { return nil }
        return GlobalID.normalize(String(e.cause.dropFirst(Self.cascadePrefix.count)))
    }

    static let cascadePrefix = Cause.cascade(from: "")

    /// A feature this import revived takes back the records its delete took along: each deleted record whose delete
    /// came with it (cause `cascade:<feature>`, whatever key the record has held since) and that no other delete keeps
    /// deleted (`standing`: none of its own after its latest write in last-in-wins order, here or in another log,
    /// applied or met already deleted, and no cascade of another parent deleted here) is live again (a standalone
    /// `MergeDecided` naming the feature in `cascadeOf`), and so on down. So a kept or revived tree keeps its
    /// inspections, a record one log deleted by itself stays deleted in every log whichever cascade reached it too, and
    /// both sides of an exchange hold the same records whichever side deleted.
    mutating func reviveCascaded(_ layer: LayerSchema, _ g: String, from logId: String, unit: inout WriteUnit) throws {
        let db = unit.db
        let world = unit.world
        guard let p = try world.feature(layer: layer.id, globalId: g), !p.deleted else { return }
        for stream in try Self.cascadedStreams(of: g, db) {
            guard let cf = StreamName.parseFeature(stream), let child = schema.layer(id: cf.layer),
                  let c = try world.feature(layer: child.id, globalId: cf.globalId), c.deleted,
                  try standing(of: child, c.globalId, db: db, world: world).deletes.isEmpty else { continue }
            let d = MergeDecision.reviving(log: engine.ownLog, layer: child.id, globalId: c.globalId, cascadeOf: g,
                                         attachments: try detachedWithFeature(stream, c.globalId, db))
            try recordStandalone(d, layer: child, before: c, from: logId, unit: &unit)
            try reviveCascaded(child, c.globalId, from: logId, unit: &unit)
        }
    }

    /// Appends and applies a standalone decision of this log about a record (revived with its parent, or deleted again):
    /// its stream is no longer as its own log wrote it, and the rules derive again after it (a rollup of its parent).
    mutating func recordStandalone(_ d: MergeDecision, layer: LayerSchema, before: FeatureSnapshot, from logId: String, unit: inout WriteUnit) throws {
        let r = try unit.emit(NewEvent(id: unit.ids.next(), stream: StreamName.feature(layer: layer.id, globalId: d.globalId), body: d.body, context: context, session: nil, cause: Cause.merge(from: logId)))
        let key = GlobalIDKey(d.globalId)
        track(r, key: key)
        appended(r)
        report.decisions += 1
        note(layer, d.globalId, before: before, type: .mergeDecided, writer: Author.Order(millis: 0, logId: logId, position: 0))
        touched[key]?.origin = -1
    }
}
