import Foundation

/// Parses NDJSON scripts. Strict: unknown ops or keys and wrong JSON types are errors naming the line.
public struct ScriptParser {
    public static let maxLineBytes = 64 << 20

    private var actor: String
    private var device: String
    private var at: String?

    public init(defaultActor: String = "unknown", defaultDevice: String = "unknown") {
        actor = defaultActor
        device = defaultDevice
    }

    /// Parses a whole script; the first bad line throws with `line N:`.
    public static func parse(_ bytes: [UInt8], defaultActor: String = "unknown", defaultDevice: String = "unknown") throws(EditLogError) -> [ScriptCommand] {
        var p = ScriptParser(defaultActor: defaultActor, defaultDevice: defaultDevice)
        var out: [ScriptCommand] = []
        var lineNo = 0
        var start = 0
        var i = 0
        while i <= bytes.count {
            if i == bytes.count || bytes[i] == 0x0A {
                lineNo += 1
                var end = i
                if end > start, bytes[end - 1] == 0x0D { end -= 1 }
                let slice = bytes[start..<end]
                if !slice.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) {
                    do { if let c = try p.parseLine(slice, line: lineNo) { out.append(c) } } catch {
                        var e = error
                        e.scriptLine = lineNo  // its location names the line already
                        throw e
                    }
                }
                start = i + 1
            }
            i += 1
        }
        return out
    }

    public mutating func parseLine(_ bytes: ArraySlice<UInt8>, line: Int) throws(EditLogError) -> ScriptCommand? {
        func bad(_ msg: String) -> EditLogError { EditLogError(.invalidInput, msg, at: "line \(line)") }
        if bytes.count > ScriptParser.maxLineBytes { throw bad("line is \(bytes.count) bytes; the limit is \(ScriptParser.maxLineBytes)") }
        let json: JSONValue
        do { json = try JSONParser.parse(bytes) } catch { throw bad(error.description) }
        guard case .object(let o) = json else { throw bad("expected a JSON object, found \(json.typeName)") }
        let r = Reader(o, path: "line \(line)")
        guard let opName = try r.string("op") else { throw bad("missing \"op\"") }
        if let a = try r.string("actor") {
            guard !a.isEmpty, a.count <= 256 else { throw bad("\"actor\" must be 1 to 256 characters") }
            actor = a
        }
        if let d = try r.string("device") {
            guard !d.isEmpty, d.count <= 256 else { throw bad("\"device\" must be 1 to 256 characters") }
            device = d
        }
        if let t = try r.string("at") {
            guard let n = Timestamp.normalize(t) else { throw bad("\"at\" is not an ISO-8601 time with a zone (or a date, taken as 00:00 UTC): \"\(t.prefix(40))\"") }
            at = n
        }
        let session = try r.string("session")
        if let s = session, s.isEmpty || s.count > 128 { throw bad("\"session\" must be 1 to 128 characters") }
        let common: Set<String> = ["op", "actor", "device", "at", "session"]
        func allow(_ keys: Set<String>) throws(EditLogError) {
            for k in o.keys.sorted() where !common.contains(k) && !keys.contains(k) {
                throw bad("unknown key \"\(k)\" for op \"\(opName)\"")
            }
        }
        func req(_ k: String) throws(EditLogError) -> String {
            guard let v = try r.string(k) else { throw bad("op \"\(opName)\" needs \"\(k)\"") }
            return v
        }
        let op: ScriptCommand.Operation
        switch opName {
        case "create":
            try allow(["layer", "globalId", "geometry", "attributes", "parent"])
            var attributes: [String: JSONValue] = [:]
            if let a = o["attributes"], !a.isNull {
                guard let obj = a.objectValue else { throw bad("\"attributes\" must be an object, found \(a.typeName)") }
                attributes = obj
            }
            var parent: ScriptCommand.ParentRef?
            if let pv = o["parent"], !pv.isNull {
                guard case .object(let po) = pv else { throw bad("\"parent\" must be an object") }
                let pr = Reader(po, path: "line \(line): parent")
                var rel = try? pr.string("relationship")
                if rel == nil, let i = try? pr.int("relationship") { rel = String(i) }
                guard let rel, let g = try pr.string("globalId") else {
                    throw bad("\"parent\" needs \"relationship\" and \"globalId\"")
                }
                parent = .init(relationship: rel, globalId: g)
            }
            let geometry = o["geometry"].flatMap { $0.isNull ? nil : $0 }
            op = .create(layer: try layerRef(r, bad), globalId: try req("globalId"), geometry: geometry, attributes: attributes, parent: parent)
        case "edit":
            try allow(["layer", "globalId"])
            op = .edit(layer: try layerRef(r, bad), globalId: try req("globalId"))
        case "set":
            try allow(["field", "value"])
            guard let v = o["value"] else { throw bad("op \"set\" needs \"value\" (use null to clear)") }
            op = .set(field: try req("field"), value: v)
        case "relate":
            try allow(["relationship", "globalId"])
            var rel = try? r.string("relationship")
            if rel == nil, let i = try? r.int("relationship") { rel = String(i) }
            guard let rel else { throw bad("op \"relate\" needs \"relationship\"") }
            op = .relate(relationship: rel, globalId: try req("globalId"))
        case "attach":
            try allow(["attachmentId", "name", "contentType", "dataBase64", "preferredSize"])
            let b64 = try req("dataBase64")
            guard let data = Data(base64Encoded: b64) else { throw bad("\"dataBase64\" is not valid base64") }
            let size = try r.string("preferredSize") ?? "actual"
            guard ["small", "medium", "large", "actual"].contains(size) else {
                throw bad("\"preferredSize\" must be small, medium, large or actual, found \"\(size.prefix(20))\"")
            }
            op = .attach(attachmentId: try req("attachmentId"), name: try req("name"), contentType: try req("contentType"), data: Array(data), preferredSize: size)
        case "renameAttachment":
            try allow(["attachmentId", "name"])
            op = .renameAttachment(attachmentId: try req("attachmentId"), name: try req("name"))
        case "detach":
            try allow(["attachmentId"])
            op = .detach(attachmentId: try req("attachmentId"))
        case "finish": try allow([]); op = .finish
        case "cancel": try allow([]); op = .cancel
        case "delete":
            try allow(["layer", "globalId"])
            op = .delete(layer: try layerRef(r, bad), globalId: try req("globalId"))
        case "resume":
            try allow([])
            guard session != nil else { throw bad("op \"resume\" needs \"session\"") }
            op = .resume
        case "abandon":
            try allow([])
            guard session != nil else { throw bad("op \"abandon\" needs \"session\"") }
            op = .abandon
        default:
            throw bad("unknown op \"\(opName.prefix(40))\"; expected create, edit, set, relate, attach, renameAttachment, detach, finish, cancel, delete, resume or abandon")
        }
        return ScriptCommand(line: line, op: op, actor: actor, device: device, at: at, session: session)
    }

    private func layerRef(_ r: Reader, _ bad: (String) -> EditLogError) throws(EditLogError) -> String {
        if let s = try? r.string("layer") { return s }
        if let i = try? r.int("layer") { return String(i) }
        throw bad("needs \"layer\" (a layer name or id)")
    }
}
