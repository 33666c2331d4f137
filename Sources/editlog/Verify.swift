import ArgumentParser
import EditLog
import EditLogHub
import Foundation

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check the hash chain, gap-free positions, append-only triggers, blobs, and that the projections equal a rebuild.",
        discussion: "Exits 69 and names the first bad position when anything is off. Keep the printed head hash elsewhere and pass it back with --expect-head to detect truncation.")

    @OptionGroup var log: LogOptions

    @Flag(name: .long, help: "Skip comparing the projections with a rebuild.")
    var skipProjections = false

    @Option(name: .long, help: "Fail unless the chain's head hash is this (hex), as recorded earlier.")
    var expectHead: String?

    @OptionGroup var output: JSONFlag

    func run() async throws {
        try await handleErrors {
            let bar = ProgressBar(label: "verify")
            var r = PostgresLocation.isPostgres(log.db)
                ? try await Self.verifyHub(try PostgresLocation(log.db), progress: bar.update)
                : try EditLog.verify(at: log.db, projections: !skipProjections, progress: bar.update)
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

extension Verify {
    /// A hub store on PostgreSQL: the chain over every stored row, gap-free positions, the head, and every blob
    /// against its name. Its projections live on the serve nodes, so none is compared here.
    static func verifyHub(_ location: PostgresLocation, progress: @escaping (Int64, Int64) -> Void) async throws(EditLogError) -> VerifyReport {
        let hub = try await PostgresEventStore.open(location)
        defer { hub.close() }
        var report = VerifyReport()
        let check = try await hub.checkChain(progress: progress)
        report.events = check.head.position
        report.headHash = Hex.encode(check.head.hash)
        if let problem = check.problem {
            report.problems.append(problem)
            report.firstBadPosition = check.firstBadPosition
            return report
        }
        do {
            report.blobs = try await hub.verifyBlobs()
        } catch where error.kind == .corrupt {
            report.problems.append(error.message)
        }
        return report
    }
}
