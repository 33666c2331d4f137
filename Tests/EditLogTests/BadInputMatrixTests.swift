import Crypto
import EditLog
import Foundation
import Testing

/// Issue 3's bad-input matrix: every input the tool reads, each bad case with its error class and message,
/// a non-zero exit, and a byte-identical log afterwards (or no log at all for `init`).
@Suite(.serialized) struct BadInputMatrixTests {
    struct Case: CustomStringConvertible, Sendable {
        var name: String
        var args: @Sendable (_ db: String, _ file: String) -> [String]
        var file: [UInt8]?
        var exit: Int32
        var message: String
        var description: String { name }
    }

    static let dir = Paths.trees
    static let tree = (try? Fixture.treeWithoutInspections()) ?? ""

    static func record(_ name: String, _ lines: [String], exit: Int32, _ message: String) -> Case {
        Case(name: name, args: { ["record", $0, $1] }, file: Array(lines.joined(separator: "\n").utf8), exit: exit, message: message)
    }
    static func edit(_ name: String, field: String, value: String, exit: Int32 = 66, _ message: String) -> Case {
        record(name, [#"{"op":"edit","layer":"Trees","globalId":"\#(tree)"}"#, #"{"op":"set","field":"\#(field)","value":\#(value)}"#], exit: exit, message)
    }
    static func initWith(_ name: String, service: String? = nil, webmap: String? = nil, rules: String? = nil, data: String? = nil, exit: Int32 = 65, _ message: String) -> Case {
        let content = service ?? webmap ?? rules ?? data ?? ""
        return Case(name: name, args: { db, file in
            var a = ["init", db + ".new", "--service", service == nil ? "\(dir)/service.json" : file]
            if webmap != nil { a += ["--webmap", file] }
            if rules != nil { a += ["--rules", file] }
            if data != nil { a += ["--data", "Trees=\(file)"] }
            return a
        }, file: Array(content.utf8), exit: exit, message: message)
    }

    static let cases: [Case] = [
        // Service, layer and web map definitions, rules, baseline.
        initWith("service: invalid JSON", service: "{\"layers\": [", "invalid JSON at byte"),
        initWith("service: wrong type", service: "[1,2,3]", "expected a JSON object"),
        initWith("service: fields not an array", service: #"{"layers":[{"id":0,"name":"A","fields":3}]}"#, "\"fields\" must be an array"),
        initWith("service: field without type", service: #"{"layers":[{"id":0,"name":"A","fields":[{"name":"x"}]}]}"#, "has no \"type\""),
        initWith("service: unknown domain type", service: #"{"layers":[{"id":0,"name":"A","fields":[{"name":"x","type":"esriFieldTypeString","domain":{"type":"magic"}}]}]}"#, "unknown domain type"),
        initWith("service: range min > max", service: #"{"layers":[{"id":0,"name":"A","fields":[{"name":"x","type":"esriFieldTypeDouble","domain":{"type":"range","range":[5,1]}}]}]}"#, "min 5.0 > max 1.0"),
        initWith("service: duplicate field", service: #"{"layers":[{"id":0,"name":"A","fields":[{"name":"x","type":"esriFieldTypeString"},{"name":"X","type":"esriFieldTypeString"}]}]}"#, "defined twice"),
        initWith("service: ArcGIS error response", service: #"{"error":{"code":400,"message":"Invalid token"}}"#, "Invalid token"),
        initWith("service: NaN", service: #"{"layers":[{"id":0,"name":"A","maxRecordCount":NaN}]}"#, "NaN"),
        initWith("webmap: not an object", webmap: "42", "a web map must be a JSON object"),
        initWith("webmap: no operationalLayers", webmap: "{}", "not a web map"),
        initWith("rules: unknown type", rules: #"{"rules":[{"type":"teleport"}]}"#, "unknown rule type \"teleport\""),
        initWith("rules: unknown layer", rules: #"{"rules":[{"type":"pointInPolygonLookup","layer":"Bushes","field":"x","polygonLayer":"Neighborhoods","polygonField":"Name"}]}"#, "unknown layer \"Bushes\""),
        initWith("rules: unknown field", rules: #"{"rules":[{"type":"pointInPolygonLookup","layer":"Trees","field":"Height","polygonLayer":"Neighborhoods","polygonField":"Name"}]}"#, "no field \"Height\""),
        initWith("rules: geocoder table missing", rules: #"{"rules":[{"type":"reverseGeocode","layer":"Trees","field":"Address","geocoder":{"type":"offlineTable","table":"nope.json"}}]}"#, exit: 68, "no such file"),
        initWith("baseline: unknown field", data: #"{"features":[{"attributes":{"GlobalID":"{00000000-0000-4000-8000-000000000001}","Height":3}}]}"#, "unknown field \"Height\""),
        initWith("baseline: outside coded domain", data: #"{"features":[{"attributes":{"GlobalID":"{00000000-0000-4000-8000-000000000001}","Condition":"Excellent"}}]}"#, exit: 66, "coded value domain"),
        initWith("baseline: no GlobalID", data: #"{"features":[{"attributes":{"Condition":"Good"}}]}"#, "no valid GlobalID"),
        initWith("baseline: geometry of the wrong shape", data: #"{"features":[{"attributes":{"GlobalID":"{00000000-0000-4000-8000-000000000001}"},"geometry":{"rings":[]}}]}"#, exit: 66, "a point needs"),
        // Scripts: JSON, types, names.
        record("script: invalid JSON", ["{\"op\":"], exit: 65, "line 1: invalid JSON"),
        record("script: wrong JSON type", [#"{"op":"set","field":5,"value":1}"#], exit: 65, "\"field\" must be a string"),
        record("script: unknown layer", [#"{"op":"edit","layer":"Bushes","globalId":"\#(tree)"}"#], exit: 65, "unknown layer \"Bushes\""),
        edit("script: unknown field", field: "Height", value: "1", exit: 65, "unknown field \"Height\""),
        record("script: unknown relationship", [#"{"op":"edit","layer":"Trees","globalId":"\#(tree)"}"#, #"{"op":"relate","relationship":"Tree_Owners","globalId":"\#(tree)"}"#], exit: 65, "no relationship \"Tree_Owners\""),
        record("script: unknown attachment", [#"{"op":"edit","layer":"Trees","globalId":"\#(tree)"}"#, #"{"op":"detach","attachmentId":"{00000000-0000-4000-8000-0000000000AA}"}"#], exit: 68, "does not exist on this feature"),
        record("script: unknown session", [#"{"op":"finish","session":"ghost"}"#], exit: 68, "no session \"ghost\""),
        // Values of every field type.
        edit("value: outside coded domain (string)", field: "Condition", value: "\"Excellent\"", "coded value domain"),
        edit("value: outside coded domain (smallint)", field: "Wires", value: "7", "coded value domain"),
        edit("value: outside range domain", field: "DBH", value: "200.5", "outside the range domain"),
        edit("value: string over length", field: "PlantedBy", value: "\"\(String(repeating: "x", count: 101))\"", "exceeds the field length 100"),
        edit("value: date out of range", field: "PlantedDate", value: "\"10000-01-01T00:00:00Z\"", "expected a date"),
        edit("value: date far out of range (ms)", field: "PlantedDate", value: "253402300800000", "out of range"),
        edit("value: date as nonsense", field: "PlantedDate", value: "\"last tuesday\"", "expected a date"),
        edit("value: NaN", field: "DBH", value: "NaN", exit: 65, "NaN is not a JSON number"),
        edit("value: Infinity", field: "DBH", value: "Infinity", exit: 65, "Infinity is not a JSON number"),
        edit("value: -Infinity", field: "DBH", value: "-Infinity", exit: 65, "Infinity is not a JSON number"),
        edit("value: overflow double", field: "DBH", value: "1e400", exit: 65, "out of range"),
        edit("value: smallint overflow", field: "Wires", value: "40000", "overflows esriFieldTypeSmallInteger"),
        edit("value: fraction into an integer", field: "Wires", value: "1.5", "expected an integer"),
        edit("value: number into a string", field: "PlantedBy", value: "12", "expected a string"),
        edit("value: string into a double", field: "DBH", value: "\"12\"", "expected a number"),
        edit("value: object into a string", field: "PlantedBy", value: "{\"a\":1}", "expected a string"),
        record("value: invalid UTF-8", [#"{"op":"edit","layer":"Trees","globalId":"\#(tree)"}"#, "{\"op\":\"set\",\"field\":\"PlantedBy\",\"value\":\"\u{01}BAD\"}"], exit: 65, "control character"),
        record("attachment: name with ..", [#"{"op":"edit","layer":"Trees","globalId":"\#(tree)"}"#, #"{"op":"attach","attachmentId":"{00000000-0000-4000-8000-0000000000AB}","name":"../../etc/passwd","contentType":"image/jpeg","dataBase64":"AAEC"}"#], exit: 66, "attachment name"),
        record("attachment: name with /", [#"{"op":"edit","layer":"Trees","globalId":"\#(tree)"}"#, #"{"op":"attach","attachmentId":"{00000000-0000-4000-8000-0000000000AB}","name":"a/b.jpg","contentType":"image/jpeg","dataBase64":"AAEC"}"#], exit: 66, "path separator"),
        // CLI arguments.
        Case(name: "cli: missing argument", args: { db, _ in ["show", db] }, file: nil, exit: 64, message: "Missing expected argument"),
        Case(name: "cli: unknown flag", args: { db, _ in ["verify", db, "--frobnicate"] }, file: nil, exit: 64, message: "Unknown option"),
        Case(name: "cli: bad --since", args: { db, _ in ["log", db, "--since", "soon"] }, file: nil, exit: 64, message: "--since"),
        Case(name: "cli: --since after --until", args: { db, _ in ["log", db, "--since", "2026-02-01T00:00:00Z", "--until", "2026-01-01T00:00:00Z"] }, file: nil, exit: 64, message: "earlier than --until"),
        Case(name: "cli: bad --status", args: { db, _ in ["sessions", db, "--status", "sleeping"] }, file: nil, exit: 64, message: "--status must be"),
        Case(name: "cli: init without --service", args: { db, _ in ["init", db + ".new"] }, file: nil, exit: 64, message: "--service is required"),
        Case(name: "cli: script is a directory", args: { db, _ in ["record", db, NSTemporaryDirectory()] }, file: nil, exit: 65, message: "is a directory"),
        Case(name: "cli: missing script", args: { db, _ in ["record", db, "/nonexistent.ndjson"] }, file: nil, exit: 68, message: "no such file"),
    ]
}

extension BadInputMatrixTests {
    @Suite(.tags(.process)) struct ProcessTests {
        /// The main database file's bytes plus every table's rows: a failed command may leave SQLite's WAL header
        /// touched (any reader does), but never a committed change.
        func fileDigest(_ path: String) throws -> String {
            var h = SHA256()
            h.update(data: FileManager.default.contents(atPath: path) ?? Data())
            let log = try EditLog.open(at: path, readonly: true)
            defer { log.close() }
            var events = SHA256()
            try log.events(LogFilter()) { events.update(data: Array($0.json.serialized().utf8)) }
            return Hex.encode(h.finalize()) + Hex.encode(events.finalize()) + (try log.digestOfProjections())
        }

        @Test func everyBadInputIsRejectedCleanlyAndWritesNothing() throws {
            let tmp = TempPath()
            let log = try Fixture.treesLog(at: tmp.path)
            try RawLog.writeWithoutTransaction(log.path) { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            log.close()
            let before = try fileDigest(tmp.path)
            var checked = 0
            for c in BadInputMatrixTests.cases {
                let file = TempPath("input")
                if let bytes = c.file { try Data(bytes).write(to: URL(fileURLWithPath: file.path)) }
                let r = try CLI.run(c.args(tmp.path, file.path))
                #expect(r.status == c.exit, "\(c.name): exit \(r.status), stderr \(r.stderr)")
                #expect(r.stderr.contains(c.message), "\(c.name): \(r.stderr)")
                #expect(!FileManager.default.fileExists(atPath: tmp.path + ".new"), "\(c.name): init left a file")
                #expect(try fileDigest(tmp.path) == before, "\(c.name): the log changed")
                checked += 1
            }
            #expect(checked >= 50)
            #expect(try EditLog.open(at: tmp.path).verify().ok)
        }

        @Test func invalidUTF8AndAHundredMegabyteLine() throws {
            let tmp = TempPath()
            let log = try Fixture.treesLog(at: tmp.path)
            log.close()
            let file = TempPath("bin")
            var bytes = Array("{\"op\":\"set\",\"field\":\"PlantedBy\",\"value\":\"".utf8) + [0xFF, 0xFE] + Array("\"}".utf8)
            try Data(bytes).write(to: URL(fileURLWithPath: file.path))
            var r = try CLI.run("record", tmp.path, file.path)
            #expect(r.status == 65 && r.stderr.contains("not valid UTF-8"), "\(r.stderr)")
            try Data(Array("{\"layers\":[{\"id\":0,\"name\":\"".utf8) + [0xC0, 0xAF] + Array("\"}]}".utf8)).write(to: URL(fileURLWithPath: file.path))
            r = try CLI.run("init", tmp.path + ".new", "--service", file.path)
            #expect(r.status == 65 && r.stderr.contains("not valid UTF-8"), "\(r.stderr)")
            // A 100 MB line: refused by size, without parsing it.
            bytes = Array("{\"op\":\"set\",\"field\":\"Notes\",\"value\":\"".utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: 100 << 20) + Array("\"}".utf8)
            try Data(bytes).write(to: URL(fileURLWithPath: file.path))
            r = try CLI.run("record", tmp.path, file.path)
            #expect(r.status == 65 && r.stderr.contains("the limit is"), "\(r.stderr)")
            #expect(try EditLog.open(at: tmp.path).eventCount() == 1 + 45 + 12 + 240 + 150)
        }
    }
}
