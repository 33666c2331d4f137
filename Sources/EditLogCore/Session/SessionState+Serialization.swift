extension SessionState {
    /// `json.serialized()` written directly, without building the JSON tree (the projector writes one per
    /// session). Byte for byte the same canonical JSON: keys in UTF-8 order, as `JSONValue` writes them.
    public func serializedState() -> String {
        var w = StateJSONWriter()
        w.out.reserveCapacity(256 + staged.count * 48 + attachmentsAdded.count * 200)
        write(to: &w)
        return String(decoding: w.out, as: UTF8.self)
    }

    /// Writes a session state's canonical JSON: the bytes and their helpers as one value passed `inout` (nested
    /// functions capturing the byte array boxed it on the heap and checked every access at run time).
    struct StateJSONWriter {
        var out: [UInt8] = []

        mutating func key(_ k: StaticString, first: Bool = false) {
            if !first { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            k.withUTF8Buffer { out.append(contentsOf: $0) }
            out.append(UInt8(ascii: "\""))
            out.append(UInt8(ascii: ":"))
        }

        mutating func string(_ s: String) { JSONValue.writeString(s, to: &out) }

        mutating func strings(_ pairs: [(String, String)]) {
            out.append(UInt8(ascii: "{"))
            for (i, (k, v)) in pairs.sorted(by: { JSONValue.keyOrder($0.0, $1.0) }).enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                string(k); out.append(UInt8(ascii: ":")); string(v)
            }
            out.append(UInt8(ascii: "}"))
        }

        mutating func append(_ b: UInt8) { out.append(b) }
    }

    private func write(to w: inout StateJSONWriter) {
        w.append(UInt8(ascii: "{"))
        w.key("actor", first: true); w.string(actor)
        w.key("attachmentsAdded")
        w.append(UInt8(ascii: "["))
        for (i, a) in attachmentsAdded.enumerated() {
            if i > 0 { w.append(UInt8(ascii: ",")) }
            w.append(UInt8(ascii: "{"))
            w.key("attachmentId", first: true); w.string(a.attachmentId)
            w.key("contentType"); w.string(a.contentType)
            w.key("name"); w.string(a.name)
            w.key("preferredSize"); w.string(a.preferredSize)
            w.key("sha256"); w.string(a.sha256)
            w.key("size"); w.out.append(contentsOf: String(a.size).utf8)
            w.append(UInt8(ascii: "}"))
        }
        w.append(UInt8(ascii: "]"))
        w.key("detaches")
        w.append(UInt8(ascii: "["))
        for (i, d) in detaches.enumerated() {
            if i > 0 { w.append(UInt8(ascii: ",")) }
            w.string(d)
        }
        w.append(UInt8(ascii: "]"))
        w.key("device"); w.string(device)
        if let geometry { w.key("geometry"); geometry.write(to: &w.out) }
        w.key("globalId"); w.string(globalId)
        w.key("id"); w.string(id)
        w.key("kind"); w.string(kind.rawValue)
        w.key("layer"); w.out.append(contentsOf: String(layerId).utf8)
        if let parent {
            w.key("parent")
            w.append(UInt8(ascii: "{"))
            w.key("globalId", first: true); w.string(parent.globalId)
            w.key("relationship"); w.string(parent.relationship)
            w.append(UInt8(ascii: "}"))
        }
        w.key("relations"); w.strings(relations.map { (String($0.key), $0.value) })
        w.key("renames"); w.strings(renames.map { ($0.key, $0.value) })
        w.key("staged")
        w.append(UInt8(ascii: "["))
        for (i, s) in staged.enumerated() {
            if i > 0 { w.append(UInt8(ascii: ",")) }
            w.append(UInt8(ascii: "{"))
            w.key("field", first: true); w.string(s.field)
            w.key("value"); s.value.write(to: &w.out)
            w.append(UInt8(ascii: "}"))
        }
        w.append(UInt8(ascii: "]"))
        w.key("status"); w.string(status.rawValue)
        w.append(UInt8(ascii: "}"))
    }
}
