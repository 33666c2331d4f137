import EditLogCore
import EditLogProjections
import Foundation
import GRDB

/// An OGC GeoPackage (1.3) of the projection tables: `gpkg_spatial_ref_sys` (the three mandatory rows and
/// each layer's spatial reference), `gpkg_contents` (`features` for layers, with extents; `attributes` for
/// tables), `gpkg_geometry_columns`, and one table per layer: `<ObjectID field> INTEGER PRIMARY KEY`, the
/// GlobalID, the attribute fields, and `geom` holding GeoPackage geometry blobs (the `GP` header with an
/// envelope, little-endian, then the WKB the projections store). Deleted features are not written.
public enum GeoPackageWriter {
    public static let applicationId: Int32 = 0x4750_4B47  // 'GPKG'
    public static let userVersion: Int32 = 10300
    public static let geometryColumn = "geom"

    static let wgs84 = """
        GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563,AUTHORITY["EPSG","7030"]],AUTHORITY["EPSG","6326"]],\
        PRIMEM["Greenwich",0,AUTHORITY["EPSG","8901"]],UNIT["degree",0.0174532925199433,AUTHORITY["EPSG","9122"]],AUTHORITY["EPSG","4326"]]
        """
    static let webMercator = """
        PROJCS["WGS 84 / Pseudo-Mercator",GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563,AUTHORITY["EPSG","7030"]],\
        AUTHORITY["EPSG","6326"]],PRIMEM["Greenwich",0,AUTHORITY["EPSG","8901"]],UNIT["degree",0.0174532925199433,AUTHORITY["EPSG","9122"]],\
        AUTHORITY["EPSG","4326"]],PROJECTION["Mercator_1SP"],PARAMETER["central_meridian",0],PARAMETER["scale_factor",1],\
        PARAMETER["false_easting",0],PARAMETER["false_northing",0],UNIT["metre",1,AUTHORITY["EPSG","9001"]],AXIS["Easting",EAST],\
        AXIS["Northing",NORTH],EXTENSION["PROJ4","+proj=merc +a=6378137 +b=6378137 +lat_ts=0 +lon_0=0 +x_0=0 +y_0=0 +k=1 +units=m +nadgrids=@null +wktext +no_defs"],\
        AUTHORITY["EPSG","3857"]]
        """

    /// The geometry type name for `gpkg_geometry_columns` (what `Geometry.wkb` writes for each Esri type).
    public static func geometryTypeName(_ esri: String?) -> String {
        switch esri {
        case "esriGeometryPoint": return "POINT"
        case "esriGeometryMultipoint": return "MULTIPOINT"
        case "esriGeometryPolyline": return "MULTILINESTRING"
        case "esriGeometryPolygon": return "POLYGON"
        default: return "GEOMETRY"
        }
    }

    /// The GeoPackage column type of a field.
    static func columnType(_ t: FieldType) -> String {
        switch t {
        case .smallInteger: return "SMALLINT"
        case .oid, .integer, .bigInteger: return "INTEGER"
        case .single: return "FLOAT"
        case .double: return "DOUBLE"
        case .date: return "DATETIME"
        case .dateOnly: return "DATE"
        case .blob: return "BLOB"
        default: return "TEXT"
        }
    }

    /// A GeoPackage geometry blob: `GP`, version 0, flags (envelope [minx, maxx, miny, maxy], little-endian),
    /// srs_id, the envelope, then the WKB.
    public static func blob(wkb: [UInt8], srsId: Int32, envelope: (minX: Double, minY: Double, maxX: Double, maxY: Double)) -> [UInt8] {
        var out: [UInt8] = [0x47, 0x50, 0, 0b0000_0011]
        withUnsafeBytes(of: srsId.littleEndian) { out.append(contentsOf: $0) }
        for v in [envelope.minX, envelope.maxX, envelope.minY, envelope.maxY] {
            withUnsafeBytes(of: v.bitPattern.littleEndian) { out.append(contentsOf: $0) }
        }
        return out + wkb
    }

    /// `tick` is called once per feature row written.
    public static func write(_ state: Database, layers: [ExportLayer], to path: String, lastChange: String, tick: (() -> Void)? = nil) throws {
        let q = try DatabaseQueue(path: path)
        try q.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA application_id = \(applicationId); PRAGMA user_version = \(userVersion)")
            try db.inTransaction {
                try createCoreTables(db)
                var srs = Set<Int>()
                for l in layers where l.hasGeometry { if let e = l.epsg, srs.insert(e).inserted { try addSpatialReference(db, e) } }
                for l in layers { try writeLayer(state, l, db, lastChange: lastChange, tick: tick) }
                return .commit
            }
        }
        try q.close()
    }

    static func createCoreTables(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE gpkg_spatial_ref_sys (
                srs_name TEXT NOT NULL, srs_id INTEGER PRIMARY KEY, organization TEXT NOT NULL,
                organization_coordsys_id INTEGER NOT NULL, definition TEXT NOT NULL, description TEXT);
            CREATE TABLE gpkg_contents (
                table_name TEXT NOT NULL PRIMARY KEY, data_type TEXT NOT NULL, identifier TEXT UNIQUE, description TEXT DEFAULT '',
                last_change DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
                min_x DOUBLE, min_y DOUBLE, max_x DOUBLE, max_y DOUBLE, srs_id INTEGER,
                CONSTRAINT fk_gc_r_srs_id FOREIGN KEY (srs_id) REFERENCES gpkg_spatial_ref_sys(srs_id));
            CREATE TABLE gpkg_geometry_columns (
                table_name TEXT NOT NULL, column_name TEXT NOT NULL, geometry_type_name TEXT NOT NULL, srs_id INTEGER NOT NULL,
                z TINYINT NOT NULL, m TINYINT NOT NULL,
                CONSTRAINT pk_geom_cols PRIMARY KEY (table_name, column_name), CONSTRAINT uk_gc_table_name UNIQUE (table_name),
                CONSTRAINT fk_gc_tn FOREIGN KEY (table_name) REFERENCES gpkg_contents(table_name),
                CONSTRAINT fk_gc_srs FOREIGN KEY (srs_id) REFERENCES gpkg_spatial_ref_sys (srs_id));
            INSERT INTO gpkg_spatial_ref_sys VALUES ('Undefined cartesian SRS', -1, 'NONE', -1, 'undefined', 'undefined cartesian coordinate reference system');
            INSERT INTO gpkg_spatial_ref_sys VALUES ('Undefined geographic SRS', 0, 'NONE', 0, 'undefined', 'undefined geographic coordinate reference system');
            """)
        try db.execute(sql: "INSERT INTO gpkg_spatial_ref_sys VALUES ('WGS 84 geodetic', 4326, 'EPSG', 4326, ?, 'longitude/latitude coordinates in decimal degrees on the WGS 84 spheroid')",
                       arguments: [wgs84])
    }

    /// A layer's spatial reference beyond the mandatory rows: Web Mercator with its definition, any other
    /// code as an EPSG row whose definition is `undefined` (readers look the code up themselves).
    static func addSpatialReference(_ db: Database, _ epsg: Int) throws {
        switch epsg {
        case 4326, 0, -1: return
        case 3857:
            try db.execute(sql: "INSERT INTO gpkg_spatial_ref_sys VALUES ('WGS 84 / Pseudo-Mercator', 3857, 'EPSG', 3857, ?, 'Web Mercator (Esri 102100)')", arguments: [webMercator])
        default:
            try db.execute(sql: "INSERT INTO gpkg_spatial_ref_sys VALUES (?, ?, 'EPSG', ?, 'undefined', 'from the service''s spatialReference')",
                           arguments: ["EPSG:\(epsg)", epsg, epsg])
        }
    }

    static func writeLayer(_ state: Database, _ l: ExportLayer, _ db: Database, lastChange: String, tick: (() -> Void)?) throws {
        let name = l.schema.name
        let q = ProjectionTables.quoted
        let fields = l.schema.attributeFields
        var columns = ["\(q(l.objectIdName)) INTEGER PRIMARY KEY", "\(q(l.globalIdName)) TEXT"]
        columns += fields.map { "\(q($0.name)) \(columnType($0.type))" }
        let srsId = Int32(l.epsg ?? 4326)
        if l.hasGeometry { columns.append("\(q(geometryColumn)) \(geometryTypeName(l.schema.geometryType))") }
        try db.execute(sql: "CREATE TABLE \(q(name)) (\(columns.joined(separator: ", ")))")
        if l.hasGeometry {
            let e = try Row.fetchOne(state, sql: "SELECT MIN(_xmin), MIN(_ymin), MAX(_xmax), MAX(_ymax) FROM \(l.table) WHERE _deleted = 0 AND _wkb IS NOT NULL")
            try db.execute(sql: "INSERT INTO gpkg_contents (table_name, data_type, identifier, description, last_change, min_x, min_y, max_x, max_y, srs_id) VALUES (?, 'features', ?, '', ?, ?, ?, ?, ?, ?)",
                           arguments: [name, name, lastChange, e?[0] as Double?, e?[1] as Double?, e?[2] as Double?, e?[3] as Double?, srsId])
            try db.execute(sql: "INSERT INTO gpkg_geometry_columns VALUES (?, ?, ?, ?, 0, 0)",
                           arguments: [name, geometryColumn, geometryTypeName(l.schema.geometryType), srsId])
        } else {
            try db.execute(sql: "INSERT INTO gpkg_contents (table_name, data_type, identifier, description, last_change) VALUES (?, 'attributes', ?, '', ?)",
                           arguments: [name, name, lastChange])
        }
        let placeholders = Array(repeating: "?", count: 2 + fields.count + (l.hasGeometry ? 1 : 0)).joined(separator: ", ")
        let insert = try db.makeStatement(sql: "INSERT INTO \(q(name)) VALUES (\(placeholders))")
        let rows = try l.liveRows(state)
        while let row = try rows.next() {
            var values: [DatabaseValue] = [row["_oid"], row["_globalid"]]
            for f in fields {
                let v: DatabaseValue = row[f.name]
                if f.type == .date, case .int64(let ms) = v.storage {
                    values.append(Timestamp.format(milliseconds: ms).databaseValue)  // GeoPackage DATETIME is ISO-8601 text
                } else {
                    values.append(v)
                }
            }
            if l.hasGeometry {
                if let wkb: Data = row["_wkb"], let minX: Double = row["_xmin"], let minY: Double = row["_ymin"],
                   let maxX: Double = row["_xmax"], let maxY: Double = row["_ymax"] {
                    values.append(Data(blob(wkb: [UInt8](wkb), srsId: srsId, envelope: (minX, minY, maxX, maxY))).databaseValue)
                } else {
                    values.append(.null)
                }
            }
            try insert.execute(arguments: StatementArguments(values))
            tick?()
        }
    }
}
