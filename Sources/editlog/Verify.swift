import ArgumentParser
import EditLog
import Foundation

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check the hash chain, gap-free positions, append-only triggers, blobs, and that the projections equal a rebuild.",
        discussion: "Exits 69 and names the first bad position when anything is off. Keep the printed head hash elsewhere and pass it back with --expect-head to detect truncation.")

    @OptionGroup var log: LogOptions

    @Flag(name: .long, help: "Skip comparing the projections with a rebuild.")
    var skipProjections = false

    @Option(name: .long, help: "Fail unless the chain's head hash is this (hex), as recorded earlier.")
    var expectHead: String?

    @OptionGroup var output: JSONFlag

    func run() throws {
        try handleErrors {
            let bar = ProgressBar(label: "verify")
            var r = try EditLog.verify(at: log.db, projections: !skipProjections, progress: bar.update)
            bar.finish()
            if let h = expectHead, h.lowercased() != r.headHash {
                r.problems.append("head hash is \(r.headHash), expected \(h.lowercased()): the log was truncated or replaced")
            }
            if output.json {
                out(r.json.serialized())
            } else if r.ok {
                out("ok: \(r.events) events, chain head \(r.headHash), \(r.blobs) \(r.blobs == 1 ? "blob" : "blobs")\(r.projectionsChecked ? ", projections equal a rebuild" : "")")
            } else {
                for p in r.problems { out("FAIL \(p)") }
            }
            if !r.ok {
                throw EditLogError(.corrupt, "verification failed\(r.firstBadPosition.map { " at position \($0)" } ?? ""): \(r.problems.first ?? "")")
            }
        }
    }
}
