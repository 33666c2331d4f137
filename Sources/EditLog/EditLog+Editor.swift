import EditLogCore
import Foundation

/// The library API apps use, shaped like the seed's `RichPopupManager`: start an edit session on a
/// feature, update values (each validated and recorded at once), stage relationship and attachment
/// changes, then finish (validate all, commit atomically) or cancel. Every call is its own transaction.
public struct Editor {
    public let log: EditLog
    public var actor: String
    public var device: String
    /// The client's clock, for the `at` of each step (injected, so apps and tests are deterministic).
    public var clientClock: any LogClock

    public init(log: EditLog, actor: String, device: String, clientClock: any LogClock = SystemClock()) {
        self.log = log; self.actor = actor; self.device = device; self.clientClock = clientClock
    }

    func command(_ op: ScriptCommand.Operation, session: String?) -> ScriptCommand {
        ScriptCommand(line: 0, op: op, actor: actor, device: device, at: Timestamp.format(milliseconds: clientClock.now()), session: session)
    }

    @discardableResult
    func perform(_ op: ScriptCommand.Operation, session: String?) throws(EditLogError) -> [RecordedEvent] {
        try log.apply(command(op, session: session))
    }

    /// Opens a session on a new feature (`parent` for a one-to-many child such as an inspection).
    public func create(layer: String, globalId: String, geometry: JSONValue? = nil, attributes: [String: JSONValue] = [:],
                       parent: ScriptCommand.ParentRef? = nil, sessionId: String? = nil) throws(EditLogError) -> PopupSession {
        let id = sessionId ?? log.store.ids.next().lowercasedString
        try perform(.create(layer: layer, globalId: globalId, geometry: geometry, attributes: attributes, parent: parent), session: id)
        return PopupSession(editor: self, id: id)
    }

    /// Starts a session on an existing feature.
    public func edit(layer: String, globalId: String, sessionId: String? = nil) throws(EditLogError) -> PopupSession {
        let id = sessionId ?? log.store.ids.next().lowercasedString
        try perform(.edit(layer: layer, globalId: globalId), session: id)
        return PopupSession(editor: self, id: id)
    }

    /// Resumes a session left open (by a crash, or by another device).
    public func resume(sessionId: String) throws(EditLogError) -> PopupSession {
        try perform(.resume, session: sessionId)
        return PopupSession(editor: self, id: sessionId)
    }

    /// Deletes a feature outside any session (composite relationships delete its children too).
    @discardableResult
    public func delete(layer: String, globalId: String) throws(EditLogError) -> [RecordedEvent] {
        try perform(.delete(layer: layer, globalId: globalId), session: nil)
    }
}

/// One open pop-up edit session.
public struct PopupSession {
    public let editor: Editor
    public let id: String

    /// The seed's `updateValue`: validated at once; an invalid value throws and records nothing.
    public func updateValue(_ value: JSONValue, field: String) throws(EditLogError) { try editor.perform(.set(field: field, value: value), session: id) }
    /// Stages a many-to-one change (the tree's species).
    public func relate(relationship: String, to globalId: String) throws(EditLogError) { try editor.perform(.relate(relationship: relationship, globalId: globalId), session: id) }
    public func addAttachment(id attachmentId: String, name: String, contentType: String, data: [UInt8], preferredSize: String = "actual") throws(EditLogError) {
        try editor.perform(.attach(attachmentId: attachmentId, name: name, contentType: contentType, data: data, preferredSize: preferredSize), session: id)
    }
    public func renameAttachment(id attachmentId: String, to name: String) throws(EditLogError) { try editor.perform(.renameAttachment(attachmentId: attachmentId, name: name), session: id) }
    public func deleteAttachment(id attachmentId: String) throws(EditLogError) { try editor.perform(.detach(attachmentId: attachmentId), session: id) }
    /// Validates everything (all errors at once) and commits atomically; then the dataset rules run.
    @discardableResult
    public func finishEditing() throws(EditLogError) -> [RecordedEvent] { try editor.perform(.finish, session: id) }
    /// Discards the session; its staged steps stay in the log for auditors.
    public func cancelEditing() throws(EditLogError) { try editor.perform(.cancel, session: id) }
    public func abandon() throws(EditLogError) { try editor.perform(.abandon, session: id) }
}
