import EditLogCore
import EditLogStore
import Foundation
import Synchronization

/// Readers of a log for many threads at once (a server's requests): GRDB's `DatabasePool` of at most `count`
/// read-only WAL connections. Each `read` gets a facade of its own over the pool (a facade is one thread's at a time;
/// the connections are the pool's), so a read never waits for a write, and waits for a reader only while `count` of
/// them read.
public final class EditLogReaders: Sendable {
    let store: EventStore
    /// The newest schema a read of the pool has put in force, with its event's position: the next facade starts
    /// from it (a facade checks for a newer one on each read anyway, `EditLog.refreshSchema`).
    private let newest: Mutex<(schema: ServiceSchema, position: Int64)>

    /// Opens the log at `path` with at most `count` reader connections.
    public init(at path: String, count: Int, clock: any LogClock = SystemClock()) throws(EditLogError) {
        let store = try EventStore.open(at: path, readers: max(1, count), clock: clock)
        do {
            let log = try EditLog.facade(over: store)
            self.store = store
            newest = Mutex((log.schema, log.schemaPosition))
        } catch {
            try? store.close()
            throw error
        }
    }

    public var path: String { store.path }

    /// Runs `body` with a facade of its own over the pool: its reads run on the calling thread, on a reader connection.
    public func read<T>(_ body: (EditLog) throws -> T) throws -> T {
        let (schema, position) = newest.withLock { $0 }
        let log = EditLog(store: store, schema: schema, schemaPosition: position)
        defer {
            if log.schemaPosition > position {
                newest.withLock { if log.schemaPosition > $0.position { $0 = (log.schema, log.schemaPosition) } }
            }
        }
        return try body(log)
    }

    /// Closes every connection of the pool; no read may run meanwhile or after.
    public func close() { try? store.close() }
}
