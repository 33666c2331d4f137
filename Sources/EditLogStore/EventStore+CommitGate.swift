import EditLogCore
import Foundation
import GRDB
import Synchronization

/// A write's last step before its commit, on a hub node's local copy of the hub's log (`EditLogHub.HubNode`): it gets the events
/// the transaction appended, in position order, and a reader of the attachment bytes they reference (by SHA-256 hex,
/// as the transaction holds them), and throws to roll the whole transaction back. The hub's store appends them first;
/// the local copy commits only what the hub holds, at the same positions with the same hashes.
public typealias CommitGate = @Sendable (_ events: [RecordedEvent], _ blob: (String) throws -> [UInt8]?) throws -> Void

extension EventStore {
    /// Sets the gate every write of this handle passes before it commits (nil: none). Writes that bring events the hub
    /// already holds (a local copy catching up) pass `gated: false`.
    public func setCommitGate(_ gate: CommitGate?) { commitGate.withLock { $0 = gate } }

    /// Runs the gate, if any, on what the transaction appended after `start`.
    func passGate(_ db: Database, after start: Int64, head: Int64) throws {
        guard head > start, let gate = commitGate.withLock({ $0 }) else { return }
        var events: [RecordedEvent] = []
        try EventReading.forEach(db, after: start) { events.append($0) }
        try gate(events) { sha in
            guard let digest = Hex.decode(sha), digest.count == 32 else { return nil }
            return try BlobReading.whole(db, sha256: digest)
        }
    }
}
