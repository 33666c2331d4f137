import EditLog
import Foundation
import GRDB
import Testing

/// A long-lived handle (which may cache stream versions and the chain head between its own transactions)
/// and another process recording on the same log in between: the handle must see what the other wrote.
@Suite(.serialized) struct InterleavedWritersTests {}

extension InterleavedWritersTests {
    @Suite(.tags(.process)) struct ProcessTests {
        @Test func aHandleAndAnotherProcessInterleaveRecordsOnOneFeature() throws {
            let tmp = TempPath()
            let log = try Fixture.treesLog(at: tmp.path)
            let trees = try Fixture.globalIds("Trees")
            let scripts = TempPath("scripts")
            try FileManager.default.createDirectory(atPath: scripts.path, withIntermediateDirectories: true)
            var expectedDBH: [String: Double] = [:]
            for round in 0..<6 {
                let tree = trees[round % 2]  // the same two streams, written alternately by both writers
                // This process, through the long-lived handle.
                try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)","session":"h\#(round)"}"#,
                            #"{"op":"set","field":"DBH","value":\#(10 + round)}"#, #"{"op":"finish"}"#)
                expectedDBH[tree] = Double(10 + round)
                // Another process, on the same file.
                let other = trees[(round + 1) % 2]
                let file = scripts.path + "/r\(round).ndjson"
                try """
                    {"op":"edit","layer":"Trees","globalId":"\(other)","session":"p\(round)","actor":"other","device":"cli"}
                    {"op":"set","field":"DBH","value":\(50 + round),"actor":"other","session":"p\(round)"}
                    {"op":"finish","actor":"other","session":"p\(round)"}

                    """.write(toFile: file, atomically: true, encoding: .utf8)
                let r = try CLI.run("record", tmp.path, file)
                #expect(r.status == 0, "round \(round): \(r.stderr)")
                expectedDBH[other] = Double(50 + round)
            }
            // One more through the handle after the other process's last write: versions and head must be fresh.
            let last = try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(trees[0])","session":"final"}"#,
                                   #"{"op":"set","field":"DBH","value":99}"#, #"{"op":"finish"}"#)
            expectedDBH[trees[0]] = 99
            #expect(!last.isEmpty)
            // Gap-free positions, per-stream versions without holes, a whole chain, projections equal a rebuild.
            let report = try log.verify()
            #expect(report.ok, "\(report.problems)")
            let versions = try RawLog.read(tmp.path) { db in
                try Row.fetchAll(db, sql: "SELECT stream, COUNT(*), MAX(stream_version) FROM events GROUP BY stream").map { ($0[1] as Int64, $0[2] as Int64) }
            }
            #expect(versions.allSatisfy { $0.0 == $0.1 })
            for (tree, dbh) in expectedDBH { #expect(try log.attributes(tree)["DBH"] == .double(dbh), "\(tree)") }
        }
    }
}
