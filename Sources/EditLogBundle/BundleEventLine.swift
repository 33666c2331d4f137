import EditLogCore
import EditLogStore

/// An event's bundle line written straight from its stored columns: the canonical JSON of `RecordedEvent.json`
/// plus `previousHash` (keys in the order of their bytes, no whitespace), with the payload copied as stored (the
/// appender stores it as canonical JSON, and the chain hash covers those bytes), so nothing is parsed or
/// serialized again. `BundleEventLineTests` checks it byte for byte against the `JSONValue` path.
enum BundleEventLine {
    /// Appends the line (without its newline) of `row` after the event whose hash is `previous`.
    ///
    /// The line is written into one buffer of its largest possible size (every string byte escaped as `\u00XX`)
    /// and appended at once, not with an `Array.append` per key, string and hex run (about 18 per line). Callgrind
    /// of the quick export (55.5k events): writing the lines took 0.48G instructions so, 0.20G now, of the
    /// producing thread's 1.91G outside SHA-256.
    static func write(_ row: StatementEventColumns, previous: UnsafeRawBufferPointer, to out: inout [UInt8]) throws(EditLogError) {
        let position = row.integer(.position)
        func required(_ c: EventHash.Column) throws(EditLogError) -> UnsafeRawBufferPointer {
            guard let b = row.bytes(c) else { throw EditLogError(.corrupt, "\(c.name) is NULL", at: "position \(position)") }
            return b
        }
        let id = try required(.id), hash = try required(.hash)
        guard id.count == 16 else { throw EditLogError(.corrupt, "event id is not 16 bytes", at: "position \(position)") }
        let actor = try required(.actor), cause = try required(.cause), device = try required(.device)
        let originLog = try required(.originLog), payload = try required(.payload), recordedTime = try required(.recordedTime)
        let stream = try required(.stream), type = try required(.type)
        let clientTime = row.bytes(.clientTime), session = row.bytes(.session)
        let originHash = row.bytes(.originHash) ?? hash
        let strings = actor.count + cause.count + device.count + originLog.count + recordedTime.count + stream.count + type.count
            + (clientTime?.count ?? 0) + (session?.count ?? 0)
        let hexes = 2 * (hash.count + originHash.count + previous.count) + 6
        let bound = Self.fixedBytes + 6 * strings + payload.count + hexes + 3 * 20
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: bound) { buffer in
            var w = Writer(base: buffer.baseAddress!)
            w.key("{\"actor\":"); w.string(actor)
            w.key(",\"cause\":"); w.string(cause)
            w.key(",\"clientTime\":"); w.optional(clientTime)
            w.key(",\"device\":"); w.string(device)
            w.key(",\"hash\":"); w.hex(hash)
            w.key(",\"id\":"); w.uuid(id)
            w.key(",\"origin\":{\"hash\":"); w.hex(originHash)
            w.key(",\"logId\":"); w.string(originLog)
            w.key(",\"position\":"); w.int(row.integer(.originPosition))
            w.key("},\"payload\":"); w.raw(payload)
            w.key(",\"position\":"); w.int(position)
            w.key(",\"previousHash\":"); w.hex(previous)
            w.key(",\"recordedTime\":"); w.string(recordedTime)
            w.key(",\"session\":"); w.optional(session)
            w.key(",\"stream\":"); w.string(stream)
            w.key(",\"streamVersion\":"); w.int(row.integer(.streamVersion))
            w.key(",\"type\":"); w.string(type)
            w.key("}")
            precondition(w.count <= bound, "a bundle line outgrew its bound")
            out.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[0..<w.count]))
        }
    }

    /// Room for a line's bytes that do not grow with its columns: the keys and punctuation (198), the quotes of
    /// its nine strings or `null` for each (at most 36), the id as a UUID (38): at most 272.
    static let fixedBytes = 320

    /// The lowercase hex digit of `v` (0...15).
    @inline(__always) static func digit(_ v: UInt8) -> UInt8 { v < 10 ? 0x30 + v : 0x57 + v }

    /// For each byte, 0 when it is written as it is inside a JSON string, else the character after the backslash
    /// of its short escape (`n`, `r`, `t`, `"`, `\`), or `u` for `\u00XX` (the other control characters). The
    /// same escapes as `JSONValue.writeString`.
    static let escapes: [UInt8] = (0..<256).map { (b: Int) -> UInt8 in
        switch b {
        case 0x22: return 0x22
        case 0x5C: return 0x5C
        case 0x0A: return UInt8(ascii: "n")
        case 0x0D: return UInt8(ascii: "r")
        case 0x09: return UInt8(ascii: "t")
        case 0..<0x20: return UInt8(ascii: "u")
        default: return 0
        }
    }

    /// Each byte's two hex digits, high digit in the low byte (so a little-endian store writes them in order).
    static let hexPairs: [UInt16] = (0..<256).map { UInt16(digit(UInt8($0 >> 4))) | UInt16(digit(UInt8($0 & 0xF))) << 8 }

    /// Bytes written at `base`, which has room for them all (the caller's bound).
    struct Writer {
        let base: UnsafeMutablePointer<UInt8>
        var count = 0

        @inline(__always) mutating func byte(_ b: UInt8) {
            base[count] = b
            count += 1
        }

        @inline(__always) mutating func key(_ k: StaticString) {
            (base + count).update(from: k.utf8Start, count: k.utf8CodeUnitCount)
            count += k.utf8CodeUnitCount
        }

        @inline(__always) mutating func raw(_ b: UnsafeRawBufferPointer) {
            guard let p = b.baseAddress, b.count > 0 else { return }
            UnsafeMutableRawPointer(base + count).copyMemory(from: p, byteCount: b.count)
            count += b.count
        }

        /// A JSON string of UTF-8 bytes, escaped as `JSONValue.writeString` escapes. Eight bytes at a time while
        /// none of them needs an escape (a control character, `"` or `\`), then byte by byte through the table.
        /// The position is kept in a local while the bytes go (a store through `base` could otherwise be taken to
        /// change `count`).
        mutating func string(_ b: UnsafeRawBufferPointer) {
            let out = base
            var j = count
            out[j] = 0x22
            j += 1
            if let source = b.baseAddress {
                let n = b.count
                var i = 0
                let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
                BundleEventLine.escapes.withUnsafeBufferPointer { table in
                    while i < n {
                        if i + 8 <= n {
                            let v = source.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                            let quote = v ^ (ones &* 0x22), backslash = v ^ (ones &* 0x5C)
                            // Whether any byte is below 0x20, or is zero after the xor (exact for "any").
                            let below = (v &- ones &* 0x20) & ~v
                            let isQuote = (quote &- ones) & ~quote
                            let isBackslash = (backslash &- ones) & ~backslash
                            if (below | isQuote | isBackslash) & highs == 0 {
                                UnsafeMutableRawPointer(out + j).storeBytes(of: v, as: UInt64.self)
                                i += 8
                                j += 8
                                continue
                            }
                        }
                        let c = source.load(fromByteOffset: i, as: UInt8.self)
                        i += 1
                        let e = table[Int(c)]
                        if e == 0 {
                            out[j] = c
                            j += 1
                        } else if e != UInt8(ascii: "u") {
                            out[j] = 0x5C
                            out[j + 1] = e
                            j += 2
                        } else {
                            out[j] = 0x5C
                            out[j + 1] = e
                            out[j + 2] = 0x30
                            out[j + 3] = 0x30
                            out[j + 4] = BundleEventLine.digit(c >> 4)
                            out[j + 5] = BundleEventLine.digit(c & 0xF)
                            j += 6
                        }
                    }
                }
            }
            out[j] = 0x22
            count = j + 1
        }

        mutating func optional(_ b: UnsafeRawBufferPointer?) {
            if let b { string(b) } else { key("null") }
        }

        /// Lowercase hex in quotes.
        mutating func hex(_ b: UnsafeRawBufferPointer) {
            byte(0x22)
            if let source = b.baseAddress {
                let out = UnsafeMutableRawPointer(base + count)
                BundleEventLine.hexPairs.withUnsafeBufferPointer { pairs in
                    for i in 0..<b.count {
                        out.storeBytes(of: pairs[Int(source.load(fromByteOffset: i, as: UInt8.self))].littleEndian, toByteOffset: 2 * i, as: UInt16.self)
                    }
                }
                count += 2 * b.count
            }
            byte(0x22)
        }

        /// A 16-byte id as a quoted UUID (8-4-4-4-12 lowercase hex digits).
        mutating func uuid(_ b: UnsafeRawBufferPointer) {
            precondition(b.count == 16, "an event id is 16 bytes")
            byte(0x22)
            let source = b.baseAddress!
            let out = UnsafeMutableRawPointer(base + count)
            BundleEventLine.hexPairs.withUnsafeBufferPointer { pairs in
                var j = 0
                for i in 0..<16 {
                    if i == 4 || i == 6 || i == 8 || i == 10 {
                        out.storeBytes(of: UInt8(ascii: "-"), toByteOffset: j, as: UInt8.self)
                        j += 1
                    }
                    out.storeBytes(of: pairs[Int(source.load(fromByteOffset: i, as: UInt8.self))].littleEndian, toByteOffset: j, as: UInt16.self)
                    j += 2
                }
            }
            count += 36
            byte(0x22)
        }

        /// The decimal digits of `i`.
        mutating func int(_ i: Int64) {
            if i < 0 { byte(UInt8(ascii: "-")) }
            var v = i.magnitude
            var digits = 1
            var t = v
            while t >= 10 { t /= 10; digits += 1 }
            var j = count + digits - 1
            repeat {
                base[j] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: v % 10)
                v /= 10
                j -= 1
            } while v > 0
            count += digits
        }
    }
}
