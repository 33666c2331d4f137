/// One line of a `record` script (schema: `schemas/script-line.schema.json`), with the
/// actor, device, client time and session it applies under after inheritance.
public struct ScriptCommand: Sendable, Hashable {
    public var line: Int
    public var op: Operation
    public var actor: String
    public var device: String
    /// Normalized ISO-8601 client time, if any line so far gave one.
    public var at: String?
    /// The session named on the line, if any.
    public var session: String?
    /// Why, where it is not the pop-up's own `session` (or `delete`): a replica's upload is `replica:<id>`. It
    /// marks the session's start and commit and the delete, as `sync-pull` does; staged steps stay `session`.
    public var cause: String?

    public enum Operation: Sendable, Hashable {
        case create(layer: String, globalId: String, geometry: JSONValue?, attributes: [String: JSONValue], parent: ParentRef?)
        case edit(layer: String, globalId: String)
        case set(field: String, value: JSONValue)
        case relate(relationship: String, globalId: String)
        case attach(attachmentId: String, name: String, contentType: String, data: [UInt8], preferredSize: String)
        case renameAttachment(attachmentId: String, name: String)
        case detach(attachmentId: String)
        case finish
        case cancel
        case delete(layer: String, globalId: String)
        case resume
        case abandon

        public var name: String {
            switch self {
            case .create: return "create"
            case .edit: return "edit"
            case .set: return "set"
            case .relate: return "relate"
            case .attach: return "attach"
            case .renameAttachment: return "renameAttachment"
            case .detach: return "detach"
            case .finish: return "finish"
            case .cancel: return "cancel"
            case .delete: return "delete"
            case .resume: return "resume"
            case .abandon: return "abandon"
            }
        }
    }

    public struct ParentRef: Sendable, Hashable {
        public var relationship: String
        public var globalId: String
        public init(relationship: String, globalId: String) { self.relationship = relationship; self.globalId = globalId }
    }

    public init(line: Int, op: Operation, actor: String, device: String, at: String?, session: String?) {
        self.line = line; self.op = op; self.actor = actor; self.device = device; self.at = at; self.session = session
    }
}
