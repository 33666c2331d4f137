import EditLogCore
import EditLogStore
import Foundation

/// An event's bundle line written straight from its stored columns: the canonical JSON of `RecordedEvent.json`
/// plus `previousHash` (keys in the order of their bytes, no whitespace), with the payload copied as stored (the
/// appender stores it as canonical JSON, and the chain hash covers those bytes), so nothing is parsed or
/// serialized again. `BundleEventLineTests` checks it byte for byte against the `JSONValue` path.
enum BundleEventLine {
    /// Appends the line (without its newline) of `row` after the event whose hash is `previous`.
    ///
    /// The line is written into one buffer of its largest possible size (every string byte escaped as `\u00XX`)
    /// and appended at once, not with an `Array.append` per key, string and hex run (about 18 per line): those
    /// appends were most of the cost of writing a line.
    static func write(_ row: LoadedEventColumns, previous: UnsafeRawBufferPointer, to out: inout [UInt8]) throws(EditLogError) {
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
        let bound = Self.fixedBytes + JSONValue.maxStringBytes(utf8Count: strings) + payload.count + hexes + 3 * 20
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: bound) { buffer in
            var w = LineWriter(base: buffer.baseAddress!)
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

    /// One event line's bytes, written at `base`, which has room for them all (the caller's bound).
    struct LineWriter {
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

        /// A JSON string of UTF-8 bytes (`JSONValue.writeString(utf8:into:)`).
        mutating func string(_ b: UnsafeRawBufferPointer) {
            count += JSONValue.writeString(utf8: b, into: base + count)
        }

        mutating func optional(_ b: UnsafeRawBufferPointer?) {
            if let b { string(b) } else { key("null") }
        }

        /// Lowercase hex in quotes.
        mutating func hex(_ b: UnsafeRawBufferPointer) {
            byte(0x22)
            Hex.write(b, to: base + count)
            count += 2 * b.count
            byte(0x22)
        }

        /// A 16-byte id as a quoted UUID (8-4-4-4-12 lowercase hex digits).
        mutating func uuid(_ b: UnsafeRawBufferPointer) {
            byte(0x22)
            UUID.writeText(b, uppercase: false, to: base + count)
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
