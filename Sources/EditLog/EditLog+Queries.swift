import EditLogAudit
import EditLogCore
import EditLogProjections
import EditLogStore
import Foundation
import GRDB

@_exported import struct EditLogAudit.HistoryEntry
@_exported import struct EditLogAudit.LogFilter
@_exported import struct EditLogAudit.SessionSummary
@_exported import struct EditLogAudit.VerifyReport
@_exported import struct EditLogAudit.RelationChoice
@_exported import struct EditLogAudit.Blame
@_exported import struct EditLogAudit.BlameEntry
@_exported import struct EditLogAudit.DiffResult
@_exported import struct EditLogAudit.FeatureChange
@_exported import struct EditLogAudit.FieldChange
@_exported import struct EditLogAudit.AuditReport
@_exported import struct EditLogAudit.SchemaChangeRecord
@_exported import enum EditLogProjections.ChangeIndex

extension EditLog {
    public func eventCount() throws(EditLogError) -> Int64 {
        try read { db in try EventReading.count(db) }
    }

    public func layer(_ ref: String) throws(EditLogError) -> LayerSchema { try schema.requireLayer(ref) }

    public func normalizeGlobalId(_ s: String) throws(EditLogError) -> String {
        guard let g = GlobalID.normalize(s) else { throw EditLogError(.invalidInput, "\"\(s.prefix(60))\" is not a GlobalID (a GUID)") }
        return g
    }

    /// An Esri JSON feature set of the layer's live features.
    public func query(layer ref: String) throws(EditLogError) -> JSONValue {
        let l = try layer(ref)
        return try read { db in try ProjectedState(db: db, schema: schema).featureSet(layer: l) }
    }

    public func show(globalId: String) throws(EditLogError) -> JSONValue {
        let g = try normalizeGlobalId(globalId)
        guard let v = try read({ db -> JSONValue? in
            let state = ProjectedState(db: db, schema: schema)
            guard var doc = try state.featureDocument(globalId: g)?.objectValue, let layer = try state.locate(globalId: g) else { return nil }
            // The conflicts behind its values (imports that met concurrent changes), through the stream index.
            let conflicts = try Self.conflicts(db, stream: StreamName.feature(layer: layer.id, globalId: g))
            if !conflicts.isEmpty {
                doc["conflicts"] = .array(conflicts.map { r in
                    .object(["id": .string(r.conflict.id), "kind": .string(r.conflict.kind.rawValue), "field": JSONValue(r.conflict.field),
                             "winner": .string(r.conflict.winner.rawValue), "status": .string(r.status), "position": .int(r.position),
                             "decidedIn": .string(r.decidedIn)])
                })
            }
            return .object(doc)
        }) else {
            throw EditLogError(.notFound, "no feature \(g) in this log")
        }
        return v
    }

    /// Calls `body` for each matching event in position order; returns how many matched.
    @discardableResult
    public func events(_ filter: LogFilter, _ body: (RecordedEvent) throws -> Void) throws(EditLogError) -> Int {
        return try read { db in
            var n = 0
            try Audit.events(db, schema: schema, filter: filter) { e in n += 1; try body(e) }
            return n
        }
    }

    public func history(globalId: String, clock: EventClock = .default, asOf: LogMoment? = nil) throws(EditLogError) -> (layer: LayerSchema, entries: [HistoryEntry]) {
        let g = try normalizeGlobalId(globalId)
        guard let h = try read({ db in try Audit.history(db, schema: schema, globalId: g, clock: clock, asOf: asOf) }) else {
            throw EditLogError(.notFound, "no feature \(g) in this log")
        }
        return h
    }

    public func sessions(status: String? = nil, actor: String? = nil, globalId: String? = nil, clock: EventClock = .default) throws(EditLogError) -> [SessionSummary] {
        let g = try globalId.map { s throws(EditLogError) in try normalizeGlobalId(s) }
        return try read { db in try Audit.sessions(db, schema: schema, status: status, actor: actor, globalId: g, clock: clock) }
    }

    /// Every field value of a feature (at the end, or as of a moment) with the event that set it.
    public func blame(globalId: String, asOf: LogMoment? = nil, clock: EventClock = .default) throws(EditLogError) -> Blame {
        let g = try normalizeGlobalId(globalId)
        guard let b = try read({ db in try Audit.blame(db, schema: schema, globalId: g, asOf: asOf, clock: clock) }) else {
            throw EditLogError(.notFound, "no feature \(g) in this log")
        }
        return b
    }

    /// The figures of `editlog report` for a window (by default from the end of the baseline to the end: `Audit.report`). `progress` gets
    /// (done, total) over its one scan of the window.
    public func report(from: LogMoment? = nil, to: LogMoment? = nil, clock: EventClock = .default,
                       progress: ((Int64, Int64) -> Void)? = nil) throws(EditLogError) -> AuditReport {
        return try read { db in try Audit.report(db, schema: schema, from: from, to: to, clock: clock, progress: progress) }
    }

    /// Features added, deleted and updated between two moments (`from` exclusive, `to` inclusive).
    public func diff(from: LogMoment, to: LogMoment, layer ref: String? = nil, clock: EventClock = .default, geometry: Bool = false) throws(EditLogError) -> DiffResult {
        let layerId = try ref.map { r throws(EditLogError) in try layer(r).id }
        if case .position(let a) = from, case .position(let b) = to, a > b {
            throw EditLogError(.invalidInput, "diff: from (position \(a)) is after to (position \(b))")
        }
        if case .time(let a) = from, case .time(let b) = to, a > b {
            throw EditLogError(.invalidInput, "diff: from (\(a)) is after to (\(b))")
        }
        return try read { db in try Audit.diff(db, schema: schema, from: from, to: to, layer: layerId, clock: clock, geometry: geometry) }
    }

    /// The features of a layer added, updated and deleted after position `from` up to `to`, from the change index
    /// (`ChangeIndex.changes`: the work grows with the window's changes); nil for a log without the index (`diff` answers).
    public func changedFeatures(layer ref: String, after from: Int64, upTo to: Int64) throws(EditLogError) -> [(globalId: String, change: ChangeIndex.Change)]? {
        let id = try layer(ref).id
        return try read { db in try ChangeIndex.changes(db, layer: id, after: from, upTo: to) }
    }

    /// Drops and rebuilds every projection from the events, in one transaction.
    public func rebuild(progress: ((Int64, Int64) -> Void)? = nil) throws(EditLogError) {
        // The events are read on a second connection, so the projection rows are written on another thread meanwhile.
        try write { unit in
            let db = unit.db
            try store.withSecondReader { events in _ = try Projections.rebuild(db, events: events, progress: progress) }
        }
    }

    /// Structure (integrity, definitions, log_meta), hash chain, blobs and (unless skipped) projections against a rebuild.
    /// `structure: false` skips SQLite's integrity_check and the definitions (the benchmark times the chain alone).
    public func verify(projections: Bool = true, structure: Bool = true, progress: ((Int64, Int64) -> Void)? = nil) throws(EditLogError) -> VerifyReport {
        try Self.verify(store: store, projections: projections, structure: structure, progress: progress)
    }

    /// Verifies a log file without decoding its schema first, so a tampered schema event is reported by
    /// its position like any other event.
    public static func verify(at path: String, projections: Bool = true, progress: ((Int64, Int64) -> Void)? = nil) throws(EditLogError) -> VerifyReport {
        try verify(store: try EventStore.open(at: path, readonly: true), projections: projections, structure: true, progress: progress)
    }

    static func verify(store: EventStore, projections: Bool, structure: Bool, progress: ((Int64, Int64) -> Void)?) throws(EditLogError) -> VerifyReport {
        let logId = store.logId
        return try store.read { db in
            var r = VerifyReport()
            if structure { try Verifier.verifyStructure(db, logId: logId, into: &r) }
            try Verifier.verifyChain(db, logId: logId, into: &r, progress: progress)
            try Verifier.verifyBlobs(db, into: &r)
            if projections && r.ok { try Verifier.verifyProjections(db, into: &r) }
            return r
        }
    }

    /// Attachment bytes by SHA-256.
    public func blob(sha256: String) throws(EditLogError) -> [UInt8]? {
        try read { db in try EventReading.blob(db, sha256: sha256) }
    }

    /// A stored blob's size and the number of pieces `blobPiece` gives it in (1 up to 4 MiB; 1 MiB pieces above),
    /// or nil when the log does not hold it: for a caller that sends an attachment without holding it whole.
    public func blobLayout(sha256: String) throws(EditLogError) -> (size: Int64, pieces: Int)? {
        guard let key = Hex.decode(sha256), key.count == 32 else { return nil }
        return try read { db in try BlobReading.layout(db, sha256: key) }
    }

    /// Piece `index` (from 0) of a stored blob's bytes (`blobLayout`), or nil past its last piece. Each call is a
    /// read of its own: a blob never changes once stored, so pieces read apart make the same bytes.
    public func blobPiece(sha256: String, index: Int) throws(EditLogError) -> [UInt8]? {
        guard let key = Hex.decode(sha256), key.count == 32 else { return nil }
        return try read { db in try BlobReading.piece(db, sha256: key, index: index) }
    }

    /// Aggregate figures for summaries.
    public func stats() throws(EditLogError) -> JSONValue {
        try projected { state in
            let db = state.db
            var o: [String: JSONValue] = ["events": .int(try EventReading.count(db))]
            var byStatus: [String: JSONValue] = [:]
            for (status, n) in try state.sessionCountsByStatus() { byStatus[status] = .int(n) }
            o["sessions"] = .object(byStatus)
            var byType: [String: JSONValue] = [:]
            for (type, n) in try EventReading.countsByType(db) { byType[type] = .int(n) }
            o["eventTypes"] = .object(byType)
            o["actors"] = .array(try state.sessionActors().map { .string($0) })
            o["attachments"] = .int(try state.liveAttachmentCount())
            o["blobBytes"] = .int(try BlobReading.totalBytes(db))
            return .object(o)
        }
    }
}

extension EditLog {
    /// Digest of the stored projections (every table, every row, typed values).
    public func digestOfProjections() throws(EditLogError) -> String {
        try read { db in try Projections.digest(db).digest }
    }

    /// Digest of projections rebuilt from scratch in memory (the log is not touched).
    public func digestOfRebuild() throws(EditLogError) -> String {
        try read { db in try Projections.rebuiltInMemory(from: db).digest }
    }
}

extension EditLog {
    /// Digest of what the data says, independent of the log (`Projections.contentDigest`): logs that merged
    /// the same events converge when these are equal.
    public func digestOfContent() throws(EditLogError) -> String {
        return try read { db in try Projections.contentDigest(db, schema: schema) }
    }
}
