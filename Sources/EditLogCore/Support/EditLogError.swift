import Foundation

/// Every error EditLog reports: what is wrong, where, and (when it helps) what to do.
/// The CLI maps `kind` to an exit code.
public struct EditLogError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case invalidInput      // bad JSON, wrong types, unknown names: the input file is at fault
        case validation        // a value or step the schema or a rule forbids
        case conflict          // expected version mismatch, an open session in the way, already exists
        case notFound          // unknown feature, session, attachment
        case corrupt           // verify found tampering, or the file is not an EditLog log
        case unsupported       // a log written by a newer version, an unsupported field type
        case io                // the file system or SQLite failed
        case unavailable       // a hub's store does not answer now (or the node is stopping): try again later
    }

    public var kind: Kind
    /// Where: a file, a line, a JSON path, a position.
    public var location: String?
    public var message: String
    /// The line of the script that failed (`ScriptCommand.line`), when a script's line did, to parse
    /// (`ScriptParser.parse`) or to record (`EditLog.record`): what a caller that built the script maps back to its own
    /// input (serve's applyEdits, to the edit the line belongs to). `location` names it too, for people.
    public var scriptLine: Int?

    public init(_ kind: Kind, _ message: String, at location: String? = nil) {
        self.kind = kind; self.message = message; self.location = location
    }

    public var description: String { location.map { "\($0): \(message)" } ?? message }

    /// The log position the error points at, when its location names one ("position N").
    public var position: Int64? {
        guard let location, let r = location.range(of: "position ", options: .backwards) else { return nil }
        return Int64(location[r.upperBound...].prefix { $0.isNumber })
    }

    public func at(_ outer: String) -> EditLogError {
        var e = self
        e.location = location.map { "\(outer): \($0)" } ?? outer
        return e
    }

    /// The error of a script's step at `line`: `scriptLine`, and "line N" in front of the location.
    public func at(line: Int) -> EditLogError {
        var e = at("line \(line)")
        e.scriptLine = line
        return e
    }
}

/// Several validation failures at once, as the seed's `RichPopupManagerError.invalidPopup` aggregates them.
extension EditLogError {
    public static func aggregate(_ errors: [EditLogError], context: String) -> EditLogError {
        let kind = errors.first?.kind ?? .validation
        if errors.count == 1 { return EditLogError(kind, "\(context): \(errors[0].description)") }
        return EditLogError(kind, "\(context): \(errors.count) problems: " + errors.map(\.description).joined(separator: "; "))
    }
}
