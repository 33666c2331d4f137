import EditLogCore

/// The standalone decisions an import records after its events (no event of its own: `event` is nil), built here so
/// that the importer sets and reads no decision flag itself.
extension MergeDecision {
    /// Brings back a deleted feature, with the attachments its delete detached; `cascadeOf` names the parent whose
    /// revival brought it back (nil: revived for its own sake, as a parent an orphan needs).
    public static func reviving(log: String, layer: Int, globalId: String, cascadeOf: String? = nil, attachments: [String]) -> MergeDecision {
        var d = MergeDecision(log: log, event: nil, layer: layer, globalId: globalId)
        d.revive = true
        d.cascadeOf = cascadeOf
        d.reviveAttachments = attachments
        return d
    }

    /// Deletes again a feature a decision kept (`keptBy`), detaching the attachments that decision brought back and
    /// that are still attached (`live`); with no keeping decision, every live attachment.
    public static func deletingAgain(log: String, layer: Int, globalId: String, cascadeOf: String?, keptBy: MergeDecision?,
                                   live: [String]) -> MergeDecision {
        var d = MergeDecision(log: log, event: nil, layer: layer, globalId: globalId)
        d.deleteAgain = true
        d.cascadeOf = cascadeOf
        d.detachAttachments = keptBy.map { k in k.reviveAttachments.filter(live.contains) } ?? live.sorted()
        return d
    }

    /// Whether this decision kept its feature for an orphan (the orphan rule's keeper), not as part of a cascade.
    public var keepsForAnOrphan: Bool { cascadeOf == nil && conflicts.contains { $0.kind == .orphan } }

    /// Whether this decision brings its feature back.
    public var revives: Bool { revive }

    /// Adds attachments for a reviving decision to bring back too.
    public mutating func reviveAlso(attachments: [String]) { reviveAttachments += attachments }
}
