import EditLog
import Foundation

/// The changes a sync pulled (`SyncReport.pulled`), kept in a temporary file rather than in memory: a pull of
/// any size holds only their count. Read back in the order they were added, one line of JSON each; the file is
/// removed with the last report that shares it. Appended to by the engine alone, during its run.
public final class SyncChangeList: Sequence, CustomStringConvertible, @unchecked Sendable {
    private let lock = NSLock()
    private var path: String?
    private var handle: FileHandle?
    private var stored = 0

    init() {}

    deinit {
        try? handle?.close()
        if let path { try? FileManager.default.removeItem(atPath: path) }
    }

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
        do {
            if handle == nil {
                let p = FileManager.default.temporaryDirectory
                    .appendingPathComponent("editlog-sync-pulled-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).jsonl").path
                guard FileManager.default.createFile(atPath: p, contents: nil), let h = FileHandle(forUpdatingAtPath: p) else {
                    throw EditLogError(.io, "cannot create the list of pulled changes", at: p)
                }
                path = p; handle = h
            }
            try handle!.seekToEnd()
            try handle!.write(contentsOf: bytes)
        } catch let e as EditLogError {
            throw e
        } catch {
            throw EditLogError(.io, "cannot write the list of pulled changes: \(error)", at: path)
        }
        stored += changes.count
    }

    public func makeIterator() -> Iterator {
        lock.withLock { Iterator(path: path, count: stored) }
    }

    public var description: String { "[" + map { "\($0)" }.joined(separator: ", ") + "]" }

    /// Reads the file a block at a time; stops after the changes counted when it began.
    public struct Iterator: IteratorProtocol {
        private let reader: FileHandle?
        private var buffer: [UInt8] = []
        private var start = 0
        private var left: Int

        init(path: String?, count: Int) {
            reader = path.flatMap { FileHandle(forReadingAtPath: $0) }
            left = count
        }

        public mutating func next() -> SyncChange? {
            guard left > 0, let reader else { return nil }
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
                guard let more = try? reader.read(upToCount: 1 << 16), !more.isEmpty else { return nil }
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
