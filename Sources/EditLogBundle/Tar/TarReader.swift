import EditLogCore

/// Reads ustar entries from a gunzip stream: headers checked (checksum, magic, regular file), data streamed.
final class TarReader {
    struct Entry { let name: String; let size: Int64 }

    let source: GzipInputStream
    private var remaining: Int64 = 0
    private var padding = 0
    private var current: String?
    private var ended = false

    init(source: GzipInputStream) { self.source = source }

    private var path: String { source.path }

    private func corrupt(_ message: String) -> EditLogError { EditLogError(.corrupt, message, at: path) }

    /// Zero bytes accepted after the end-of-archive marker: the padding of the largest tar record (a blocking factor of
    /// 2,048 blocks); a bundle's own writer pads none.
    static let maxTrailingZeros = 1 << 20

    /// Exactly `count` bytes, or a truncation error naming what was being read.
    private func readFully(_ count: Int, what: String) throws(EditLogError) -> [UInt8] {
        var out: [UInt8] = []
        try append(count, to: &out, what: what)
        return out
    }

    /// Appends exactly `count` bytes to `buffer`, or throws a truncation error naming what was being read.
    private func append(_ count: Int, to buffer: inout [UInt8], what: String) throws(EditLogError) {
        let start = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: count))
        var done = 0
        while done < count {
            let n = try source.read(into: &buffer, at: start + done, count: count - done)
            if n == 0 { throw corrupt("the archive ends inside \(what) (truncated)") }
            done += n
        }
    }

    /// The next entry's header, or nil at the end-of-archive marker (after which only zero bytes may follow).
    func next() throws(EditLogError) -> Entry? {
        if ended { return nil }
        if let current, remaining > 0 { throw corrupt("\(current): \(remaining) bytes left unread") }
        if padding > 0 {
            // NULs, as ustar writes them: other bytes there are covered by no checksum or signature.
            let pad = try readFully(padding, what: "the padding of \(current ?? "an entry")")
            guard pad.allSatisfy({ $0 == 0 }) else { throw corrupt("\(current ?? "an entry"): its padding to 512 bytes is not all NULs") }
            padding = 0
        }
        current = nil
        let h = try readFully(Ustar.block, what: "an entry header")
        if h.allSatisfy({ $0 == 0 }) {
            guard try readFully(Ustar.block, what: "the end-of-archive marker").allSatisfy({ $0 == 0 }) else {
                throw corrupt("the end-of-archive marker's second block is not all zeros")
            }
            // Nothing but zeros may follow (reading to the end also checks the last member's CRC), and no more of them
            // than a tar record's padding: a stream of zeros deflates about 1000 to 1, so past the archive's end it
            // would be a decompression bomb that no ratio check over the whole bundle catches.
            var buf = [UInt8](repeating: 0, count: 1 << 16)
            var trailing = 0
            while true {
                let n = try source.read(into: &buf, at: 0, count: buf.count)
                if n == 0 { break }
                if buf[..<n].contains(where: { $0 != 0 }) { throw corrupt("data after the end-of-archive marker") }
                trailing += n
                if trailing > Self.maxTrailingZeros {
                    throw EditLogError(.invalidInput, "refused: more than \(Self.maxTrailingZeros) bytes of zeros after the end-of-archive marker "
                                       + "(a tar record's padding is at most that): a decompression bomb", at: path)
                }
            }
            ended = true
            return nil
        }
        var sum = 0
        for (i, b) in h.enumerated() { sum += (148..<156).contains(i) ? 0x20 : Int(b) }
        guard let stored = Self.octal(h[148..<156]), stored == sum else { throw corrupt("a tar header's checksum does not match (header damaged)") }
        guard h[257..<262].elementsEqual("ustar".utf8) else { throw corrupt("a tar header is not ustar") }
        let nameBytes = h[0..<100].prefix { $0 != 0 }
        let prefixBytes = h[345..<500].prefix { $0 != 0 }
        guard let name = String(validating: Array(nameBytes), as: UTF8.self), let prefix = String(validating: Array(prefixBytes), as: UTF8.self) else {
            throw corrupt("a tar entry name is not UTF-8")
        }
        let full = prefix.isEmpty ? name : prefix + "/" + name
        guard h[156] == UInt8(ascii: "0") || h[156] == 0 else { throw corrupt("\(full): not a regular file (type \(Character(Unicode.Scalar(h[156]))))") }
        guard let size = Self.octal(h[124..<136]).map(Int64.init) else { throw corrupt("\(full): the size field is not octal") }
        // An entry that would take the output past the limits is refused from its header, before its bytes are inflated.
        try source.checkDeclared(size + Int64(Ustar.padding(for: size)), entry: full)
        current = full
        remaining = size
        padding = Ustar.padding(for: size)
        return Entry(name: full, size: size)
    }

    /// Appends the current entry's next bytes, at most `chunk` of them, to `buffer` (whose capacity is reused); false
    /// when the entry is all read.
    func appendData(to buffer: inout [UInt8], max chunk: Int) throws(EditLogError) -> Bool {
        guard remaining > 0 else { return false }
        let n = Int(min(Int64(chunk), remaining))
        try append(n, to: &buffer, what: current ?? "an entry")
        remaining -= Int64(n)
        return true
    }

    /// The whole current entry (the caller bounds its size first).
    func readAll() throws(EditLogError) -> [UInt8] {
        let b = try readFully(Int(remaining), what: current ?? "an entry")
        remaining = 0
        return b
    }

    /// Parses an octal field: optional leading spaces, digits, then NUL or space.
    static func octal(_ field: ArraySlice<UInt8>) -> Int? {
        var v = 0
        var seenDigit = false
        for b in field {
            if b == 0x20 && !seenDigit { continue }
            if b == 0 || b == 0x20 { break }
            guard (0x30...0x37).contains(b) else { return nil }
            guard v < (Int.max >> 4) else { return nil }
            v = v * 8 + Int(b - 0x30)
            seenDigit = true
        }
        return seenDigit ? v : nil
    }
}
