import Foundation

/// Items handed from one thread (the producer) to another (the consumer), in order, in batches, with a bound on
/// what is in flight: the producer waits while `maxBatches` batches are pending, so memory stays flat however many
/// items pass. A batch is handed over when it holds `batchSize` items or `batchWeight` of weight (bytes, say).
///
/// The producer ends with `close(failure:)`; the consumer sees every item put before it, then the failure (or the
/// end). A consumer that stops early calls `cancel()`: the producer's next `put` throws `Cancelled`, and
/// `waitClosed()` returns once the producer has closed (so no thread outlives the work it was part of).
///
/// `take()` moves each item out of its batch (no copy, no reference counting); a consumer that hands it back when
/// done (`giveBack`) has it freed by the producer's next hand-over, on the thread that allocated it (glibc frees
/// another thread's allocation under that arena's lock, which the consumer, the busier thread, would otherwise pay
/// for every item).
public final class HandOff<Item>: @unchecked Sendable {
    /// Thrown by `put` once the consumer has cancelled.
    public struct Cancelled: Error, CustomStringConvertible {
        public var description: String { "the consumer stopped" }
    }

    public let batchSize: Int
    public let batchWeight: Int
    public let maxBatches: Int

    // Internal for `@inlinable` (the hot methods are specialized where the item type is known: unspecialized, each
    // call looked up the generic metadata of its arrays at run time). Nothing outside this file touches them.
    @usableFromInline let condition = NSCondition()
    // Guarded by `condition`.
    @usableFromInline var pending: [[Item?]] = []
    @usableFromInline var closed = false
    @usableFromInline var cancelled = false
    @usableFromInline var failure: (any Error)?
    /// Items the consumer gave back, for the producer to release.
    @usableFromInline var spent: [[Item]] = []
    // The producer's batch (producer thread only).
    @usableFromInline var batch: [Item?] = []
    @usableFromInline var weight = 0
    // The consumer's batch (consumer thread only).
    @usableFromInline var taken: [Item?] = []
    @usableFromInline var next = 0
    @usableFromInline var givenBack: [Item] = []

    public init(batchSize: Int = 256, batchWeight: Int = 1 << 20, maxBatches: Int = 4) {
        precondition(batchSize > 0 && batchWeight > 0 && maxBatches > 0)
        self.batchSize = batchSize
        self.batchWeight = batchWeight
        self.maxBatches = maxBatches
        batch.reserveCapacity(batchSize)
    }

    // MARK: Producer

    /// Adds one item; hands the batch over when it is full (waiting while `maxBatches` are pending).
    @inlinable
    public func put(_ item: Item, weight w: Int = 0) throws(Cancelled) {
        batch.append(item)
        weight += w
        if batch.count >= batchSize || weight >= batchWeight { try handOver() }
    }

    /// Ends the stream: the last batch is handed over, and the consumer sees `failure` (if any) after it.
    public func close(failure: (any Error)? = nil) {
        let last = batch
        batch = []
        condition.lock()
        if !last.isEmpty && !cancelled { pending.append(last) }
        self.failure = failure
        closed = true
        let release = spent
        spent = []
        condition.broadcast()
        condition.unlock()
        // What the consumer gave back so far; after this, it frees what it gives back itself.
        withExtendedLifetime(release) {}
    }

    @usableFromInline
    func handOver() throws(Cancelled) {
        let full = batch
        batch = []
        batch.reserveCapacity(batchSize)
        weight = 0
        condition.lock()
        while pending.count >= maxBatches && !cancelled { condition.wait() }
        let release = spent
        spent = []
        if cancelled { condition.unlock(); throw Cancelled() }
        pending.append(full)
        condition.broadcast()
        condition.unlock()
        // Outside the lock: the consumer need not wait while the items are freed.
        withExtendedLifetime(release) {}
    }

    // MARK: Consumer

    /// The next item in the order put; nil at the end. Throws the producer's failure once every item before it was taken.
    @inlinable
    public func take() throws -> Item? {
        if next < taken.count {
            defer { next += 1 }
            return taken[next].take()
        }
        return try takeBatch()
    }

    /// `take()` once the consumer's batch is used up: gives back what was given back, waits for the next batch.
    @usableFromInline
    func takeBatch() throws -> Item? {
        taken = []
        next = 0
        condition.lock()
        defer { condition.unlock() }
        // Back to the producer, unless it has closed (then nothing would release them before the end). Moved, not
        // copied: a copy kept here while this thread waits below would make this thread's release the last.
        if !givenBack.isEmpty {
            if !closed && !cancelled { spent.append(givenBack) }
            givenBack = []
        }
        while pending.isEmpty && !closed { condition.wait() }
        guard !pending.isEmpty else {
            if let failure { throw failure }
            return nil
        }
        taken = pending.removeFirst()
        condition.broadcast()
        next = 1
        return taken[0].take()
    }

    /// Gives an item `take()` returned back once the consumer is done with it: the producer frees it (see the type's
    /// note). Optional: an item not given back is freed where its last reference goes.
    @inlinable
    public func giveBack(_ item: consuming Item) {
        givenBack.append(item)
    }

    /// Stops the producer: its next `put` throws `Cancelled`, and what is pending is dropped.
    public func cancel() {
        condition.lock()
        defer { condition.unlock() }
        cancelled = true
        pending.removeAll()
        condition.broadcast()
    }

    /// Returns once the producer has closed.
    public func waitClosed() {
        condition.lock()
        defer { condition.unlock() }
        while !closed { condition.wait() }
    }
}
