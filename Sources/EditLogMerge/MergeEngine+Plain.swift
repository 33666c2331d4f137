import EditLogCore

extension MergeEngine {
    /// Whether `decide(remote, local:)` is plain (the event applies as it came, nothing recorded) for a feature
    /// this log holds as `snapshot`, whatever its history, **provided** every writer in that history comes before
    /// `remote`'s writer in last-in-wins order. The caller must know that bound (the importer does, for a feature
    /// the import itself created); then it need not read the feature's history at all.
    ///
    /// With every local writer earlier, the history only matters where a field differs from both the event's
    /// base and its new value (a conflict), where the feature is deleted here (a revive), or where attachments are
    /// renamed or removed (compared with this log's): those answer false, and the caller takes `decide`.
    /// Creates answer false too (a create of a feature this log holds is merged as an update).
    public func decidesPlainly(_ remote: RecordedEvent, snapshot: FeatureSnapshot) -> Bool {
        // A payload its type cannot read is not plain: `decide` reports it.
        guard !snapshot.deleted, remote.eventType != nil, let body = try? EventBody(remote) else { return false }
        let changes: FieldChanges
        switch body {
        case .featureDerived:
            // Never a conflict; under last-in-wins a field is kept only against a later local writer: none here.
            return true
        case .sessionCommitted(let c):
            if c.isCreate || !c.attachments.renamed.isEmpty || !c.attachments.removed.isEmpty { return false }
            changes = c.changes
        case .conflictResolved(let r):
            changes = r.changes
        default:
            return false
        }
        let skip = excluded[snapshot.layerId] ?? []
        for (f, change) in changes.raw {
            let l = snapshot.attributes[f] ?? .null
            if l == (change["new"] ?? .null) || skip.contains(f) || l == (change["old"] ?? .null) { continue }
            return false
        }
        return true
    }
}
