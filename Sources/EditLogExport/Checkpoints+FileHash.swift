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

    /// Whether a checkpoint may be read where it is, without the copy that checks its bytes (`Replay.overlay`): it has
    /// a fingerprint and its file was not modified after the fingerprint was written, so the bytes the fingerprint
    /// covers are the file's. A file written since goes to the copy, which checks every byte.
    static func unchangedSinceFingerprint(_ path: String) -> Bool {
        guard recordedHash(of: path) != nil,
              let file = try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date,
              let fingerprint = try? FileManager.default.attributesOfItem(atPath: sidecar(path))[.modificationDate] as? Date else { return false }
        return file <= fingerprint
    }

    /// The fingerprint written with a checkpoint, if any (checkpoints made before fingerprints have none).
    static func recordedHash(of path: String) -> String? {
        guard let d = FileManager.default.contents(atPath: sidecar(path)) else { return nil }
        let s = String(decoding: d, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return s.count == 64 ? s : nil
    }
}
