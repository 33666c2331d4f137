import Foundation
import Testing

/// "One fact, one home", checked on the sources: a merge decision's flags are read and set only by the merge
/// module (the engine, the fold and the standalone decisions' factories), and only the store and the write unit
/// hold an `Appender`. A new reader or writer elsewhere fails here, naming its file and line.
@Suite struct OneHomeTests {
    static let flags = ["skipFields", "asUpdate", "skipDelete", "keepTracking", "takeCreator", "keepTrackingFields", "revive",
                        "skipAttachments", "reviveAttachments", "cascadeOf", "deleteAgain", "detachAttachments"]

    /// Every Swift source under `Sources/`, as (path from the package root, lines).
    static func sources() throws -> [(path: String, lines: [Substring])] {
        let root = Paths.root + "/Sources"
        let files = try #require(FileManager.default.subpathsOfDirectory(atPath: root) as [String]?)
        return try files.filter { $0.hasSuffix(".swift") }.sorted().map { f in
            ("Sources/" + f, try String(contentsOfFile: root + "/" + f, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false))
        }
    }

    /// A flag accessed on a value (`d.revive`, `kept.cascadeOf`); an enum case of the same name (`== .deleteAgain`,
    /// `case .deleteAgain`) follows a space or a comma and does not count.
    @Test func decisionFlagsAreReadOnlyInTheMergeModule() throws {
        let pattern = try Regex("[A-Za-z0-9_)\\]]\\.(" + Self.flags.joined(separator: "|") + ")\\b")
        var found: [String] = []
        for (path, lines) in try Self.sources() where !path.hasPrefix("Sources/EditLogMerge/") {
            for (i, line) in lines.enumerated() where line.contains(pattern) && !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                found.append("\(path):\(i + 1): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        #expect(found.isEmpty, "decision flags read outside EditLogMerge:\n\(found.joined(separator: "\n"))")
        // The check itself finds what it is for.
        #expect("kept.cascadeOf == nil".contains(pattern) && !"f.row == .deleteAgain".contains(pattern))
    }

    /// An event's payload is read in one place, its type's body (`Sources/EditLogCore/Events/`): no reader elsewhere
    /// indexes payload JSON, decodes a body of its own or builds a payload reader. (A whole payload may still be shown
    /// or exported, as `log` and bundles do.)
    @Test func onlyTheEventCodecReadsPayloads() throws {
        let pattern = try Regex(#"payload\??\[|payload\.(objectValue|arrayValue|stringValue|intValue)|EventBody\(|PayloadReader\("#)
        var found: [String] = []
        for (path, lines) in try Self.sources() where !path.hasPrefix("Sources/EditLogCore/Events/") {
            for (i, line) in lines.enumerated() where line.contains(pattern) && !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                found.append("\(path):\(i + 1): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        #expect(found.isEmpty, "payloads read outside their codec:\n\(found.joined(separator: "\n"))")
        // The check itself finds what it is for.
        #expect(#"e.payload["globalId"]"#.contains(pattern) && "try EventBody(e)".contains(pattern) && !"try e.body".contains(pattern))
    }

    @Test func onlyTheStoreAndTheWriteUnitHoldAnAppender() throws {
        let allowed = ["Sources/EditLogProjections/WriteUnit.swift"]
        var found: [String] = []
        for (path, lines) in try Self.sources() where !path.hasPrefix("Sources/EditLogStore/") && !allowed.contains(path) {
            for (i, line) in lines.enumerated() {
                let code = line.trimmingCharacters(in: .whitespaces)
                guard !code.hasPrefix("//"), code.contains("Appender") else { continue }
                found.append("\(path):\(i + 1): \(code)")
            }
        }
        #expect(found.isEmpty, "an Appender outside the store and the write unit:\n\(found.joined(separator: "\n"))")
    }

    /// SQL a file's code holds: a string literal that opens with a statement's keyword, a line of a multi-line literal
    /// that starts with one, or a GRDB call given `sql:`. Comment lines do not count.
    static func sqlLines(_ lines: [Substring]) throws -> [(line: Int, text: String)] {
        let keywords = "(SELECT|INSERT|UPDATE|DELETE|REPLACE|PRAGMA|CREATE|DROP|ALTER|WITH)\\b"
        let quoted = try Regex("\"\\s*" + keywords)
        let opening = try Regex("^\\s*" + keywords)
        let label = try Regex("\\bsql:")
        var found: [(line: Int, text: String)] = []
        var inLiteral = false
        for (i, line) in lines.enumerated() {
            let code = line.trimmingCharacters(in: .whitespaces)
            let fences = line.components(separatedBy: "\"\"\"").count - 1
            if inLiteral {
                if line.contains(opening) { found.append((i + 1, code)) }
            } else if !code.hasPrefix("//"), line.contains(quoted) || line.contains(label) {
                found.append((i + 1, code))
            }
            if fences % 2 == 1 { inLiteral.toggle() }
        }
        return found
    }

    /// The facade holds no SQL: every query lives in the module of its tables (the store's events and blobs, the
    /// projections, bundle exports) behind a method named for what it reads, which the facade calls.
    @Test func theFacadeHoldsNoSQL() throws {
        var found: [String] = []
        for (path, lines) in try Self.sources() where path.hasPrefix("Sources/EditLog/") {
            for hit in try Self.sqlLines(lines) { found.append("\(path):\(hit.line): \(hit.text)") }
        }
        #expect(found.isEmpty, "SQL in the facade (move it beside its tables):\n\(found.joined(separator: "\n"))")
        // The check itself finds what it is for, and leaves plain text alone.
        let sample: [Substring] = [
            "let n = try Int.fetchOne(db, sql: query)",
            "let q = \"SELECT COUNT(*) FROM events\"",
            "try db.execute(sql: \"\"\"",
            "    CREATE TABLE t (x)",
            "    \"\"\")",
            "let s = \"  delete the DELETED rows\"",
            "// \"SELECT\" in a comment",
            "let m = \"Selected \\(n) features\"",
        ]
        #expect(try Self.sqlLines(sample).map(\.line) == [1, 2, 3, 4])
    }
}

extension OneHomeTests {
    /// A measured figure: a time or a decimal size after a number, a ratio ("3x faster", "50 times slower", "a
    /// quarter slower", "twice as slow"), work saved ("157k fewer"), or a number beside the bench's log. A bound the
    /// bench states as a goal ("≤ 100 MB") is not a measurement; a setting in binary units ("16 MiB") is not either.
    static let measurement = #"\d[\d,.]*\s*(ms|µs|ns|MB|KB|GB)\b|\d[\d,.]*\s*(x|×|%)\s+(faster|slower|smaller|larger|fewer|more|less)\b"#
        + #"|\d[\d,.]*\s+times\s+(faster|slower|smaller|larger|as)\b|\d[\d,.]*[kM]?\s+fewer\b"#
        + #"|\b(a tenth|a fifth|a quarter|a third|half)\s+(slower|faster)\b|\btwice\s+as\s+(slow|fast)\b"#
        + #"|\d.*\bbench(mark)?'s\b|\bbench(mark)?'s\b.*\d"#

    /// The comment lines (and trailing comments) of a file that carry a measured figure.
    static func measurements(_ lines: [Substring]) throws -> [(line: Int, text: String)] {
        let figure = try Regex(measurement)
        let bound = try Regex(#"(≤|≥|<=|>=)\s*\d[\d,.]*"#)
        var found: [(line: Int, text: String)] = []
        for (i, line) in lines.enumerated() {
            let code = line.trimmingCharacters(in: .whitespaces)
            let comment: String
            if code.hasPrefix("//") { comment = code } else if let r = line.range(of: " // ") { comment = String(line[r.lowerBound...]) } else { continue }
            if comment.replacing(bound, with: "a bound").contains(figure) { found.append((i + 1, code)) }
        }
        return found
    }

    /// Comments say what and why; figures measured once go to `tools/BENCH-RESULTS.md`, where a later run can
    /// replace them, and never sit in the code as if they still held.
    @Test func noCommentCarriesAMeasurement() throws {
        var found: [String] = []
        for (path, lines) in try Self.sources() {
            for hit in try Self.measurements(lines) { found.append("\(path):\(hit.line): \(hit.text)") }
        }
        #expect(found.isEmpty, "comments carrying measurements (move the figures to tools/BENCH-RESULTS.md):\n\(found.joined(separator: "\n"))")
        // The check itself finds what it is for, and leaves goals, settings and code alone.
        let sample: [Substring] = [
            "    /// through the whole transaction: on the bench's 1.05M-event bundle, 157k fewer WAL writes",
            "        // made a history 50 times slower on the bench's log): its own history shows the re-point.",
            "        // chain scan a quarter slower (measured with tools/bench verify).",
            "    /// default, this drop wrote every freed page (150 MB at a million events) to the WAL as zeros.",
            "let t = 12 // took 3.5 ms",
            "/// Goals: ≤ 1 s and peak RSS ≤ 100 MB. No floor.",
            "/// a 16 MiB page cache instead of SQLite's 2 MiB.",
            "let limit = 100 // rows",
            "let s = \"150 MB\"",
        ]
        #expect(try Self.measurements(sample).map(\.line) == [1, 2, 3, 4, 5])
    }
}
