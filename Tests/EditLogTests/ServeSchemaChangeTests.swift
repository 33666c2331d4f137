import EditLog
@testable import EditLogServer
import EditLogSync
import Foundation
import Testing

/// A hub served by `editlog serve` whose schema changes (`changeSchema`, cause `schema-apply`) between a device's
/// syncs: the served definitions and applyEdits follow the change from the next request, and the device's next sync
/// adopts it (a `SchemaChanged` of cause `sync`), pulls the values and pushes its own of the new definitions.
@Suite(.serialized) struct ServeSchemaChangeTests {
    static let trees = 0

    /// Another tree of the fixture than `SyncRig.tree1`.
    static func trees(_ n: Int) throws -> [String] {
        Array(try Fixture.globalIds("Trees").filter { $0 != SyncRig.tree1 }.prefix(n))
    }

    /// The served Trees definition.
    static func served(_ url: String) async throws -> JSONValue {
        let r = try await HTTPTransport().get(url + "/0", query: [("f", "json"), ("token", SyncRig.token)])
        return try JSONParser.parse(r.body)
    }

    /// The served Trees definition's field names.
    static func servedFields(_ url: String) async throws -> [String] {
        try await served(url)["fields"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
    }

    /// One update of a tree through the service's layer applyEdits; its result (`success`, `error`).
    static func update(_ url: String, _ gid: String, _ attributes: String) async throws -> JSONValue {
        let r = try await HTTPTransport().postForm(url + "/0/applyEdits", form: [
            ("updates", #"[{"attributes":{"GlobalID":"\#(gid)",\#(attributes)}}]"#), ("useGlobalIds", "true"), ("f", "json"), ("token", SyncRig.token),
        ])
        let json = try JSONParser.parse(r.body)
        return json["updateResults"]?.at(0) ?? json
    }

    static func apply(_ hub: EditLog, _ change: (inout ServiceEdits) -> Void) throws -> SchemaUpdate {
        var edits = try ServiceEdits.trees()
        change(&edits)
        return try hub.changeSchema(service: edits.documents, cause: Cause.schemaApply, source: "service-changed.json", actor: "admin", device: "cli")
    }

    static func expectSound(_ logs: EditLog...) throws {
        for log in logs {
            #expect(try log.verify().ok)
            #expect(try log.digestOfProjections() == (try log.digestOfRebuild()))
            try SyncTests.validateEvents(log)
        }
    }

    /// A hub served while `body` runs, and a device; afterwards both hold the same data and are sound.
    static func hubAndDevice(_ body: @escaping @Sendable (_ hub: EditLog, _ device: EditLog, _ url: String) async throws -> Void) async throws {
        let th = TempPath("hub"), td = TempPath("device")
        let hub = Unchecked(try SyncRig.hub(th)), device = Unchecked(try SyncRig.device(td))
        defer { hub.value.close(); device.value.close() }
        try await SyncRig.serve(hub.value) { url in try await body(hub.value, device.value, url) }
        let a = try SyncRig.userState(device.value), b = try SyncRig.userState(hub.value)
        #expect(a == b, "\(SyncRig.differences(a, b).prefix(8))")
        try expectSound(hub.value, device.value)
    }

    @Test func anAddedFieldIsServedSyncedAndPushed() async throws {
        let t = try Self.trees(3)
        try await Self.hubAndDevice { hub, device, url in
            let first = try await SyncRig.sync(device, url)
            #expect(first.schemaChanges.isEmpty)
            // Before the change: not served, and an edit of it is refused by name.
            #expect(try await !Self.servedFields(url).contains("Notes"))
            let definedAt = try #require(try await Self.served(url)["editingInfo"]?["schemaLastEditDate"]?.intValue)
            let early = try await Self.update(url, t[0], #""Notes":"too early""#)
            #expect(early["success"] == false && (early["error"]?["description"]?.stringValue ?? "").contains("Notes"), "\(early.serialized())")

            let change = try Self.apply(hub) { $0.addString("Trees", "Notes") }
            #expect(change.changes.map(\.text) == ["field-added Trees.Notes: esriFieldTypeString(200)"])
            // The layer says its schema changed (ArcGIS clients refresh their definitions on a later schemaLastEditDate).
            let changedAt = try #require(try await Self.served(url)["editingInfo"]?["schemaLastEditDate"]?.intValue)
            let recorded = try hub.schemaVersions().last.flatMap { Timestamp.parse($0.recordedTime) }
            #expect(changedAt > definedAt && changedAt == recorded)
            try SyncRig.set(hub, SyncRig.tree1, [("Notes", #""hollow trunk""#)], at: "2026-06-03T09:00:00Z", actor: "hank", session: "h-notes")
            // After it: served, and accepted.
            #expect(try await Self.servedFields(url).contains("Notes"))
            let late = try await Self.update(url, t[0], #""Notes":"through serve""#)
            #expect(late["success"] == true, "\(late.serialized())")

            let second = try await SyncRig.sync(device, url)
            #expect(second.schemaChanges.map(\.text) == ["field-added Trees.Notes: esriFieldTypeString(200)"], "\(second.json.serialized())")
            let version = try #require(try device.schemaVersions().last)
            #expect(version.cause == Cause.sync && version.position == second.schemaPosition)
            #expect(try device.attributes(SyncRig.tree1)["Notes"] == "hollow trunk")
            #expect(try device.attributes(t[0])["Notes"] == "through serve")

            // The device's own value goes back.
            try SyncRig.set(device, t[1], [("Notes", #""leaning east""#)], at: "2026-06-03T10:00:00Z", actor: "dana", session: "d-notes")
            let third = try await SyncRig.sync(device, url)
            #expect(third.schemaChanges.isEmpty)
            #expect(third.pushed.contains { $0.globalId == t[1] && $0.fields.contains("Notes") }, "\(third.pushed)")
            #expect(try hub.attributes(t[1])["Notes"] == "leaning east")
            let quiet = try await SyncRig.sync(device, url)
            #expect(quiet.eventsWritten == 0 && quiet.pushed.isEmpty && quiet.pulled.isEmpty, "\(quiet.json.serialized())")
        }
    }

    @Test func anExtendedDomainIsServedSyncedAndPushed() async throws {
        let t = try Self.trees(3)
        try await Self.hubAndDevice { hub, device, url in
            _ = try await SyncRig.sync(device, url)
            let early = try await Self.update(url, t[0], #""SiteType":"Parklet""#)
            #expect(early["success"] == false, "\(early.serialized())")
            let change = try Self.apply(hub) { $0.addCode("Trees", "SiteType", "Parklet") }
            #expect(change.changes.map(\.text) == ["field-altered Trees.SiteType: domain adds Parklet (Parklet)"])
            let late = try await Self.update(url, t[0], #""SiteType":"Parklet""#)
            #expect(late["success"] == true, "\(late.serialized())")

            let second = try await SyncRig.sync(device, url)
            #expect(second.schemaChanges.map(\.text) == ["field-altered Trees.SiteType: domain adds Parklet (Parklet)"])
            #expect(try device.attributes(t[0])["SiteType"] == "Parklet")
            try SyncRig.set(device, t[1], [("SiteType", #""Parklet""#)], at: "2026-06-03T10:00:00Z", actor: "dana", session: "d-parklet")
            let third = try await SyncRig.sync(device, url)
            #expect(third.pushed.contains { $0.globalId == t[1] }, "\(third.pushed)")
            #expect(try hub.attributes(t[1])["SiteType"] == "Parklet")
        }
    }

    @Test func aRemovedFieldIsNotServedAndADevicesEditOfItIsAConflict() async throws {
        let t = try Self.trees(3)
        try await Self.hubAndDevice { hub, device, url in
            _ = try await SyncRig.sync(device, url)
            #expect(try await Self.servedFields(url).contains("PlantedBy"))
            // Offline, the device edits the field the hub is about to remove, and another field of the same tree.
            try SyncRig.set(device, t[0], [("PlantedBy", #""Friends of Trees""#), ("SiteWidth", "9.5")], at: "2026-06-03T10:00:00Z",
                            actor: "dana", session: "d-planted")
            let change = try Self.apply(hub) { $0.remove("Trees", "PlantedBy") }
            #expect(change.changes.map(\.text) == ["field-removed Trees.PlantedBy"])
            #expect(try await !Self.servedFields(url).contains("PlantedBy"))
            let refused = try await Self.update(url, t[1], #""PlantedBy":"late""#)
            #expect(refused["success"] == false && (refused["error"]?["description"]?.stringValue ?? "").contains("PlantedBy"), "\(refused.serialized())")

            let second = try await SyncRig.sync(device, url)
            #expect(second.schemaChanges.map(\.text) == ["field-removed Trees.PlantedBy"])
            let c = try #require(second.conflicts.first { $0.kind == .fieldRemoved })
            #expect(c.globalId == t[0] && c.field == "PlantedBy" && c.local.value == "Friends of Trees")
            // The rest of that session's edit goes through.
            #expect(second.pushed.contains { $0.globalId == t[0] && $0.fields == ["SiteWidth"] }, "\(second.json.serialized())")
            #expect(try hub.attributes(t[0])["SiteWidth"]?.doubleValue == 9.5)
            #expect(try device.attributes(t[0])["PlantedBy"] == nil)
            let quiet = try await SyncRig.sync(device, url)
            #expect(quiet.eventsWritten == 0, "\(quiet.json.serialized())")
        }
    }

    // MARK: Replicas created before a change

    /// A replica created before the service removed PlantedBy and added Notes: its upload's edits of fields that exist
    /// are taken, its values of the removed field left out and recorded as field-removed conflicts; a field it never
    /// had is refused by name; the download carries the new field and not the removed one.
    @Test func aReplicaCreatedBeforeAChangeSynchronizesAcrossIt() async throws {
        try await ServedLog.run { client, log in
            let created = try await ServerReplicaTests.create(client, log.value)
            let id = try #require(created["replicaID"]?.stringValue)
            let gen = try #require(created["replicaServerGen"]?.intValue)
            let held = try ServerReplicaTests.expectedTrees(log.value, try ServerReplicaTests.envelope(log.value)).sorted()
            let (a, b, c) = (held[0], held[1], held[2])
            let plantedA = try #require(try log.value.attributes(a)["PlantedBy"])
            #expect(created["layers"]?.arrayValue?.first { $0["id"] == 0 }?["features"]?.at(0)?["attributes"]?["PlantedBy"] != nil)

            let change = try Self.apply(log.value) { $0.remove("Trees", "PlantedBy"); $0.addString("Trees", "Notes") }
            #expect(Set(change.changes.map(\.text)) == ["field-removed Trees.PlantedBy", "field-added Trees.Notes: esriFieldTypeString(200)"])
            // Victor gives tree c a note on the service after the change.
            let v = try await ServerReplicaTests.post(client, "0/applyEdits", [("updates", #"[{"attributes":{"GlobalID":"\#(c)","Notes":"storm damage"}}]"#), ("useGlobalIds", "true")],
                                                     token: ServerReplicaTests.victor)
            #expect(v.json["updateResults"]?.at(0)?["success"] == true, "\(v.text)")

            // A field the replica never had is refused by name, nothing written.
            let head = try log.value.head()
            let bogus = try await ServerReplicaTests.post(client, "synchronizeReplica", [("replicaID", id), ("replicaServerGen", String(gen)), ("syncDirection", "bidirectional"),
                ("edits", #"[{"id":0,"features":{"updates":[{"attributes":{"GlobalID":"\#(a)","Bogus":"x"}}]}}]"#)])
            #expect(bogus.json["error"] != nil && bogus.text.contains("Bogus"), "\(bogus.text.prefix(400))")
            #expect(try log.value.head() == head)

            // The old replica's upload: a, edited offline in the removed field and another; b, only in the removed field; a new tree with it.
            let newTree = "{7E1B2C3D-0000-4000-8000-00000000E799}"
            let edits = #"[{"id":0,"features":{"adds":[{"attributes":{"GlobalID":"\#(newTree)","Condition":"Good","DBH":4.5,"PlantedBy":"crew 7"},"geometry":{"x":-122.6,"y":45.5}}],"updates":[{"attributes":{"GlobalID":"\#(a)","PlantedBy":"offline crew","SiteWidth":9.5}},{"attributes":{"GlobalID":"\#(b)","plantedby":"only this"}}]}}]"#
            let s = try await ServerReplicaTests.post(client, "synchronizeReplica", [("replicaID", id), ("replicaServerGen", String(gen)), ("syncDirection", "bidirectional"),
                                                                                    ("edits", edits), ("returnIdsForAdds", "true")])
            let next = try #require(s.json["replicaServerGen"]?.intValue, "\(s.text.prefix(800))")
            let results = try #require(s.json["editResults"]?.at(0))
            #expect(results["addResults"]?.at(0)?["success"] == true && results["updateResults"]?.arrayValue?.allSatisfy { $0["success"] == true } == true, "\(results.serialized())")
            #expect(try log.value.attributes(a)["SiteWidth"]?.doubleValue == 9.5)
            #expect(try log.value.attributes(a)["PlantedBy"] == nil && log.value.attributes(newTree)["PlantedBy"] == nil)
            #expect(try log.value.attributes(newTree)["DBH"]?.doubleValue == 4.5)
            // Each value left out is a field-removed conflict: the service's schema won over the upload's value.
            let removed = try log.value.conflicts().map(\.conflict).filter { $0.kind == .fieldRemoved }
            #expect(removed.count == 3, "\(removed.map(\.json))")
            let ca = try #require(removed.first { $0.globalId == a })
            #expect(ca.field == "PlantedBy" && ca.base == plantedA && ca.remote.value == "offline crew" && ca.winner == .local && ca.remote.writer?.actor == "alice_pdx")
            #expect(removed.first { $0.globalId == b }?.remote.value == "only this")
            #expect(removed.first { $0.globalId == newTree }?.base == .null)
            // The download: tree c as it is now, with the new field and without the removed one.
            let sent = s.json["edits"]?.arrayValue?.first { $0["id"] == 0 }?["features"]?["updates"]?.arrayValue ?? []
            let sc = try #require(sent.first { $0["attributes"]?["GlobalID"]?.stringValue == c }, "\(s.text.prefix(800))")
            #expect(sc["attributes"]?["Notes"] == "storm damage" && sc["attributes"]?["PlantedBy"] == nil)
            // A snapshot sends the replica's features whole, the new field in each.
            let snap = try await ServerReplicaTests.post(client, "synchronizeReplica", [("replicaID", id), ("replicaServerGen", String(next)), ("syncDirection", "snapshot")])
            let whole = snap.json["edits"]?.arrayValue?.first { $0["id"] == 0 }?["features"]?["adds"]?.arrayValue ?? []
            #expect(whole.count >= held.count && whole.allSatisfy { $0["attributes"]?.objectValue?.keys.contains("Notes") == true && $0["attributes"]?["PlantedBy"] == nil },
                    "\(snap.text.prefix(500))")

            #expect(try log.value.verify().ok)
            #expect(try log.value.digestOfProjections() == log.value.digestOfRebuild())
            try SyncTests.validateEvents(log.value)
        }
    }

    /// A replica's layer the service removed (Species, with its relationship to Trees): its edits are refused by name
    /// with nothing written; the download leaves it out, and the other layer's edits go through.
    @Test func aReplicasRemovedLayerIsRefusedByName() async throws {
        try await ServedLog.run { client, log in
            let created = try await ServerReplicaTests.post(client, "createReplica", [
                ("replicaName", "species-crew"), ("layers", "[0,2]"), ("syncModel", "perReplica"),
                ("layerQueries", #"{"0":{"queryOption":"all"},"2":{"queryOption":"all"}}"#),
            ]).json
            let id = try #require(created["replicaID"]?.stringValue, "\(created.serialized().prefix(400))")
            let gen = try #require(created["replicaServerGen"]?.intValue)
            let species = try #require(created["layers"]?.arrayValue?.first { $0["id"] == 2 }?["features"]?.at(0)?["attributes"]?["GlobalID"]?.stringValue)
            let tree = try #require(try Fixture.globalIds("Trees").first)
            let change = try Self.apply(log.value) { e in
                e.doc["tables"] = .array((e.doc["tables"]?.arrayValue ?? []).filter { $0["name"]?.stringValue != "Species" })
                e.layer("Trees") { l in l["relationships"] = .array((l["relationships"]?.arrayValue ?? []).filter { $0["name"]?.stringValue != "Species_Trees" }) }
            }
            #expect(change.changes.contains { $0.kind == .layerRemoved }, "\(change.changes.map(\.text))")
            let head = try log.value.head()
            let edits = #"[{"id":0,"features":{"updates":[{"attributes":{"GlobalID":"\#(tree)","SiteWidth":9.5}}]}},{"id":2,"features":{"updates":[{"attributes":{"GlobalID":"\#(species)","Family":"Aceraceae"}}]}}]"#
            let r = try await ServerReplicaTests.post(client, "synchronizeReplica", [("replicaID", id), ("replicaServerGen", String(gen)), ("syncDirection", "bidirectional"), ("edits", edits)])
            #expect(r.json["error"] != nil && r.text.contains("layer 2 (Species) was removed"), "\(r.text.prefix(400))")
            #expect(try log.value.head() == head)
            // Without it, the upload goes through, and the download leaves the removed layer out.
            let trees = #"[{"id":0,"features":{"updates":[{"attributes":{"GlobalID":"\#(tree)","SiteWidth":9.5}}]}}]"#
            let ok = try await ServerReplicaTests.post(client, "synchronizeReplica", [("replicaID", id), ("replicaServerGen", String(gen)), ("syncDirection", "bidirectional"), ("edits", trees)])
            #expect(ok.json["replicaServerGen"]?.intValue != nil, "\(ok.text.prefix(400))")
            #expect(ok.json["edits"]?.arrayValue?.map { $0["id"] } == [0])
            #expect(try log.value.attributes(tree)["SiteWidth"]?.doubleValue == 9.5)
            #expect(try log.value.verify().ok)
        }
    }
}
