/// A script recorded (`editlog record`).
public struct ScriptRecorded: EventPayload, Hashable {
    public static let eventType = EventType.scriptRecorded
    public var sha256: String
    public var name: String
    public var lines: Int64
    public init(sha256: String, name: String, lines: Int64) { self.sha256 = sha256; self.name = name; self.lines = lines }
    public init(_ p: PayloadReader) throws(EditLogError) { sha256 = try p.string("sha256"); name = try p.string("name"); lines = try p.int("lines") }
    public func write(to w: inout PayloadWriter) { w.int("lines", lines); w.string("name", name); w.string("sha256", sha256) }
    public var body: EventBody { .scriptRecorded(self) }
}

/// Per layer, the service's ObjectIDs of features and their GlobalIDs (`objectIds` of a sync record: `{"0": [[oid, gid], …]}`).
public struct ObjectIdMappings: Sendable, Hashable {
    public var byLayer: [Int: [Int64: String]]
    public init(_ byLayer: [Int: [Int64: String]] = [:]) { self.byLayer = byLayer }

    init(_ p: PayloadReader) throws(EditLogError) {
        byLayer = [:]
        for (layer, pairs) in p.optional("objectIds")?.objectValue ?? [:] {
            guard let l = Int(layer), let list = pairs.arrayValue else { throw p.corrupt("payload \"objectIds.\(layer)\" is not a layer's list") }
            var m: [Int64: String] = [:]
            for pair in list {
                guard let a = pair.arrayValue, a.count == 2, let oid = a[0].intValue, let g = a[1].stringValue else {
                    throw p.corrupt("payload \"objectIds.\(layer)\" holds an entry that is not [ObjectID, GlobalID]")
                }
                m[oid] = g
            }
            byLayer[l] = m
        }
    }

    /// `{"<layer>": [[ObjectID, GlobalID], …]}`, ObjectIDs in order; a layer without any is left out.
    public var json: JSONValue {
        var o: [String: JSONValue] = [:]
        for (l, pairs) in byLayer where !pairs.isEmpty {
            o[String(l)] = .array(pairs.sorted { $0.key < $1.key }.map { [.int($0.key), .string($0.value)] })
        }
        return .object(o)
    }
}

/// `editlog sync` pulled a service's changes: the generations, the changes and what the import made of them.
public struct SyncPulled: EventPayload, Hashable {
    public static let eventType = EventType.syncPulled
    public var service: String
    public var mode: String
    public var fromServerGen: Int64?
    /// The generation reached (nil: none, or a partial pull).
    public var serverGen: Int64?
    /// Each change pulled, as the service gave it.
    public var changes: [JSONValue]
    public var imported: Int64
    /// The conflicts the import recorded (their ids).
    public var conflicts: [String]
    public var lastEditDate: Int64?
    public var objectIds: ObjectIdMappings
    /// A pull of one window of a larger one (`windowServerGen`, the window's end).
    public var partial: Bool
    public var windowServerGen: Int64?
    public var replicaId: String?

    public init(service: String, mode: String, fromServerGen: Int64?, serverGen: Int64?, changes: [JSONValue], imported: Int64 = 0,
                conflicts: [String] = [], lastEditDate: Int64?, objectIds: ObjectIdMappings, partial: Bool, windowServerGen: Int64?, replicaId: String?) {
        self.service = service; self.mode = mode; self.fromServerGen = fromServerGen; self.serverGen = serverGen; self.changes = changes
        self.imported = imported; self.conflicts = conflicts; self.lastEditDate = lastEditDate; self.objectIds = objectIds
        self.partial = partial; self.windowServerGen = windowServerGen; self.replicaId = replicaId
    }

    public init(_ p: PayloadReader) throws(EditLogError) {
        service = try p.string("service"); mode = p.optional("mode")?.stringValue ?? ""
        fromServerGen = p.optional("fromServerGen")?.intValue; serverGen = p.optional("serverGen")?.intValue
        changes = p.optional("changes")?.arrayValue ?? []
        imported = p.optional("imported")?.intValue ?? 0
        conflicts = (p.optional("conflicts")?.arrayValue ?? []).compactMap(\.stringValue)
        lastEditDate = p.optional("lastEditDate")?.intValue
        objectIds = try ObjectIdMappings(p)
        partial = p.payload["partial"] == true
        windowServerGen = p.optional("windowServerGen")?.intValue
        replicaId = p.optional("replicaId")?.stringValue
    }

    public func write(to w: inout PayloadWriter) {
        w.value("changes", .array(changes))
        w.strings("conflicts", conflicts)
        w.intOrNull("fromServerGen", fromServerGen)
        w.int("imported", imported)
        w.int("lastEditDate", ifPresent: lastEditDate)
        w.string("mode", mode)
        w.value("objectIds", objectIds.json)
        w.flag("partial", partial)
        w.string("replicaId", ifPresent: replicaId)
        w.intOrNull("serverGen", serverGen)
        w.string("service", service)
        w.int("windowServerGen", ifPresent: windowServerGen)
    }

    public var body: EventBody { .syncPulled(self) }
}

/// `editlog sync` pushed this log's changes: what was sent, the service's answers, and where both sides agree.
public struct SyncPushed: EventPayload, Hashable {
    public static let eventType = EventType.syncPushed
    public var service: String
    /// The local position at which the push left the service equal to this log.
    public var agreedPosition: Int64
    public var sincePosition: Int64
    public var pushed: [JSONValue]
    public var results: [JSONValue]
    public var objectIds: ObjectIdMappings
    /// The generation after the push, when everything the service changed since the pull is this push.
    public var serverGen: Int64?
    public var editMoment: Int64?

    public init(service: String, agreedPosition: Int64, sincePosition: Int64, pushed: [JSONValue], results: [JSONValue], objectIds: ObjectIdMappings,
                serverGen: Int64?, editMoment: Int64?) {
        self.service = service; self.agreedPosition = agreedPosition; self.sincePosition = sincePosition; self.pushed = pushed
        self.results = results; self.objectIds = objectIds; self.serverGen = serverGen; self.editMoment = editMoment
    }

    public init(_ p: PayloadReader) throws(EditLogError) {
        service = try p.string("service")
        agreedPosition = p.optional("agreedPosition")?.intValue ?? 0
        sincePosition = p.optional("sincePosition")?.intValue ?? 0
        pushed = p.optional("pushed")?.arrayValue ?? []
        results = p.optional("results")?.arrayValue ?? []
        objectIds = try ObjectIdMappings(p)
        serverGen = p.optional("serverGen")?.intValue
        editMoment = p.optional("editMoment")?.intValue
    }

    public func write(to w: inout PayloadWriter) {
        w.int("agreedPosition", agreedPosition)
        w.int("editMoment", ifPresent: editMoment)
        w.value("objectIds", objectIds.json)
        w.value("pushed", .array(pushed))
        w.value("results", .array(results))
        w.int("serverGen", ifPresent: serverGen)
        w.string("service", service)
        w.int("sincePosition", sincePosition)
    }

    public var body: EventBody { .syncPushed(self) }
}

/// `serve`'s createReplica: a client took layers offline.
public struct ReplicaCreated: EventPayload, Hashable {
    public static let eventType = EventType.replicaCreated
    public var replicaId: String
    public var replicaName: String
    public var user: String
    public var device: String
    public var layers: [Int]
    /// Per layer id (as text), the client's query of it (ArcGIS's `layerQueries`).
    public var layerQueries: [String: JSONValue]
    /// The area (nil: none).
    public var geometry: JSONValue?
    public var inSR: Int64?
    public var syncModel: String
    public var syncDirection: String
    public var returnAttachments: Bool
    public var serverGen: Int64
    /// Per layer id (as text), the features sent.
    public var features: [String: JSONValue]

    public init(replicaId: String, replicaName: String, user: String, device: String, layers: [Int], layerQueries: [String: JSONValue],
                geometry: JSONValue?, inSR: Int64?, syncModel: String, syncDirection: String, returnAttachments: Bool, serverGen: Int64,
                features: [String: JSONValue]) {
        self.replicaId = replicaId; self.replicaName = replicaName; self.user = user; self.device = device; self.layers = layers
        self.layerQueries = layerQueries; self.geometry = geometry; self.inSR = inSR; self.syncModel = syncModel
        self.syncDirection = syncDirection; self.returnAttachments = returnAttachments; self.serverGen = serverGen; self.features = features
    }

    public init(_ p: PayloadReader) throws(EditLogError) {
        replicaId = try p.string("replicaId")
        replicaName = p.optional("replicaName")?.stringValue ?? ""; user = p.optional("user")?.stringValue ?? ""
        device = p.optional("device")?.stringValue ?? ""
        layers = (p.optional("layers")?.arrayValue ?? []).compactMap { $0.intValue.map(Int.init) }
        layerQueries = p.optional("layerQueries")?.objectValue ?? [:]
        geometry = p.optional("geometry"); inSR = p.optional("inSR")?.intValue
        syncModel = p.optional("syncModel")?.stringValue ?? "perReplica"
        syncDirection = p.optional("syncDirection")?.stringValue ?? "bidirectional"
        returnAttachments = p.optional("returnAttachments")?.boolValue ?? false
        serverGen = p.optional("serverGen")?.intValue ?? 0
        features = p.optional("features")?.objectValue ?? [:]
    }

    public func write(to w: inout PayloadWriter) {
        w.string("device", device)
        w.value("features", .object(features))
        w.value("geometry", geometry ?? .null)
        w.intOrNull("inSR", inSR)
        w.value("layerQueries", .object(layerQueries))
        w.value("layers", .array(layers.map { .int(Int64($0)) }))
        w.string("replicaId", replicaId)
        w.string("replicaName", replicaName)
        w.bool("returnAttachments", returnAttachments)
        w.int("serverGen", serverGen)
        w.string("syncDirection", syncDirection)
        w.string("syncModel", syncModel)
        w.string("user", user)
    }

    public var body: EventBody { .replicaCreated(self) }
}

/// `serve`'s synchronizeReplica: what a replica uploaded and was sent, and what its upload overwrote.
public struct ReplicaSynchronized: EventPayload, Hashable {
    public static let eventType = EventType.replicaSynchronized
    public var replicaId: String
    public var user: String
    public var device: String
    public var syncDirection: String
    public var fromServerGen: Int64?
    /// Sessions, adds, updates, deletes (GlobalID references) and the attachment count uploaded.
    public var uploaded: JSONValue
    /// The counts sent.
    public var downloaded: JSONValue
    /// What the upload overwrote of the service's changes.
    public var overwrote: [JSONValue]
    public var closed: Bool

    public init(replicaId: String, user: String, device: String, syncDirection: String, fromServerGen: Int64?, uploaded: JSONValue,
                downloaded: JSONValue, overwrote: [JSONValue], closed: Bool) {
        self.replicaId = replicaId; self.user = user; self.device = device; self.syncDirection = syncDirection; self.fromServerGen = fromServerGen
        self.uploaded = uploaded; self.downloaded = downloaded; self.overwrote = overwrote; self.closed = closed
    }

    public init(_ p: PayloadReader) throws(EditLogError) {
        replicaId = try p.string("replicaId")
        user = p.optional("user")?.stringValue ?? ""; device = p.optional("device")?.stringValue ?? ""
        syncDirection = p.optional("syncDirection")?.stringValue ?? ""
        fromServerGen = p.optional("fromServerGen")?.intValue
        uploaded = p.payload["uploaded"] ?? .null; downloaded = p.payload["downloaded"] ?? .null
        overwrote = p.optional("overwrote")?.arrayValue ?? []
        closed = p.optional("closed")?.boolValue ?? false
    }

    public func write(to w: inout PayloadWriter) {
        w.bool("closed", closed)
        w.string("device", device)
        w.value("downloaded", downloaded)
        w.intOrNull("fromServerGen", fromServerGen)
        w.value("overwrote", .array(overwrote))
        w.string("replicaId", replicaId)
        w.string("syncDirection", syncDirection)
        w.value("uploaded", uploaded)
        w.string("user", user)
    }

    public var body: EventBody { .replicaSynchronized(self) }
}

/// `serve`'s unRegisterReplica, or a synchronize that closed the replica (`by`).
public struct ReplicaUnregistered: EventPayload, Hashable {
    public static let eventType = EventType.replicaUnregistered
    public var replicaId: String
    public var user: String
    public var device: String
    public var by: String
    public init(replicaId: String, user: String, device: String, by: String) { self.replicaId = replicaId; self.user = user; self.device = device; self.by = by }
    public init(_ p: PayloadReader) throws(EditLogError) {
        replicaId = try p.string("replicaId")
        user = p.optional("user")?.stringValue ?? ""; device = p.optional("device")?.stringValue ?? ""; by = p.optional("by")?.stringValue ?? ""
    }
    public func write(to w: inout PayloadWriter) { w.string("by", by); w.string("device", device); w.string("replicaId", replicaId); w.string("user", user) }
    public var body: EventBody { .replicaUnregistered(self) }
}
