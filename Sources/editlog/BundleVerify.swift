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
            // Attachments that never arrive are a failed check: the bundle alone cannot deliver them.
            let missing = c.missingBlobs.isEmpty ? nil : EditLogError(.invalidInput, "\(c.missingBlobs.count) blob(s) the events reference are not in the bundle "
                + "(\(c.missingBlobs.sorted().prefix(3).joined(separator: ", "))\(c.missingBlobs.count > 3 ? ", …" : "")): it imports only into a log that "
                + "already holds them", at: file)
            if json.json {
                out(JSONValue.object([
                    "ok": .bool(missing == nil), "manifest": m.json, "events": .int(Int64(c.eventCount)), "blobs": .int(Int64(c.blobs.count)),
                    "missingBlobs": .array(c.missingBlobs.sorted().map { .string($0) }),
                    "signer": c.signer.map { .string(Data($0).base64EncodedString()) } ?? .null, "trusted": .bool(!trust.isEmpty),
                ]).serialized())
                if let missing { throw missing }
                return
            }
            out("\(missing == nil ? "ok" : "incomplete"): \(c.eventCount) events (positions after \(m.fromPosition) up to \(m.toPosition)) from log \(m.originLogId), chain checked; \(c.blobs.count) \(c.blobs.count == 1 ? "blob" : "blobs"); checksums match")
            if let s = c.signer { out("signed by \(Data(s).base64EncodedString())\(trust.isEmpty ? " (no --trust given: not checked against trusted keys)" : ", a trusted key")") } else { out("not signed") }
            if let missing { throw missing }
        }
    }
}
