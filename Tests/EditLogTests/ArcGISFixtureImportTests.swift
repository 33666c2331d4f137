import EditLog
import Foundation
import Testing

/// Esri's own REST payloads (Fixtures/arcgis-rest, vendored from ../shared/fixtures/arcgis-rest) import as they are.
@Suite struct ArcGISFixtureImportTests {
    func load(_ name: String) throws -> (String, JSONValue) {
        (name, try InputFiles.json(Paths.arcgisRest + "/" + name))
    }

    func importAndCreate(_ docs: [(String, JSONValue)]) throws -> ServiceSchema {
        let schema = try ArcGISSchemaDecoder.decode(service: docs.map { (name: $0.0, json: $0.1) }, webmap: nil, rules: nil)
        let tmp = TempPath()
        let log = try EditLog.create(at: tmp.path, service: docs.map { (name: $0.0, json: $0.1) })
        #expect(log.schema == schema)
        #expect(try log.verify().ok)
        log.close()
        return schema
    }

    /// The vendored copy stays byte-identical to the shared originals wherever they sit beside the clone.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: Paths.sharedArcgisRest)))
    func vendoredCopyMatchesTheSharedOriginals() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Paths.sharedArcgisRest).sorted()
        #expect(try FileManager.default.contentsOfDirectory(atPath: Paths.arcgisRest).sorted() == names)
        for name in names {
            let a = FileManager.default.contents(atPath: Paths.sharedArcgisRest + "/" + name)
            let b = FileManager.default.contents(atPath: Paths.arcgisRest + "/" + name)
            #expect(a != nil && a == b, "\(name) differs from ../shared/fixtures/arcgis-rest")
        }
    }

    @Test func allLayersAndTablesWithMapServerRelationships() throws {
        let s = try importAndCreate([try load("rest-js_allLayersAndTables_response.json")])
        #expect(s.layers.map(\.name) == ["Wells", "KSFields3", "KSTOPS"])
        let wells = try #require(s.layer("Wells"))
        #expect(wells.objectIdField == "OBJECTID")  // inferred from the OID field
        #expect(wells.globalIdField == nil)
        #expect(wells.relationships.count == 2)
        #expect(wells.relationships.allSatisfy { $0.role == .unknown && $0.keyField == nil })
        #expect(s.layer("KSTOPS")?.isTable == true)
        #expect(wells.field("SPUD_DATE")?.type == .date)
        #expect(wells.field("Shape")?.type == .geometry)
    }

    @Test func serviceRootWithServiceLevelRelationships() throws {
        let s = try importAndCreate([try load("rest-js_featureserver_root_with_relationships.json")])
        #expect(s.layers.count == 3)
        let origin = try #require(s.layer(id: 0)?.relationships.first)
        #expect(origin.role == .origin && origin.composite && origin.keyField == "GlobalID" && origin.relatedTableId == 2)
        #expect(s.layer(id: 2)?.relationships.first?.role == .destination)
    }

    @Test func minimalLayerDefinitionWithoutId() throws {
        let s = try importAndCreate([try load("rest-js_layer_definition_minimal.json")])
        let l = try #require(s.layers.first)
        #expect(l.id == 0 && l.name == "hub_annotations" && l.hasAttachments)
        #expect(l.capabilities.canCreate && l.capabilities.canUpdate && l.capabilities.canDelete)
        #expect(l.field("author")?.nullable == false && l.field("author")?.length == 256)
    }

    @Test func layerWithCodedDomainsRelationshipAndAttachments() throws {
        let s = try importAndCreate([try load("rest-js_layer_servicerequests_relationship_attachments.json")])
        let l = try #require(s.layers.first)
        #expect(l.globalIdField == "globalid" && l.objectIdField == "objectid")
        guard case .codedValue(_, let values)? = l.field("requesttype")?.domain else { Issue.record("no coded domain"); return }
        #expect(values.first?.code == .int(0))  // an integer code on a string field, kept as Esri wrote it
        let rel = try #require(l.relationships.first)
        #expect(rel.role == .origin && rel.keyField == "requestid" && rel.composite && rel.cardinality == .oneToMany)
    }

    @Test func serviceRootPlusLayerAndTableDefinitions() throws {
        let s = try importAndCreate([
            try load("solutionjs_featureserver_root_ROWPermits.json"),
            try load("solutionjs_layer0_ROWPermits_origin_attachments_domains.json"),
            try load("solutionjs_table1_ROWPermitComment_destination_parentglobalid.json"),
        ])
        let permits = try #require(s.layer(id: 0)), comments = try #require(s.layer(id: 1))
        #expect(permits.fields.count > 30 && comments.isTable)
        #expect(permits.editFieldsInfo?.creatorField == "Creator")
        #expect(permits.capabilities.canCreate && !permits.capabilities.canUpdate && !permits.capabilities.canDelete)
        #expect(comments.relationships.first?.keyField == "parentglobalid" && comments.relationships.first?.role == .destination)
        #expect(comments.field("parentglobalid")?.type == .guid)
        // Each definition also imports alone.
        for name in ["solutionjs_featureserver_root_ROWPermits.json", "solutionjs_layer0_ROWPermits_origin_attachments_domains.json",
                     "solutionjs_table1_ROWPermitComment_destination_parentglobalid.json"] {
            _ = try importAndCreate([try load(name)])
        }
    }

    @Test func everyDefinitionFileImports() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Paths.arcgisRest).filter { $0.hasSuffix(".json") }.sorted()
        #expect(files.count >= 8)
        var imported = 0
        for f in files where f != "rest-js_feature_edit_and_attachment_responses.json" {
            _ = try importAndCreate([try load(f)])
            imported += 1
        }
        #expect(imported == files.count - 1)
    }

    @Test func editResponsesAreNotAServiceAndSayWhy() throws {
        let doc = try load("rest-js_feature_edit_and_attachment_responses.json")
        #expect(throws: EditLogError.self) { try ArcGISSchemaDecoder.decode(service: [(name: doc.0, json: doc.1)], webmap: nil, rules: nil) }
        do { _ = try ArcGISSchemaDecoder.decode(service: [(name: doc.0, json: doc.1)], webmap: nil, rules: nil) } catch {
            #expect(error.description.contains("rest-js_feature_edit_and_attachment_responses.json"))
            #expect(error.kind == .invalidInput)
        }
    }

    @Test func editingAHostedLayerFromEsrisDefinitions() throws {
        // The ROW Permits view allows Create but not Update: a new permit records, an edit is refused.
        let docs = [try load("solutionjs_layer0_ROWPermits_origin_attachments_domains.json"),
                    try load("solutionjs_table1_ROWPermitComment_destination_parentglobalid.json")]
        let tmp = TempPath()
        let log = try EditLog.create(at: tmp.path, service: docs.map { (name: $0.0, json: $0.1) })
        try log.run(#"{"op":"create","layer":"ROW Permits","globalId":"\#(newGID(1))","geometry":{"x":1,"y":2},"attributes":{"appname":"A. Jones","appstate":"OR"}}"#,
                    #"{"op":"attach","attachmentId":"\#(newGID(2))","name":"site.jpg","contentType":"image/jpeg","dataBase64":"AAEC"}"#,
                    #"{"op":"finish"}"#)
        #expect(try log.attributes(newGID(1))["appname"] == "A. Jones")
        #expect(try log.attributes(newGID(1))["Creator"] == "tester")  // editor tracking from editFieldsInfo
        let e = try log.reject(#"{"op":"edit","layer":"ROW Permits","globalId":"\#(newGID(1))"}"#)
        #expect(e.message.contains("does not allow Update"))
        let e2 = try log.reject(#"{"op":"create","layer":"ROW Permits","globalId":"\#(newGID(3))","geometry":{"x":1,"y":2},"attributes":{"appstate":"XX"}}"#)
        #expect(e2.message.contains("coded value domain"))
        // The comment table's composite many-to-one (parentglobalid → the permit's globalid).
        try log.run(#"{"op":"create","layer":"ROW Permit Comment","globalId":"\#(newGID(4))","parent":{"relationship":"0","globalId":"\#(newGID(1))"},"attributes":{"name":"ok"}}"#, #"{"op":"finish"}"#)
        #expect(try log.attributes(newGID(4))["parentglobalid"] == .string(newGID(1)))
    }
}
