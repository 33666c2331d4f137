import EditLog
import EditLogBundle
import Foundation
import Testing

/// `HandOff`: what one thread puts, another takes, in order, then the producer's failure; a consumer that stops
/// early releases a producer waiting on it.
@Suite struct HandOffTests {
    struct Boom: Error, Equatable { let after: Int }

    /// A producer on its own thread; `join` waits for it to end.
    final class Producer: @unchecked Sendable {
        let done = NSCondition()
        var finished = false
        var cancelled = false
        var put = 0  // guarded by `done`

        init(_ handOff: HandOff<Int>, count: Int?, failure: (any Error)?) {
            Thread.detachNewThread { [self] in
                var i = 0
                do {
                    while count.map({ i < $0 }) ?? true {
                        try handOff.put(i, weight: i % 3)
                        i += 1
                        done.lock(); put = i; done.unlock()
                    }
                    handOff.close(failure: failure)
                } catch {
                    handOff.close()
                    done.lock(); cancelled = true; done.unlock()
                }
                done.lock(); finished = true; done.broadcast(); done.unlock()
            }
        }

        func join() {
            done.lock()
            while !finished { done.wait() }
            done.unlock()
        }
    }

    @Test(arguments: [(1, 1, 1), (7, 1 << 20, 2), (256, 5, 4), (1_000, 1 << 20, 1)])
    func everyItemArrivesInOrderThenTheFailure(batchSize: Int, batchWeight: Int, maxBatches: Int) {
        let h = HandOff<Int>(batchSize: batchSize, batchWeight: batchWeight, maxBatches: maxBatches)
        let p = Producer(h, count: 10_000, failure: Boom(after: 10_000))
        var got: [Int] = []
        #expect(throws: Boom(after: 10_000)) { while let i = try h.take() { got.append(i) } }
        #expect(got == Array(0..<10_000))
        p.join()
    }

    @Test func aCleanEndIsNilAndAnEmptyStreamEndsAtOnce() throws {
        let h = HandOff<Int>(batchSize: 3, maxBatches: 2)
        let p = Producer(h, count: 10, failure: nil)
        var got: [Int] = []
        while let i = try h.take() { got.append(i) }
        #expect(got == Array(0..<10))
        #expect(try h.take() == nil)
        p.join()
        let empty = HandOff<Int>()
        let q = Producer(empty, count: 0, failure: nil)
        #expect(try empty.take() == nil)
        q.join()
    }

    @Test func theProducerWaitsWhileMaxBatchesArePending() throws {
        // One item per batch, two batches pending at most: without a take, the third put cannot return.
        let h = HandOff<Int>(batchSize: 1, maxBatches: 2)
        let p = Producer(h, count: 100, failure: nil)
        Thread.sleep(forTimeInterval: 0.05)  // gives the producer time to run ahead, if it could
        p.done.lock(); let ahead = p.put; p.done.unlock()
        #expect(ahead <= 2)
        var got: [Int] = []
        while let i = try h.take() { got.append(i) }
        #expect(got == Array(0..<100))
        p.join()
    }

    /// An item that records which thread released it.
    final class Tracked: @unchecked Sendable {
        let index: Int
        let log: ReleaseLog
        init(_ index: Int, _ log: ReleaseLog) { self.index = index; self.log = log }
        deinit { log.record(index) }
    }

    final class ReleaseLog: @unchecked Sendable {
        private let lock = NSLock()
        private var onProducer: Set<Int> = []
        var producer: pthread_t?
        func record(_ i: Int) {
            lock.lock(); defer { lock.unlock() }
            if let producer, pthread_equal(producer, pthread_self()) != 0 { onProducer.insert(i) }
        }
        var releasedOnProducer: Set<Int> { lock.lock(); defer { lock.unlock() }; return onProducer }
    }

    @Test func theItemsGivenBackAreReleasedOnTheProducersThread() throws {
        // One item per batch, one batch pending: an item given back is with the producer before its second next
        // hand-over can proceed, so every item but the last few is released there.
        let h = HandOff<Tracked>(batchSize: 1, maxBatches: 1)
        let log = ReleaseLog()
        let started = DispatchSemaphore(value: 0)
        let ended = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            log.producer = pthread_self()
            started.signal()
            for i in 0..<20 { try? h.put(Tracked(i, log)) }
            h.close()
            ended.signal()
        }
        started.wait()
        var got: [Int] = []
        while let item = try h.take() {
            got.append(item.index)
            h.giveBack(consume item)
        }
        ended.wait()
        #expect(got == Array(0..<20))
        #expect(Set(0..<18).isSubset(of: log.releasedOnProducer), "released on the producer's thread: \(log.releasedOnProducer.sorted())")
    }

    @Test func cancellingReleasesAProducerThatNeverEnds() throws {
        let h = HandOff<Int>(batchSize: 4, maxBatches: 1)
        let p = Producer(h, count: nil, failure: nil)
        #expect(try h.take() == 0)
        #expect(try h.take() == 1)
        h.cancel()
        h.waitClosed()
        p.join()
        p.done.lock(); let cancelled = p.cancelled; p.done.unlock()
        #expect(cancelled)
    }
}
