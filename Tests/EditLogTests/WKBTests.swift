import EditLog
import Foundation
import GRDB
import Testing

/// `Geometry.wkb`: OGC WKB, little endian, 2D, byte for byte.
@Suite struct WKBTests {
    static func geometry(_ json: String) throws -> JSONValue { try JSONParser.parse(json) }

    // Expected bytes are built with these, which are themselves checked against literal bytes below.
    static func u32(_ v: UInt32) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }
    static func f64(_ d: Double) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: d.bitPattern >> (8 * $0)) } }
    static func xy(_ x: Double, _ y: Double) -> [UInt8] { f64(x) + f64(y) }
    static let littleEndian: [UInt8] = [0x01]
    static func point(_ x: Double, _ y: Double) -> [UInt8] { littleEndian + u32(1) + xy(x, y) }
    static func lineString(_ pts: [(Double, Double)]) -> [UInt8] { littleEndian + u32(2) + u32(UInt32(pts.count)) + pts.flatMap { xy($0.0, $0.1) } }
    static func ring(_ pts: [(Double, Double)]) -> [UInt8] { u32(UInt32(pts.count)) + pts.flatMap { xy($0.0, $0.1) } }
    /// Polygon (3, parts are rings), MultiPoint (4, parts are points), MultiLineString (5, parts are line strings).
    static func collection(_ type: UInt32, _ parts: [[UInt8]]) -> [UInt8] { littleEndian + u32(type) + u32(UInt32(parts.count)) + parts.flatMap { $0 } }

    @Test func theHelpersWriteLittleEndian() {
        #expect(Self.u32(1) == [0x01, 0x00, 0x00, 0x00])
        #expect(Self.u32(0x0102_0304) == [0x04, 0x03, 0x02, 0x01])
        #expect(Self.f64(1.0) == [0, 0, 0, 0, 0, 0, 0xF0, 0x3F])
        #expect(Self.f64(-2.5) == [0, 0, 0, 0, 0, 0, 0x04, 0xC0])
    }

    @Test func aPointIsTwentyOneBytes() throws {
        let wkb = try #require(Geometry.wkb(try Self.geometry(#"{"x":1,"y":2}"#)))
        #expect(wkb == [0x01, 0x01, 0x00, 0x00, 0x00,  // little endian, type 1 (Point)
                        0, 0, 0, 0, 0, 0, 0xF0, 0x3F,  // x = 1.0
                        0, 0, 0, 0, 0, 0, 0x00, 0x40])  // y = 2.0
        #expect(Geometry.wkb(try Self.geometry(#"{"x":-122.6,"y":45.5,"spatialReference":{"wkid":4326}}"#)) == Self.point(-122.6, 45.5))
    }

    @Test func zAndMAreDropped() throws {
        #expect(Geometry.wkb(try Self.geometry(#"{"x":1,"y":2,"z":3,"m":4}"#)) == Self.point(1, 2))
        #expect(Geometry.wkb(try Self.geometry(#"{"hasZ":true,"hasM":true,"paths":[[[0,0,9,8],[1,1,9,8]]]}"#))
                == Self.collection(5, [Self.lineString([(0, 0), (1, 1)])]))
        #expect(Geometry.wkb(try Self.geometry(#"{"hasZ":true,"rings":[[[0,0,1],[0,1,1],[1,1,1],[0,0,1]]]}"#))
                == Self.collection(3, [Self.ring([(0, 0), (0, 1), (1, 1), (0, 0)])]))
    }

    @Test func aMultipointHoldsWholePoints() throws {
        let wkb = Geometry.wkb(try Self.geometry(#"{"points":[[1,2],[3.5,-4,7]]}"#))
        #expect(wkb == Self.collection(4, [Self.point(1, 2), Self.point(3.5, -4)]))
        #expect(wkb?.count == 51)  // 1 + 4 + 4 + 2 × 21
    }

    @Test func aPolylineIsAlwaysAMultiLineString() throws {
        let one = Geometry.wkb(try Self.geometry(#"{"paths":[[[0,0],[1,0],[1,1]]]}"#))
        #expect(one == Self.collection(5, [Self.lineString([(0, 0), (1, 0), (1, 1)])]))
        let two = Geometry.wkb(try Self.geometry(#"{"paths":[[[0,0],[1,0]],[[5,5],[6,6],[7,5.25]]]}"#))
        #expect(two == Self.collection(5, [Self.lineString([(0, 0), (1, 0)]), Self.lineString([(5, 5), (6, 6), (7, 5.25)])]))
        #expect(two?.count == 107)  // 9 + (9 + 2 × 16) + (9 + 3 × 16)
    }

    @Test func aPolygonHoldsItsRings() throws {
        let square = [(0.0, 0.0), (0.0, 10.0), (10.0, 10.0), (10.0, 0.0), (0.0, 0.0)]
        let hole = [(2.0, 2.0), (4.0, 2.0), (4.0, 4.0), (2.0, 4.0), (2.0, 2.0)]
        #expect(Geometry.wkb(try Self.geometry(#"{"rings":[[[0,0],[0,10],[10,10],[10,0],[0,0]]]}"#))
                == Self.collection(3, [Self.ring(square)]))
        let withHole = Geometry.wkb(try Self.geometry(#"{"rings":[[[0,0],[0,10],[10,10],[10,0],[0,0]],[[2,2],[4,2],[4,4],[2,4],[2,2]]]}"#))
        #expect(withHole == Self.collection(3, [Self.ring(square), Self.ring(hole)]))
        #expect(withHole?.count == 177)  // 9 + 2 × (4 + 5 × 16)
        // README: multi-ring polygons are one Polygon with all rings, even two outer rings (no MultiPolygon).
        let twoOuter = Geometry.wkb(try Self.geometry(#"{"rings":[[[0,0],[0,1],[1,1],[0,0]],[[5,5],[5,6],[6,6],[5,5]]]}"#))
        #expect(twoOuter == Self.collection(3, [Self.ring([(0, 0), (0, 1), (1, 1), (0, 0)]), Self.ring([(5, 5), (5, 6), (6, 6), (5, 5)])]))
    }

    @Test func emptyGeometriesAreEmptyCollections() throws {
        #expect(Geometry.wkb(try Self.geometry(#"{"rings":[]}"#)) == [0x01, 3, 0, 0, 0, 0, 0, 0, 0])
        #expect(Geometry.wkb(try Self.geometry(#"{"paths":[]}"#)) == [0x01, 5, 0, 0, 0, 0, 0, 0, 0])
        #expect(Geometry.wkb(try Self.geometry(#"{"points":[]}"#)) == [0x01, 4, 0, 0, 0, 0, 0, 0, 0])
    }

    @Test func noGeometryHasNoWKB() throws {
        #expect(Geometry.wkb(nil) == nil)
        #expect(Geometry.wkb(.null) == nil)
        #expect(Geometry.wkb(.array([])) == nil)
        #expect(Geometry.wkb(.string("POINT (1 2)")) == nil)
        #expect(Geometry.wkb(.int(1)) == nil)
        #expect(Geometry.wkb(try Self.geometry("{}")) == nil)
        #expect(Geometry.wkb(try Self.geometry(#"{"x":null,"y":null}"#)) == nil)  // Esri's empty point
        #expect(Geometry.wkb(try Self.geometry(#"{"x":"NaN","y":1}"#)) == nil)
        #expect(Geometry.wkb(try Self.geometry(#"{"x":1}"#)) == nil)
        #expect(Geometry.wkb(try Self.geometry(#"{"spatialReference":{"wkid":4326}}"#)) == nil)
        // An envelope is not written (no WKB envelope type; no layer in a feature service has one).
        #expect(Geometry.wkb(try Self.geometry(#"{"xmin":0,"ymin":0,"xmax":1,"ymax":1}"#)) == nil)
    }

    @Test func whatWKBWouldDropIsRefusedBeforeItIsStored() throws {
        // wkb() skips vertices it cannot read; validate(), which every stored geometry passes, refuses them first.
        let cases: [(String, String)] = [
            (#"{"rings":[[[0,0],["a",1],[1,1],[1,0],[0,0]]]}"#, "esriGeometryPolygon"),
            (#"{"rings":[[[0,0],[1],[1,1],[1,0],[0,0]]]}"#, "esriGeometryPolygon"),
            (#"{"paths":[[[0,0],null]]}"#, "esriGeometryPolyline"),
            (#"{"points":[[0,0],[1,2,3,4,5]]}"#, "esriGeometryMultipoint"),
            (#"{"x":"1","y":2}"#, "esriGeometryPoint"),
        ]
        for (g, type) in cases {
            #expect(throws: EditLogError.self, "\(g)") { try Geometry.validate(try Self.geometry(g), geometryType: type, at: "test") }
        }
    }

    @Test func aRecordedFeatureCarriesItsWKB() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path, baseline: false)
        let gid = newGID(7)
        try log.run(#"{"op":"create","layer":"Trees","globalId":"\#(gid)","geometry":{"x":-122.6,"y":45.5}}"#, #"{"op":"finish"}"#)
        log.close()
        let key = try #require(GlobalID.normalize(gid))
        // Whichever feature table holds it: read from the file, not through the facade.
        let stored: [[UInt8]] = try RawLog.read(tmp.path) { db in
            let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%_wkb BLOB%'")
            return try tables.flatMap { t in try Data.fetchAll(db, sql: "SELECT _wkb FROM \(t) WHERE _globalid = ?", arguments: [key]).map { Array($0) } }
        }
        #expect(stored == [Self.point(-122.6, 45.5)])
    }
}
