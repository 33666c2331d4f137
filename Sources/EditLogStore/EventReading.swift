import EditLogCore
import Foundation
import GRDB

/// Reading events back. Rows decode without Codable (the replay hot path).
public enum EventReading {
    public static let columns = """
        position, id, stream, stream_version, type, payload, actor, device, session, cause,
        client_time, recorded_time, origin_log, origin_position, origin_hash, hash
        """

    public static func decode(_ row: Row) throws -> RecordedEvent {
        let position: Int64 = row[0]
        let idData: Data = row[1]
        guard idData.count == 16 else { throw EditLogError(.corrupt, "event id is \(idData.count) bytes, not 16", at: "position \(position)") }
        let id = idData.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
        let payloadText: String = row[5]
        let payload: JSONValue
        do { payload = try JSONParser.parse(payloadText) } catch {
            throw EditLogError(.corrupt, "payload is not valid JSON (\(error.description))", at: "position \(position)")
        }
        let hash = [UInt8](row[15] as Data)
        let originHash: Data? = row[14]
        return RecordedEvent(
            position: position, id: id, stream: row[2], streamVersion: row[3], type: row[4], payload: payload,
            actor: row[6], device: row[7], session: row[8], cause: row[9], clientTime: row[10], recordedTime: row[11],
            origin: EventOrigin(logId: row[12], position: row[13], hash: originHash.map { [UInt8]($0) } ?? hash), hash: hash)
    }

    /// Calls `body` for each event in position order, from `after` on, streaming (never materializing the log).
    public static func forEach(_ db: Database, after: Int64 = 0, where clause: String? = nil, arguments: StatementArguments = [],
                               _ body: (RecordedEvent) throws -> Void) throws {
        let sql = "SELECT \(columns) FROM events WHERE position > ?\(clause.map { " AND (\($0))" } ?? "") ORDER BY position"
        var args: StatementArguments = [after]
        args += arguments
        let cursor = try Row.fetchCursor(db, sql: sql, arguments: args)
        while let row = try cursor.next() { try body(try decode(row)) }
    }

    public static func count(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT COALESCE(MAX(position), 0) FROM events") ?? 0
    }

    public static func blob(_ db: Database, sha256: String) throws -> [UInt8]? {
        guard let key = Hex.decode(sha256) else { return nil }
        return try Data.fetchOne(db, sql: "SELECT data FROM blobs WHERE sha256 = ?", arguments: [Data(key)]).map { [UInt8]($0) }
    }
}
