import EditLog
import Foundation
import Testing

/// `diff`'s text prints every date field (a pop-up's and editor tracking's) in the one human form; `--json` and
/// `--format geojson` keep Esri epoch milliseconds.
@Suite struct DiffTextDatesTests {}

extension DiffTextDatesTests {
    @Suite(.tags(.process)) struct ProcessTests {
        @Test func dateFieldsAreHumanInTextAndMillisecondsInJSON() throws {
            guard FileManager.default.isExecutableFile(atPath: CLI.binary) else { Issue.record("no binary at \(CLI.binary)"); return }
            let tmp = TempPath()
            _ = try AuditViewsTests.fullLog(tmp.path)
            // s-0602 re-dates inspection 148113B4 (CollectedDate), and its commit moves the inspection's EditDate.
            let inspection = "{148113B4-DDCF-4003-8627-41EC08AC784F}"
            let commit = try AuditViewsTests.position(tmp.path, "SELECT position FROM events WHERE session = 's-0602' AND type = 'SessionCommitted'")
            let window = ["diff", tmp.path, "\(commit - 1)", "\(commit)", "--layer", "Inspections"]

            let json = try CLI.run(window + ["--json"])
            #expect(json.status == 0, "\(json.stderr)")
            let change = try #require(try JSONParser.parse(json.stdout)["changes"]?.arrayValue?.first { $0["globalId"] == .string(inspection) })
            var dates: [String: (old: Int64, new: Int64)] = [:]
            for field in ["CollectedDate", "EditDate"] {
                let f = try #require(change["fields"]?[field], "\(field) not in the diff: \(change)")
                let old = try #require(f["old"]?.intValue, "\(field)'s old value is not epoch milliseconds: \(f)")
                let new = try #require(f["new"]?.intValue, "\(field)'s new value is not epoch milliseconds: \(f)")
                dates[field] = (old, new)
            }
            #expect(dates["CollectedDate"]?.new == 1_780_930_800_000)
            let geojson = try JSONParser.parse(try CLI.run(window + ["--format", "geojson"]).stdout)
            let feature = try #require(geojson["features"]?.arrayValue?.first { $0["id"] == .string(inspection) })
            #expect(feature["properties"]?["fields"]?["CollectedDate"]?["new"]?.intValue == 1_780_930_800_000)

            let text = try CLI.run(window)
            #expect(text.status == 0, "\(text.stderr)")
            for (field, d) in dates {
                let line = "      \(field): \(Timestamp.human(milliseconds: d.old)) → \(Timestamp.human(milliseconds: d.new))  ("
                #expect(text.stdout.contains(line), "no \"\(line)\" in\n\(text.stdout)")
            }
            #expect(text.stdout.range(of: #"\d{13}"#, options: .regularExpression) == nil, "epoch milliseconds in the text:\n\(text.stdout)")
        }
    }
}
