import EditLogCore

/// Where an export starts (`--since`): exclusive, like every FROM of EditLog.
public enum BundleSince: Sendable, Hashable, CustomStringConvertible {
    /// After this position (0: from the first event).
    case position(Int64)
    /// After what the last export to this peer sent (`bundle_exports`).
    case lastExport(peer: String)
    /// After a bundle's `toPosition` (the bundle must come from this log).
    case bundle(path: String)

    /// `N`, `last-export:<peer>` or `bundle:<file>`.
    public init?(argument s: String) {
        if let p = Int64(s), p >= 0 {
            self = .position(p)
        } else if s.hasPrefix("last-export:"), s.count > "last-export:".count {
            self = .lastExport(peer: String(s.dropFirst("last-export:".count)))
        } else if s.hasPrefix("bundle:"), s.count > "bundle:".count {
            self = .bundle(path: String(s.dropFirst("bundle:".count)))
        } else {
            return nil
        }
    }

    /// The argument form.
    public var description: String {
        switch self {
        case .position(let p): String(p)
        case .lastExport(let peer): "last-export:\(peer)"
        case .bundle(let path): "bundle:\(path)"
        }
    }
}
