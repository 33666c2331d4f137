import ArgumentParser
import EditLog

struct Query: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a layer's live features: a table of their fields, or an Esri JSON feature set with --json.")

    @OptionGroup var log: LogOptions

    @Option(name: .long, help: "The layer or table (name or id).")
    var layer: String

    @OptionGroup var output: JSONFlag

    func run() throws {
        try handleErrors {
            let editLog = try log.open(readonly: true)
            let fs = try editLog.query(layer: layer)
            if output.json { out(fs.serialized()); return }
            let l = try editLog.layer(layer)
            let features = fs["features"]?.arrayValue ?? []
            let names = Array(l.attributeFields.prefix(5).map(\.name))
            var rows: [[String]] = []
            for f in features {
                let a = f["attributes"] ?? .null
                rows.append([short(a[l.objectIdField ?? ""] ?? .null), short(a[l.globalIdField ?? ""] ?? .null, 38)] + names.map { fieldText(a[$0] ?? .null, l.field($0), 24) })
            }
            out(table([l.objectIdField ?? "OID", l.globalIdField ?? "GlobalID"] + names, rows))
            out("\(features.count) features in \(l.name)")
        }
    }
}
