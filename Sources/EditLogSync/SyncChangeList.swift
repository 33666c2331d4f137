import EditLog
import Foundation

/// The changes a sync pulled (`SyncReport.pulled`), kept in a temporary file rather than in memory: a pull of
/// any size holds only their count. Read back in the order they were added, one line of JSON each. The file is
/// unlinked as soon as it is made (only its open descriptor reaches it), so a run killed anywhere leaves none
/// behind. Appended to by the engine alone, during its run.
public final class SyncChangeList: Sequence, CustomStringConvertible, @unchecked Sendable {
    private let lock = NSLock()
    private var fd: Int32 = -1
    private var size: Int64 = 0
    private var stored = 0

    init() {}

    deinit { if fd >= 0 { close(fd) } }

    /// How many changes the list holds.
    public var count: Int { lock.withLock { stored } }
    public var isEmpty: Bool { count == 0 }

    /// Adds `changes` at the end (written to the file at once).
    func append(contentsOf changes: [SyncChange]) throws(EditLogError) {
        guard !changes.isEmpty else { return }
        var bytes: [UInt8] = []
        for c in changes { bytes += c.json.serializedBytes(); bytes.append(UInt8(ascii: "\n")) }
        lock.lock()
        defer { lock.unlock() }
        if fd < 0 {
            let path = FileManager.default.temporaryDirectory
                .appendingPathComponent("editlog-sync-pulled-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).jsonl").path
            fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0o600)
            guard fd >= 0 else { throw EditLogError(.io, "cannot create the list of pulled changes (errno \(errno))", at: path) }
            unlink(path)
        }
        var done = 0
        while done < bytes.count {
            let n = bytes[done...].withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(size) + off_t(done)) }
            guard n > 0 else { throw EditLogError(.io, "cannot write the list of pulled changes (errno \(errno))") }
            done += n
        }
        size += Int64(bytes.count)
        stored += changes.count
    }

    /// Up to `count` bytes from `offset` (fewer at the end of what was written).
    private func read(at offset: Int64, count: Int) -> [UInt8] {
        lock.withLock {
            guard fd >= 0, offset < size else { return [] }
            var out = [UInt8](repeating: 0, count: Int(Swift.min(Int64(count), size - offset)))
            let n = out.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(offset)) }
            return n > 0 ? Array(out.prefix(n)) : []
        }
    }

    public func makeIterator() -> Iterator {
        lock.withLock { Iterator(list: self, count: stored) }
    }

    public var description: String { "[" + map { "\($0)" }.joined(separator: ", ") + "]" }

    /// Reads the file a block at a time; stops after the changes counted when it began.
    public struct Iterator: IteratorProtocol {
        private let list: SyncChangeList
        private var buffer: [UInt8] = []
        private var start = 0
        private var offset: Int64 = 0
        private var left: Int

        init(list: SyncChangeList, count: Int) {
            self.list = list
            left = count
        }

        public mutating func next() -> SyncChange? {
            guard left > 0 else { return nil }
            while true {
                if let nl = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                    let line = buffer[start..<nl]
                    start = nl + 1
                    left -= 1
                    // Written by `append` from `SyncChange.json`: a line that does not read back is a broken file.
                    guard let value = try? JSONParser.parse(line), let change = SyncChange(json: value) else {
                        preconditionFailure("the list of pulled changes holds a line that is not a change")
                    }
                    return change
                }
                buffer.removeFirst(start); start = 0
                let more = list.read(at: offset, count: 1 << 16)
                guard !more.isEmpty else { return nil }
                offset += Int64(more.count)
                buffer += more
            }
        }
    }
}

extension SyncChange {
    /// A change as `json` writes it.
    init?(json v: JSONValue) {
        guard let layer = v["layer"]?.intValue, let g = v["globalId"]?.stringValue, let kind = v["kind"]?.stringValue,
              let fields = v["fields"]?.arrayValue else { return nil }
        self.init(layer: Int(layer), globalId: g, kind: kind, fields: fields.compactMap(\.stringValue), objectId: v["objectId"]?.intValue)
    }
}
