/// How a conflict is decided when an import meets local changes.
public enum MergePolicy: String, Sendable, Hashable, CaseIterable {
    /// The data-collection app's rule. What "last in" means depends on the path (`LastInRule`): between logs
    /// (bundles) the later commit by client time wins; against a service (sync) the syncing log's upload wins.
    case lastInWins = "last-in-wins"
    case localWins = "local-wins"
    case remoteWins = "remote-wins"
    /// The conflict stays open (the local value stays) until `editlog conflicts resolve`; everything else applies.
    case manual

    /// Which side wins a conflict between a local and a remote write, under `rule` for `last-in-wins`.
    public func winner(local: Author?, remote: Author, rule: LastInRule = .clientTime) -> Winner {
        switch effective(rule) {
        case .lastInWins: return local.isBefore(remote) ? .remote : .local
        case .localWins: return .local
        case .remoteWins: return .remote
        case .manual: return .open
        }
    }

    /// The policy decisions follow: `last-in-wins` under the upload rule decides as `local-wins` (the syncing
    /// log's changes since its last sync are the last in), except for deletes (`MergeEngine`).
    public func effective(_ rule: LastInRule) -> MergePolicy {
        self == .lastInWins && rule == .upload ? .localWins : self
    }
}

/// What "last in" means for `last-in-wins`.
public enum LastInRule: String, Sendable, Hashable, CaseIterable {
    /// Between logs (bundles): no service is "in" first, so each field, existence and attachment name is a
    /// last-writer-wins register ordered by client time (ties by origin log, then position): every log that
    /// receives everything converges whatever the exchange order.
    case clientTime = "client-time"
    /// Against a feature service (sync), as ArcGIS means it: the edit that reaches the service last wins, so the
    /// syncing log's changes since its last sync overwrite what others put on the service meanwhile. A delete
    /// on either side stands (a deleted feature cannot take an update there, and a delete uploaded is last in).
    case upload

    /// Words for `conflicts show`.
    public var description: String {
        switch self {
        case .clientTime: return "the later commit by client time wins (bundles between logs)"
        case .upload: return "the syncing log's upload is the last in and wins over the service's concurrent edits; a delete stands (ArcGIS sync)"
        }
    }
}

/// The side a decision took.
public enum Winner: String, Sendable, Hashable {
    case local, remote
    /// Not decided yet (`manual`): the local value stays until someone resolves it.
    case open
}
