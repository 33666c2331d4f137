import EditLog
import Foundation
import Testing

/// The JSON Schemas in `schemas/` describe what EditLog really reads and writes: the fixtures validate,
/// the schema and the parser reject the same script lines, and every event of a freshly recorded log validates.
@Suite struct SchemaFilesTests {
    static let root: String = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let schemas = root + "/schemas"
    static let trees = root + "/Fixtures/trees-of-portland"

    static let scriptLine = "script-line.schema.json"
    static let rules = "rules.schema.json"
    static let recordedEvent = "recorded-event.schema.json"

    static func validator() -> JSONSchemaValidator { JSONSchemaValidator(baseDirectory: schemas) }

    /// Every `*.json` under `schemas/`, relative to it, sorted.
    static func schemaFiles() -> [String] {
        let e = FileManager.default.enumerator(atPath: schemas)
        var out: [String] = []
        while let f = e?.nextObject() as? String { if f.hasSuffix(".json") { out.append(f) } }
        return out.sorted()
    }

    static func ndjson(in dir: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(".ndjson") }.sorted()
    }

    static let validScripts = ndjson(in: trees + "/scripts")
    static let invalidScripts = ndjson(in: trees + "/scripts/invalid").map { "invalid/" + $0 }

    /// The non-blank lines of a file, with 1-based line numbers (as ScriptParser counts them).
    static func lines(_ path: String) throws -> [(Int, String)] {
        let text = String(decoding: try InputFiles.bytes(path), as: UTF8.self)
        return text.split(separator: "\n", omittingEmptySubsequences: false).enumerated().compactMap { i, l in
            l.allSatisfy({ $0 == " " || $0 == "\t" || $0 == "\r" }) ? nil : (i + 1, String(l))
        }
    }

    // MARK: The schema files themselves

    @Test func everySchemaFileParsesAndUsesOnlySupportedKeywords() throws {
        let files = Self.schemaFiles()
        #expect(files.count == 7 + EventType.allCases.count, "schemas/: \(files)")
        let v = Self.validator()
        for f in files {
            do { try v.load(f) } catch { Issue.record("\(f): \(error)") }
        }
    }

    @Test func thereIsExactlyOneEventSchemaPerEventType() throws {
        let files = Set(try FileManager.default.contentsOfDirectory(atPath: Self.schemas + "/events"))
        let expected = Set(EventType.allCases.map { "\($0.rawValue).schema.json" })
        #expect(files.subtracting(expected).isEmpty, "event schemas of no EventType: \(files.subtracting(expected).sorted())")
        #expect(expected.subtracting(files).isEmpty, "EventTypes without a schema: \(expected.subtracting(files).sorted())")
        // The recorded-event schema lists every type and dispatches each payload to its schema.
        let doc = try InputFiles.json(Self.schemas + "/" + Self.recordedEvent)
        let listed = Set(doc["properties"]?["type"]?["enum"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        #expect(listed == Set(EventType.allCases.map(\.rawValue)))
        let refs = Set((doc["allOf"]?.arrayValue ?? []).compactMap { $0["then"]?["properties"]?["payload"]?["$ref"]?.stringValue })
        #expect(refs == Set(EventType.allCases.map { "events/\($0.rawValue).schema.json" }))
    }

    @Test func readmeHasALinePerSchemaFile() throws {
        let readme = String(decoding: try InputFiles.bytes(Self.schemas + "/README.md"), as: UTF8.self)
        for f in Self.schemaFiles() {
            #expect(readme.contains("- `\(f)`"), "schemas/README.md does not list \(f)")
        }
    }

    // MARK: The validator is strict and correct

    @Test(arguments: [
        #"{"type": "string", "format": "date"}"#,
        #"{"properties": {"a": {"minimun": 1}}}"#,
        #"{"$defs": {"x": {"patternProperties": {}}}}"#,
        #"{"allOf": [{"unevaluatedProperties": false}]}"#,
        #"{"then": {"type": "string"}}"#,
        #"{"type": "strnig"}"#,
        ##"{"$ref": "#/$defs/missing"}"##,
        #"{"$ref": "no-such-file.schema.json"}"#,
        #"{"$id": "https://example.com/x.json"}"#,
        #"{"pattern": "("}"#,
    ])
    func validatorRejectsUnsupportedOrBrokenSchemas(_ schema: String) throws {
        let v = Self.validator()
        #expect(throws: JSONSchemaValidator.SchemaError.self) {
            _ = try v.validate("x", schema: try JSONParser.parse(schema))
        }
    }

    @Test func validatorSemantics() throws {
        let v = Self.validator()
        func errors(_ instance: String, _ schema: String) throws -> [String] {
            try v.validate(try JSONParser.parse(instance), schema: try JSONParser.parse(schema))
        }
        #expect(try errors("3", #"{"type": "integer"}"#).isEmpty)
        #expect(try errors("3.0", #"{"type": "integer"}"#).isEmpty)
        #expect(try errors("3.5", #"{"type": "integer"}"#).count == 1)
        #expect(try errors("3", #"{"type": "number", "minimum": 4}"#).count == 1)
        #expect(try errors(#""ab""#, #"{"minLength": 3}"#).count == 1)
        #expect(try errors(#""abc""#, #"{"pattern": "^a"}"#).isEmpty)
        #expect(try errors(#""xabc""#, #"{"pattern": "^a"}"#).count == 1)
        #expect(try errors("1.0", #"{"enum": [1, "a"]}"#).isEmpty)
        #expect(try errors("null", #"{"const": false}"#).count == 1)
        #expect(try errors(#"{"a": 1, "b": 2}"#, #"{"properties": {"a": true}, "additionalProperties": false}"#) == [#"$: unknown key "b""#])
        #expect(try errors(#"{"a": {"b": [1, "x"]}}"#, #"{"properties": {"a": {"properties": {"b": {"items": {"type": "integer"}}}}}}"#)
            == [#"$.a.b[1]: expected integer, found string "x""#])
        #expect(try errors(#"{"a": 1}"#, #"{"required": ["a", "b"]}"#) == [#"$: missing "b""#])
        #expect(try errors("1", #"{"oneOf": [{"type": "integer"}, {"type": "number"}]}"#).count == 1)
        #expect(try errors("1.5", #"{"oneOf": [{"type": "integer"}, {"type": "number"}]}"#).isEmpty)
        #expect(try errors("true", #"{"anyOf": [{"type": "integer"}, {"type": "string"}]}"#).count == 1)
        #expect(try errors("5", #"{"if": {"type": "integer"}, "then": {"minimum": 10}, "else": {"type": "string"}}"#).count == 1)
        #expect(try errors("true", #"{"if": {"type": "integer"}, "then": {"minimum": 10}, "else": {"type": "string"}}"#).count == 1)
        #expect(try errors(#"{"x": "{ab}"}"#, ##"{"properties": {"x": {"$ref": "#/$defs/g"}}, "$defs": {"g": {"pattern": "^\\{[a-z]+\\}$"}}}"##).isEmpty)
        #expect(try errors(#""{0000}""#, #"{"$ref": "defs.schema.json#/$defs/globalId"}"#).count == 1)
        #expect(try errors(#""{0A1B2C3D-0000-4000-8000-00000000000A}""#, #"{"$ref": "defs.schema.json#/$defs/globalId"}"#).isEmpty)
    }

    // MARK: Scripts and rules

    /// The parameterized tests below would pass vacuously without their fixtures.
    @Test func fixturesArePresent() {
        #expect(Self.validScripts.count >= 8, "\(Self.validScripts)")
        #expect(Self.invalidScripts.count >= 10, "\(Self.invalidScripts)")
    }

    @Test(arguments: validScripts + invalidScripts)
    func fixtureScriptLinesValidate(_ script: String) throws {
        let path = Self.trees + "/scripts/" + script
        let v = Self.validator()
        let lines = try Self.lines(path)
        #expect(!lines.isEmpty)
        for (n, line) in lines {
            let errors = try v.validate(try JSONParser.parse(line), against: Self.scriptLine)
            #expect(errors.isEmpty, "\(script) line \(n): \(errors)")
        }
        // Syntactically valid for the parser too (the invalid scripts break rules, not syntax).
        #expect(try ScriptParser.parse(try InputFiles.bytes(path)).count == lines.count)
    }

    @Test func rulesFileValidates() throws {
        let v = Self.validator()
        let asWritten = try InputFiles.json(Self.trees + "/rules.json")
        #expect(try v.validate(asWritten, against: Self.rules) == [])
        // As recorded: the geocoder table inlined.
        let inlined = try InputFiles.rules(Self.trees + "/rules.json")
        #expect(try v.validate(inlined, against: Self.rules) == [])
        #expect(try v.validate(try InputFiles.json(Self.trees + "/addresses.json"), against: "address-table.schema.json") == [])
    }

    @Test func rulesSchemaRejectsBadRules() throws {
        let v = Self.validator()
        func errors(_ json: String) throws -> [String] { try v.validate(try JSONParser.parse(json), against: Self.rules) }
        #expect(try errors(#"{"rules": [{"type": "pointInPolygonLookup", "layer": "Trees", "field": "N", "polygonLayer": "P"}]}"#).count == 1)
        #expect(try errors(#"{"rules": [{"type": "nearest"}]}"#).count == 1)
        #expect(try errors(#"{"rules": [{"type": "reverseGeocode", "layer": "Trees", "field": "A", "geocoder": {"type": "offlineTable"}}]}"#).count == 1)
        #expect(try errors(#"{"rules": [{"type": "reverseGeocode", "layer": "Trees", "field": "A", "geocoder": {"type": "offlineTable", "table": "a.json", "addresses": []}}]}"#).count == 1)
        #expect(try errors(#"{"rules": [{"type": "reverseGeocode", "layer": "Trees", "field": "A", "geocoder": {"type": "offlineTable", "addresses": [{"x": 1, "y": 2}]}}]}"#).count == 1)
        #expect(try errors(#"{"rules": [{"type": "latestChildRollup", "relationship": "R", "parentLayer": "P", "childLayer": "C", "orderBy": "D", "fields": {}}]}"#).count == 1)
        #expect(try errors(#"{"rules": [{"type": "reverseGeocode", "layer": "Trees", "field": "A", "geocoder": {"type": "offlineTable", "addresses": []}}]}"#).isEmpty)
    }

    /// Lines the schema and `ScriptParser.parse` both reject.
    @Test(arguments: [
        #"{"op": "teleport", "layer": "Trees", "globalId": "{0A1B2C3D-0000-4000-8000-00000000000A}"}"#,
        #"{"op": "edit", "layer": "Trees", "globalId": "{0A1B2C3D-0000-4000-8000-00000000000A}", "colour": "red"}"#,
        #"{"op": "set", "field": "Condition"}"#,
        #"{"op": "attach", "attachmentId": "{0A1B2C3D-0000-4000-8000-00000000000A}", "name": "a.jpg", "contentType": "image/jpeg", "dataBase64": "QUJD", "preferredSize": "huge"}"#,
        #"{"layer": "Trees"}"#,
        #"{"op": null}"#,
        #"["op", "finish"]"#,
        #"{"op": "finish", "field": "Condition"}"#,
        #"{"op": "resume"}"#,
        #"{"op": "abandon", "session": null}"#,
        #"{"op": "edit", "layer": true, "globalId": "{0A1B2C3D-0000-4000-8000-00000000000A}"}"#,
        #"{"op": "edit", "layer": null, "globalId": "{0A1B2C3D-0000-4000-8000-00000000000A}"}"#,
        #"{"op": "delete", "layer": "Trees"}"#,
        #"{"op": "relate", "globalId": "{0A1B2C3D-0000-4000-8000-00000000000A}"}"#,
        #"{"op": "relate", "relationship": 1.5, "globalId": "{0A1B2C3D-0000-4000-8000-00000000000A}"}"#,
        #"{"op": "set", "field": 7, "value": 1}"#,
        #"{"op": "finish", "actor": ""}"#,
        #"{"op": "finish", "device": 12}"#,
        #"{"op": "finish", "session": ""}"#,
        #"{"op": "finish", "at": "2026-05-01T09:00:00"}"#,
        #"{"op": "finish", "at": "yesterday"}"#,
        #"{"op": "create", "layer": "Trees", "globalId": "{0A1B2C3D-0000-4000-8000-00000000000A}", "attributes": [1]}"#,
        #"{"op": "create", "layer": "Inspections", "globalId": "{0A1B2C3D-0000-4000-8000-00000000000A}", "parent": {"relationship": "Tree_Inspections"}}"#,
        #"{"op": "create", "layer": "Inspections", "globalId": "{0A1B2C3D-0000-4000-8000-00000000000A}", "parent": "Tree_Inspections"}"#,
        #"{"op": "attach", "attachmentId": "{0A1B2C3D-0000-4000-8000-00000000000A}", "name": "a.jpg", "contentType": "image/jpeg", "dataBase64": "not base64!"}"#,
        #"{"op": "attach", "attachmentId": "{0A1B2C3D-0000-4000-8000-00000000000A}", "name": "a.jpg", "dataBase64": "QUJD"}"#,
        #"{"op": "detach"}"#,
        #"{"op": "renameAttachment", "attachmentId": "{0A1B2C3D-0000-4000-8000-00000000000A}"}"#,
    ])
    func schemaAndParserRejectTheSameLines(_ line: String) throws {
        let errors = try Self.validator().validate(try JSONParser.parse(line), against: Self.scriptLine)
        #expect(!errors.isEmpty, "the schema accepts \(line)")
        #expect(throws: EditLogError.self, "ScriptParser accepts \(line)") { try ScriptParser.parse(Array(line.utf8)) }
    }

    /// Edge cases the schema and `ScriptParser.parse` both accept.
    @Test(arguments: [
        #"{"op": "edit", "layer": 0, "globalId": "{0A1B2C3D-0000-4000-8000-00000000000A}"}"#,
        #"{"op": "edit", "layer": 0.0, "globalId": "0a1b2c3d-0000-4000-8000-00000000000a", "actor": null, "device": null, "at": null, "session": null}"#,
        #"{"op": "relate", "relationship": 0, "globalId": "{0A1B2C3D-0000-4000-8000-00000000000A}"}"#,
        #"{"op": "set", "field": "Condition", "value": null}"#,
        #"{"op": "set", "field": "Notes", "value": {"any": ["json"]}}"#,
        #"{"op": "create", "layer": "Species", "globalId": "{0A1B2C3D-0000-4000-8000-00000000000A}", "geometry": null, "attributes": null, "parent": null}"#,
        #"{"op": "create", "layer": "Inspections", "globalId": "{0A1B2C3D-0000-4000-8000-00000000000A}", "parent": {"relationship": 1, "globalId": "{0A1B2C3D-0000-4000-8000-00000000000B}"}}"#,
        #"{"op": "attach", "attachmentId": "{0A1B2C3D-0000-4000-8000-00000000000A}", "name": "a.jpg", "contentType": "image/jpeg", "dataBase64": "QQ==", "preferredSize": null}"#,
        #"{"op": "attach", "attachmentId": "{0A1B2C3D-0000-4000-8000-00000000000A}", "name": "a.jpg", "contentType": "image/jpeg", "dataBase64": ""}"#,
        #"{"op": "finish", "at": "2026-05-01"}"#,
        #"{"op": "finish", "at": "2026-05-01 09:00+0200"}"#,
        #"{"op": "finish", "at": "2026-05-01T09:00:00.123456-07:00"}"#,
        #"{"op": "abandon", "session": "s-1", "actor": "maria.lopez"}"#,
    ])
    func schemaAndParserAcceptTheSameLines(_ line: String) throws {
        let errors = try Self.validator().validate(try JSONParser.parse(line), against: Self.scriptLine)
        #expect(errors.isEmpty, "\(line): \(errors)")
        #expect(throws: Never.self) { try ScriptParser.parse(Array(line.utf8)) }
    }

    // MARK: A recorded log

    /// Event types the fixture scripts do not produce, each with the reason. Empty: they produce every type.
    static let typesNotProduced: [EventType: String] = [
        .mergeDecided: "only imports record it; the Merge*Tests validate the merged logs' events",
        .conflictResolved: "only `conflicts resolve` records it; the Merge*Tests validate the merged logs' events",
        .syncPulled: "only `editlog sync` records it; SyncTests validates the synced logs' events",
        .syncPushed: "only `editlog sync` records it; SyncTests validates the synced logs' events",
        .replicaCreated: "only serve's createReplica records it; ServerReplicaTests validates the served log's events",
        .replicaSynchronized: "only serve's synchronizeReplica records it; ServerReplicaTests validates the served log's events",
        .replicaUnregistered: "only serve's unRegisterReplica records it; ServerReplicaTests validates the served log's events",
    ]

    @Test func everyRecordedEventValidates() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("editlog-schemas-\(UUID().uuidString).sqlite").path
        defer { for s in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + s) } }
        let dir = Self.trees
        var sets: [BaselineSet] = []
        for f in ["Species", "Neighborhoods", "Trees", "Inspections"] {
            sets.append(BaselineSet(name: "\(f).json", layer: nil, json: try InputFiles.json("\(dir)/baseline/\(f).json")))
        }
        let log = try EditLog.create(at: path, service: [("service.json", try InputFiles.json("\(dir)/service.json"))],
                                     webmap: try InputFiles.json("\(dir)/webmap.json"), rules: try InputFiles.rules("\(dir)/rules.json"),
                                     baseline: sets)
        defer { log.close() }
        #expect(Self.validScripts.count >= 8)
        for script in Self.validScripts {
            let bytes = try InputFiles.bytes("\(dir)/scripts/\(script)")
            _ = try log.record(try ScriptParser.parse(bytes), name: script, sha256: InputFiles.sha256(bytes))
        }
        // A schema change (a field added, a domain extended, a table with a relationship): a `SchemaChanged` event.
        var edits = try ServiceEdits.trees()
        edits.addString("Trees", "Notes")
        edits.addCode("Trees", "Condition", "Stump")
        edits.addStewardshipTable()
        #expect(try log.changeSchema(service: edits.documents, cause: Cause.schemaApply, source: "service.json", actor: "admin", device: "test").position != nil)

        let v = Self.validator()
        var seen: [EventType: Int] = [:]
        var firstOfType: [String: JSONValue] = [:]
        var count = 0
        var failures = 0
        try log.events(LogFilter()) { e in
            count += 1
            // What `editlog log --json` prints, read back.
            let line = try JSONParser.parse(e.json.serialized())
            let errors = try v.validate(line, against: Self.recordedEvent)
            if !errors.isEmpty {
                failures += 1
                if failures <= 20 { Issue.record("event \(e.position) \(e.type): \(errors)") }
            }
            if let t = e.eventType { seen[t, default: 0] += 1 } else { Issue.record("event \(e.position) has unknown type \(e.type)") }
            if firstOfType[e.type] == nil { firstOfType[e.type] = line }
            // Feature events name their stream after the payload's feature.
            if let l = e.payload["layer"]?.intValue, let g = e.payload["globalId"]?.stringValue, e.type != EventType.relationStaged.rawValue {
                #expect(e.stream == "\(l):\(g)", "event \(e.position) \(e.type): stream \(e.stream)")
            }
        }
        #expect(failures == 0, "\(failures) of \(count) events do not validate")
        #expect(count > 400)

        for t in EventType.allCases {
            if let reason = Self.typesNotProduced[t] {
                #expect(seen[t] == nil, "\(t.rawValue) is listed as not produced (\(reason)) but appeared \(seen[t] ?? 0) times")
            } else {
                #expect(seen[t] != nil, "no \(t.rawValue) event was recorded")
            }
        }

        // The payload really is checked by type: an unknown payload key or an unknown type is rejected for every type.
        for (type, event) in firstOfType.sorted(by: { $0.key < $1.key }) {
            guard case .object(var o) = event, case .object(var p)? = o["payload"] else { continue }
            p["unexpected"] = .int(1)
            o["payload"] = .object(p)
            #expect(try !v.validate(.object(o), against: Self.recordedEvent).isEmpty, "\(type): an unknown payload key passes")
            guard case .object(var o2) = event else { continue }
            o2["type"] = "SomethingElse"
            #expect(try !v.validate(.object(o2), against: Self.recordedEvent).isEmpty, "\(type): an unknown type passes")
        }
    }

    @Test func eventSchemasRejectWrongPayloads() throws {
        let v = Self.validator()
        func errors(_ type: EventType, _ payload: String) throws -> [String] {
            try v.validate(try JSONParser.parse(payload), against: "events/\(type.rawValue).schema.json")
        }
        let g = "{0A1B2C3D-0000-4000-8000-00000000000A}"
        #expect(try errors(.attributeStaged, #"{"field": "Condition", "value": "Good"}"#).isEmpty)
        #expect(try !errors(.attributeStaged, #"{"field": "Condition", "value": true}"#).isEmpty)
        #expect(try !errors(.attributeStaged, #"{"field": "Condition"}"#).isEmpty)
        #expect(try !errors(.relationStaged, #"{"relationship": "Species_Trees", "globalId": "\#(g)"}"#).isEmpty)
        #expect(try !errors(.relationStaged, #"{"relationship": 0, "globalId": "{0a1b2c3d-0000-4000-8000-00000000000a}"}"#).isEmpty)
        #expect(try errors(.sessionStarted, #"{"layer": 0, "globalId": "\#(g)", "kind": "create", "geometry": {"x": 1, "y": 2}}"#).isEmpty)
        #expect(try !errors(.sessionStarted, #"{"layer": 0, "globalId": "\#(g)", "kind": "edit", "geometry": {"x": 1, "y": 2}}"#).isEmpty)
        #expect(try !errors(.sessionStarted, #"{"layer": 0, "globalId": "\#(g)", "kind": "create", "geometry": {"x": 1}}"#).isEmpty)
        #expect(try !errors(.sessionCommitted, #"{"layer": 0, "globalId": "\#(g)", "kind": "create", "changes": {"A": {"old": 1, "new": 2}}, "attachments": {"added": [], "renamed": [], "removed": []}}"#).isEmpty)
        #expect(try errors(.sessionCommitted, #"{"layer": 0, "globalId": "\#(g)", "kind": "edit", "changes": {"A": {"old": 1, "new": null}}, "attachments": {"added": [], "renamed": [], "removed": []}}"#).isEmpty)
        #expect(try !errors(.attachmentStaged, #"{"attachmentId": "\#(g)", "name": "../x.jpg", "contentType": "image/jpeg", "size": 1, "sha256": "\#(String(repeating: "a", count: 64))", "preferredSize": "actual"}"#).isEmpty)
        #expect(try errors(.attachmentStaged, #"{"attachmentId": "\#(g)", "name": "x.jpg", "contentType": "image/jpeg", "size": 1, "sha256": "\#(String(repeating: "a", count: 64))", "preferredSize": "actual"}"#).isEmpty)
        #expect(try !errors(.sessionCanceled, #"{"discarded": -1}"#).isEmpty)
        #expect(try !errors(.featureDerived, #"{"layer": 0, "globalId": "\#(g)", "rule": "r", "changes": {}}"#).isEmpty)
        #expect(try !errors(.scriptRecorded, #"{"sha256": "ABC", "name": "x", "lines": 1}"#).isEmpty)
        #expect(try !errors(.schemaDefined, #"{"service": [], "webmap": null}"#).isEmpty)
    }
}
