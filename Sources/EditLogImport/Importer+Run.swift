import EditLogCore
import EditLogMerge
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

extension Importer {
    /// Imports events of other logs (a bundle, a sync pull) into `store` in one unit of work, all or nothing: `feed` calls
    /// `event` for each event in origin order, with its payload's canonical bytes and its hash here computed ahead when
    /// the source has them (`event` returns whether the guess held, true without one), and `blob` for each attachment's
    /// pieces; then `finish`, then `closing` (what the caller appends with the report, in the same transaction).
    /// `opening` runs first in the transaction (a bundle's import records the schema its events need there): the events
    /// are merged against the schema in force after it.
    ///
    /// An import meets a whole bundle's features, each in a burst of events: the caches a recording transaction keeps
    /// (SQLite's pages, stream versions, features read, rows held) are bounded lower until the commit, the imported
    /// events are not held in memory (the report is the result), and with `indexDeferral` some projection indexes are
    /// created once after the events.
    public static func run(into store: EventStore, schema: ServiceSchema, geocoder: (any ReverseGeocoder)?, policy: MergePolicy, rule: LastInRule,
                           context: EventContext, source: String, expectedEvents: Int, indexDeferral: IndexDeferral,
                           opening: (inout WriteUnit, inout ImportReport) throws -> Void = { _, _ in },
                           _ feed: (_ event: (inout RecordedEvent, [UInt8]?, ChainGuess?) throws -> Bool, _ blob: (BlobPiece) throws -> Void) throws -> Void,
                           closing: (inout WriteUnit, ImportReport) throws -> Void) throws(EditLogError) -> ImportReport {
        try store.setPageCache(kib: pageCacheKiB)
        defer { try? store.setPageCache(kib: EventStore.writerCacheKiB) }
        return try store.writeUnit(schema: schema, geocoder: geocoder) { unit in
            unit.keepsAppended = false
            unit.versionLimit = streamVersionLimit
            unit.projector.featureCacheLimit = featureCacheLimit
            unit.projector.pendingLimit = pendingRowLimit
            var opened = ImportReport()
            try opening(&unit, &opened)
            var importer = try Importer(schema: unit.schema, policy: policy, rule: rule, ownLog: store.logId, context: context, source: source)
            importer.report = opened
            importer.expectedEvents = expectedEvents
            let db = unit.db
            let deferredIndexes = indexDeferral.defers(expectedEvents: expectedEvents, held: unit.headPosition)
                ? try ProjectionTables.dropIndexes(db, ProjectionTables.importDeferredIndexes(db)) : []
            try feed({ e, payload, guess in
                try importer.importEvent(&e, canonicalPayload: payload, guess: guess, unit: &unit)
                guard let guess else { return true }
                return unit.headPosition == guess.position && unit.headHash == guess.hash
            },
                     { piece in try importer.importBlob(piece, unit: &unit) })
            if !deferredIndexes.isEmpty {
                try unit.projector.flush(db)
                // SQLite's sorter takes as much memory as the page cache may: the cache gives it up first.
                try EventStore.shrinkPageCache(db, toKiB: indexSortKiB)
                try ProjectionTables.createIndexes(db, deferredIndexes)
                // The import's end reads children by their keys: the indexes are back before it.
                try EventStore.setPageCache(db, kib: pageCacheKiB)
            }
            try importer.finish(unit: &unit)
            importer.report.unprojectedValues = unit.projector.unprojectedValues
            try closing(&unit, importer.report)
            return importer.report
        }
    }
}
