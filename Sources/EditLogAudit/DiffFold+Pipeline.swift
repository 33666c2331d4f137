import EditLogCore
import EditLogMerge
import Foundation

/// A `DiffFold` fed on a second thread: the thread that steps the events (SQLite, the payload's JSON,
/// the `RecordedEvent`) hands them over in batches, and the fold applies them meanwhile. The two halves
/// cost about the same, so on two cores a diff takes about the time of the larger one. The events arrive in
/// the order they were added, so the result is the fold's own, event for event.
final class DiffFoldPipeline: @unchecked Sendable {
    static let batchSize = 512
    /// Batches handed over and not yet applied, at most (the reader waits beyond: memory stays bounded).
    static let maxPending = 4
    /// `Audit.diff` folds a window of at most this many positions on its own thread.
    static let inlineWindow: Int64 = 4_096

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var pending: [[(RecordedEvent, MergeDecision?)]] = []
    private var closed = false
    private var done = false
    private var failure: (any Error)?
    /// The fold once the consumer is done (it owns the fold until then).
    private var result: DiffFold?
    // The reader's batch (reader thread only).
    private var batch: [(RecordedEvent, MergeDecision?)] = []

    init(_ fold: DiffFold) {
        batch.reserveCapacity(Self.batchSize)
        Thread.detachNewThread { [self] in consume(fold) }
    }

    /// Adds one event (with this log's decision about it, if any); throws the fold's error if an earlier event failed
    /// (the reader then stops).
    func add(_ e: RecordedEvent, decision: MergeDecision?) throws {
        batch.append((e, decision))
        if batch.count >= Self.batchSize { try handOver() }
    }

    /// Hands the last batch over, waits for the fold to apply everything, and returns it (or its error).
    /// Must be called once, also when the reader failed (it closes the consumer).
    func finish() throws -> DiffFold {
        if !batch.isEmpty { try? handOver() }
        condition.lock()
        closed = true
        condition.broadcast()
        while !done { condition.wait() }
        defer { condition.unlock() }
        if let failure { throw failure }
        return result!
    }

    private func handOver() throws {
        let full = batch
        batch = []
        batch.reserveCapacity(Self.batchSize)
        condition.lock()
        defer { condition.unlock() }
        while pending.count >= Self.maxPending && failure == nil { condition.wait() }
        if let failure { throw failure }
        pending.append(full)
        condition.broadcast()
    }

    private func consume(_ initial: DiffFold) {
        var f = initial
        while true {
            condition.lock()
            while pending.isEmpty && !closed { condition.wait() }
            if pending.isEmpty {  // closed and drained
                result = f
                done = true
                condition.broadcast()
                condition.unlock()
                return
            }
            let next = pending.removeFirst()
            let failed = failure != nil
            condition.broadcast()
            condition.unlock()
            if failed { continue }
            do {
                for (e, d) in next { try f.apply(e, decision: d) }
            } catch {
                condition.lock()
                failure = error
                condition.broadcast()
                condition.unlock()
            }
        }
    }
}
