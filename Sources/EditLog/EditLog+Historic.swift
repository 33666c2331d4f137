import EditLogCore
import EditLogExport
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

/// Every layer and table as they were after one position of the log, read with the schema that applied then: the
/// nearest checkpoint read in place with the rows the events after it changed in a scratch SQLite file
/// (`Replay.readableState`; without a usable checkpoint, the log replayed into the scratch file). The same
/// `ProjectionReader` queries as the live log answer over it. The state of a position never changes (the log is
/// append-only), so it can be kept and read again; `close()` closes it and removes the file.
public final class HistoricState: ProjectionReader, @unchecked Sendable {
    /// Events 1...position are in it.
    public let position: Int64
    public let schema: ServiceSchema
    public let file: String
    private let queue: DatabaseQueue

    init(position: Int64, schema: ServiceSchema, file: String, queue: DatabaseQueue) {
        self.position = position
        self.schema = schema
        self.file = file
        self.queue = queue
    }

    /// A deferred transaction rolled back at the end, as the log's own reads (not GRDB's `read`, see `EventStore.read`).
    public func readProjections<T>(_ body: (ProjectedState) throws -> T) throws(EditLogError) -> T {
        let schema = self.schema
        do {
            return try queue.unsafeRead { db in
                var result: T?
                try db.inTransaction(.deferred) {
                    result = try body(ProjectedState(db: db, schema: schema))
                    return .rollback
                }
                return result!
            }
        } catch {
            throw EditLogError.wrapping(error, at: "the replayed state at position \(position) (\(file))")
        }
    }

    public func close() {
        try? queue.close()
        Replay.removeScratch(file)
    }
}

extension EditLog {
    /// The earliest time on `clock` of the events after `position`, in epoch milliseconds (nil when there are none):
    /// over the whole log, the earliest moment `position(atMilliseconds:by:)` finds a position for.
    public func startMilliseconds(by clock: EventClock = .default, after position: Int64 = 0) throws(EditLogError) -> Int64? {
        try read { db in try Replay.startTime(db, by: clock, after: position).flatMap(Timestamp.parse) }
    }

    /// The position a moment in epoch milliseconds names on `clock`, as `replay --as-of TIME` reads it (the last
    /// event at or before it; 0 when none is).
    public func position(atMilliseconds ms: Int64, by clock: EventClock = .default) throws(EditLogError) -> Int64 {
        try position(asOf: .time(Timestamp.format(milliseconds: ms)), by: clock)
    }

    /// The position a moment in epoch milliseconds names on `index`'s clock, as `position(atMilliseconds:by:)` finds it,
    /// from one block of events (`MomentIndex`); `index` is first brought up to the log's last event.
    public func position(atMilliseconds ms: Int64, in index: inout MomentIndex) throws(EditLogError) -> Int64 {
        try read { db in
            try index.update(db)
            return try index.position(db, time: Timestamp.format(milliseconds: ms))
        }
    }

    /// `index` brought up to the log's last event (its `start` is then `startMilliseconds`' over the whole log).
    public func catchUp(_ index: inout MomentIndex) throws(EditLogError) {
        try read { db in try index.update(db) }
    }

    /// The state after events 1...`position`, its scratch SQLite file at `file` (`Replay.readableState`), as a
    /// `HistoricState` (the caller closes it, which removes the file).
    public func historicState(at position: Int64, file: String) throws(EditLogError) -> HistoricState {
        let store = checkpointStore
        return try read { db in
            let queue = try Replay.readableState(db, through: position, file: file, checkpoints: store)
            do {
                guard let schema = try Replay.schema(db, atOrBefore: position) else {
                    throw EditLogError(.notFound, "the log has no schema at or before position \(position)")
                }
                return HistoricState(position: position, schema: schema, file: file, queue: queue)
            } catch {
                try? queue.close()
                Replay.removeScratch(file)
                throw error
            }
        }
    }
}
