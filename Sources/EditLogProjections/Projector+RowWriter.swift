import EditLogCore
import EditLogStore
import Foundation
import GRDB
import GRDBSQLite

/// Writes a projector's folded rows on a thread of its own while the projector folds the next events: the two
/// halves of a replay (decoding and folding events; SQLite's inserts) run on two cores. Only for a replay whose
/// events come from another connection than the projection tables (`Projector.writingAside`).
///
/// Who may use the target connection: between `submit` and the end of the job, only this writer's thread; the
/// projector's thread only after `drain()` (`Projector.exclusive`). The writer prepares its own statements on the
/// connection and finalizes them at the end, so GRDB's statement cache is never touched from its thread.
final class RowWriter: @unchecked Sendable {
    private let worker = SerialWorker(maxInFlight: 1)
    private let connection: OpaquePointer
    // The writer thread's own state (read and written only by jobs, then by `close` after the thread ended).
    private var statements: [String: OpaquePointer] = [:]
    /// The row statements among them, by key (`RowStatement`: hashed in a few words, not the whole SQL text).
    private var rowStatements = StatementMemo()
    private var layers: [Int: LayerColumns] = [:]
    /// Where the rows' texts and blobs are bound from, on the writer's thread.
    private let arena = BindArena()

    init(connection: OpaquePointer) { self.connection = connection }

    /// Hands a batch over: `statements` first (in event order), then the feature rows, then the session rows (each
    /// sorted on the writer's thread as `writePending` sorts them).
    /// Waits while the previous batch is still being written.
    func submit(statements batch: [PendingStatement], features unsorted: [String: PendingFeature], sessions unsortedSessions: [String: PendingSession],
                layers given: [Int: LayerColumns]) throws {
        if batch.isEmpty && unsorted.isEmpty && unsortedSessions.isEmpty { return }
        try worker.submit { [self] in
            let features = Projector.sorted(unsorted), sessions = Projector.sorted(unsortedSessions)
            for (id, c) in given where layers[id]?.names != c.names {
                layers[id] = c
                // Another layout (a schema that added fields): the layer's statements by key are the old layout's.
                rowStatements.forget(layer: id)
            }
            for s in batch {
                try RawBindings.execute(try statement(s.sql), on: connection, sql: s.sql, arena: arena) { b in
                    for (i, v) in s.arguments.enumerated() { b.bind(Int32(i + 1), v) }
                }
            }
            for f in features {
                try Projector.write(f, columns: &layers[f.layer]!, connection: connection, arena: arena, statement: rowStatement)
            }
            for (id, s) in sessions {
                try Projector.write(id, s, connection: connection, arena: arena, statement: rowStatement)
            }
        }
    }

    /// Waits until every batch handed over is written; throws the first write's failure.
    func drain() throws { try worker.drain() }

    /// Writes what is handed over, ends the thread and finalizes the statements.
    func finish() throws {
        defer { close() }
        try worker.finish()
    }

    /// Drops what is not yet written (the caller's transaction is rolling back), ends the thread, finalizes.
    func cancel() {
        worker.cancel()
        close()
    }

    private func close() {
        for s in statements.values { sqlite3_finalize(s) }
        statements.removeAll()
        rowStatements = StatementMemo()  // the same statements, by key: finalized above
    }

    private func rowStatement(_ key: RowStatement, _ sql: String) throws -> OpaquePointer {
        try rowStatements.statement(key) { try statement(sql) }
    }

    private func statement(_ sql: String) throws -> OpaquePointer {
        if let s = statements[sql] { return s }
        var s: OpaquePointer?
        let rc = sqlite3_prepare_v3(connection, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &s, nil)
        guard rc == SQLITE_OK, let s else { throw RawBindings.lastError(on: connection, sql: sql) }
        statements[sql] = s
        return s
    }
}

extension Projector {
    /// Rows pending before they go to the row writer. Smaller than without one: two batches are in memory at once
    /// (one folding, one being written), and smaller batches keep both threads busy (the sizes tried with
    /// `editlog-bench rebuild`: `tools/BENCH-RESULTS.md`).
    public static let asidePendingLimit = 2_000
    /// The target's page cache while the row writer writes, in KiB: the rows' random index inserts (GlobalIDs)
    /// spilled and re-read pages with the log's 16 MiB.
    public static let asideCacheKiB = 32_768

    /// Runs `body` (a replay: `apply` for each event of `source`, then `flush`) with the rows written into `target`
    /// by a `RowWriter` on a second thread. When `source` and `target` are one connection, `body` simply runs (the
    /// events' reads would share the connection with the writes). Everything handed to the writer is written when
    /// this returns; if `body` or a write fails, nothing more is written and the error is thrown (the caller's
    /// transaction rolls back). The tables hold the same rows as without the writer.
    ///
    /// Unless the caller set its own, the pending rows are handed over every `asidePendingLimit` rows, and the
    /// target's page cache is raised to `asideCacheKiB` for the duration (then set back).
    public func writingAside<T>(to target: Database, readingFrom source: Database, _ body: () throws -> T) throws -> T {
        guard writer == nil, let connection = target.sqliteConnection, connection != source.sqliteConnection else { return try body() }
        if pendingLimit == Self.defaultPendingLimit { pendingLimit = Self.asidePendingLimit }
        let cache = try Int.fetchOne(target, sql: "PRAGMA cache_size") ?? 0
        let pageSize = try Int.fetchOne(target, sql: "PRAGMA page_size") ?? 4096
        if (cache < 0 ? -cache : cache * pageSize / 1024) < Self.asideCacheKiB {
            try target.execute(sql: "PRAGMA cache_size = -\(Self.asideCacheKiB)")
        }
        defer { try? target.execute(sql: "PRAGMA cache_size = \(cache)") }
        let w = RowWriter(connection: connection)
        writer = w
        do {
            let result = try body()
            try writePending(target)
            writer = nil
            try w.finish()
            return result
        } catch {
            writer = nil
            w.cancel()
            throw error
        }
    }
}
