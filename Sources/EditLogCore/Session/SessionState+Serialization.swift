extension SessionState {
    /// `json.serialized()` written directly, without building the JSON tree (the projector writes one per
    /// session). Byte for byte the same canonical JSON: keys in UTF-8 order, as `JSONValue` writes them.
    public func serializedState() -> String {
        var out: [UInt8] = []
        out.reserveCapacity(256 + staged.count * 48 + attachmentsAdded.count * 200)
        func key(_ k: StaticString, first: Bool = false) {
            if !first { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            k.withUTF8Buffer { out.append(contentsOf: $0) }
            out.append(contentsOf: "\":".utf8)
        }
        func string(_ s: String) { JSONValue.writeString(s, to: &out) }
        func strings(_ pairs: [(String, String)]) {
            out.append(UInt8(ascii: "{"))
            for (i, (k, v)) in pairs.sorted(by: { JSONValue.keyOrder($0.0, $1.0) }).enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                string(k); out.append(UInt8(ascii: ":")); string(v)
            }
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "{"))
        key("actor", first: true); string(actor)
        key("attachmentsAdded")
        out.append(UInt8(ascii: "["))
        for (i, a) in attachmentsAdded.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "{"))
            key("attachmentId", first: true); string(a.attachmentId)
            key("contentType"); string(a.contentType)
            key("name"); string(a.name)
            key("preferredSize"); string(a.preferredSize)
            key("sha256"); string(a.sha256)
            key("size"); out.append(contentsOf: String(a.size).utf8)
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
        key("detaches")
        out.append(UInt8(ascii: "["))
        for (i, d) in detaches.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            string(d)
        }
        out.append(UInt8(ascii: "]"))
        key("device"); string(device)
        if let geometry { key("geometry"); geometry.write(to: &out) }
        key("globalId"); string(globalId)
        key("id"); string(id)
        key("kind"); string(kind.rawValue)
        key("layer"); out.append(contentsOf: String(layerId).utf8)
        if let parent {
            key("parent")
            out.append(UInt8(ascii: "{"))
            key("globalId", first: true); string(parent.globalId)
            key("relationship"); string(parent.relationship)
            out.append(UInt8(ascii: "}"))
        }
        key("relations"); strings(relations.map { (String($0.key), $0.value) })
        key("renames"); strings(renames.map { ($0.key, $0.value) })
        key("staged")
        out.append(UInt8(ascii: "["))
        for (i, s) in staged.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "{"))
            key("field", first: true); string(s.field)
            key("value"); s.value.write(to: &out)
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
        key("status"); string(status.rawValue)
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}
