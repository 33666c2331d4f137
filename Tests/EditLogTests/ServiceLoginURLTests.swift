import EditLog
@testable import EditLogSync
import Testing

/// Where `--user` logs in: the generateToken operation of the token service `rest/info` names, in each form ArcGIS
/// names it (ArcGIS Server its `tokens/` folder; a portal, ArcGIS Online and `serve` the operation itself).
@Suite struct ServiceLoginURLTests {
    @Test(arguments: [
        ("https://gis.example.org/arcgis/tokens/", "https://gis.example.org/arcgis/tokens/generateToken"),
        ("https://gis.example.org/arcgis/tokens", "https://gis.example.org/arcgis/tokens/generateToken"),
        ("https://www.arcgis.com/sharing/rest/generateToken", "https://www.arcgis.com/sharing/rest/generateToken"),
        ("http://127.0.0.1:8080/arcgis/tokens/generateToken", "http://127.0.0.1:8080/arcgis/tokens/generateToken"),
        ("https://host/portal/sharing/rest/generatetoken/", "https://host/portal/sharing/rest/generatetoken"),
    ])
    func theTokenServiceIsAskedAtItsGenerateTokenOperation(named: String, asked: String) {
        #expect(ServiceLogin.generateTokenURL(named) == asked)
    }

    @Test func restInfoIsBesideTheServicesFolder() throws {
        #expect(try ServiceLogin.infoURL(ofService: "https://gis.example.org/arcgis/rest/services/Trees/FeatureServer")
                == "https://gis.example.org/arcgis/rest/info")
        #expect(throws: EditLogError.self) { try ServiceLogin.infoURL(ofService: "https://gis.example.org/Trees/FeatureServer") }
    }
}
