import EditLogCore

/// SHA256SUMS checked as it is read, a piece at a time: it lists every entry before it, in order, with the SHA-256 of
/// its data, one `<64 hex digits>  <name>` line each. A list that passes is fully given by the entries and the case
/// of its hex digits, so it is not held: `bytes()` makes it again for the signature (a bundle of many attachments
/// has a list of megabytes; held whole, it was the peak of an import's memory). From the first line whose digits are not
/// all lowercase on, the lines are kept as read.
struct SumsCheck {
    let entries: [SumEntry]
    let path: String
    /// Lines seen so far.
    private(set) var lines = 0
    /// The list's bytes up to the last line seen, once a line's hex digits were not lowercase (nil before).
    private var kept: [UInt8]?

    init(entries: [SumEntry], path: String) {
        self.entries = entries
        self.path = path
    }

    private func bad(_ m: String) -> EditLogError { EditLogError(.corrupt, m, at: "\(path): SHA256SUMS") }

    /// Checks every whole line of `buffer` and removes them from it: what stays is the start of the next line.
    mutating func feed(_ buffer: inout [UInt8]) throws(EditLogError) {
        var start = 0
        for i in buffer.indices where buffer[i] == 0x0A {
            try line(buffer[start..<i])
            start = i + 1
        }
        buffer.removeSubrange(0..<start)
    }

    /// After the last piece: `rest` is what `feed` left, `size` the entry's size.
    func finish(rest: [UInt8], size: Int64) throws(EditLogError) {
        guard size > 0, rest.isEmpty else { throw bad("does not end with a newline") }
        guard lines == entries.count else { throw bad("lists \(lines) entries; the bundle has \(entries.count) before it") }
    }

    /// The list's exact bytes (after `finish`).
    func bytes() -> [UInt8] {
        kept ?? Self.list(entries[...])
    }

    /// The lines of `entries`, hex digits lowercase.
    static func list(_ entries: ArraySlice<SumEntry>) -> [UInt8] {
        var out: [UInt8] = []
        for e in entries {
            let (name, sha) = e.entry
            out += Array(Hex.encode(sha).utf8)
            out += [0x20, 0x20]
            out += Array(name.utf8)
            out.append(0x0A)
        }
        return out
    }

    private mutating func line(_ line: ArraySlice<UInt8>) throws(EditLogError) {
        lines += 1
        // Lines past the entries are only counted: `finish` reports how many there were.
        guard lines <= entries.count else { return }
        let k = lines
        let entry = entries[k - 1].entry
        // "<64 hex digits>  <name>": the first space at 64, the second at 65, the name after.
        let sep = line.firstIndex(of: 0x20)
        guard let sep, sep - line.startIndex == 64, sep + 1 < line.endIndex, line[sep + 1] == 0x20 else {
            throw bad("line \(k) is not \"<sha256>  <name>\"")
        }
        let name = line[(sep + 2)...]
        guard name.elementsEqual(entry.name.utf8) else {
            throw bad("line \(k) names \(String(decoding: name.prefix(100), as: UTF8.self)), but the entry there is \(entry.name)")
        }
        let hex = line[line.startIndex..<sep]
        let expected = Hex.encode(entry.sha256)
        guard hex.elementsEqual(expected.utf8, by: { a, b in (a >= 0x41 && a <= 0x5A ? a | 0x20 : a) == b }) else {
            throw bad("line \(k): \(entry.name) has SHA-256 \(expected), not \(String(decoding: hex, as: UTF8.self)) (the entry was changed)")
        }
        if kept == nil && !hex.elementsEqual(expected.utf8) { kept = Self.list(entries[0..<(k - 1)]) }
        if kept != nil {
            kept!.append(contentsOf: line)
            kept!.append(0x0A)
        }
    }
}
