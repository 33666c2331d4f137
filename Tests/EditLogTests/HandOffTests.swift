import EditLog
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
