import Foundation

/// Bytes bound to a statement without SQLite copying them (`SQLITE_STATIC`): each text or blob is copied once into
/// this reusable buffer, which stays where it is until the statement has stepped and is reset; then `reset()` makes
/// the room free again. With `SQLITE_TRANSIENT` SQLite allocated and copied every value itself (a malloc, a memcpy
/// and its memory-statistics mutex per bound text), a visible part of every event insert.
///
/// Owned by one thread (an `Appender` for its transaction, a `Projector`, a rebuild's row writer). A value larger than the room left gets an allocation of its
/// own, freed at `reset()`, so no address handed out ever moves.
public final class BindArena {
    private let chunk: UnsafeMutableRawPointer
    private let capacity: Int
    private var used = 0
    private var oversize: [UnsafeMutableRawPointer] = []

    public init(capacity: Int = 64 << 10) {
        self.capacity = capacity
        chunk = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit {
        reset()
        chunk.deallocate()
    }

    /// A copy of `bytes` that stays valid until `reset()`.
    public func copy(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer {
        let n = bytes.count
        let p: UnsafeMutableRawPointer
        if used + n <= capacity {
            p = chunk + used
            used += n
        } else {
            p = .allocate(byteCount: max(n, 1), alignment: 16)
            oversize.append(p)
        }
        if n > 0, let base = bytes.baseAddress { p.copyMemory(from: base, byteCount: n) }
        return UnsafeRawPointer(p)
    }

    /// Frees every copy: call once the statement they were bound to is reset.
    public func reset() {
        used = 0
        for p in oversize { p.deallocate() }
        oversize.removeAll(keepingCapacity: true)
    }
}
