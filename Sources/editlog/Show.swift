import ArgumentParser
import EditLog

struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show one feature by GlobalID, with its attachments (also after deletion).")

    @OptionGroup var log: LogOptions

    @Argument(help: "The feature's GlobalID.")
    var globalId: String

    @OptionGroup var output: JSONFlag

    func run() throws {
        try handleErrors {
            let editLog = try log.open(readonly: true)
            let f = try editLog.show(globalId: globalId)
            if output.json { out(f.serialized()); return }
            out("\(short(f["layer"] ?? .null)) \(short(f["globalId"] ?? .null, 40))\(f["deleted"]?.boolValue == true ? "  (deleted)" : "")")
            let attrs = f["attributes"]?.objectValue ?? [:]
            let layer = f["layer"]?.stringValue.flatMap(editLog.schema.layer)
            // The conflict behind a field's value: this log's latest decision on it, else another log's (`conflicts show
            // ID` has it whole).
            let own = editLog.logId
            func described(_ c: JSONValue) -> String {
                let status = c["status"]?.stringValue ?? "", winner = c["winner"]?.stringValue ?? ""
                let decidedIn = c["decidedIn"]?.stringValue ?? own
                return "\(c["id"]?.stringValue ?? "") (\(winner == "open" ? status : "\(status); the policy kept \(winner)")"
                    + (decidedIn == own ? ")" : ", decided in log \(decidedIn))")
            }
            // A conflict stands behind a field's value when nothing wrote the field after the event it decided (the
            // decided event follows its decision), or when the value is its resolution (blame names it). Of several,
            // the one blame names, else this log's own decision (another log's, carried in a bundle, describes that
            // log's values), else the latest.
            var writers: [String: (position: Int64, conflict: String?)] = [:]
            for b in try editLog.blame(globalId: globalId).fields {
                writers[b.field == "@geometry" ? MergeEngine.geometryField : b.field] = (b.position, b.conflict)
            }
            var behind: [String: (rank: (Int, Int, Int64), text: String)] = [:]
            for c in f["conflicts"]?.arrayValue ?? [] {
                guard let field = c["field"]?.stringValue, let id = c["id"]?.stringValue, let writer = writers[field] else { continue }
                let position = c["position"]?.intValue ?? 0
                let named = writer.conflict == id
                guard named || writer.position <= position + 1 else { continue }
                let rank = (named ? 1 : 0, (c["decidedIn"]?.stringValue ?? own) == own ? 1 : 0, position)
                if behind[field].map({ $0.rank < rank }) ?? true { behind[field] = (rank, described(c)) }
            }
            if behind.isEmpty {
                out(table(["field", "value"], attrs.keys.sorted().map { [$0, fieldText(attrs[$0]!, layer?.field($0), 60)] }))
            } else {
                out(table(["field", "value", "conflict"], attrs.keys.sorted().map { [$0, fieldText(attrs[$0]!, layer?.field($0), 60), behind[$0]?.text ?? ""] }))
            }
            for c in f["conflicts"]?.arrayValue ?? [] where c["field"]?.stringValue == nil {
                out("\(c["kind"]?.stringValue ?? "") conflict \(described(c)) at position \(c["position"]?.intValue ?? 0)")
            }
            if let g = f["geometry"], !g.isNull { out("geometry: \(short(g, 100))" + (behind[MergeEngine.geometryField].map { "  conflict \($0.text)" } ?? "")) }
            for a in f["attachments"]?.arrayValue ?? [] {
                out("attachment \(short(a["globalId"] ?? .null, 40)) \(short(a["name"] ?? .null)) \(short(a["contentType"] ?? .null)) \(a["size"]?.intValue ?? 0) bytes sha256 \(short(a["sha256"] ?? .null, 16))")
            }
        }
    }
}
