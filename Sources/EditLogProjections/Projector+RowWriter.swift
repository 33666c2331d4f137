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
    private var layers: [Int: LayerColumns] = [:]

    init(connection: OpaquePointer) { self.connection = connection }

    /// Hands a batch over: `statements` first (in event order), then the feature rows, then the session rows.
    /// Waits while the previous batch is still being written.
    func submit(statements batch: [PendingStatement], features: [PendingFeature], sessions: [(key: String, value: PendingSession)],
                layers given: [Int: LayerColumns]) throws {
        if batch.isEmpty && features.isEmpty && sessions.isEmpty { return }
        try worker.submit { [self] in
            for (id, c) in given where layers[id]?.names != c.names { layers[id] = c }
            for s in batch {
                try RawBindings.execute(try statement(s.sql), on: connection, sql: s.sql) { b in
                    for (i, v) in s.arguments.enumerated() { b.bind(Int32(i + 1), v) }
                }
            }
            for f in features {
                try Projector.write(f, columns: &layers[f.layer]!, connection: connection, statement: statement)
            }
            for (id, s) in sessions {
                try Projector.write(id, s, connection: connection, statement: statement)
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
    }

    private func statement(_ sql: String) throws -> OpaquePointer {
        if let s = statements[sql] { return s }
        var s: OpaquePointer?
        let rc = sqlite3_prepare_v3(connection, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &s, nil)
        guard rc == SQLITE_OK, let s else {
            throw DatabaseError(resultCode: ResultCode(rawValue: sqlite3_extended_errcode(connection)),
                                message: String(cString: sqlite3_errmsg(connection)), sql: sql)
        }
        statements[sql] = s
        return s
    }
}

extension Projector {
    /// Runs `body` (a replay: `apply` for each event of `source`, then `flush`) with the rows written into `target`
    /// by a `RowWriter` on a second thread. When `source` and `target` are one connection, `body` simply runs (the
    /// events' reads would share the connection with the writes). Everything handed to the writer is written when
    /// this returns; if `body` or a write fails, nothing more is written and the error is thrown (the caller's
    /// transaction rolls back). The tables hold the same rows as without the writer.
    public func writingAside<T>(to target: Database, readingFrom source: Database, _ body: () throws -> T) throws -> T {
        guard writer == nil, let connection = target.sqliteConnection, connection != source.sqliteConnection else { return try body() }
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
