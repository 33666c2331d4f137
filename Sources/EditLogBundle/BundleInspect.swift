import EditLogCore
import Foundation

/// A bundle's manifest and what its events hold, counted while the bundle is read and checked whole.
public struct BundleInspection: Sendable {
    public let path: String
    public let contents: BundleContents
    /// Events per layer name (`$schema`, `$scripts` for system streams; the layer id when the schema lacks it).
    public let byLayer: [String: Int]
    public let byType: [String: Int]
    public let byActor: [String: Int]
    /// The bundle file's size.
    public let bytes: Int64

    public var json: JSONValue {
        func counts(_ d: [String: Int]) -> JSONValue { .object(d.mapValues { .int(Int64($0)) }) }
        let c = contents
        return .object([
            "path": .string(path), "bytes": .int(bytes), "manifest": c.manifest.json, "events": .int(Int64(c.eventCount)),
            "byLayer": counts(byLayer), "byType": counts(byType), "byActor": counts(byActor),
            "blobs": .int(Int64(c.blobs.count)), "missingBlobs": .array(c.missingBlobs.sorted().map { .string($0) }),
            "signer": c.signer.map { .string(Data($0).base64EncodedString()) } ?? .null,
        ])
    }

    /// Reads and checks the whole bundle (as `verify` does), counting its events.
    public static func inspect(path: String, trust: [[UInt8]] = [], limits: BundleLimits = .default,
                               progress: ((Int64, Int64) -> Void)? = nil) throws(EditLogError) -> BundleInspection {
        let reader = try BundleReader(path: path, limits: limits)
        var names: [Int: String] = [:]
        if let docs = reader.schema["service"]?.arrayValue {
            let service = docs.map { (name: $0["name"]?.stringValue ?? "service", json: $0["json"] ?? .null) }
            let webmap = reader.schema["webmap"].flatMap { $0.isNull ? nil : $0 }
            let rules = reader.schema["rules"].flatMap { $0.isNull ? nil : $0 }
            if let s = try? ArcGISSchemaDecoder.decode(service: service, webmap: webmap, rules: rules) {
                for l in s.layers { names[l.id] = l.name }
            }
        }
        var byLayer: [String: Int] = [:], byType: [String: Int] = [:], byActor: [String: Int] = [:]
        let total = reader.manifest.eventCount
        var done: Int64 = 0
        let contents = try reader.read(trust: trust, event: { e in
            done += 1
            if done % 1024 == 0 { progress?(done, total) }
            let layer = StreamName.parseFeature(e.stream).map { names[$0.layer] ?? String($0.layer) } ?? e.stream
            byLayer[layer, default: 0] += 1
            byType[e.type, default: 0] += 1
            byActor[e.actor, default: 0] += 1
        }, blob: { _ in })
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
        return BundleInspection(path: path, contents: contents, byLayer: byLayer, byType: byType, byActor: byActor, bytes: size)
    }
}
