import EditLogCore
import EditLogImport
import EditLogMerge
import EditLogStore
import Foundation
import GRDB

@_exported import EditLogMerge
@_exported import struct EditLogImport.ImportReport
@_exported import enum EditLogImport.IndexDeferral

extension EditLog {
    /// Imports events of other logs (a bundle, a sync pull) in one transaction, all or nothing: `feed` calls
    /// `event` for each event in origin order and `blob` for each attachment's bytes. Events already here are
    /// skipped; the others keep their id and origin, are chained into this log and merged under `policy`
    /// (decisions and conflicts recorded as `MergeDecided` events); rules derive their values again after.
    /// Any error thrown by `feed` or by the merge rolls everything back.
    public func importEvents(policy: MergePolicy, actor: String, device: String, source: String,
                             _ feed: (_ event: (RecordedEvent) throws -> Void, _ blob: ([UInt8]) throws -> Void) throws -> Void) throws(EditLogError) -> ImportReport {
        try importEvents(policy: policy, actor: actor, device: device, source: source, feed, closing: { _ in [] })
    }

    /// Every event of this log after `position`, in order (what a bundle or a peer would carry).
    public func events(after position: Int64 = 0) throws(EditLogError) -> [RecordedEvent] {
        try read { db in
            var out: [RecordedEvent] = []
            try EventReading.forEach(db, after: position) { out.append($0) }
            return out
        }
    }

}
