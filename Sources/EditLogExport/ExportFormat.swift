import EditLogCore
import EditLogProjections
import Foundation
import GRDB

/// An export format, chosen by the output path's extension.
public enum ExportFormat: String, Sendable, CaseIterable {
    case sqlite, gpkg, geojson, csv

    public var fileExtension: String { rawValue }

    /// `.sqlite` (also `.db`, `.sqlite3`), `.gpkg`, `.geojson` (also `.json`), `.csv`; a trailing `/` is ignored.
    public static func of(path: String) -> ExportFormat? {
        var p = path
        while p.count > 1 && p.hasSuffix("/") { p.removeLast() }
        switch (p as NSString).pathExtension.lowercased() {
        case "sqlite", "sqlite3", "db": return .sqlite
        case "gpkg": return .gpkg
        case "geojson", "json": return .geojson
        case "csv": return .csv
        default: return nil
        }
    }
}

/// What an export wrote.
public struct ExportSummary: Sendable {
    public var format: ExportFormat
    /// The files written (one for `.sqlite` and `.gpkg`; one per layer for `.geojson` and `.csv` in a folder).
    public var files: [String] = []
    /// Live features (rows) written per layer name, in layer order.
    public var features: [(layer: String, count: Int)] = []

    public init(format: ExportFormat, files: [String] = [], features: [(layer: String, count: Int)] = []) {
        self.format = format
        self.files = files
        self.features = features
    }
}

/// A layer to export: its schema, where its rows are, and its spatial reference.
public struct ExportLayer: Sendable {
    public var schema: LayerSchema
    /// The layer's spatial reference as the service gives it (`latestWkid`, else `wkid`); nil for tables.
    public var wkid: Int?
    public var table: String { ProjectionTables.featureTable(schema.id) }
    public var hasGeometry: Bool { !schema.isTable && schema.geometryType != nil }

    /// The EPSG code a wkid stands for (Esri's Web Mercator codes are EPSG:3857).
    public var epsg: Int? {
        guard let wkid else { return nil }
        return [102100, 102113, 900913].contains(wkid) ? 3857 : wkid
    }
}

public enum Exporter {
    /// The spatial reference of a layer in a schema event's definitions: its definition's
    /// `extent.spatialReference` or `spatialReference` (`latestWkid` first), else the service's;
    /// 4326 when the documents give none.
    public static func wkid(of layer: LayerSchema, definitions: SchemaDefinitions?) -> Int? {
        guard !layer.isTable, layer.geometryType != nil else { return nil }
        func wkid(_ sr: JSONValue?) -> Int? {
            guard let sr else { return nil }
            return (sr["latestWkid"]?.intValue ?? sr["wkid"]?.intValue).map { Int($0) }
        }
        var definition: JSONValue?
        var serviceWide: Int?
        func walk(_ v: JSONValue) {
            switch v {
            case .object(let o):
                if definition == nil, o["fields"] != nil, o["id"]?.intValue == Int64(layer.id), o["name"]?.stringValue == layer.name { definition = v }
                if serviceWide == nil, let w = wkid(o["spatialReference"]) { serviceWide = w }
                for (_, c) in o { walk(c) }
            case .array(let a):
                for c in a { walk(c) }
            default:
                break
            }
        }
        if let definitions { walk(definitions.document) }
        return wkid(definition?["extent"]?["spatialReference"]) ?? wkid(definition?["spatialReference"]) ?? serviceWide ?? 4326
    }

    /// The layers to export: those named (name or id), or every layer of the schema.
    public static func layers(_ refs: [String], schema: ServiceSchema, definitions: SchemaDefinitions?) throws -> [ExportLayer] {
        var chosen: [LayerSchema] = []
        if refs.isEmpty { chosen = schema.layers } else {
            for r in refs {
                let l = try schema.requireLayer(r)
                if !chosen.contains(where: { $0.id == l.id }) { chosen.append(l) }
            }
        }
        return chosen.map { ExportLayer(schema: $0, wkid: wkid(of: $0, definitions: definitions)) }
    }

    /// Writes the projection tables of `state` (a replay, or the live log) to `out` in `format`.
    /// `lastChange` (the recording time of the last event included) dates the GeoPackage's contents, so the
    /// same moment always gives the same bytes. An existing output is refused unless `overwrite`.
    /// `progress` gets (rows written, rows to write) every 10,000 rows and at the end: the live features of the
    /// chosen layers, or for `.sqlite` every row of the tables copied.
    public static func write(_ state: Database, layers: [ExportLayer], to out: String, format: ExportFormat, lastChange: String,
                             overwrite: Bool, progress: ((Int64, Int64) -> Void)? = nil) throws -> ExportSummary {
        var summary = ExportSummary(format: format)
        for l in layers {
            let n = try Int.fetchOne(state, sql: "SELECT COUNT(*) FROM \(l.table) WHERE _deleted = 0") ?? 0
            summary.features.append((l.schema.name, n))
        }
        let keep = Set(layers.map(\.table))
        func copied(_ table: String) -> Bool { !table.hasPrefix("p_layer_") || keep.contains(table) }
        var total = Int64(summary.features.map(\.count).reduce(0, +))
        if format == .sqlite, progress != nil {
            total = 0
            for t in try ProjectionTables.all(state) where copied(t) { total += try Int64.fetchOne(state, sql: "SELECT COUNT(*) FROM \(t)") ?? 0 }
        }
        let ticker = ProgressTicker(total: total, report: progress)
        let tick: (() -> Void)? = progress == nil ? nil : ticker.tick
        switch format {
        case .sqlite:
            try atomically(out, overwrite: overwrite) { path in
                let q = try DatabaseQueue(path: path)
                try q.write { db in try ProjectionCopy.copy(from: state, to: db, include: copied, tick: tick) }
                try q.close()
            }
            summary.files = [out]
        case .gpkg:
            try atomically(out, overwrite: overwrite) { path in try GeoPackageWriter.write(state, layers: layers, to: path, lastChange: lastChange, tick: tick) }
            summary.files = [out]
        case .geojson, .csv:
            for (l, path) in try perLayerPaths(out, layers: layers, format: format) {
                let bytes = format == .geojson ? try GeoJSONWriter.document(state, layer: l, tick: tick) : try CSVWriter.document(state, layer: l, tick: tick)
                try atomically(path, overwrite: overwrite) { p in try Data(bytes).write(to: URL(fileURLWithPath: p)) }
                summary.files.append(path)
            }
        }
        ticker.finish()
        return summary
    }

    /// One layer: `out` itself (unless it ends with `/`). Several: `out` is a folder (created when missing)
    /// holding `<layer name>.<ext>` per layer.
    static func perLayerPaths(_ out: String, layers: [ExportLayer], format: ExportFormat) throws -> [(ExportLayer, String)] {
        if layers.count == 1 && !out.hasSuffix("/") { return [(layers[0], out)] }
        var dir = out
        while dir.count > 1 && dir.hasSuffix("/") { dir.removeLast() }
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: dir, isDirectory: &isDir), !isDir.boolValue {
            throw EditLogError(.conflict, "\(dir) is a file; with several layers --out names a folder")
        }
        do { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) } catch {
            throw EditLogError(.io, "cannot create the folder \(dir): \(error.localizedDescription)")
        }
        return layers.map { l in
            let safe = String(l.schema.name.map { "/\\:".contains($0) ? "_" : $0 })
            return (l, dir + "/" + (safe.hasPrefix(".") ? "_" + safe : safe) + "." + format.fileExtension)
        }
    }

    /// Renames a finished file into place (an existing `path` only when `overwrite`).
    public static func place(_ file: String, at path: String, overwrite: Bool) throws {
        if FileManager.default.fileExists(atPath: path) && !overwrite {
            throw EditLogError(.conflict, "\(path) already exists (--force to replace it)")
        }
        guard rename(file, path) == 0 else {
            let e = errno
            throw EditLogError(.io, "cannot write \(path): \(String(cString: strerror(e)))")
        }
    }

    /// Writes through `body` to a temporary name beside `path`, then renames it into place.
    static func atomically(_ path: String, overwrite: Bool, _ body: (String) throws -> Void) throws {
        if FileManager.default.fileExists(atPath: path) && !overwrite {
            throw EditLogError(.conflict, "\(path) already exists (--force to replace it)")
        }
        let partial = path + ".partial-\(getpid())"
        func clean() { for s in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: partial + s) } }
        clean()
        do { try body(partial) } catch { clean(); throw error }
        guard rename(partial, path) == 0 else {
            let e = errno
            clean()
            throw EditLogError(.io, "cannot write \(path): \(String(cString: strerror(e)))")
        }
    }
}

/// Shared by the writers: a layer's live rows in ObjectID order.
extension ExportLayer {
    func liveRows(_ db: Database) throws -> RowCursor {
        try Row.fetchCursor(db, sql: "SELECT * FROM \(table) WHERE _deleted = 0 ORDER BY _oid")
    }

    /// The export's columns: ObjectID, GlobalID, then the attribute fields in schema order.
    var objectIdName: String { schema.objectIdField ?? "OBJECTID" }
    var globalIdName: String { schema.globalIdField ?? "GlobalID" }

    /// A row's attribute value as JSON, as `query` gives it (dates as epoch milliseconds).
    func value(_ row: Row, _ field: FieldSchema) -> JSONValue {
        ProjectedState.jsonValue(row[field.name])
    }

    /// The row's Esri JSON geometry, nil when it has none; a stored geometry that is not JSON is `.corrupt`
    /// (as `ProjectedState` reports it), never exported as missing.
    func esriGeometry(_ row: Row) throws -> JSONValue? {
        guard let text: String = row["_geometry"] else { return nil }
        do { return try JSONParser.parse(text) } catch {
            let position: Int64 = row["_position"]
            throw EditLogError(.corrupt, "the geometry of \(schema.name) \(row["_globalid"] as String) is not JSON (\(error.description)); run `editlog rebuild`",
                               at: "position \(position)")
        }
    }
}
