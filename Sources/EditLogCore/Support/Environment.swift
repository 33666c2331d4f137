import Foundation

/// Injected time: every recorded time comes from here.
public protocol LogClock: Sendable {
    func now() -> Int64  // epoch milliseconds
}

public struct SystemClock: LogClock {
    public init() {}
    public func now() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
}

/// A clock for tests: starts at `start` and advances `step` ms on every reading.
/// `@unchecked Sendable` is sound: the only mutable state, `t`, is read and written under `lock`.
public final class StepClock: LogClock, @unchecked Sendable {
    private let lock = NSLock()
    private var t: Int64
    private let step: Int64
    public init(start: Int64 = 1_780_000_000_000, step: Int64 = 1) { t = start; self.step = step }
    public func now() -> Int64 { lock.lock(); defer { lock.unlock() }; t += step; return t }
}

/// Injected ids: event ids and generated session ids come from here.
public protocol IDGenerator: Sendable {
    func next() -> UUID
}

/// RFC 9562 UUID version 7: 48-bit Unix milliseconds, then random bits. Time-ordered, so a unique
/// index on event ids appends at its right edge. A counter in `rand_a` keeps ids monotonic within a millisecond.
///
/// `@unchecked Sendable` is sound: every mutable stored property (`rng`, `lastMs`, `counter`) is read and
/// written only under `lock`; `clock` is itself `Sendable`.
public final class UUIDv7Generator: IDGenerator, @unchecked Sendable {
    private let lock = NSLock()
    private let clock: any LogClock
    private var source: RandomSource
    private var lastMs: Int64 = 0
    private var counter: UInt16 = 0

    public init(clock: any LogClock = SystemClock(), seed: UInt64? = nil) {
        self.clock = clock
        if let seed { source = .seeded(SplitMix64(seed: seed)) } else { source = .system }
    }

    /// Never issue an id at or below `id`: a reopened log goes on after its newest id even when the clock
    /// now reads earlier than the time that id carries.
    public func advance(past id: UUID) {
        let b = id.uuid
        let ms = [b.0, b.1, b.2, b.3, b.4, b.5].reduce(Int64(0)) { $0 << 8 | Int64($1) }
        let c = UInt16(b.6 & 0x0F) << 8 | UInt16(b.7)
        lock.lock(); defer { lock.unlock() }
        if ms > lastMs || (ms == lastMs && c > counter) { lastMs = ms; counter = c }
    }

    public func next() -> UUID {
        lock.lock(); defer { lock.unlock() }
        var ms = clock.now()
        if ms <= lastMs {
            ms = lastMs
            counter &+= 1
            if counter > 0x0FFF { ms += 1; counter = 0 }
        } else {
            // What `UInt16.random(in: 0...0x7FF, using:)` draws (one word, its low 16 bits' top 11), without the
            // generic, unspecialized path through an existential generator: seeded runs keep their ids.
            counter = UInt16(truncatingIfNeeded: source.next()) >> 5
        }
        lastMs = ms
        let r = source.next()
        let m = UInt64(bitPattern: ms)
        let c = counter
        return UUID(uuid: (UInt8(truncatingIfNeeded: m >> 40), UInt8(truncatingIfNeeded: m >> 32), UInt8(truncatingIfNeeded: m >> 24),
                           UInt8(truncatingIfNeeded: m >> 16), UInt8(truncatingIfNeeded: m >> 8), UInt8(truncatingIfNeeded: m),
                           0x70 | UInt8(truncatingIfNeeded: c >> 8), UInt8(truncatingIfNeeded: c),
                           0x80 | (UInt8(truncatingIfNeeded: r >> 56) & 0x3F), UInt8(truncatingIfNeeded: r >> 48),
                           UInt8(truncatingIfNeeded: r >> 40), UInt8(truncatingIfNeeded: r >> 32), UInt8(truncatingIfNeeded: r >> 24),
                           UInt8(truncatingIfNeeded: r >> 16), UInt8(truncatingIfNeeded: r >> 8), UInt8(truncatingIfNeeded: r)))
    }

    /// The generator's random words: a seeded PRNG or the system's, called directly (not through an existential).
    private enum RandomSource {
        case seeded(SplitMix64)
        case system

        mutating func next() -> UInt64 {
            switch self {
            case .seeded(var g): let v = g.next(); self = .seeded(g); return v
            case .system: var g = SystemRandomNumberGenerator(); return g.next()
            }
        }
    }
}

/// A small deterministic PRNG for seeded runs (tests, benchmarks, fixtures).
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
