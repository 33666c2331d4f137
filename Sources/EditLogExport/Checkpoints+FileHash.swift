import EditLogCore
import Foundation

/// A checkpoint's bytes are fingerprinted when it is written (`<checkpoint>.sha256` beside it), so a replay checks a
/// checkpoint while copying it — one pass over the file — instead of reading every row again for its digest.
/// `checkpoint --verify` still checks every row against the digest inside the file.
extension CheckpointStore {
    static func sidecar(_ path: String) -> String { path + ".sha256" }

    /// SHA-256 (hex) of a file's bytes; when `to` is given, the bytes are copied there as they are hashed.
    static func hashFile(_ path: String, copyingTo destination: String? = nil) throws -> String {
        guard let input = FileHandle(forReadingAtPath: path) else {
            throw EditLogError(.io, "cannot read \(path)")
        }
        defer { try? input.close() }
        var output: FileHandle?
        if let destination {
            guard FileManager.default.createFile(atPath: destination, contents: nil), let h = FileHandle(forWritingAtPath: destination) else {
                throw EditLogError(.io, "cannot write \(destination)")
            }
            output = h
        }
        defer { try? output?.close() }
        var digest = ContentDigest()
        while true {
            let chunk = try input.read(upToCount: 1 << 20) ?? Data()
            if chunk.isEmpty { break }
            digest.update(chunk)
            try output?.write(contentsOf: chunk)
        }
        return Hex.encode(digest.finalize())
    }

    /// Whether a checkpoint may be read where it is, without the copy that checks its bytes (`Replay.overlay`): its
    /// fingerprint names this very file as it was when fingerprinted (`FileIdentity`: device, inode, size, and the
    /// modification and status-change times). Any write to the file since, or a file put in its place, changes its
    /// status-change time or inode, which no user tool can set back; such a file goes to the copy, which checks every
    /// byte. Forging a match means rewriting the fingerprint, as forging its hash would.
    static func unchangedSinceFingerprint(_ path: String) -> Bool {
        guard let recorded = recordedFingerprint(of: path), let identity = recorded.identity, let now = FileIdentity(path) else { return false }
        return identity == now
    }

    /// The fingerprint written with a checkpoint, if any (checkpoints made before fingerprints have none).
    static func recordedHash(of path: String) -> String? { recordedFingerprint(of: path)?.hash }

    /// A fingerprint file: the SHA-256 (hex) on its first line, then the file's `FileIdentity` once it was in place
    /// (fingerprints written before that have the hash alone).
    static func recordedFingerprint(of path: String) -> (hash: String, identity: FileIdentity?)? {
        guard let d = FileManager.default.contents(atPath: sidecar(path)) else { return nil }
        let lines = String(decoding: d, as: UTF8.self).split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        guard let hash = lines.first, hash.count == 64 else { return nil }
        return (hash, lines.count > 1 ? FileIdentity(line: lines[1]) : nil)
    }

    /// Writes `path`'s fingerprint (atomically: a partial file renamed): `hash`, and the file's identity as it is now.
    static func writeFingerprint(_ hash: String, of path: String) throws {
        let fingerprint = sidecar(path)
        guard let identity = FileIdentity(path) else { throw EditLogError(.io, "cannot read the status of \(path)") }
        do {
            try Data((hash + "\n" + identity.line + "\n").utf8).write(to: URL(fileURLWithPath: fingerprint + ".partial"))
        } catch {
            throw EditLogError.wrapping(error, at: fingerprint)
        }
        if rename(fingerprint + ".partial", fingerprint) != 0 {
            throw EditLogError(.io, "cannot write \(fingerprint): \(String(cString: strerror(errno)))")
        }
    }
}

/// Which file a path is, and whether it changed: from `stat(2)`. The status-change time moves on every write,
/// rename or attribute change, and cannot be set by a user.
struct FileIdentity: Equatable {
    let device: UInt64, inode: UInt64, size: Int64
    let modified: Int64, statusChanged: Int64

    init?(_ path: String) {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        size = Int64(st.st_size)
        modified = Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
        statusChanged = Int64(st.st_ctim.tv_sec) * 1_000_000_000 + Int64(st.st_ctim.tv_nsec)
    }

    init?(line: String) {
        let parts = line.split(separator: " ")
        guard parts.count == 5, let d = UInt64(parts[0]), let i = UInt64(parts[1]), let s = Int64(parts[2]),
              let m = Int64(parts[3]), let c = Int64(parts[4]) else { return nil }
        (device, inode, size, modified, statusChanged) = (d, i, s, m, c)
    }

    var line: String { "\(device) \(inode) \(size) \(modified) \(statusChanged)" }
}
