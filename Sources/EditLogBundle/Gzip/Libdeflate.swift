import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The system's libdeflate (`libdeflate.so.0`, Debian's `libdeflate0`), loaded at run time when it is there: its
/// whole-buffer gzip compressor writes the same format as zlib (one complete RFC 1952 member per call) in less time
/// than zlib at a smaller size, which is what independent members need (`tools/BENCH-RESULTS.md`). It is looked up
/// with `dlopen`, not linked: the package builds and runs without it (zlib deflates then), and no header or `-dev`
/// package is needed.
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
