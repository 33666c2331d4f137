import Foundation

/// One background thread that runs jobs in the order they were submitted, so a producer can go on with the next
/// piece of work while the last one is carried out (a rebuild decodes and folds events while the rows it folded
/// before are written).
///
/// At most `maxInFlight` jobs are queued or running: `submit` waits for room, so memory stays bounded. The first
/// job that throws stops the worker: the jobs after it are dropped, and `submit`, `drain` and `finish` throw its
/// error. A job owns what it captured until it has run; the submitter must not touch that state until `drain()`
/// (or `finish()`) has returned.
public final class SerialWorker: @unchecked Sendable {
    public let maxInFlight: Int

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var jobs: [() throws -> Void] = []
    private var running = false
    private var stopping = false
    private var exited = false
    private var failure: (any Error)?

    /// Starts the thread. `stackSize` is the thread's stack (a job may parse deep JSON).
    public init(maxInFlight: Int = 1, stackSize: Int = 8 << 20) {
        precondition(maxInFlight > 0)
        self.maxInFlight = maxInFlight
        let thread = Thread { [self] in run() }
        thread.stackSize = stackSize
        thread.start()
    }

    /// Queues `job`, waiting while `maxInFlight` jobs are queued or running. Throws the error of a job that failed.
    public func submit(_ job: @escaping () throws -> Void) throws {
        condition.lock()
        defer { condition.unlock() }
        while failure == nil && !stopping && jobs.count + (running ? 1 : 0) >= maxInFlight { condition.wait() }
        if let failure { throw failure }
        precondition(!stopping, "SerialWorker: submit after finish or cancel")
        jobs.append(job)
        condition.broadcast()
    }

    /// Waits until every submitted job has run; throws the error of a job that failed.
    public func drain() throws {
        condition.lock()
        defer { condition.unlock() }
        while failure == nil && (running || !jobs.isEmpty) { condition.wait() }
        if let failure { throw failure }
    }

    /// Runs what is queued, then ends the thread and waits for it; throws the error of a job that failed.
    public func finish() throws {
        condition.lock()
        defer { condition.unlock() }
        stopping = true
        condition.broadcast()
        while !exited { condition.wait() }
        if let failure { throw failure }
    }

    /// Drops what is queued, lets a running job end, and waits for the thread to end. Never throws: for the
    /// path where the submitter itself failed.
    public func cancel() {
        condition.lock()
        defer { condition.unlock() }
        jobs.removeAll()
        stopping = true
        condition.broadcast()
        while !exited { condition.wait() }
    }

    private func run() {
        condition.lock()
        while true {
            while jobs.isEmpty && !stopping { condition.wait() }
            if jobs.isEmpty || failure != nil { break }
            let job = jobs.removeFirst()
            running = true
            condition.unlock()
            var error: (any Error)?
            do { try job() } catch let e { error = e }
            condition.lock()
            running = false
            if let error {
                failure = error
                jobs.removeAll()
            }
            condition.broadcast()
        }
        exited = true
        condition.broadcast()
        condition.unlock()
    }
}
