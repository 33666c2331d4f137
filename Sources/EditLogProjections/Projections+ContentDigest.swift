import EditLogCore
import GRDB

extension Projections {
    /// A digest of what the data says, independent of the log that holds it: per layer, each feature by
    /// GlobalID with its attribute values (the layer's editor-tracking fields included: they name the latest write
    /// in last-in-wins order, `FeatureHistory.lastTracked`, the same in every log that merged the same events),
    /// geometry and deleted flag; each attachment by id with its parent, name, type, size, bytes' hash
    /// and detached flag. ObjectIDs, positions, versions and recording times differ between logs that hold the
    /// same data, so they are not in it. Two logs that merged the same events converge when these are equal.
    public static func contentDigest(_ db: Database, schema: ServiceSchema) throws -> String {
        var all = ContentDigest()
        func put(_ v: DatabaseValue) {
            switch v.storage {
            case .null: all.update([0])
            case .int64(let x): all.update([1]); withUnsafeBytes(of: x.bigEndian) { all.update($0) }
            case .double(let x): all.update([2]); withUnsafeBytes(of: x.bitPattern.bigEndian) { all.update($0) }
            case .string(let s): all.update([3]); let b = Array(s.utf8); withUnsafeBytes(of: UInt64(b.count).bigEndian) { all.update($0) }; all.update(b)
            case .blob(let d): all.update([4]); withUnsafeBytes(of: UInt64(d.count).bigEndian) { all.update($0) }; all.update(d)
            }
        }
        for layer in schema.layers.sorted(by: { $0.id < $1.id }) {
            let table = ProjectionTables.featureTable(layer.id)
            guard try db.tableExists(table) else { continue }
            let cols = ["_globalid"] + layer.attributeFields.map { ProjectionTables.quoted($0.name) } + ["_geometry", "_deleted"]
            all.update(Array("\(table)(\(cols.joined(separator: ",")))".utf8))
            let rows = try Row.fetchCursor(db, sql: "SELECT \(cols.joined(separator: ", ")) FROM \(table) ORDER BY _globalid")
            while let r = try rows.next() { for i in 0..<cols.count { put(r[i]) } }
        }
        all.update(Array("p_attachments".utf8))
        let rows = try Row.fetchCursor(db, sql: "SELECT global_id, parent_global_id, name, content_type, size, sha256, deleted FROM p_attachments ORDER BY global_id")
        while let r = try rows.next() { for i in 0..<7 { put(r[i]) } }
        return Hex.encode(all.finalize())
    }
}
