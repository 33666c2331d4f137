import EditLogCore

/// `manifest.json`, the bundle's first entry: where the events come from and what the bundle holds
/// (schema `schemas/bundle-manifest.schema.json`).
public struct BundleManifest: Sendable, Hashable {
    public static let formatVersion: Int64 = 1

    public var formatVersion: Int64
    /// The exporting log's id.
    public var originLogId: String
    /// SHA-256 (hex) of the exporting log's `SchemaDefined` payload (`SchemaFingerprint`).
    public var schemaFingerprint: String
    /// The range of the exporting log's positions: after `fromPosition` (the `--since`), up to `toPosition` inclusive.
    public var fromPosition: Int64
    public var toPosition: Int64
    public var eventCount: Int64
    /// Hashes (hex) of the first and last event in the bundle; nil when it holds no event.
    public var firstEventHash: String?
    public var lastEventHash: String?
    public var blobCount: Int64
    public var blobBytes: Int64
    /// "editlog <version>", and " (user <name>)" when the user is known.
    public var creator: String
    /// When the bundle was written (ISO-8601, the log's clock).
    public var createdAt: String
    /// The `--since` argument as given (nil when none was: from the first event).
    public var since: String?
    /// The `--layer` filter as given, if any.
    public var layers: [String]?

    public init(formatVersion: Int64 = BundleManifest.formatVersion, originLogId: String, schemaFingerprint: String, fromPosition: Int64,
                toPosition: Int64, eventCount: Int64, firstEventHash: String?, lastEventHash: String?, blobCount: Int64, blobBytes: Int64,
                creator: String, createdAt: String, since: String?, layers: [String]?) {
        self.formatVersion = formatVersion; self.originLogId = originLogId; self.schemaFingerprint = schemaFingerprint
        self.fromPosition = fromPosition; self.toPosition = toPosition; self.eventCount = eventCount
        self.firstEventHash = firstEventHash; self.lastEventHash = lastEventHash; self.blobCount = blobCount; self.blobBytes = blobBytes
        self.creator = creator; self.createdAt = createdAt; self.since = since; self.layers = layers
    }

    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "formatVersion": .int(formatVersion), "originLogId": .string(originLogId), "schemaFingerprint": .string(schemaFingerprint),
            "fromPosition": .int(fromPosition), "toPosition": .int(toPosition), "eventCount": .int(eventCount),
            "firstEventHash": JSONValue(firstEventHash), "lastEventHash": JSONValue(lastEventHash),
            "blobCount": .int(blobCount), "blobBytes": .int(blobBytes), "creator": .string(creator), "createdAt": .string(createdAt),
            "since": JSONValue(since),
        ]
        o["layers"] = layers.map { .array($0.map { .string($0) }) } ?? .null
        return .object(o)
    }

    /// Reads a manifest. A `formatVersion` above this build's is `.unsupported` (checked first, so a newer bundle is
    /// named as such even when its other fields changed); anything else wrong is `.corrupt`, naming the field.
    public init(json: JSONValue) throws(EditLogError) {
        func bad(_ m: String) -> EditLogError { EditLogError(.corrupt, m, at: "manifest.json") }
        guard let o = json.objectValue else { throw bad("the manifest is not a JSON object") }
        guard case .int(let version)? = o["formatVersion"] else { throw bad("\"formatVersion\" is missing or not an integer") }
        if version > Self.formatVersion {
            throw EditLogError(.unsupported, "the bundle has format \(version); this build reads format \(Self.formatVersion). Upgrade editlog.", at: "manifest.json")
        }
        guard version >= 1 else { throw bad("\"formatVersion\" \(version) is not a bundle format") }
        func string(_ k: String) throws(EditLogError) -> String {
            guard let s = o[k]?.stringValue else { throw bad("\"\(k)\" is missing or not a string") }
            return s
        }
        func optionalString(_ k: String) throws(EditLogError) -> String? {
            guard let v = o[k] else { throw bad("\"\(k)\" is missing") }
            if v.isNull { return nil }
            guard let s = v.stringValue else { throw bad("\"\(k)\" is not a string or null") }
            return s
        }
        func count(_ k: String) throws(EditLogError) -> Int64 {
            guard case .int(let i)? = o[k], i >= 0 else { throw bad("\"\(k)\" is missing or not a non-negative integer") }
            return i
        }
        func hash(_ k: String) throws(EditLogError) -> String? {
            guard let s = try optionalString(k) else { return nil }
            guard s.utf8.count == 64, Hex.decode(s) != nil else { throw bad("\"\(k)\" is not 64 hex digits") }
            return s.lowercased()
        }
        var layers: [String]?
        switch o["layers"] {
        case nil, .null?: layers = nil
        case .array(let a)?:
            layers = []
            for v in a {
                guard let s = v.stringValue else { throw bad("\"layers\" must hold strings") }
                layers?.append(s)
            }
        default: throw bad("\"layers\" is not an array or null")
        }
        let fingerprint = try string("schemaFingerprint")
        guard fingerprint.utf8.count == 64, Hex.decode(fingerprint) != nil else { throw bad("\"schemaFingerprint\" is not 64 hex digits") }
        self.init(formatVersion: version, originLogId: try string("originLogId"), schemaFingerprint: fingerprint.lowercased(),
                  fromPosition: try count("fromPosition"), toPosition: try count("toPosition"), eventCount: try count("eventCount"),
                  firstEventHash: try hash("firstEventHash"), lastEventHash: try hash("lastEventHash"), blobCount: try count("blobCount"),
                  blobBytes: try count("blobBytes"), creator: try string("creator"), createdAt: try string("createdAt"),
                  since: try optionalString("since"), layers: layers)
        guard toPosition >= fromPosition else { throw bad("\"toPosition\" \(toPosition) is before \"fromPosition\" \(fromPosition)") }
        guard eventCount <= toPosition - fromPosition else { throw bad("\"eventCount\" \(eventCount) exceeds the position range \(fromPosition)...\(toPosition)") }
        guard (eventCount == 0) == (firstEventHash == nil), (eventCount == 0) == (lastEventHash == nil) else {
            throw bad("\"firstEventHash\"/\"lastEventHash\" must be present exactly when the bundle holds events")
        }
    }
}
