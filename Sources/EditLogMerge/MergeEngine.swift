import EditLogCore

/// The one merge engine: decides, field by field and three-way (base = what the remote side saw, local = this
/// log's current state, remote = the new value), how an imported event applies to this log. Pure: no I/O.
/// Bundles and service sync both use it.
///
/// - A field changed on one side only is taken; the same field changed to the same value on both sides is not
///   a conflict; changed to different values, it is (the policy picks the winner).
/// - Update against delete, and a GlobalID created on both sides with different content, are conflicts.
/// - Attachments added on both sides are both kept; rename against rename and rename against detach are conflicts.
/// - A record deleted with its parent (a composite relationship's cascade) follows the parent: while the parent lives
///   here, the record's delete is skipped (the importer revives such records with a parent it revives).
/// - Under `last-in-wins` by client time (bundles) every field, the feature's existence and each attachment's name
///   are last-writer-wins registers (by `Author` order), so logs that exchange everything in any order converge.
///   Under the upload rule (sync, `LastInRule.upload`) this log's changes win as under `local-wins`, and a delete
///   on either side stands.
/// - Fields a rule derives and editor-tracking fields never conflict: they are `excluded` (the importer derives
///   them again from the merged state).
public struct MergeEngine: Sendable {
    public var policy: MergePolicy
    /// What "last in" means under `last-in-wins` (recorded in each conflict).
    public var rule: LastInRule
    public var ownLog: String
    /// Fields per layer that never conflict (derived by rules, filled by editor tracking).
    public var excluded: [Int: Set<String>]
    /// The attribute fields of each layer of this log's schema, lowercased (a layer not listed: every field is known).
    /// A value of a field its layer lacks here (this log removed it; the other log's removal came before its export) is
    /// not merged: never a conflict, never kept, and the projector leaves it out (it stays in the event, as history).
    public var fields: [Int: Set<String>]

    public init(policy: MergePolicy, rule: LastInRule = .clientTime, ownLog: String, excluded: [Int: Set<String>] = [:], fields: [Int: Set<String>] = [:]) {
        self.policy = policy; self.rule = rule; self.ownLog = ownLog; self.excluded = excluded; self.fields = fields
    }

    /// Whether layer `layer` of this log's schema lacks field `name` (see `fields`).
    func lacks(_ layer: Int, _ name: String) -> Bool {
        guard let known = fields[layer] else { return false }
        return !known.contains(name) && !known.contains(name.lowercased())
    }

    /// The policy decisions follow (`MergePolicy.effective`).
    var deciding: MergePolicy { policy.effective(rule) }

    /// Under the upload rule a delete on either side stands.
    var deleteStands: Bool { policy == .lastInWins && rule == .upload }

    /// The pseudo-field a create's geometry is merged under.
    public static let geometryField = "_geometry"

    /// The decision for `remote`, an event of another log about `local`'s feature. Its conflicts have empty ids
    /// (the importer names them). Throws `.invalidInput` when the event needs a feature this log does not have
    /// (an earlier bundle is missing).
    public func decide(_ remote: RecordedEvent, local: LocalFeature) throws(EditLogError) -> MergeDecision {
        var d = MergeDecision(log: ownLog, event: remote.id.lowercasedString, layer: local.layer, globalId: local.globalId)
        guard remote.eventType != nil else { return d }
        let body = try remote.body
        let w = Author(remote)
        let skip = excluded[local.layer] ?? []
        func conflict(_ kind: ConflictKind, field: String? = nil, attachment: String? = nil, base: JSONValue,
                      local l: SideValue, remote r: SideValue, winner: Winner) {
            d.conflicts.append(make(kind, field, attachment, base, l, r, winner, local))
        }
        func missing() -> EditLogError {
            EditLogError(.invalidInput, "event \(remote.id.lowercasedString) (\(remote.type) at origin position \(remote.origin.position) of log "
                         + "\(remote.origin.logId)) changes feature \(local.globalId), which this log does not have: import the earlier events first",
                         at: "stream \(remote.stream)")
        }

        // A create: a baseline, or a session's create.
        var created: (attributes: [String: JSONValue], geometry: JSONValue?, namesGeometry: Bool, baseline: Bool)?
        switch body {
        case .featureBaselined(let b): created = (b.attributes, b.geometry, b.namesGeometry, true)
        case .sessionCommitted(let c) where c.isCreate: created = (c.changes.newValues, c.geometry, c.namesGeometry, false)
        default: break
        }
        switch body {
        case _ where created != nil:
            guard let snap = local.snapshot, let created else { return d }  // a new feature: plain
            d.asUpdate = true
            d.keepTracking = !local.history.lastTracked.isBefore(w)
            d.takeCreator = local.history.createdBy.isBefore(w)
            d.keepTrackingFields = created.baseline
            let attrs = created.attributes
            // The same record made on both sides from the same data (two logs made from one service's baseline)
            // is the common base, not a conflict: each field differs only where one side edited it since.
            let born = local.history.created ?? [:]
            for (f, r) in attrs.sorted(by: { $0.key < $1.key }) {
                let l = snap.attributes[f] ?? .null
                if l == r || lacks(local.layer, f) { continue }
                if local.history.created != nil, (born[f] ?? .null) == r { d.skipFields.append(f); continue }
                let lw = local.history.fieldWriters[f]
                let winner = deciding.winner(local: lw, remote: w)
                if winner != .remote { d.skipFields.append(f) }
                if skip.contains(f) { continue }  // a derived or tracking field: decided, never a conflict
                conflict(.createCreate, field: f, base: .null, local: SideValue(value: l, writer: lw), remote: SideValue(value: r, writer: w), winner: winner)
            }
            if let g = created.geometry, g != (snap.geometry ?? .null), g != (local.history.createdGeometry ?? .null) {
                let lw = local.history.lastWrite ?? local.history.fieldWriters.values.max { $0.isBefore($1) }
                let winner = deciding.winner(local: lw, remote: w)
                if winner != .remote { d.skipFields.append(Self.geometryField) }
                conflict(.createCreate, field: Self.geometryField, base: .null, local: SideValue(value: snap.geometry ?? .null, writer: lw),
                         remote: SideValue(value: g, writer: w), winner: winner)
            } else if created.namesGeometry {
                d.skipFields.append(Self.geometryField)
            }
            // Deleted here since: a conflict only if the other side made something else. The same creation (the
            // common baseline of two logs made from one service) brings nothing the delete did not see, so the
            // delete stands under every policy.
            if snap.deleted {
                let sameCreation = local.history.created != nil && attrs.allSatisfy { (born[$0.key] ?? .null) == $0.value }
                    && (created.geometry.map { $0 == (local.history.createdGeometry ?? .null) } ?? true)
                if !sameCreation { decideRevive(&d, local: local, remote: w) }
            }

        case .sessionCommitted, .conflictResolved:
            guard let snap = local.snapshot else { throw missing() }
            let changes: FieldChanges
            var attachments: AttachmentChanges?
            switch body {
            case .sessionCommitted(let c): changes = c.changes; attachments = c.attachments
            case .conflictResolved(let r):
                // Another log closed a conflict as it held it (no field): nothing to apply, nothing to revive.
                guard r.field != nil else { return d }
                changes = r.changes
            default: return d
            }
            d.keepTracking = !local.history.lastTracked.isBefore(w)
            for (f, base, r) in changes.sorted {
                let l = snap.attributes[f] ?? .null
                let lw = local.history.fieldWriters[f]
                if l == r || lacks(local.layer, f) { continue }
                if skip.contains(f) {
                    // A value a rule derives, written by hand: never a conflict (the rule derives it again after the
                    // merge); under last-in-wins still the later writer's.
                    if deciding == .lastInWins, !lw.isBefore(w) { d.skipFields.append(f) }
                    continue
                }
                if l == base {
                    // Changed on the remote side only. Under last-in-wins a local write later than the remote one
                    // (the value changed and changed back here) keeps the register's order.
                    if deciding == .lastInWins, !lw.isBefore(w) {
                        d.skipFields.append(f)
                        conflict(.field, field: f, base: base, local: SideValue(value: l, writer: lw), remote: SideValue(value: r, writer: w), winner: .local)
                    }
                    continue
                }
                let winner = deciding.winner(local: lw, remote: w)
                if winner != .remote { d.skipFields.append(f) }
                conflict(.field, field: f, base: base, local: SideValue(value: l, writer: lw), remote: SideValue(value: r, writer: w), winner: winner)
            }
            if snap.deleted { decideRevive(&d, local: local, remote: w) }
            if let attachments { decideAttachments(&d, attachments, local: local, remote: w) }

        case .featureDerived(let x):
            // A rule's value never conflicts; under last-in-wins the later writer's stays (the importer derives it again).
            guard local.snapshot != nil else { throw missing() }
            // An older rule value keeps the tracking (one derived again after an import, marked so, leaves it anyway).
            d.keepTracking = !x.keepsTracking && !local.history.lastTracked.isBefore(w)
            guard deciding == .lastInWins else { return d }
            for (f, _, r) in x.changes.sorted {
                let l = local.value(f)
                if l != r, !lacks(local.layer, f), !local.history.fieldWriters[f].isBefore(w) { d.skipFields.append(f) }
            }

        case .featureDeleted(let x):
            guard let snap = local.snapshot else { throw missing() }
            guard !snap.deleted else { return d }  // deleted on both sides: nothing to decide
            if let parent = local.liveCascadeParent {
                // Deleted there with its parent (a composite relationship's cascade), whose delete did not apply here:
                // neither does this one, whatever the policy. The parent's decision is the conflict.
                d.skipDelete = true
                d.cascadeOf = parent
                return d
            }
            let base = x.attributes
            var changed: [String] = []
            for (f, v) in snap.attributes where !skip.contains(f) && (base[f] ?? .null) != v { changed.append(f) }
            let apply: Bool
            switch deciding {
            case _ where deleteStands: apply = true
            case .lastInWins: apply = local.history.lastWrite.isBefore(latest(local.history.lastDelete, w)!)
            case .remoteWins: apply = true
            case .localWins, .manual: apply = changed.isEmpty
            }
            if !apply { d.skipDelete = true }
            if !changed.isEmpty || !apply {
                let winner: Winner = apply ? .remote : (deciding == .manual ? .open : .local)
                let lw = local.history.lastWrite
                conflict(.updateDelete, base: .object(base.filter { changed.contains($0.key) }),
                         local: SideValue(value: .object(snap.attributes.filter { changed.contains($0.key) }), writer: lw),
                         remote: SideValue(value: .null, writer: w), winner: winner)
            }
        default:
            break
        }
        d.skipFields.sort()
        return d
    }

    /// An update or a create of a feature deleted here: live again when the remote write wins.
    func make(_ kind: ConflictKind, _ field: String?, _ attachment: String?, _ base: JSONValue, _ l: SideValue, _ r: SideValue,
              _ winner: Winner, _ local: LocalFeature) -> Conflict {
        Conflict(id: "", kind: kind, layer: local.layer, globalId: local.globalId, field: field, attachmentId: attachment,
                 base: base, local: l, remote: r, policy: policy, rule: policy == .lastInWins ? rule : nil, winner: winner)
    }

    func decideRevive(_ d: inout MergeDecision, local: LocalFeature, remote w: Author) {
        func conflict(_ k: ConflictKind, _ f: String?, _ a: String?, _ b: JSONValue, _ l: SideValue, _ r: SideValue, _ win: Winner) {
            d.conflicts.append(make(k, f, a, b, l, r, win, local))
        }
        let revive: Bool
        switch deciding {
        case .lastInWins: revive = local.history.lastDelete.isBefore(latest(local.history.lastWrite, w)!)
        case .remoteWins: revive = true
        case .localWins, .manual: revive = false
        }
        d.revive = revive
        conflict(.deleteUpdate, nil, nil, .null, SideValue(value: .null, writer: local.history.lastDelete),
                 SideValue(value: .string("updated"), writer: w), revive ? .remote : (deciding == .manual ? .open : .local))
    }

    /// Renames and detaches of attachments this log renamed or detached too.
    func decideAttachments(_ d: inout MergeDecision, _ atts: AttachmentChanges, local: LocalFeature, remote w: Author) {
        func conflict(_ k: ConflictKind, _ f: String?, _ a: String?, _ b: JSONValue, _ l: SideValue, _ r: SideValue, _ win: Winner) {
            d.conflicts.append(make(k, f, a, b, l, r, win, local))
        }
        for r in atts.renamed {
            let id = r.attachmentId, new = r.new
            guard let here = local.attachments[id] else { continue }
            let old = r.old.stringValue
            let lw = local.history.attachmentWriters[id]
            if here.deleted {
                let dw = local.history.detachWriters[id]
                let winner = deciding.winner(local: dw, remote: w)
                if winner == .remote { d.reviveAttachments.append(id) } else { d.skipAttachments.append(id) }
                conflict(.detachRename, nil, id, JSONValue(old), SideValue(value: .null, writer: dw), SideValue(value: .string(new), writer: w), winner)
            } else if here.name != new, here.name != old {
                let winner = deciding.winner(local: lw, remote: w)
                if winner != .remote { d.skipAttachments.append(id) }
                conflict(.renameRename, nil, id, JSONValue(old), SideValue(value: .string(here.name), writer: lw), SideValue(value: .string(new), writer: w), winner)
            } else if deciding == .lastInWins, here.name == old, !lw.isBefore(w) {
                d.skipAttachments.append(id)
            }
        }
        for r in atts.removed {
            let id = r.attachmentId
            guard let here = local.attachments[id], !here.deleted else { continue }
            let base = r.name.stringValue
            guard let baseName = base, here.name != baseName else { continue }
            let lw = local.history.attachmentWriters[id]
            let winner = deleteStands ? .remote : deciding.winner(local: lw, remote: w)  // the service's detach stands
            if winner != .remote { d.skipAttachments.append(id) }
            conflict(.renameDetach, nil, id, .string(baseName), SideValue(value: .string(here.name), writer: lw), SideValue(value: .null, writer: w), winner)
        }
    }
}
