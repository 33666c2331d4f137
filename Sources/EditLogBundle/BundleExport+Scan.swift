import EditLogCore
import EditLogStore
import Foundation
import GRDB

/// The export's first pass: what the manifest needs from the range (its event count, first and last hash, the blobs
/// the events reference), found on a thread and connection of its own while the export's thread writes the events.
///
/// The manifest is the bundle's first entry, but only its first gzip member depends on it: the writer leaves that
/// member for last (`BundleWriter`'s deferred head). Run before the events, this pass kept both deflate threads
/// idle for its whole time (one thread busy, most of it SQLite reading every payload); alongside, the export is
/// faster. A second connection sees the same events: the range ends at a position that exists, and events and
/// blobs are never updated or deleted.
final class ExportScan: @unchecked Sendable {
    struct Result {
        var count: Int64 = 0
        var firstHash: [UInt8]?
        var lastHash: [UInt8]?
        /// SHA-256s (hex) the events reference, in the order first referenced.
        var blobs: [String] = []
    }

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var outcome: Swift.Result<Result, EditLogError>?

    /// Starts the pass on a thread of its own, with a second read-only connection to `store`.
    init(store: EventStore, from: Int64, until: Int64, layers: Set<Int>?) {
        let thread = Thread { [self] in
            let outcome: Swift.Result<Result, EditLogError>
            do {
                outcome = .success(try store.withSecondReader { db in try Self.run(db, from: from, until: until, layers: layers) })
            } catch {
                outcome = .failure(EditLogError.wrapping(error, at: store.path))
            }
            condition.lock()
            self.outcome = outcome
            condition.broadcast()
            condition.unlock()
        }
        thread.stackSize = 8 << 20  // decodes events' JSON
        thread.start()
    }

    /// The pass's result, waiting for it with `wait` (else nil while it runs); throws what the pass threw.
    func result(wait: Bool) throws(EditLogError) -> Result? {
        condition.lock()
        defer { condition.unlock() }
        while wait && outcome == nil { condition.wait() }
        return try outcome?.get()
    }

    /// Waits for the pass to end, whatever it found (before the export returns early on an error of its own).
    func join() {
        _ = try? result(wait: true)
    }

    /// The pass itself, on `db`'s read transaction.
    static func run(_ db: Database, from: Int64, until: Int64, layers: Set<Int>?) throws -> Result {
        var result = Result()
        var seen = Set<String>()
        let referencing = [EventType.attachmentStaged.rawValue, EventType.sessionCommitted.rawValue]
        let range = "FROM events WHERE position > ? AND position <= ?"
        if layers == nil {
            // Every event of the range: positions are gap-free, so the count is the range's length (the writing pass
            // checks it against the lines it writes) and only the ends' hashes are read; SQLite itself passes over the
            // events that cannot reference a blob (only a payload that names a "sha256" can), cheaper than stepping
            // every event here.
            result.count = until - from
            if result.count > 0 {
                func hash(at p: Int64) throws -> [UInt8] {
                    guard let h = try Data.fetchOne(db, sql: "SELECT hash FROM events WHERE position = ?", arguments: [p]) else {
                        throw EditLogError(.corrupt, "no event (or a NULL hash) at a position within the log", at: "position \(p)")
                    }
                    return [UInt8](h)
                }
                result.firstHash = try hash(at: from + 1)
                result.lastHash = try hash(at: until)
            }
            try EventReading.step(db, sql: "SELECT \(EventReading.columns) \(range) AND type IN (?, ?) AND instr(payload, '\"sha256\"') > 0 ORDER BY position",
                                  arguments: [from, until, referencing[0], referencing[1]]) { row in
                for sha in try EventReading.decode(row).blobReferences where seen.insert(sha).inserted { result.blobs.append(sha) }
                return true
            }
        } else {
            try EventReading.step(db, sql: "SELECT \(EventReading.columns) \(range) ORDER BY position", arguments: [from, until]) { row in
                let text: (EventHash.Column) -> String = { c in row.bytes(c).map { String(decoding: $0, as: UTF8.self) } ?? "" }
                guard BundleExport.keeps(stream: text(.stream), layers: layers) else { return true }
                guard let hash = row.bytes(.hash).map({ [UInt8]($0) }) else {
                    throw EditLogError(.corrupt, "hash is NULL", at: "position \(row.integer(.position))")
                }
                result.count += 1
                if result.firstHash == nil { result.firstHash = hash }
                result.lastHash = hash
                if referencing.contains(text(.type)), let payload = row.bytes(.payload), BundleExport.mentionsSHA256(payload) {
                    for sha in try EventReading.decode(row).blobReferences where seen.insert(sha).inserted { result.blobs.append(sha) }
                }
                return true
            }
        }
        return result
    }
}
