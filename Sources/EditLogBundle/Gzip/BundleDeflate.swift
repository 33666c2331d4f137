import EditLogCore

/// Which library deflates an export's gzip members. Every choice writes the same format (independent RFC 1952
/// members that any gunzip reads, `schemas/bundle.md`) and the same uncompressed bytes; only the compressed bytes,
/// the time and the size differ. Reading always goes through the system zlib.
public enum BundleDeflate: String, Sendable, CaseIterable {
    /// The system's libdeflate where it loads (`libdeflate.so.0`), else zlib: the default.
    case auto
    /// The system zlib only (level 6 with `DeflateTuning.bundle`), whether or not libdeflate is there.
    case zlib
    /// The system's libdeflate, or an error where it does not load.
    case libdeflate

    /// The engine this choice means on this system.
    func engine() throws(EditLogError) -> GzipEngine {
        switch self {
        case .auto:
            return .bundle
        case .zlib:
            return .zlib(level: 6, tuning: .bundle)
        case .libdeflate:
            guard Libdeflate.system != nil else {
                throw EditLogError(.unsupported, "libdeflate was asked for, but \(Libdeflate.soname) does not load on this system "
                                   + "(Debian's libdeflate0 provides it); use --deflate zlib or auto")
            }
            return .libdeflate(level: GzipEngine.libdeflateLevel)
        }
    }

    /// What deflates under this choice on this system, for reports ("libdeflate level 5 (libdeflate.so.0)"), or why
    /// nothing can.
    public var deflater: String {
        do { return try engine().description } catch { return "unavailable: \(error.message)" }
    }
}
