/// The attachment bytes an event needs: the one rule bundles, imports and the hub's pushes follow.
extension RecordedEvent {
    /// The SHA-256s (lowercase hex) of the attachment bytes this event references: a staged attachment's, and a
    /// committed session's added attachments.
    public var blobReferences: [String] {
        switch type {
        case EventType.attachmentStaged.rawValue:
            return payload["sha256"]?.stringValue.map { [$0.lowercased()] } ?? []
        case EventType.sessionCommitted.rawValue:
            return (payload["attachments"]?["added"]?.arrayValue ?? []).compactMap { $0["sha256"]?.stringValue?.lowercased() }
        default:
            return []
        }
    }
}
