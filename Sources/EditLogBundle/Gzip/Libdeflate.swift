import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The system's libdeflate (`libdeflate.so.0`, Debian's `libdeflate0`), loaded at run time when it is there: its
/// whole-buffer gzip compressor writes the same format as zlib (one complete RFC 1952 member per call) in about half
/// of zlib's time at a smaller size, which is what independent members need. It is looked up with `dlopen`, not
/// linked: the package builds and runs without it (zlib deflates then), and no header or `-dev` package is needed.
///
/// Measured on the bench's 805.9 MB bundle tar, 2 MiB members, one thread (`tools/BENCH-RESULTS.md`): zlib level 6
/// with `DeflateTuning.bundle` 137,543,512 bytes (1.0036x `gzip -6`) in 7.04 s of CPU; libdeflate 1.14 level 4
/// 135,717,421 bytes (0.990x) in 3.47 s, level 5 129,555,879 bytes (0.945x) in 3.78 s, level 6 127,342,306 bytes
/// (0.929x) in 5.15 s.
struct Libdeflate: @unchecked Sendable {
    // C function pointers from the library; the library stays loaded for the process's life.
    typealias Alloc = @convention(c) (Int32) -> OpaquePointer?
    typealias Compress = @convention(c) (OpaquePointer?, UnsafeRawPointer?, Int, UnsafeMutableRawPointer?, Int) -> Int
    typealias Bound = @convention(c) (OpaquePointer?, Int) -> Int
    typealias Free = @convention(c) (OpaquePointer?) -> Void

    let alloc: Alloc
    let gzipCompress: Compress
    let gzipBound: Bound
    let free: Free

    /// The library's file name (its ABI version 0, stable since libdeflate 1.0).
    static let soname = "libdeflate.so.0"

    /// The loaded library, or nil where the system has none (or one without these symbols).
    static let system: Libdeflate? = load(soname)

    static func load(_ name: String) -> Libdeflate? {
        guard let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) else { return nil }
        guard let a = dlsym(handle, "libdeflate_alloc_compressor"), let c = dlsym(handle, "libdeflate_gzip_compress"),
              let b = dlsym(handle, "libdeflate_gzip_compress_bound"), let f = dlsym(handle, "libdeflate_free_compressor") else {
            dlclose(handle)
            return nil
        }
        return Libdeflate(alloc: unsafeBitCast(a, to: Alloc.self), gzipCompress: unsafeBitCast(c, to: Compress.self),
                          gzipBound: unsafeBitCast(b, to: Bound.self), free: unsafeBitCast(f, to: Free.self))
    }
}
