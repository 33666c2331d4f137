import ArgumentParser
import EditLog
import Foundation

struct BundleInspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "A bundle's manifest and its events counted per layer, type and actor, without importing it.",
        discussion: "The whole bundle is read and checked as verify does; a problem is an error.")

    @Argument(help: "The bundle file.")
    var file: String

    @OptionGroup var json: JSONFlag

    func run() throws {
        try handleErrors {
            let bar = ProgressBar(label: "inspect")
            let i: BundleInspection
            do { i = try EditLog.inspectBundle(at: file, progress: bar.update) } catch { bar.finish(); throw error }
            bar.finish()
            if json.json {
                out(i.json.serialized())
                return
            }
            let m = i.contents.manifest
            out("bundle \(file) (\(i.bytes) bytes), format \(m.formatVersion)")
            out("from log \(m.originLogId), schema \(m.schemaFingerprint)")
            out("positions after \(m.fromPosition) up to \(m.toPosition) (since \(m.since ?? "-"))\(m.layers.map { ", layers " + $0.joined(separator: ", ") } ?? "")")
            out("created \(m.createdAt) by \(m.creator)")
            out("\(m.eventCount) events, \(m.blobCount) \(m.blobCount == 1 ? "blob" : "blobs") (\(m.blobBytes) bytes)\(i.contents.signer.map { ", signed by " + Data($0).base64EncodedString() } ?? ", not signed")")
            for m in i.contents.missingBlobs.sorted() { out("referenced but not in the bundle: blob \(m)") }
            for (title, counts) in [("layer", i.byLayer), ("type", i.byType), ("actor", i.byActor)] where !counts.isEmpty {
                out("")
                out(table([title, "events"], counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map { [$0.key, String($0.value)] }))
            }
        }
    }
}
