import EditLog
import Foundation
import Testing

/// Mutation fuzzing of every decoder that reads outside input: the JSON parser, the script parser,
/// the Esri JSON decoders (service, layer, feature set, web map) and the rules file. Each mutated input
/// must either decode or fail with an `EditLogError`/`JSONParseError` — never crash, never hang.
/// CI runs a short pass; `EDITLOG_FUZZ_ITERATIONS=1000000 swift test --filter FuzzTests` runs a long one.
@Suite struct FuzzTests {
    static let iterations = Int(ProcessInfo.processInfo.environment["EDITLOG_FUZZ_ITERATIONS"] ?? "") ?? 2500

    struct Mutator {
        var rng: SplitMix64
        let dictionary: [[UInt8]] = ["null", "true", "-0", "1e309", "NaN", "\"\\ud800\"", "{}", "[]", "\"", "\\", ",", ":", "{\"op\":\"create\"}",
                                     "[[[[[[[[", "\"esriFieldTypeBlob\"", "\"codedValue\"", "\"range\"", "-9223372036854775809", "1.5e-400", "\u{0}"].map { Array($0.utf8) }

        mutating func int(_ n: Int) -> Int { Int(rng.next() % UInt64(max(n, 1))) }

        mutating func mutate(_ input: [UInt8], with other: [UInt8]) -> [UInt8] {
            var b = input
            for _ in 0..<(1 + int(4)) {
                switch int(8) {
                case 0 where !b.isEmpty: b[int(b.count)] ^= UInt8(1 << int(8))
                case 1 where !b.isEmpty: b[int(b.count)] = UInt8(truncatingIfNeeded: rng.next())
                case 2: b.insert(UInt8(truncatingIfNeeded: rng.next()), at: int(b.count + 1))
                case 3 where !b.isEmpty: b.remove(at: int(b.count))
                case 4 where b.count > 2: b = Array(b.prefix(int(b.count)))
                case 5: let d = dictionary[int(dictionary.count)]; b.insert(contentsOf: d, at: int(b.count + 1))
                case 6 where !other.isEmpty && !b.isEmpty:
                    let s = int(other.count), e = min(other.count, s + int(64)), at = int(b.count)
                    b.replaceSubrange(at..<min(b.count, at + int(32)), with: other[s..<e])
                case 7 where b.count > 4:
                    let s = int(b.count - 2), e = min(b.count, s + 1 + int(16))
                    b.insert(contentsOf: b[s..<e], at: int(b.count))
                default: break
                }
            }
            return b
        }
    }

    static func corpus(_ paths: [String]) throws -> [[UInt8]] { try paths.map { try InputFiles.bytes($0) } }

    func fuzz(_ corpus: [[UInt8]], seed: UInt64, _ body: ([UInt8]) -> Void) {
        var m = Mutator(rng: SplitMix64(seed: seed))
        for i in 0..<Self.iterations {
            let a = corpus[i % corpus.count], b = corpus[m.int(corpus.count)]
            body(m.mutate(a, with: b))
        }
    }

    @Test func jsonParserRoundTripsWhatItAccepts() throws {
        let corpus = try Self.corpus([Paths.trees + "/rules.json", Paths.arcgisRest + "/rest-js_layer_definition_minimal.json"]) + [Array("[1,-2.5e3,\"\\u00e9\\n\",{\"a\":[true,false,null]}]".utf8)]
        var accepted = 0, rejected = 0
        fuzz(corpus, seed: 11) { input in
            guard let v = try? JSONParser.parse(input) else { rejected += 1; return }
            accepted += 1
            // What parses re-serializes canonically and parses back to the same value.
            let again = try? JSONParser.parse(v.serialized())
            #expect(again == v)
        }
        // The mutator must exercise both paths, and every input took exactly one of them.
        #expect(accepted > 0 && rejected > 0)
        #expect(accepted + rejected == Self.iterations)
    }

    @Test func scriptParserNeverCrashes() throws {
        let dir = Paths.trees + "/scripts"
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".ndjson") }.sorted().map { dir + "/" + $0 }
        var lines: [[UInt8]] = []
        for f in try Self.corpus(files) { lines += f.split(separator: 0x0A).prefix(12).map(Array.init) }
        var errors = 0
        fuzz(lines, seed: 12) { input in
            do throws(EditLogError) { _ = try ScriptParser.parse(input) } catch { errors += 1; #expect(!error.description.isEmpty) }
        }
        #expect(errors > 0)
    }

    @Test func esriDecodersNeverCrash() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Paths.arcgisRest).filter { $0.hasSuffix(".json") }.map { Paths.arcgisRest + "/" + $0 }
        let corpus = try Self.corpus(files.sorted() + [Paths.trees + "/service.json"])
        let webmap = try InputFiles.bytes(Paths.trees + "/webmap.json")
        let rules = try InputFiles.rules(Paths.trees + "/rules.json").serializedBytes()
        var decoded = 0
        fuzz(corpus, seed: 13) { input in
            guard let json = try? JSONParser.parse(input) else { return }
            if (try? ArcGISSchemaDecoder.decode(service: [(name: "fuzz", json: json)], webmap: nil, rules: nil)) != nil { decoded += 1 }
        }
        let service = try Fixture.json("service.json")
        fuzz([webmap], seed: 14) { input in
            guard let json = try? JSONParser.parse(input) else { return }
            _ = try? ArcGISSchemaDecoder.decode(service: [(name: "service.json", json: service)], webmap: json, rules: nil)
        }
        fuzz([rules], seed: 15) { input in
            guard let json = try? JSONParser.parse(input) else { return }
            _ = try? ArcGISSchemaDecoder.decode(service: [(name: "service.json", json: service)], webmap: nil, rules: json)
        }
        #expect(decoded > 0)
    }

    @Test func featureSetsAndScriptsAgainstARealLog() throws {
        // The full path: mutated baseline feature sets through create, mutated script lines through record.
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let before = try log.eventCount()
        let species = try InputFiles.bytes(Paths.trees + "/baseline/Species.json")
        let service = try Fixture.json("service.json")
        var m = Mutator(rng: SplitMix64(seed: 16))
        for i in 0..<max(20, Self.iterations / 100) {
            let input = m.mutate(species, with: species)
            guard let json = try? JSONParser.parse(input) else { continue }
            let t = TempPath("fs\(i)")
            _ = try? EditLog.create(at: t.path, service: [("service.json", service)], baseline: [BaselineSet(name: "Species.json", layer: nil, json: json)])
        }
        let script = try InputFiles.bytes(Paths.trees + "/scripts/01-new-plantings.ndjson")
        let scriptsBefore = try RawLog.count(tmp.path, type: "ScriptRecorded")
        var applied = 0, refused = 0, written: Int64 = 0
        for _ in 0..<max(20, Self.iterations / 50) {
            let input = m.mutate(script, with: script)
            guard let cmds = try? ScriptParser.parse(input) else { continue }
            let count = try log.eventCount()
            do {
                let result = try log.record(cmds, name: "fuzz", sha256: InputFiles.sha256(input), allowRepeat: true)
                applied += 1
                written += Int64(result.events.count)
                // A recorded script ends with exactly one ScriptRecorded event, and wrote exactly what it returned.
                #expect(result.events.filter { $0.type == "ScriptRecorded" }.count == 1)
                #expect(result.events.last?.type == "ScriptRecorded")
                #expect(try log.eventCount() == count + Int64(result.events.count))
            } catch {
                refused += 1
                #expect(try log.eventCount() == count, "a refused script wrote nothing: \(error)")
            }
        }
        #expect(applied > 0 && refused > 0, "the mutated scripts exercise both paths (applied \(applied), refused \(refused))")
        #expect(try log.verify().ok)
        #expect(try log.eventCount() == before + written)
        #expect(try RawLog.count(tmp.path, type: "ScriptRecorded") == scriptsBefore + applied)
    }
}
