import EditLogCore
import EditLogProjections
import Foundation
import Testing

@Suite struct SerialWorkerTests {
    final class Box<T>: @unchecked Sendable {
        private let lock = NSLock()
        private var value: T
        init(_ v: T) { value = v }
        func update(_ f: (inout T) -> Void) { lock.lock(); f(&value); lock.unlock() }
        var get: T { lock.lock(); defer { lock.unlock() }; return value }
    }
    struct Boom: Error, Equatable { var n: Int }

    @Test(arguments: [1, 3])
    func jobsRunInOrderAndDrainWaitsForThem(maxInFlight: Int) throws {
        let w = SerialWorker(maxInFlight: maxInFlight)
        let seen = Box<[Int]>([])
        for i in 0..<200 {
            try w.submit { if i % 17 == 0 { usleep(200) }; seen.update { $0.append(i) } }
            if i == 100 {
                try w.drain()
                #expect(seen.get == Array(0...100))
            }
        }
        try w.finish()
        #expect(seen.get == Array(0..<200))
    }

    @Test func atMostMaxInFlightJobsAreQueuedOrRunning() throws {
        let w = SerialWorker(maxInFlight: 2)
        let started = Box(0), submitted = Box(0)
        let gate = NSCondition()
        let open = Box(false)
        let thread = Thread {
            for _ in 0..<5 {
                try? w.submit {
                    started.update { $0 += 1 }
                    gate.lock(); while !open.get { gate.wait() }; gate.unlock()
                }
                submitted.update { $0 += 1 }
            }
        }
        thread.start()
        // One job runs (blocked on the gate), one is queued: the third submit waits.
        for _ in 0..<5_000 where started.get < 1 || submitted.get < 2 { usleep(1_000) }
        usleep(50_000)
        #expect(started.get == 1 && submitted.get == 2)
        gate.lock(); open.update { $0 = true }; gate.broadcast(); gate.unlock()
        while submitted.get < 5 { usleep(1_000) }
        try w.finish()
        #expect(started.get == 5)
    }

    @Test func theFirstFailureDropsTheRestAndIsThrownEverywhere() throws {
        let w = SerialWorker(maxInFlight: 4)
        let ran = Box<[Int]>([])
        for i in 0..<3 { try? w.submit { ran.update { $0.append(i) }; if i == 1 { throw Boom(n: i) } } }
        #expect(throws: Boom(n: 1)) { try w.drain() }
        #expect(throws: Boom(n: 1)) { try w.submit { ran.update { $0.append(99) } } }
        #expect(throws: Boom(n: 1)) { try w.finish() }
        #expect(ran.get == [0, 1])
    }

    @Test func cancelDropsWhatIsQueuedAndEndsTheThread() throws {
        let w = SerialWorker(maxInFlight: 8)
        let ran = Box(0)
        for i in 0..<8 { try w.submit { usleep(i == 0 ? 50_000 : 2_000); ran.update { $0 += 1 } } }
        w.cancel()
        let after = ran.get
        #expect(after < 8)
        usleep(20_000)
        #expect(ran.get == after, "no job runs after cancel returned")
    }
}
