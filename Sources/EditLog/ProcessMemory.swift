import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// How the process's allocator is set up, once, by the `editlog` executable (and by `editlog-bench`, which
/// measures what `editlog` does).
public enum ProcessMemory {
    /// The allocation size from which glibc's malloc maps memory of its own, unmapped again when freed.
    public static let mappedThreshold = 128 << 10

    /// Fixes glibc's mmap threshold at `mappedThreshold` (its initial value). glibc otherwise raises the threshold
    /// to the size of each mapped block freed, up to 32 MiB: after the first freed 1 MiB gzip block or 4 MiB tar chunk,
    /// every later one came from the heap, and the holes they left between longer-lived allocations stayed resident
    /// (it lowers the bundle commands' peak RSS: `tools/BENCH-RESULTS.md`).
    /// Returns false where there is no glibc `mallopt` (nothing changes then).
    @discardableResult
    public static func keepLargeAllocationsMapped() -> Bool {
        #if os(Linux)
        // glibc's mallopt is not in the Glibc module map; M_MMAP_THRESHOLD is -3 in <malloc.h>.
        guard let sym = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return false }
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        return unsafeBitCast(sym, to: Mallopt.self)(-3, Int32(mappedThreshold)) == 1
        #else
        return false
        #endif
    }
}
