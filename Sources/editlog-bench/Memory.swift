import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Peak resident set size of this process, measured around one operation.
enum Memory {
    /// Returns freed heap to the OS and resets the kernel's high-water mark (VmHWM) to the current RSS,
    /// so the next `peakBytes()` covers only what runs after this call. False when the kernel refuses.
    @discardableResult
    static func resetPeak() -> Bool {
        // glibc's malloc_trim (not in the Glibc module map): hand freed heap pages back.
        if let sym = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") {
            typealias Trim = @convention(c) (Int) -> Int32
            _ = unsafeBitCast(sym, to: Trim.self)(0)
        }
        guard let fh = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return false }
        defer { try? fh.close() }
        do { try fh.write(contentsOf: Data("5".utf8)) } catch { return false }
        return true
    }

    /// VmHWM (peak RSS since start or the last reset), bytes; falls back to getrusage's ru_maxrss.
    static func peakBytes() -> Int64 {
        if let kb = statusField("VmHWM:") { return kb * 1024 }
        var u = rusage()
        getrusage(Int32(RUSAGE_SELF.rawValue), &u)
        return Int64(u.ru_maxrss) * 1024
    }

    static func currentBytes() -> Int64 { (statusField("VmRSS:") ?? 0) * 1024 }

    private static func statusField(_ name: String) -> Int64? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(name) {
            let digits = line.dropFirst(name.count).filter { $0.isNumber }
            return Int64(digits)
        }
        return nil
    }
}
