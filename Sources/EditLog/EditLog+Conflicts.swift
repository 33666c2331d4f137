import EditLogAudit
import EditLogCore
import EditLogImport
import EditLogMerge
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

@_exported import struct EditLogAudit.ConflictRecord
@_exported import struct EditLogAudit.ConflictResolution

extension EditLog {
    /// Every conflict this log holds (its own decisions and those of the logs it imported), in log order.
    public func conflicts() throws(EditLogError) -> [ConflictRecord] {
        try read { db in try Self.conflicts(db, stream: nil) }
    }

    /// The conflicts of one feature's stream, or of the whole log: the read model's one home (`Audit.conflicts`).
    static func conflicts(_ db: Database, stream: String?) throws -> [ConflictRecord] {
        try Audit.conflicts(db, stream: stream)
    }

    /// One conflict by id (a prefix of at least 8 characters is enough when it is unique).
    public func conflict(id: String) throws(EditLogError) -> ConflictRecord {
        let all = try conflicts()
        let hits = all.filter { $0.conflict.id == id || (id.count >= 8 && $0.conflict.id.hasPrefix(id.lowercased())) }
        guard let first = hits.first else { throw EditLogError(.notFound, "no conflict \(id); `editlog conflicts list` shows them") }
        guard hits.count == 1 else { throw EditLogError(.invalidInput, "conflict id \(id) is ambiguous (\(hits.count) match); give more of it") }
        return first
    }

    /// Re-resolves a conflict by hand (`ConflictResolver`): a field conflict takes the chosen value, validated as a pop-up
    /// edit of that field would be, and the rules derive again after it; any other is closed as this log holds it.
    @discardableResult
    public func resolveConflict(id: String, take choice: ConflictChoice, actor: String, device: String, at clientTime: String? = nil) throws(EditLogError) -> RecordedEvent {
        let record = try conflict(id: id)
        let context = EventContext(actor: actor, device: device, clientTime: clientTime ?? Timestamp.format(milliseconds: store.clock.now()))
        let resolver = try ConflictResolver(record.conflict, take: choice, schema: schema, context: context)
        return try write { unit in try resolver.resolve(in: &unit) }
    }
}
