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
            let editLog = try EditLog.open(at: log.db, readonly: true)
            let f = try editLog.show(globalId: globalId)
            if output.json { out(f.serialized()); return }
            out("\(short(f["layer"] ?? .null)) \(short(f["globalId"] ?? .null, 40))\(f["deleted"]?.boolValue == true ? "  (deleted)" : "")")
            let attrs = f["attributes"]?.objectValue ?? [:]
            out(table(["field", "value"], attrs.keys.sorted().map { [$0, short(attrs[$0]!, 60)] }))
            if let g = f["geometry"], !g.isNull { out("geometry: \(short(g, 100))") }
            for a in f["attachments"]?.arrayValue ?? [] {
                out("attachment \(short(a["globalId"] ?? .null, 40)) \(short(a["name"] ?? .null)) \(short(a["contentType"] ?? .null)) \(a["size"]?.intValue ?? 0) bytes sha256 \(short(a["sha256"] ?? .null, 16))")
            }
        }
    }
}
