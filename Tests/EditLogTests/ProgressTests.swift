import EditLog
import Foundation
import Testing

/// Progress bars of the long commands (replay, export, report, rebuild): drawn on stderr when it is a terminal,
/// nothing at all otherwise (under the tests stderr is a pipe).
@Suite(.serialized) struct ProgressTests {
    /// A copy of the demo log (rebuild writes to it).
    static func demoCopy() throws -> (path: String, dir: String, at: Int64) {
        let (demo, ends) = try GeoDiffPeerTests.demoLog()
        let dir = ReplayExportTests.tempDir()
        let path = dir + "/demo.sqlite"
        try FileManager.default.copyItem(atPath: demo, toPath: path)
        return (path, dir, try #require(ends["03-maintenance"]))
    }

    static func commands(_ path: String, _ dir: String, _ at: Int64) -> [[String]] {
        [["replay", path, "--as-of", "\(at)", "--out", dir + "/at.gpkg"],
         ["replay", path, "--as-of", "\(at)", "--out", dir + "/at.sqlite", "--no-checkpoints"],
         ["export", path, "--out", dir + "/live.gpkg"],
         ["export", path, "--out", dir + "/live.csv/"],
         ["report", path, "--out", dir + "/report.html"],
         ["rebuild", path]]
    }

    static let script: String? = ["/usr/bin/script", "/bin/script"].first { FileManager.default.isExecutableFile(atPath: $0) }
}

extension ProgressTests {
    @Suite(.tags(.process)) struct ProcessTests {
        @Test func longCommandsPrintNothingExtraOnStderrWhenItIsNotATerminal() throws {
            let (path, dir, at) = try ProgressTests.demoCopy()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            for args in ProgressTests.commands(path, dir, at) {
                let r = try CLI.run(args)
                #expect(r.status == 0, "\(args): \(r.stderr)")
                #expect(r.stderr.isEmpty, "\(args[0]) printed on a stderr that is not a terminal: \(r.stderr.debugDescription)")
                #expect(!r.stdout.contains("\r") && !r.stdout.contains("\u{1B}"), "\(args[0]): \(r.stdout.debugDescription)")
            }
        }

        // util-linux `script` runs the command on a pseudo-terminal.
        @Test(.enabled(if: script != nil, "util-linux script is not installed: no pseudo-terminal to draw on"))
        func onATerminalEachPhaseDrawsABarAndClearsIt() throws {
            let (path, dir, at) = try ProgressTests.demoCopy()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let labels: [String: [String]] = ["replay": ["replay [", "write ["], "export": ["export ["], "report": ["report ["], "rebuild": ["rebuild ["]]
            for args in ProgressTests.commands(path, dir, at) {
                for f in ["at.gpkg", "at.sqlite", "live.gpkg"] { try? FileManager.default.removeItem(atPath: dir + "/" + f) }
                let line = ([CLI.binary] + args).map { "'\($0)'" }.joined(separator: " ")
                // stdout to a file: what the terminal shows is then stderr alone.
                let r = try CLI.sh("\(ProgressTests.script!) -qec \"\(line) > '\(dir)/stdout.txt'\" /dev/null")
                #expect(r.status == 0, "\(args): \(r.stdout)")
                for label in labels[args[0]]! {
                    #expect(r.stdout.contains("\r\(label)"), "\(args[0]) drew no \(label)…] bar: \(r.stdout.debugDescription)")
                }
                #expect(r.stdout.hasSuffix("\r\u{1B}[K"), "\(args[0]) leaves its bar on the terminal: \(r.stdout.debugDescription)")
            }
        }
    }
}
