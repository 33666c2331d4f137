import EditLogCore
import EditLogImport
import EditLogMerge
import EditLogProjections
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

    /// Imports events of another source as `importEvents` does, then appends `closing` (built from the report) in
    /// the same transaction: the pulled events and the sync state that names them commit together or not at all.
    public func importEvents(policy: MergePolicy, rule: LastInRule = .clientTime, actor: String, device: String, source: String,
                             _ feed: (_ event: (RecordedEvent) throws -> Void, _ blob: ([UInt8]) throws -> Void) throws -> Void,
                             closing: (ImportReport) throws -> [SystemEvent]) throws(EditLogError) -> ImportReport {
        try importEvents(policy: policy, rule: rule, actor: actor, device: device, source: source,
                         withPayloads: { event, blob in
                             try withoutActuallyEscaping(event) { event in
                                 try withoutActuallyEscaping(blob) { blob in
                                     try feed({ e in var e = e; _ = try event(&e, nil, nil) }, { bytes in try blob(BlobPiece(whole: bytes)) })
                                 }
                             }
                         }, closing: closing)
    }

    /// `importEvents` through the importer's feed (`Importer.run`: an event with its payload's canonical bytes and its
    /// hash here computed ahead when the source has them; a bundle's import, `Importer.importBundle`, feeds both).
    func importEvents(policy: MergePolicy, rule: LastInRule = .clientTime, actor: String, device: String, source: String,
                      withPayloads feed: (_ event: (inout RecordedEvent, [UInt8]?, ChainGuess?) throws -> Bool, _ blob: (BlobPiece) throws -> Void) throws -> Void,
                      closing: (ImportReport) throws -> [SystemEvent]) throws(EditLogError) -> ImportReport {
        let context = EventContext(actor: actor, device: device, clientTime: nowString())
        return try Importer.run(into: store, schema: schema, geocoder: geocoder, policy: policy, rule: rule, context: context, source: source,
                                expectedEvents: 0, indexDeferral: indexDeferral, feed) { unit, report in
            for s in try closing(report) { try unit.emit(s.newEvent(id: unit.ids.next(), context: context)) }
        }
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
