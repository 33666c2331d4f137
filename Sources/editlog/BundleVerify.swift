import ArgumentParser
import EditLog
import Foundation

struct BundleVerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check a bundle: container, checksums, the chain of its events, blob hashes and the signature.",
        discussion: "With --trust, the bundle must be signed by one of the given public keys (exit 66 otherwise).")

    @Argument(help: "The bundle file.")
    var file: String

    @Option(name: .long, help: "A trusted public key file (editlog keys generate); repeat for several.")
    var trust: [String] = []

    @OptionGroup var json: JSONFlag

    func run() throws {
        try handleErrors {
            let bar = ProgressBar(label: "verify")
            let c: BundleContents
            do { c = try EditLog.verifyBundle(at: file, trust: try trustedKeys(trust), progress: bar.update) } catch { bar.finish(); throw error }
            bar.finish()
            let m = c.manifest
            if json.json {
                out(JSONValue.object([
                    "ok": true, "manifest": m.json, "events": .int(Int64(c.eventCount)), "blobs": .int(Int64(c.blobs.count)),
                    "missingBlobs": .array(c.missingBlobs.sorted().map { .string($0) }),
                    "signer": c.signer.map { .string(Data($0).base64EncodedString()) } ?? .null, "trusted": .bool(!trust.isEmpty),
                ]).serialized())
                return
            }
            out("ok: \(c.eventCount) events (positions after \(m.fromPosition) up to \(m.toPosition)) from log \(m.originLogId), chain checked; \(c.blobs.count) blobs; checksums match")
            if let s = c.signer { out("signed by \(Data(s).base64EncodedString())\(trust.isEmpty ? " (no --trust given: not checked against trusted keys)" : ", a trusted key")") } else { out("not signed") }
            if !c.missingBlobs.isEmpty { out("\(c.missingBlobs.count) referenced blobs are not in the bundle (the importing log must have them)") }
        }
    }
}
