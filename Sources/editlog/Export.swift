import ArgumentParser
import EditLog

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Write the live layers and tables: .sqlite, .gpkg, .geojson or .csv.")

    @OptionGroup var log: LogOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var json: JSONFlag

    func run() throws {
        try handleErrors {
            let editLog = try log.open(readonly: true)
            let bar = ProgressBar(label: "export")
            let summary = try editLog.export(to: output.out, layers: output.layer, overwrite: output.force, progress: bar.update)
            bar.finish()
            printSummary(summary, json: json.json)
        }
    }
}
