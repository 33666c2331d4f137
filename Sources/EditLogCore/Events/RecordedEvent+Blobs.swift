/// The attachment bytes an event needs: the one rule bundles, imports and the hub's pushes follow.
extension RecordedEvent {
    /// The SHA-256s (lowercase hex) of the attachment bytes this event references: a staged attachment's, and a
    /// committed session's added attachments (none for a payload its type cannot read: its reader reports that).
    public var blobReferences: [String] {
        switch type {
        case EventType.attachmentStaged.rawValue, EventType.sessionCommitted.rawValue:
            switch try? body {
            case .attachmentStaged(let a)?: return [a.attachment.sha256.lowercased()]
            case .sessionCommitted(let c)?: return c.attachments.added.map { $0.sha256.lowercased() }
            default: return []
            }
        default:
            return []
        }
    }
}
