import EditLogCore
import EditLogStore
import Foundation
import GRDB
import GRDBSQLite

/// The features of a query as Esri JSON bytes, written straight from SQLite's columns: the feature service's
/// `query` (`f=json`) answers up to `maxRecordCount` features per request, and building an `esriFeature`
/// (a `FeatureSnapshot`, a dictionary of `JSONValue`s, the geometry parsed) for each was much of a
/// large query's time. The bytes are the document `esriFeature` gives with the attributes filtered to the
/// requested fields, in their order, and the geometry without a spatial reference.
extension ProjectedState {
    /// Where each requested field's value is in a `SELECT *` row of the layer's table: the ObjectID (column 0),
    /// the GlobalID (column 1), or an attribute (2 + its index); fields with no column (geometry) are left out.
    /// Each with its key as bytes (`"name":`).
    public static func featureSetColumns(_ layer: LayerSchema, fields: [FieldSchema]) -> [(key: [UInt8], column: Int32)] {
        var index: [String: Int32] = [:]
        for (i, f) in layer.attributeFields.enumerated() { index[f.name] = Int32(2 + i) }
        if let oid = layer.objectIdField { index[oid] = 0 }
        if let gid = layer.globalIdField { index[gid] = 1 }
        return fields.compactMap { f in
            guard let c = index[f.name] else { return nil }
            var key: [UInt8] = []
            JSONValue.writeString(f.name, to: &key)
            key.append(UInt8(ascii: ":"))
            return (key, c)
        }
    }

    /// Steps `statement` (a `SELECT *` of the layer's table, arguments set) and writes each row as
    /// `{"attributes":{…},"geometry":{…}}`, comma-separated, at most `limit`; resets the statement.
    /// Returns how many were written and whether another row matched beyond the limit.
    public func writeEsriFeatures(_ layer: LayerSchema, _ statement: Statement, columns: [(key: [UInt8], column: Int32)],
                                  returnGeometry: Bool, limit: Int?, to out: inout [UInt8]) throws -> (count: Int, exceeded: Bool) {
        let stmt = statement.sqliteStatement
        defer { sqlite3_reset(stmt) }
        let g = Int32(2 + layer.attributeFields.count)
        let geometry = returnGeometry && !layer.isTable
        var count = 0
        while true {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { return (count, false) }
            guard rc == SQLITE_ROW else { throw RawBindings.lastError(on: db.sqliteConnection, sql: statement.sql) }
            if let limit, count >= limit { return (count, true) }
            if count > 0 { out.append(UInt8(ascii: ",")) }
            count += 1
            out.append(contentsOf: Self.attributesOpen)
            for (n, c) in columns.enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: c.key)
                Self.writeColumn(stmt, c.column, to: &out)
            }
            out.append(UInt8(ascii: "}"))
            if geometry, sqlite3_column_type(stmt, g) != SQLITE_NULL, let p = sqlite3_column_text(stmt, g) {
                let text = UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(stmt, g)))
                out.append(contentsOf: Self.geometryKey)
                try writeGeometry(layer, text, stmt: stmt, column: g, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static let attributesOpen = Array(#"{"attributes":{"#.utf8)
    private static let geometryKey = Array(#","geometry":"#.utf8)
    private static let spatialReference = Array(#""spatialReference""#.utf8)

    /// A column as `jsonColumn(_:_:)` writes it (blobs as base64), without a `JSONValue` in between.
    static func writeColumn(_ stmt: OpaquePointer, _ i: Int32, to out: inout [UInt8]) {
        switch sqlite3_column_type(stmt, i) {
        case SQLITE_NULL: out.append(contentsOf: "null".utf8)
        case SQLITE_INTEGER: JSONValue.writeInt(sqlite3_column_int64(stmt, i), to: &out)
        case SQLITE_FLOAT: JSONValue.writeDouble(sqlite3_column_double(stmt, i), to: &out)
        case SQLITE_TEXT:
            let n = Int(sqlite3_column_bytes(stmt, i))
            guard n > 0, let p = sqlite3_column_text(stmt, i) else { out.append(contentsOf: "\"\"".utf8); return }
            JSONValue.writeString(utf8: UnsafeBufferPointer(start: p, count: n), to: &out)
        default: JSONValue.writeString(jsonColumn(stmt, i).stringValue ?? "", to: &out)
        }
    }

    /// Whether `marker` occurs in `text`. Written out: glibc's `memmem` is not exported to Swift without
    /// `_GNU_SOURCE`, and the standard library's generic `firstRange(of:)` was slower on a feature set.
    static func contains(_ text: UnsafeBufferPointer<UInt8>, _ marker: [UInt8]) -> Bool {
        guard let base = text.baseAddress, let first = marker.first, text.count >= marker.count else { return false }
        var i = 0
        let last = text.count - marker.count
        while i <= last {
            if base[i] == first, marker.withUnsafeBytes({ memcmp(base + i, $0.baseAddress!, marker.count) }) == 0 { return true }
            i += 1
        }
        return false
    }

    /// The stored geometry is canonical JSON (the projector writes `serialized()`), so unless it names a spatial
    /// reference its bytes are what parsing and writing it would give; otherwise (or when it is not an object,
    /// which an altered projection would be) it is parsed and written without one.
    private func writeGeometry(_ layer: LayerSchema, _ text: UnsafeBufferPointer<UInt8>, stmt: OpaquePointer, column g: Int32, to out: inout [UInt8]) throws {
        let named = Self.contains(text, Self.spatialReference)
        if !named, text.first == UInt8(ascii: "{"), text.last == UInt8(ascii: "}") { out.append(contentsOf: text); return }
        let parsed: JSONValue
        do { parsed = try JSONParser.parse(buffer: text) } catch {
            let globalId = Self.text(stmt, 1) ?? ""
            throw EditLogError(.corrupt, "the projected geometry of \(layer.name) \(globalId) is not JSON (\(error.description)); the projection was altered: run `editlog rebuild`",
                               at: "position \(sqlite3_column_int64(stmt, g + 12))")
        }
        guard var o = parsed.objectValue else { parsed.write(to: &out); return }
        o["spatialReference"] = nil
        JSONValue.object(o).write(to: &out)
    }
}
