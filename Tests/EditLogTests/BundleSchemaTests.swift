import EditLog
import Foundation
import Testing

/// A real exported bundle's manifest and event lines validate against `schemas/bundle-manifest.schema.json` and
/// `schemas/bundle-event-line.schema.json` (and each line without `previousHash` against recorded-event), as
/// SchemaFilesTests checks the other formats; and the schemas reject what the reader rejects.
@Suite struct BundleSchemaTests {
    static let manifestSchema = "bundle-manifest.schema.json"
    static let lineSchema = "bundle-event-line.schema.json"

    @Test func anExportedManifestAndItsLinesValidate() throws {
        let shared = SharedBundle.shared
        let d = TempDir()
        let log = try EditLog.open(at: shared.log, readonly: true)
        defer { log.close() }
        _ = try log.exportBundle(to: d.file("layers.bundle"), since: .position(200), layers: ["Trees"])
        _ = try log.exportBundle(to: d.file("empty.bundle"), since: .position(shared.head))
        let v = SchemaFilesTests.validator()
        var lines = 0
        for path in [shared.bundle, d.file("layers.bundle"), d.file("empty.bundle")] {
            let entries = try BundleFixture.unpack(path)
            let manifest = try BundleFixture.json(entries[0].data)
            #expect(try v.validate(manifest, against: Self.manifestSchema) == [], "\(path)")
            #expect(try v.validate(try BundleFixture.json(entries[1].data), against: "events/SchemaDefined.schema.json") == [])
            for e in entries where e.name.hasPrefix("events/") {
                for line in BundleFixture.lines(e.data) {
                    lines += 1
                    let json = try BundleFixture.json(line)
                    let errors = try v.validate(json, against: Self.lineSchema)
                    #expect(errors.isEmpty, "\(e.name): \(errors)")
                    guard case .object(var o) = json else { continue }
                    o["previousHash"] = nil
                    #expect(try v.validate(.object(o), against: SchemaFilesTests.recordedEvent) == [], "\(e.name)")
                }
            }
        }
        #expect(lines > Int(shared.head))

        // The schemas refuse what the reader refuses.
        let manifest = try BundleFixture.json(try BundleFixture.unpack(shared.bundle)[0].data)
        for (key, value) in [("formatVersion", JSONValue.int(2)), ("eventCount", .int(-1)), ("firstEventHash", .string("abc")),
                             ("createdAt", .string("yesterday")), ("layers", .array([]))] {
            guard case .object(var o) = manifest else { continue }
            o[key] = value
            #expect(try !v.validate(.object(o), against: Self.manifestSchema).isEmpty, "\(key) = \(value)")
        }
        guard case .object(var extra) = manifest else { return }
        extra["unexpected"] = 1
        #expect(try !v.validate(.object(extra), against: Self.manifestSchema).isEmpty)
        let line = try BundleFixture.json(BundleFixture.lines(try BundleFixture.unpack(shared.bundle)[2].data)[0])
        guard case .object(var noPrevious) = line else { return }
        noPrevious["previousHash"] = nil
        #expect(try !v.validate(.object(noPrevious), against: Self.lineSchema).isEmpty)
    }
}

extension BundleSchemaTests {
    @Suite(.tags(.process)) struct ProcessTests {
        /// The chain check in Python that `schemas/bundle.md` prints, run as the document gives it, in an extracted bundle:
        /// the shared bundle, and one whose payload holds the characters the canonical JSON escapes in its own way
        /// (backspace, form feed and other controls as \u00XX, tab and newline short, non-ASCII as it is).
        @Test func theFormatDocumentsPythonChainCheckPassesOnRealBundles() throws {
            guard BundleFixture.has("python3"), BundleFixture.has("tar") else { print("skipped: python3 or tar is not installed"); return }
            let doc = try String(contentsOfFile: Paths.root + "/schemas/bundle.md", encoding: .utf8)
            let start = try #require(doc.range(of: "```python\n"))
            let end = try #require(doc.range(of: "```", range: start.upperBound..<doc.endIndex))
            let d = TempDir()
            try String(doc[start.upperBound..<end.lowerBound]).write(toFile: d.file("check.py"), atomically: true, encoding: .utf8)
            let shared = SharedBundle.shared
            try shared.copyLog(to: d.file("log.sqlite"))
            let log = try EditLog.open(at: d.file("log.sqlite"))
            try MergeDevices.set(log, MergeDevices.tree, [("PlantedBy", #""a\bb\fc\td\ne\u0001f\u001f é ✓ \"q\" \\""#)], at: 5, actor: "ann", session: "esc-1")
            _ = try log.exportBundle(to: d.file("escapes.bundle"), since: .position(shared.head))
            log.close()
            for (name, bundle) in [("shared", shared.bundle), ("escapes", d.file("escapes.bundle"))] {
                let dir = d.file(name)
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                let r = try CLI.sh("cd '\(dir)' && tar -xzf '\(bundle)' && python3 '\(d.file("check.py"))'")
                #expect(r.status == 0, "\(name): \(r.stdout) \(r.stderr)")
            }
            // It can fail: a line whose payload is written otherwise than canonically is caught.
            let chunk = try #require(try FileManager.default.contentsOfDirectory(atPath: d.file("escapes") + "/events").first)
            let path = d.file("escapes") + "/events/" + chunk
            let text = try String(contentsOfFile: path, encoding: .utf8)
            try text.replacingOccurrences(of: #"\u0008"#, with: #"\b"#).write(toFile: path, atomically: true, encoding: .utf8)
            #expect(try CLI.sh("cd '\(d.file("escapes"))' && python3 '\(d.file("check.py"))'").status != 0)
        }
    }
}
