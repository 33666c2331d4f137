import EditLog
import Foundation
import Testing

/// Every rule of the edit-session state machine, against the Trees of Portland fixtures.
@Suite struct EditSessionRulesTests {
    let tmp = TempPath()
    let log: EditLog
    let species: [String]

    init() throws {
        log = try Fixture.treesLog(at: tmp.path)
        species = try Fixture.globalIds("Species")
    }

    var point: String { #"{"x":-122.6402,"y":45.5201,"spatialReference":{"wkid":4326}}"# }

    func newTree(_ n: Int, session: String? = nil) -> String {
        #"{"op":"create","layer":"Trees","globalId":"\#(newGID(n))"\#(session.map { ",\"session\":\"\($0)\"" } ?? ""),"geometry":\#(point),"attributes":{"PlantedBy":"Friends of Trees"}}"#
    }

    // MARK: Capabilities and pop-ups

    @Test func createAndDeleteNeedTheLayersCapabilities() throws {
        let hood = try Fixture.globalIds("Neighborhoods")[0]
        let e1 = try log.reject(#"{"op":"create","layer":"Neighborhoods","globalId":"\#(newGID(1))","geometry":{"rings":[[[0,0],[0,1],[1,1],[0,0]]]}}"#)
        #expect(e1.message.contains("does not allow Create"))
        let e2 = try log.reject(#"{"op":"delete","layer":"Neighborhoods","globalId":"\#(hood)"}"#)
        #expect(e2.message.contains("does not allow Delete"))
        #expect(e2.kind == .validation)
    }

    @Test func aLayerWithoutAPopupCannotBeEdited() throws {
        // Neighborhoods allows Update in the service but has no pop-up in the web map.
        let hood = try Fixture.globalIds("Neighborhoods")[0]
        let e = try log.reject(#"{"op":"edit","layer":"Neighborhoods","globalId":"\#(hood)"}"#)
        #expect(e.message.contains("no pop-up"))
    }

    @Test func aFieldIsEditableOnlyIfTheFieldAndThePopupSaySo() throws {
        let sp = species[0]
        let e = try log.reject(#"{"op":"edit","layer":"Species","globalId":"\#(sp)"}"#, #"{"op":"set","field":"Family","value":"Rosaceae"}"#)
        #expect(e.message.contains("not editable in the pop-up"))
        #expect(e.location == "line 2")
        try log.run(#"{"op":"edit","layer":"Species","globalId":"\#(sp)"}"#, #"{"op":"set","field":"CommonName","value":"Renamed"}"#, #"{"op":"finish"}"#)
        #expect(try log.attributes(sp)["CommonName"] == "Renamed")
    }

    @Test func identityAndEditorTrackingFieldsAreReadOnly() throws {
        let tree = try Fixture.treeWithoutInspections()
        for field in ["GlobalID", "OBJECTID", "SpeciesGlobalID", "Creator", "EditDate"] {
            let e = try log.reject(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)"}"#, #"{"op":"set","field":"\#(field)","value":null}"#)
            #expect(e.message.contains("read-only"), "\(field): \(e.message)")
        }
    }

    @Test func unsupportedFieldTypesAreAnErrorNotACrash() throws {
        let layer: JSONValue = [
            "id": 0, "name": "Assets", "type": "Feature Layer", "geometryType": "esriGeometryPoint", "capabilities": "Create,Update,Delete",
            "objectIdField": "OBJECTID", "globalIdField": "GlobalID",
            "fields": [["name": "OBJECTID", "type": "esriFieldTypeOID"], ["name": "GlobalID", "type": "esriFieldTypeGlobalID"],
                       ["name": "Doc", "type": "esriFieldTypeBlob"], ["name": "Img", "type": "esriFieldTypeRaster"],
                       ["name": "Meta", "type": "esriFieldTypeXML"], ["name": "Future", "type": "esriFieldTypeSomethingNew"],
                       ["name": "Note", "type": "esriFieldTypeString", "length": 5]],
        ]
        let t = TempPath()
        let l = try EditLog.create(at: t.path, service: [("assets.json", ["layers": [layer]])])
        for (field, word) in [("Doc", "unsupported"), ("Img", "unsupported"), ("Meta", "unsupported"), ("Future", "unknown to EditLog")] {
            let e = try l.reject(#"{"op":"create","layer":"Assets","globalId":"\#(newGID(9))","geometry":{"x":0,"y":0}}"#, #"{"op":"set","field":"\#(field)","value":"x"}"#)
            #expect(e.message.contains(word), "\(field): \(e.message)")
        }
        let e = try l.reject(#"{"op":"create","layer":"Assets","globalId":"\#(newGID(9))","geometry":{"x":0,"y":0}}"#, #"{"op":"set","field":"Note","value":"too long"}"#)
        #expect(e.message.contains("exceeds the field length 5"))
    }

    // MARK: Sessions

    @Test func oneOpenSessionPerFeature() throws {
        let tree = try Fixture.treeWithoutInspections()
        try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)","session":"a"}"#, actor: "ann")
        let e = try log.reject(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)","session":"b"}"#, actor: "bob")
        #expect(e.message.contains("already has an open session a"))
        #expect(e.kind == .conflict)
    }

    @Test func childrenChangeOnlyWhileTheParentHasNoOpenSession() throws {
        let (tree, inspections) = try Fixture.treeWithInspections()
        try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)","session":"parent"}"#, actor: "ann")
        // add
        let add = try log.reject(#"{"op":"create","layer":"Inspections","globalId":"\#(newGID(1))","parent":{"relationship":"Tree_Inspections","globalId":"\#(tree)"},"attributes":{"Condition":"Fair"}}"#, actor: "bob")
        #expect(add.message.contains("open session parent"))
        // update
        let upd = try log.reject(#"{"op":"edit","layer":"Inspections","globalId":"\#(inspections[0])"}"#, actor: "bob")
        #expect(upd.message.contains("open session parent"))
        // delete
        let del = try log.reject(#"{"op":"delete","layer":"Inspections","globalId":"\#(inspections[0])"}"#, actor: "bob")
        #expect(del.message.contains("open session parent"))
        // Once the parent's session ends, all three work.
        try log.run(#"{"op":"cancel","session":"parent"}"#, actor: "ann")
        try log.run(#"{"op":"create","layer":"Inspections","globalId":"\#(newGID(1))","parent":{"relationship":"Tree_Inspections","globalId":"\#(tree)"},"attributes":{"Condition":"Fair"}}"#, #"{"op":"finish"}"#, actor: "bob")
        try log.run(#"{"op":"delete","layer":"Inspections","globalId":"\#(inspections[0])"}"#, actor: "bob")
    }

    @Test func aChildSessionCannotFinishAfterItsParentOpensOne() throws {
        let (tree, inspections) = try Fixture.treeWithInspections()
        try log.run(#"{"op":"edit","layer":"Inspections","globalId":"\#(inspections[0])","session":"child"}"#, #"{"op":"set","field":"Notes","value":"x"}"#, actor: "bob")
        try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)","session":"parent"}"#, actor: "ann")
        let e = try log.reject(#"{"op":"finish","session":"child"}"#, actor: "bob")
        #expect(e.message.contains("open session parent"))
    }

    @Test func aCompositeManyToOneMustBeSetAtFinish() throws {
        let e = try log.reject(#"{"op":"create","layer":"Inspections","globalId":"\#(newGID(2))","attributes":{"Condition":"Good"}}"#, #"{"op":"finish"}"#)
        #expect(e.message.contains("composite relationship \"Tree_Inspections\""))
        #expect(e.location == "line 2")
    }

    @Test func theRelatedRecordMustExist() throws {
        let tree = try Fixture.treeWithoutInspections()
        let e = try log.reject(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)"}"#, #"{"op":"relate","relationship":"Species_Trees","globalId":"\#(newGID(77))"}"#)
        #expect(e.message.contains("does not exist"))
        #expect(e.kind == .notFound)
        // A species deleted while the session was open fails the finish.
        let sp = species[1]
        try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)","session":"s"}"#, #"{"op":"relate","relationship":"Species_Trees","globalId":"\#(sp)"}"#)
        // Species rows are referenced by trees but not composite: deleting one is allowed.
        try log.run(#"{"op":"delete","layer":"Species","globalId":"\#(sp)"}"#, actor: "admin")
        let e2 = try log.reject(#"{"op":"finish","session":"s"}"#)
        #expect(e2.message.contains("no longer exists"))
    }

    @Test func relateChangesTheSpeciesAtCommitOnly() throws {
        let tree = try Fixture.treeWithoutInspections()
        let before = try log.attributes(tree)["SpeciesGlobalID"]
        let target = species.first { JSONValue.string($0) != before }!
        try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)","session":"s"}"#, #"{"op":"relate","relationship":"Species_Trees","globalId":"\#(target)"}"#)
        #expect(try log.attributes(tree)["SpeciesGlobalID"] == before)
        try log.run(#"{"op":"finish","session":"s"}"#)
        #expect(try log.attributes(tree)["SpeciesGlobalID"] == .string(target))
        let h = try log.history(globalId: tree).entries.last { $0.field == "SpeciesGlobalID" }
        #expect(h?.old == before && h?.new == .string(target) && h?.session == "s")
    }

    @Test func attachmentsOnlyWhereTheLayerHasThem() throws {
        let e = try log.reject(#"{"op":"edit","layer":"Species","globalId":"\#(species[0])"}"#,
                               #"{"op":"attach","attachmentId":"\#(newGID(3))","name":"a.jpg","contentType":"image/jpeg","dataBase64":"AAEC"}"#)
        #expect(e.message.contains("does not support attachments"))
        for bad in ["../x.jpg", "a/b.jpg", "..", ""] {
            let e = try log.reject(newTree(5), #"{"op":"attach","attachmentId":"\#(newGID(3))","name":"\#(bad)","contentType":"image/jpeg","dataBase64":"AAEC"}"#)
            #expect(e.message.contains("attachment name"), "\(bad): \(e.message)")
        }
    }

    @Test func stagedAttachmentsApplyAtFinishAndRenameAndDetachLater() throws {
        try log.run(newTree(10, session: "s1"),
                    #"{"op":"attach","attachmentId":"\#(newGID(11))","name":"a.jpg","contentType":"image/jpeg","dataBase64":"AAECAw==","preferredSize":"small"}"#,
                    #"{"op":"attach","attachmentId":"\#(newGID(12))","name":"b.jpg","contentType":"image/jpeg","dataBase64":"BAUG"}"#,
                    #"{"op":"detach","attachmentId":"\#(newGID(12))"}"#,
                    #"{"op":"finish"}"#)
        var atts = try log.show(globalId: newGID(10))["attachments"]?.arrayValue ?? []
        #expect(atts.count == 1 && atts[0]["name"] == "a.jpg" && atts[0]["size"] == 4)
        #expect(atts[0]["sha256"]?.stringValue == Hex.encode(EventHash.sha256([0, 1, 2, 3])))
        #expect(try log.blob(sha256: atts[0]["sha256"]!.stringValue!) == [0, 1, 2, 3])
        try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(newGID(10))","session":"s2"}"#,
                    #"{"op":"renameAttachment","attachmentId":"\#(newGID(11))","name":"bark.jpg"}"#, #"{"op":"finish"}"#)
        atts = try log.show(globalId: newGID(10))["attachments"]?.arrayValue ?? []
        #expect(atts.first?["name"] == "bark.jpg")
        try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(newGID(10))","session":"s3"}"#, #"{"op":"detach","attachmentId":"\#(newGID(11))"}"#, #"{"op":"finish"}"#)
        #expect(try log.show(globalId: newGID(10))["attachments"]?.arrayValue?.isEmpty == true)
    }

    @Test func cancelAppliesNothingButKeepsTheStagedSteps() throws {
        let tree = try Fixture.treeWithoutInspections()
        let before = try log.attributes(tree)
        try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)","session":"c"}"#, #"{"op":"set","field":"Condition","value":"Dead"}"#,
                    #"{"op":"attach","attachmentId":"\#(newGID(20))","name":"x.jpg","contentType":"image/jpeg","dataBase64":"AAEC"}"#, #"{"op":"cancel"}"#)
        #expect(try log.attributes(tree) == before)
        #expect(try log.show(globalId: tree)["attachments"]?.arrayValue?.isEmpty == true)
        let s = try log.sessions(globalId: tree).first { $0.id == "c" }
        #expect(s?.status == .canceled)
        #expect(s?.state.staged.first?.value == "Dead")
        var types: [String] = []
        try log.events(LogFilter(session: "c")) { types.append($0.type) }
        #expect(types == ["SessionStarted", "AttributeStaged", "AttachmentStaged", "SessionCanceled"])
    }

    @Test func finishAggregatesEveryError() throws {
        // A parent table and a child table whose composite key and a required field are both missing.
        let parent: JSONValue = ["id": 0, "name": "Sites", "type": "Table", "capabilities": "Create,Update,Delete", "globalIdField": "GlobalID",
                                 "fields": [["name": "OBJECTID", "type": "esriFieldTypeOID"], ["name": "GlobalID", "type": "esriFieldTypeGlobalID"]],
                                 "relationships": [["id": 5, "name": "Site_Visits", "relatedTableId": 1, "cardinality": "esriRelCardinalityOneToMany",
                                                    "role": "esriRelRoleOrigin", "keyField": "GlobalID", "composite": true]]]
        let child: JSONValue = ["id": 1, "name": "Visits", "type": "Table", "capabilities": "Create,Update,Delete", "globalIdField": "GlobalID",
                                "fields": [["name": "OBJECTID", "type": "esriFieldTypeOID"], ["name": "GlobalID", "type": "esriFieldTypeGlobalID"],
                                           ["name": "SiteGlobalID", "type": "esriFieldTypeGUID"], ["name": "Visitor", "type": "esriFieldTypeString", "nullable": false]],
                                "relationships": [["id": 5, "name": "Site_Visits", "relatedTableId": 0, "cardinality": "esriRelCardinalityOneToMany",
                                                   "role": "esriRelRoleDestination", "keyField": "SiteGlobalID", "composite": true]]]
        let t = TempPath()
        let l = try EditLog.create(at: t.path, service: [("svc.json", ["layers": [], "tables": [parent, child]])])
        let e = try l.reject(#"{"op":"create","layer":"Visits","globalId":"\#(newGID(30))"}"#, #"{"op":"finish"}"#)
        #expect(e.message.contains("cannot finish session"))
        #expect(e.message.contains("2 problems"))
        #expect(e.message.contains("Visits.Visitor is required") && e.message.contains("composite relationship \"Site_Visits\""))
    }

    @Test func aSessionLeftOpenShowsOpenAndCanBeResumedOrAbandoned() throws {
        let trees = try Fixture.globalIds("Trees")
        try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(trees[3])","session":"crash1"}"#, #"{"op":"set","field":"DBH","value":12.5}"#, actor: "ann")
        try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(trees[4])","session":"crash2"}"#, actor: "bob")
        // "A crash": the process is gone; a new handle on the same file sees both open.
        let reopened = try EditLog.open(at: tmp.path)
        #expect(try reopened.sessions(status: "open").count == 2)
        try reopened.run(#"{"op":"resume","session":"crash1"}"#, #"{"op":"set","field":"DBH","value":13}"#, #"{"op":"finish"}"#, actor: "carol")
        #expect(try reopened.attributes(trees[3])["DBH"] == .double(13))
        try reopened.run(#"{"op":"abandon","session":"crash2"}"#, actor: "carol")
        let statuses = try reopened.sessions().reduce(into: [String: String]()) { $0[$1.id] = $1.status.rawValue }
        #expect(statuses["crash1"] == "committed" && statuses["crash2"] == "abandoned")
        var resumedBy: String?
        try reopened.events(LogFilter(session: "crash1", type: "SessionResumed")) { resumedBy = $0.actor }
        #expect(resumedBy == "carol")
        let e = try reopened.reject(#"{"op":"set","field":"DBH","value":1,"session":"crash2"}"#)
        #expect(e.message.contains("abandoned, not open"))
    }

    @Test func aStepWithoutASessionNamesTheProblem() throws {
        let e = try log.reject(#"{"op":"set","field":"DBH","value":1}"#, actor: "nobody")
        #expect(e.message.contains("no open session"))
    }

    // MARK: Delete and custom behaviours

    @Test func deletingATreeDeletesItsInspectionsThroughTheCompositeRelationship() throws {
        let (tree, inspections) = try Fixture.treeWithInspections()
        let events = try log.run(#"{"op":"delete","layer":"Trees","globalId":"\#(tree)"}"#)
        let deleted = events.filter { $0.type == "FeatureDeleted" }
        #expect(deleted.count == 1 + inspections.count)
        #expect(deleted.dropFirst().allSatisfy { $0.cause == "cascade:\(tree)" })
        #expect(try log.show(globalId: tree)["deleted"] == true)
        for i in inspections { #expect(try log.show(globalId: i)["deleted"] == true) }
        #expect(try !log.query(layer: "Inspections")["features"]!.arrayValue!.contains { $0["attributes"]?["TreeGlobalID"] == .string(tree) })
    }

    @Test func latestInspectionRollsUpToTheTree() throws {
        let tree = try Fixture.treeWithoutInspections()
        func inspect(_ n: Int, _ date: String, _ cond: String, _ dbh: Double) throws -> [RecordedEvent] {
            try log.run(#"{"op":"create","layer":"Inspections","globalId":"\#(newGID(n))","session":"i\#(n)","parent":{"relationship":"Tree_Inspections","globalId":"\#(tree)"},"attributes":{"Condition":"\#(cond)","DBH":\#(dbh),"CollectedDate":"\#(date)"}}"#, #"{"op":"finish"}"#)
        }
        let e1 = try inspect(40, "2026-05-01T00:00:00Z", "Poor", 20.5)
        #expect(try log.attributes(tree)["Condition"] == "Poor" && log.attributes(tree)["DBH"] == .double(20.5))
        let derived = try #require(e1.last { $0.type == "FeatureDerived" })
        #expect(derived.cause == "rule:tree-latest-inspection" && derived.session == "i40" && derived.stream.hasSuffix(tree))
        _ = try inspect(41, "2026-04-01T00:00:00Z", "Dead", 1)  // older: no change
        #expect(try log.attributes(tree)["Condition"] == "Poor")
        _ = try inspect(42, "2026-06-01T00:00:00Z", "Fair", 21)
        #expect(try log.attributes(tree)["Condition"] == "Fair")
        // Deleting the latest falls back to the previous one.
        try log.run(#"{"op":"delete","layer":"Inspections","globalId":"\#(newGID(42))"}"#)
        #expect(try log.attributes(tree)["Condition"] == "Poor" && log.attributes(tree)["DBH"] == .double(20.5))
        // Updating an older one to be the latest.
        try log.run(#"{"op":"edit","layer":"Inspections","globalId":"\#(newGID(41))"}"#, #"{"op":"set","field":"CollectedDate","value":"2026-07-01T00:00:00Z"}"#, #"{"op":"finish"}"#)
        #expect(try log.attributes(tree)["Condition"] == "Dead")
    }

    @Test func aNewTreeGetsItsNeighborhoodAndAddress() throws {
        let events = try log.run(newTree(50), #"{"op":"finish"}"#)
        let attrs = try log.attributes(newGID(50))
        // Expected values straight from the fixtures: the containing polygon and the nearest address.
        let hoods = try Fixture.json("baseline/Neighborhoods.json")["features"]!.arrayValue!
        let hood = hoods.first { Geometry.polygon($0["geometry"], contains: -122.6402, 45.5201) }?["attributes"]?["Name"]
        #expect(attrs["Neighborhood"] == hood && hood != nil)
        let table = try Fixture.json("addresses.json")["addresses"]!.arrayValue!
        let nearest = table.min { a, b in
            Geodesy.distanceMeters(lon1: -122.6402, lat1: 45.5201, lon2: a["x"]!.doubleValue!, lat2: a["y"]!.doubleValue!)
                < Geodesy.distanceMeters(lon1: -122.6402, lat1: 45.5201, lon2: b["x"]!.doubleValue!, lat2: b["y"]!.doubleValue!)
        }
        #expect(attrs["Address"] == nearest?["address"])
        #expect(Set(events.filter { $0.type == "FeatureDerived" }.map(\.cause)) == ["rule:tree-neighborhood", "rule:tree-address"])
        #expect(attrs["Condition"] == "Good")  // the field's default value
    }

    @Test func theGeocoderIsPluggable() throws {
        struct Fixed: ReverseGeocoder { func reverseGeocode(x: Double, y: Double) -> String? { "1 Test St" } }
        log.geocoder = Fixed()
        try log.run(newTree(51), #"{"op":"finish"}"#)
        #expect(try log.attributes(newGID(51))["Address"] == "1 Test St")
    }

    @Test func everyEventCarriesWhoWhenAndWhichSession() throws {
        let events = try log.run(#"{"op":"create","layer":"Trees","globalId":"\#(newGID(60))","session":"meta","actor":"ann","device":"ipad-1","at":"2026-05-04T16:02:11-07:00","geometry":\#(point)}"#, #"{"op":"finish"}"#)
        for e in events where e.stream != "$scripts" {
            #expect(e.actor == "ann" && e.device == "ipad-1" && e.session == "meta")
            #expect(e.clientTime == "2026-05-04T23:02:11.000Z")
            #expect(!e.recordedTime.isEmpty && e.id.uuidString.dropFirst(14).first == "7")  // UUID v7
        }
    }
}
