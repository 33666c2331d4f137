import EditLogCore
import EditLogStore

/// An event's bundle line written straight from its stored columns: the canonical JSON of `RecordedEvent.json`
/// plus `previousHash` (keys in the order of their bytes, no whitespace), with the payload copied as stored (the
/// appender stores it as canonical JSON, and the chain hash covers those bytes), so nothing is parsed or
/// serialized again. `BundleEventLineTests` checks it byte for byte against the `JSONValue` path.
enum BundleEventLine {
    /// Appends the line (without its newline) of `row` after the event whose hash is `previous`.
    static func write(_ row: StatementEventColumns, previous: UnsafeRawBufferPointer, to out: inout [UInt8]) throws(EditLogError) {
        let position = row.integer(.position)
        func required(_ c: EventHash.Column) throws(EditLogError) -> UnsafeRawBufferPointer {
            guard let b = row.bytes(c) else { throw EditLogError(.corrupt, "\(c.name) is NULL", at: "position \(position)") }
            return b
        }
        let id = try required(.id), hash = try required(.hash)
        guard id.count == 16 else { throw EditLogError(.corrupt, "event id is not 16 bytes", at: "position \(position)") }
        func key(_ k: StaticString) {
            k.withUTF8Buffer { out.append(contentsOf: $0) }
        }
        func string(_ b: UnsafeRawBufferPointer) { JSONValue.writeString(utf8: b.bindMemory(to: UInt8.self), to: &out) }
        func optional(_ b: UnsafeRawBufferPointer?) { if let b { string(b) } else { key("null") } }
        // Hex digits are written into a buffer on the stack and appended at once (an append per digit cost about a
        // tenth of the export's producing thread).
        func hex(_ b: UnsafeRawBufferPointer) {
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 2 + 2 * b.count) { buf in
                buf[0] = 0x22
                var j = 1
                for x in b { buf[j] = Self.digit(x >> 4); buf[j + 1] = Self.digit(x & 0xF); j += 2 }
                buf[j] = 0x22
                out.append(contentsOf: UnsafeBufferPointer(buf))
            }
        }
        key("{\"actor\":"); string(try required(.actor))
        key(",\"cause\":"); string(try required(.cause))
        key(",\"clientTime\":"); optional(row.bytes(.clientTime))
        key(",\"device\":"); string(try required(.device))
        key(",\"hash\":"); hex(hash)
        key(",\"id\":")
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 38) { buf in
            buf[0] = 0x22
            var j = 1
            for (i, x) in id.enumerated() {
                if i == 4 || i == 6 || i == 8 || i == 10 { buf[j] = UInt8(ascii: "-"); j += 1 }
                buf[j] = Self.digit(x >> 4); buf[j + 1] = Self.digit(x & 0xF); j += 2
            }
            buf[j] = 0x22
            out.append(contentsOf: UnsafeBufferPointer(buf))
        }
        key(",\"origin\":{\"hash\":"); hex(row.bytes(.originHash) ?? hash)
        key(",\"logId\":"); string(try required(.originLog))
        key(",\"position\":"); JSONValue.writeInt(row.integer(.originPosition), to: &out)
        key("},\"payload\":"); out.append(contentsOf: try required(.payload))
        key(",\"position\":"); JSONValue.writeInt(position, to: &out)
        key(",\"previousHash\":"); hex(previous)
        key(",\"recordedTime\":"); string(try required(.recordedTime))
        key(",\"session\":"); optional(row.bytes(.session))
        key(",\"stream\":"); string(try required(.stream))
        key(",\"streamVersion\":"); JSONValue.writeInt(row.integer(.streamVersion), to: &out)
        key(",\"type\":"); string(try required(.type))
        out.append(UInt8(ascii: "}"))
    }

    /// The lowercase hex digit of `v` (0...15).
    @inline(__always) static func digit(_ v: UInt8) -> UInt8 { v < 10 ? 0x30 + v : 0x57 + v }
}
