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
        guard !snapshot.deleted, let type = remote.eventType, type == .conflictResolved || Self.isPlainShape(remote, type) else { return false }
        // A payload its type cannot read is not plain: `decide` reports it.
        guard let body = try? remote.body else { return false }
        let changes: FieldChanges
        switch body {
        case .featureDerived:
            return true
        case .sessionCommitted(let c):
            changes = c.changes
        case .conflictResolved(let r):
            changes = r.changes
        default:
            return false
        }
        let skip = excluded[snapshot.layerId] ?? []
        var plain = true
        changes.forEach { f, old, new in
            guard plain else { return }
            let l = snapshot.attributes[f] ?? .null
            if l == new || skip.contains(f) || l == old || lacks(snapshot.layerId, f) { return }
            plain = false
        }
        return plain
    }

    /// Whether `e` (of type `type`) is of a kind that applies as it came to a feature every writer of which comes
    /// before `e`'s, whatever the feature's history: a rule's derived values (never a conflict; under last-in-wins a
    /// field is kept only against a later local writer), or a commit that neither creates (a create of a feature
    /// this log holds is merged as an update) nor renames or removes attachments (decided against this log's). Such
    /// a commit is still decided field by field against what the feature holds (`decidesPlainly`), unless the caller
    /// knows the feature holds the commit's old values (the importer, for a feature it created). A payload its type
    /// cannot read is not plain (`decide` reports it).
    public static func isPlainShape(_ e: RecordedEvent, _ type: EventType) -> Bool {
        switch try? e.body {
        case .featureDerived?:
            return true
        case .sessionCommitted(let c)?:
            return !c.isCreate && c.attachments.renamed.isEmpty && c.attachments.removed.isEmpty
        default:
            return false
        }
    }
}
