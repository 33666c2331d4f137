import Synchronization

/// The stream versions a write transaction knows (`Appender`) and `AppendCache` keeps between transactions: a
/// dictionary, copied on write like any Swift value, that counts the entries it copies into `copies`.
///
/// A transaction takes the cached versions and adds to them in place. Should anything still share them when the
/// transaction first writes (a copy of the appender, a cache that kept its reference), copy-on-write copies every
/// stream's entry, once per transaction: a write's cost would grow with the log's streams. The count makes that
/// visible to a test (`StoreInvariantTests`' size-scaling check), which timing on a small log does not.
struct StreamVersions {
    private final class Storage {
        var map: [String: Int64]
        init(_ map: [String: Int64]) { self.map = map }
    }

    private var storage: Storage
    let copies: CopyCount

    init(copies: CopyCount) {
        storage = Storage([:])
        self.copies = copies
    }

    var count: Int { storage.map.count }

    subscript(stream: String) -> Int64? {
        get { storage.map[stream] }
        set {
            makeUnique()
            storage.map[stream] = newValue
        }
    }

    mutating func removeAll() {
        makeUnique()
        storage.map.removeAll(keepingCapacity: true)
    }

    /// Versions with no entry, counting into the same `copies`.
    func emptied() -> StreamVersions { StreamVersions(copies: copies) }

    private mutating func makeUnique() {
        guard !isKnownUniquelyReferenced(&storage) else { return }
        copies.add(storage.map.count)
        storage = Storage(storage.map)
    }
}

/// Stream-version entries copied by this store's write transactions since it was opened (`StreamVersions`).
final class CopyCount: Sendable {
    private let entries = Atomic<Int>(0)
    func add(_ n: Int) { entries.add(n, ordering: .relaxed) }
    var value: Int { entries.load(ordering: .relaxed) }
}
