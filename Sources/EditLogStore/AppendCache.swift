import EditLogCore
import Foundation
import GRDB

/// The chain head and stream versions as this process's last write transaction left them, trusted only
/// while no other connection has written: SQLite's `PRAGMA data_version` changes exactly when another
/// connection commits, and is read inside the IMMEDIATE transaction, when no one else can write. A rolled
/// back or failed transaction drops the cache.
///
/// `@unchecked Sendable` is sound: every stored property is read and written only under `lock`.
final class AppendCache: @unchecked Sendable {
    struct Snapshot {
        var dataVersion: Int64
        var headPosition: Int64
        var headHash: [UInt8]
        var versions: StreamVersions
    }

    private let lock = NSLock()
    private var snapshot: Snapshot?
    /// Stream-version entries copied on write by this store's transactions (`StreamVersions`): 0 while every
    /// transaction holds the only reference to the versions it adds to.
    let copiedVersions = CopyCount()
    /// Streams remembered at most (memory stays bounded on logs with many features).
    static let maxStreams = 250_000

    /// The cached state if it is still the file's state (`dataVersion` read in this transaction), handed over:
    /// the cache forgets it until `store`, so the transaction's appender holds the only reference to the stream
    /// versions and adds to them in place (sharing them made every transaction copy the whole dictionary).
    func take(at dataVersion: Int64) -> Snapshot? {
        lock.lock(); defer { lock.unlock() }
        guard let s = snapshot.take(), s.dataVersion == dataVersion else { return nil }
        return s
    }

    /// After a commit: what the transaction appended becomes the cached state.
    func store(_ s: Snapshot) {
        lock.lock(); defer { lock.unlock() }
        snapshot = s.versions.count > Self.maxStreams ? Snapshot(dataVersion: s.dataVersion, headPosition: s.headPosition, headHash: s.headHash, versions: s.versions.emptied()) : s
    }

    func drop() {
        lock.lock(); defer { lock.unlock() }
        snapshot = nil
    }
}
