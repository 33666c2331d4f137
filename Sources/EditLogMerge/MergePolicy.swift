/// How a conflict is decided when an import meets local changes.
public enum MergePolicy: String, Sendable, Hashable, CaseIterable {
    /// The data-collection app's rule: the later commit by client time wins; ties broken by origin log id
    /// (then origin position), so every log decides the same.
    case lastInWins = "last-in-wins"
    case localWins = "local-wins"
    case remoteWins = "remote-wins"
    /// The conflict stays open (the local value stays) until `editlog conflicts resolve`; everything else applies.
    case manual

    /// Which side wins a conflict between a local and a remote write.
    public func winner(local: Writer?, remote: Writer) -> Winner {
        switch self {
        case .lastInWins: return local.isBefore(remote) ? .remote : .local
        case .localWins: return .local
        case .remoteWins: return .remote
        case .manual: return .open
        }
    }
}

/// The side a decision took.
public enum Winner: String, Sendable, Hashable {
    case local, remote
    /// Not decided yet (`manual`): the local value stays until someone resolves it.
    case open
}
