import EditLog
import Foundation

/// The Trees of Portland fixture: schema documents, baseline feature sets, and the ids and domains
/// a workload draws from.
struct Fixture {
    struct Hood { var x0, y0, x1, y1: Double; var name: String }

    let dir: String
    let service: [(name: String, json: JSONValue)]
    let webmap: JSONValue
    let rules: JSONValue
    let baseline: [BaselineSet]
    let treeIds: [String]
    let speciesIds: [String]
    let inspectionIds: [String]
    let hoods: [Hood]
    let addresses: [String]
    let conditions: [String]
    let siteTypes: [String]
    let wires: [Int64]
    let functionalTypes: [String]
    let yesNo: [String]

    static func locate(_ explicit: String?) -> String? {
        var candidates: [String] = []
        if let explicit { candidates.append(explicit) }
        candidates.append(FileManager.default.currentDirectoryPath + "/Fixtures/trees-of-portland")
        // The source tree this tool was built from.
        let src = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        candidates.append(src.appendingPathComponent("Fixtures/trees-of-portland").path)
        return candidates.first { FileManager.default.fileExists(atPath: $0 + "/service.json") }
    }

    static func load(_ dir: String) throws -> Fixture {
        let service = try InputFiles.json(dir + "/service.json")
        let webmap = try InputFiles.json(dir + "/webmap.json")
        let rules = try InputFiles.rules(dir + "/rules.json")
        var sets: [BaselineSet] = []
        var ids: [String: [String]] = [:]
        var hoods: [Hood] = []
        for name in ["Species", "Neighborhoods", "Trees", "Inspections"] {
            let path = "\(dir)/baseline/\(name).json"
            let json = try InputFiles.json(path)
            sets.append(BaselineSet(name: path, layer: name, json: json))
            for f in json["features"]?.arrayValue ?? [] {
                if let g = f["attributes"]?["GlobalID"]?.stringValue { ids[name, default: []].append(g) }
                if name == "Neighborhoods", let ring = f["geometry"]?["rings"]?.arrayValue?.first?.arrayValue {
                    let xs = ring.compactMap { $0.arrayValue?.first?.doubleValue }
                    let ys = ring.compactMap { $0.arrayValue?.dropFirst().first?.doubleValue }
                    hoods.append(Hood(x0: xs.min()!, y0: ys.min()!, x1: xs.max()!, y1: ys.max()!,
                                      name: f["attributes"]?["Name"]?.stringValue ?? "?"))
                }
            }
        }
        let addresses = (try InputFiles.json(dir + "/addresses.json"))["addresses"]?.arrayValue?.compactMap { $0["address"]?.stringValue } ?? []
        func field(_ layer: String, _ field: String) -> JSONValue? {
            let layers = (service["layers"]?.arrayValue ?? []) + (service["tables"]?.arrayValue ?? [])
            return layers.first { $0["name"]?.stringValue == layer }?["fields"]?.arrayValue?.first { $0["name"]?.stringValue == field }
        }
        func codes(_ layer: String, _ f: String) -> [JSONValue] { field(layer, f)?["domain"]?["codedValues"]?.arrayValue?.compactMap { $0["code"] } ?? [] }
        let fx = Fixture(
            dir: dir, service: [(name: "service.json", json: service)], webmap: webmap, rules: rules, baseline: sets,
            treeIds: ids["Trees"] ?? [], speciesIds: ids["Species"] ?? [], inspectionIds: ids["Inspections"] ?? [],
            hoods: hoods, addresses: addresses,
            conditions: codes("Trees", "Condition").compactMap(\.stringValue), siteTypes: codes("Trees", "SiteType").compactMap(\.stringValue),
            wires: codes("Trees", "Wires").compactMap(\.intValue), functionalTypes: codes("Species", "FunctionalType").compactMap(\.stringValue),
            yesNo: codes("Species", "Edible").compactMap(\.stringValue))
        guard !fx.treeIds.isEmpty, !fx.speciesIds.isEmpty, !fx.hoods.isEmpty, !fx.conditions.isEmpty, !fx.siteTypes.isEmpty, !fx.wires.isEmpty else {
            throw RawError(description: "fixture \(dir) lacks trees, species, neighbourhoods or domains")
        }
        return fx
    }
}

/// Deterministic (seeded) field sessions on the Trees of Portland schema: many actors; tree edits
/// (a few `set`s, sometimes a species `relate`), tree plantings, inspections created under trees,
/// inspection and species edits; ~15% with a small photo attached; ~10% cancelled.
final class Workload {
    let fx: Fixture
    var rng: SplitMix64
    let seed: UInt64
    /// GUID counters: stream 0 for sessions, 1 for the generated baseline (so both can be made apart).
    private var guidCounters: [UInt64] = [0, 0]
    private var guidStream = 0
    private var time: Int64
    private var sessionNo = 0
    private(set) var trees: [String]
    private(set) var inspections: [String]
    let actors: [(actor: String, device: String)]

    static let planters = ["Friends of Trees", "Portland Parks & Recreation", "Property owner", "Urban Forestry volunteers",
                           "Neighborhood tree team", "PBOT contractor"]
    static let notes = ["Girdling root at base.", "Codominant stems, monitor.", "Pruned for clearance.", "Mulch ring refreshed.",
                        "Minor bark damage from mower.", "Watering bag installed.", "Leaning slightly toward street.",
                        "Canopy thin on south side.", "Healthy new growth.", "Stake removed."]
    static let treeFields = ["PlantedBy", "PlantedDate", "SiteWidth", "SiteType", "Wires", "Condition", "DBH"]

    init(fixture: Fixture, seed: UInt64) {
        fx = fixture
        self.seed = seed
        rng = SplitMix64(seed: seed &* 0x9E37_79B9 &+ 17)
        time = Timestamp.parse("2026-07-01T07:00:00Z")!
        trees = fixture.treeIds
        inspections = fixture.inspectionIds
        let first = ["maria", "dev", "sam", "kim", "li", "rosa", "tom", "ana", "omar", "june"]
        let last = ["lopez", "patel", "okafor", "chen", "diaz"]
        let devices = ["ipad", "iphone", "pixel", "galaxy-tab", "surface"]
        var a: [(String, String)] = []
        for (i, f) in first.enumerated() { for (j, l) in last.enumerated() { a.append(("\(f).\(l)", "\(devices[(i + j) % devices.count])-\(String(format: "%02d", i * 5 + j))")) } }
        actors = a
    }

    // MARK: Random helpers

    func below(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }
    func chance(_ p: Double) -> Bool { unit() < p }
    func unit() -> Double { Double(rng.next() >> 11) / Double(1 << 53) }
    func pick<T>(_ a: [T]) -> T { a[below(a.count)] }
    func round1(_ v: Double) -> Double { (v * 10).rounded() / 10 }
    func normal() -> Double {
        let u1 = max(unit(), 1e-12), u2 = unit()
        return (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
    }
    func dbh() -> Double { round1(min(200, max(0, exp(2.3 + 0.7 * normal())))) }
    func width() -> Double { round1(chance(0.9) ? 2 + unit() * 13 : unit() * 50) }

    /// A fresh `{UPPER-GUID}`: random bits, version 4, with a counter in the last group so ids never repeat.
    func guid() -> String {
        guidCounters[guidStream] += 1
        let r = rng.next(), r2 = rng.next()
        let tail = (UInt64(seed & 0x7F) << 41) | (UInt64(guidStream) << 40) | (guidCounters[guidStream] & 0xFF_FFFF_FFFF)
        return String(format: "{%08X-%04X-4%03X-%04X-%012llX}", UInt32(truncatingIfNeeded: r >> 32), UInt16(truncatingIfNeeded: r >> 16),
                      UInt16(truncatingIfNeeded: r) & 0xFFF, 0x8000 | (UInt16(truncatingIfNeeded: r2) & 0x3FFF), tail)
    }

    func point() -> (x: Double, y: Double, hood: String) {
        let h = pick(fx.hoods)
        let m = 0.00015
        let x = ((h.x0 + m + unit() * (h.x1 - h.x0 - 2 * m)) * 1e6).rounded() / 1e6
        let y = ((h.y0 + m + unit() * (h.y1 - h.y0 - 2 * m)) * 1e6).rounded() / 1e6
        return (x, y, h.name)
    }

    func tick(_ lo: Int64 = 20, _ hi: Int64 = 240) -> String {
        time += (lo + Int64(below(Int(hi - lo + 1)))) * 1000
        return Timestamp.format(milliseconds: time)
    }

    // MARK: Baseline

    /// `n` generated Trees (the shape of baseline/Trees.json), for logs far bigger than the fixture's 240 trees.
    /// Drawn from their own random stream, so the sessions that follow do not depend on whether the
    /// baseline was generated in this process (see `adopt`).
    func baselineTrees(_ n: Int) -> BaselineSet {
        let sessionRng = rng
        rng = SplitMix64(seed: seed ^ 0x0BA5_E11E)
        guidStream = 1
        defer { rng = sessionRng; guidStream = 0 }
        var features: [JSONValue] = []
        features.reserveCapacity(n)
        for i in 0..<n {
            let p = point()
            let g = guid()
            var attrs: [String: JSONValue] = [
                "OBJECTID": .int(Int64(100_000 + i)), "GlobalID": .string(g), "SpeciesGlobalID": .string(pick(fx.speciesIds)),
                "Address": .string(pick(fx.addresses)), "Neighborhood": .string(p.hood),
                "SiteWidth": .double(round1(2 + unit() * 13)), "SiteType": .string(pick(fx.siteTypes)), "Wires": .int(pick(fx.wires)),
                "Condition": .string(pick(fx.conditions)), "DBH": .double(dbh()),
            ]
            if chance(0.8) { attrs["PlantedBy"] = .string(pick(Self.planters)) }
            if chance(0.85) { attrs["PlantedDate"] = .int(-315_619_200_000 + Int64(below(23_000)) * 86_400_000) }
            features.append(["attributes": .object(attrs), "geometry": ["x": .double(p.x), "y": .double(p.y)]])
            trees.append(g)
        }
        return BaselineSet(name: "Trees-generated.json", layer: "Trees", json: ["features": .array(features)])
    }

    /// The fixture baseline plus `extraTrees` generated trees.
    func baseline(extraTrees: Int) -> [BaselineSet] {
        fx.baseline + (extraTrees > 0 ? [baselineTrees(extraTrees)] : [])
    }

    /// Takes the live trees and inspections of an existing log (made by another process from the same
    /// fixture and seed) as the features sessions pick from.
    func adopt(_ log: EditLog) throws {
        guard let treesLayer = log.schema.layer("Trees"), let inspLayer = log.schema.layer("Inspections") else {
            throw RawError(description: "the log has no Trees or Inspections layer")
        }
        // The log file itself, read-only through the C API (the facade keeps its store to itself).
        let db = try RawDB(log.path, readonly: true)
        trees = try db.strings("SELECT _globalid FROM p_layer_\(treesLayer.id) WHERE _deleted = 0 ORDER BY _oid")
        inspections = try db.strings("SELECT _globalid FROM p_layer_\(inspLayer.id) WHERE _deleted = 0 ORDER BY _oid")
    }

    // MARK: Sessions

    /// The next session, from its opening step to `finish` (or `cancel`). Line numbers continue from `line`.
    func nextSession(line: inout Int) -> [ScriptCommand] {
        sessionNo += 1
        let (actor, device) = pick(actors)
        let sid = "bench-\(seed)-\(sessionNo)"
        time += Int64(60 + below(840)) * 1000
        var out: [ScriptCommand] = []
        func add(_ op: ScriptCommand.Operation) {
            line += 1
            out.append(ScriptCommand(line: line, op: op, actor: actor, device: device, at: tick(), session: sid))
        }
        var canAttach = true
        var createdTree: String?
        var createdInspection: String?
        let r = unit()
        if r < 0.55 {  // tree edit
            add(.edit(layer: "Trees", globalId: pick(trees)))
            var fields = Self.treeFields
            for _ in 0..<(1 + below(4)) {
                let f = fields.remove(at: below(fields.count))
                add(.set(field: f, value: treeValue(f)))
            }
            if chance(0.04) { add(.set(field: "Address", value: .string(pick(fx.addresses)))) }
            if chance(0.2) { add(.relate(relationship: "Species_Trees", globalId: pick(fx.speciesIds))) }
        } else if r < 0.75 {  // inspection under a tree
            let g = guid()
            var attrs: [String: JSONValue] = ["Condition": .string(pick(fx.conditions)), "DBH": .double(dbh()),
                                              "CollectedBy": .string(actor.replacingOccurrences(of: ".", with: " ").capitalized),
                                              "CollectedDate": .int(time)]
            if chance(0.4) { attrs["Notes"] = .string(pick(Self.notes)) }
            add(.create(layer: "Inspections", globalId: g, geometry: nil, attributes: attrs,
                        parent: .init(relationship: "Tree_Inspections", globalId: pick(trees))))
            createdInspection = g
        } else if r < 0.83 {  // inspection edit
            add(.edit(layer: "Inspections", globalId: pick(inspections)))
            var fields = ["Condition", "DBH", "Notes"]
            for _ in 0..<(1 + below(2)) {
                let f = fields.remove(at: below(fields.count))
                let v: JSONValue = f == "Condition" ? .string(pick(fx.conditions)) : f == "DBH" ? .double(dbh()) : .string(pick(Self.notes))
                add(.set(field: f, value: v))
            }
        } else if r < 0.93 {  // planting
            let g = guid()
            let p = point()
            var attrs: [String: JSONValue] = ["Condition": .string(pick(fx.conditions)), "DBH": .double(round1(0.5 + unit() * 2.5)),
                                              "PlantedBy": .string(pick(Self.planters)), "SiteType": .string(pick(fx.siteTypes)),
                                              "Wires": .int(pick(fx.wires))]
            if chance(0.5) { attrs["SiteWidth"] = .double(width()) }
            add(.create(layer: "Trees", globalId: g, geometry: ["x": .double(p.x), "y": .double(p.y), "spatialReference": ["wkid": 4326]],
                        attributes: attrs, parent: nil))
            add(.relate(relationship: "Species_Trees", globalId: pick(fx.speciesIds)))
            if chance(0.5) { add(.set(field: "PlantedDate", value: .int(time - time % 86_400_000))) }
            createdTree = g
        } else {  // species edit (Species has no attachments)
            canAttach = false
            add(.edit(layer: "Species", globalId: pick(fx.speciesIds)))
            let f = chance(0.5) ? "FunctionalType" : "Edible"
            add(.set(field: f, value: .string(pick(f == "FunctionalType" ? fx.functionalTypes : fx.yesNo))))
        }
        if canAttach && chance(0.15) {
            var data: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46, 0x00, 0x01]
            for _ in 0..<(120 + below(360)) { data.append(UInt8(truncatingIfNeeded: rng.next())) }
            data += [0xFF, 0xD9]
            add(.attach(attachmentId: guid(), name: "IMG_\(sessionNo).jpg", contentType: "image/jpeg", data: data,
                        preferredSize: pick(["small", "medium", "large", "actual"])))
        }
        if chance(0.10) {
            add(.cancel)
        } else {
            add(.finish)
            if let createdTree { trees.append(createdTree) }
            if let createdInspection { inspections.append(createdInspection) }
        }
        return out
    }

    func treeValue(_ f: String) -> JSONValue {
        switch f {
        case "PlantedBy": return .string(pick(Self.planters))
        case "PlantedDate": return .int(946_684_800_000 + Int64(below(9500)) * 86_400_000)
        case "SiteWidth": return .double(width())
        case "SiteType": return .string(pick(fx.siteTypes))
        case "Wires": return .int(pick(fx.wires))
        case "Condition": return .string(pick(fx.conditions))
        default: return .double(dbh())
        }
    }

    /// A unique script SHA-256 for a `record` call.
    static func scriptSHA(_ label: String) -> String { InputFiles.sha256(Array(label.utf8)) }

    /// One edit session per tree setting the fields `values(n)` gives (n counts the sessions from 1), by a
    /// random actor, recorded in batches of 500 sessions: scripts `<label>-<batch>`, sessions `<label>-<n>`.
    func recordEdits(_ log: EditLog, trees: ArraySlice<String>, label: String, values: (Int) -> [(field: String, value: JSONValue)]) throws {
        var batch: [ScriptCommand] = [], line = 0, batches = 0, n = 0
        func flush() throws {
            guard !batch.isEmpty else { return }
            batches += 1
            let name = "\(label)-\(batches)"
            _ = try log.record(batch, name: name, sha256: Self.scriptSHA(name))
            batch = []; line = 0
        }
        for g in trees {
            n += 1
            let (actor, device) = pick(actors)
            let sid = "\(label)-\(n)"
            let ops: [ScriptCommand.Operation] = [.edit(layer: "Trees", globalId: g)] + values(n).map { .set(field: $0.field, value: $0.value) } + [.finish]
            for op in ops {
                line += 1
                batch.append(ScriptCommand(line: line, op: op, actor: actor, device: device, at: tick(), session: sid))
            }
            if n % 500 == 0 { try flush() }
        }
        try flush()
    }
}
