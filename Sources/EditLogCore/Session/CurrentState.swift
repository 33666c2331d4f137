/// A feature as the projections hold it now.
public struct FeatureSnapshot: Sendable, Hashable {
    public var layerId: Int
    public var globalId: String
    public var objectId: Int64
    /// Field name (schema spelling) to value.
    public var attributes: [String: JSONValue]
    public var geometry: JSONValue?
    public var deleted: Bool

    public init(layerId: Int, globalId: String, objectId: Int64, attributes: [String: JSONValue], geometry: JSONValue?, deleted: Bool) {
        self.layerId = layerId; self.globalId = globalId; self.objectId = objectId
        self.attributes = attributes; self.geometry = geometry; self.deleted = deleted
    }
}

public struct AttachmentSnapshot: Sendable, Hashable {
    public var globalId: String
    public var parentLayer: Int
    public var parentGlobalId: String
    public var name: String
    public var contentType: String
    public var size: Int64
    public var sha256: String
    public var deleted: Bool

    public init(globalId: String, parentLayer: Int, parentGlobalId: String, name: String, contentType: String, size: Int64, sha256: String, deleted: Bool) {
        self.globalId = globalId; self.parentLayer = parentLayer; self.parentGlobalId = parentGlobalId
        self.name = name; self.contentType = contentType; self.size = size; self.sha256 = sha256; self.deleted = deleted
    }
}

/// What the edit-session state machine may ask about the current state. The store's projections
/// implement it; the core never does I/O itself.
public protocol CurrentState {
    var schema: ServiceSchema { get }
    func feature(layer: Int, globalId: String) throws -> FeatureSnapshot?
    /// Any layer: GlobalIDs are unique across the service.
    func featureExists(globalId: String) throws -> Bool
    func session(id: String) throws -> SessionState?
    func openSession(layer: Int, globalId: String) throws -> SessionState?
    func openSessions(actor: String) throws -> [SessionState]
    /// Live (not deleted) features of `layer` whose `field` equals `value`, in ObjectID order.
    func features(layer: Int, where field: String, equals value: JSONValue) throws -> [FeatureSnapshot]
    /// Live features of `layer` whose geometry's bounding box contains the point, in ObjectID order.
    func features(layer: Int, containing x: Double, _ y: Double) throws -> [FeatureSnapshot]
    func attachment(globalId: String) throws -> AttachmentSnapshot?
    /// What a failed read means to the user: the store maps its database errors here (busy, corrupt, I/O),
    /// so the decider reports them with the same kinds as every other path.
    func describe(_ error: any Error) -> EditLogError
}

extension CurrentState {
    public func describe(_ error: any Error) -> EditLogError {
        (error as? EditLogError) ?? EditLogError(.io, "reading the current state: \(error)")
    }
}
