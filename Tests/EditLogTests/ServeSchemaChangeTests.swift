import EditLog
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

    /// The served Trees definition's field names.
    static func servedFields(_ url: String) async throws -> [String] {
        let r = try await HTTPTransport().get(url + "/0", query: [("f", "json"), ("token", SyncRig.token)])
        let json = try JSONParser.parse(r.body)
        return json["fields"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
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

    @Test func anAddedFieldIsServedSyncedAndPushed() async throws {
        let th = TempPath("hub"), td = TempPath("device")
        let hub = Unchecked(try SyncRig.hub(th)), device = Unchecked(try SyncRig.device(td))
        defer { hub.value.close(); device.value.close() }
        let t = try Self.trees(3)
        try await SyncRig.serve(hub.value) { url in
            let first = try await SyncRig.sync(device.value, url)
            #expect(first.schemaChanges.isEmpty)
            // Before the change: not served, and an edit of it is refused by name.
            #expect(try await !Self.servedFields(url).contains("Notes"))
            let early = try await Self.update(url, t[0], #""Notes":"too early""#)
            #expect(early["success"] == false && (early["error"]?["description"]?.stringValue ?? "").contains("Notes"), "\(early.serialized())")

            let change = try Self.apply(hub.value) { $0.addString("Trees", "Notes") }
            #expect(change.changes.map(\.text) == ["field-added Trees.Notes: esriFieldTypeString(200)"])
            try SyncRig.set(hub.value, SyncRig.tree1, [("Notes", #""hollow trunk""#)], at: "2026-06-03T09:00:00Z", actor: "hank", session: "h-notes")
            // After it: served, and accepted.
            #expect(try await Self.servedFields(url).contains("Notes"))
            let late = try await Self.update(url, t[0], #""Notes":"through serve""#)
            #expect(late["success"] == true, "\(late.serialized())")

            let second = try await SyncRig.sync(device.value, url)
            #expect(second.schemaChanges.map(\.text) == ["field-added Trees.Notes: esriFieldTypeString(200)"], "\(second.json.serialized())")
            let version = try #require(try device.value.schemaVersions().last)
            #expect(version.cause == Cause.sync && version.position == second.schemaPosition)
            #expect(try device.value.attributes(SyncRig.tree1)["Notes"] == "hollow trunk")
            #expect(try device.value.attributes(t[0])["Notes"] == "through serve")

            // The device's own value goes back.
            try SyncRig.set(device.value, t[1], [("Notes", #""leaning east""#)], at: "2026-06-03T10:00:00Z", actor: "dana", session: "d-notes")
            let third = try await SyncRig.sync(device.value, url)
            #expect(third.schemaChanges.isEmpty)
            #expect(third.pushed.contains { $0.globalId == t[1] && $0.fields.contains("Notes") }, "\(third.pushed)")
            #expect(try hub.value.attributes(t[1])["Notes"] == "leaning east")
            let quiet = try await SyncRig.sync(device.value, url)
            #expect(quiet.eventsWritten == 0 && quiet.pushed.isEmpty && quiet.pulled.isEmpty, "\(quiet.json.serialized())")
        }
        let a = try SyncRig.userState(device.value), b = try SyncRig.userState(hub.value)
        #expect(a == b, "\(SyncRig.differences(a, b).prefix(8))")
        try Self.expectSound(hub.value, device.value)
    }

    @Test func anExtendedDomainIsServedSyncedAndPushed() async throws {
        let th = TempPath("hub"), td = TempPath("device")
        let hub = Unchecked(try SyncRig.hub(th)), device = Unchecked(try SyncRig.device(td))
        defer { hub.value.close(); device.value.close() }
        let t = try Self.trees(3)
        try await SyncRig.serve(hub.value) { url in
            _ = try await SyncRig.sync(device.value, url)
            let early = try await Self.update(url, t[0], #""SiteType":"Parklet""#)
            #expect(early["success"] == false, "\(early.serialized())")
            let change = try Self.apply(hub.value) { $0.addCode("Trees", "SiteType", "Parklet") }
            #expect(change.changes.map(\.text) == ["field-altered Trees.SiteType: domain adds Parklet (Parklet)"])
            let late = try await Self.update(url, t[0], #""SiteType":"Parklet""#)
            #expect(late["success"] == true, "\(late.serialized())")

            let second = try await SyncRig.sync(device.value, url)
            #expect(second.schemaChanges.map(\.text) == ["field-altered Trees.SiteType: domain adds Parklet (Parklet)"])
            #expect(try device.value.attributes(t[0])["SiteType"] == "Parklet")
            try SyncRig.set(device.value, t[1], [("SiteType", #""Parklet""#)], at: "2026-06-03T10:00:00Z", actor: "dana", session: "d-parklet")
            let third = try await SyncRig.sync(device.value, url)
            #expect(third.pushed.contains { $0.globalId == t[1] }, "\(third.pushed)")
            #expect(try hub.value.attributes(t[1])["SiteType"] == "Parklet")
        }
        let a = try SyncRig.userState(device.value), b = try SyncRig.userState(hub.value)
        #expect(a == b, "\(SyncRig.differences(a, b).prefix(8))")
        try Self.expectSound(hub.value, device.value)
    }

    @Test func aRemovedFieldIsNotServedAndADevicesEditOfItIsAConflict() async throws {
        let th = TempPath("hub"), td = TempPath("device")
        let hub = Unchecked(try SyncRig.hub(th)), device = Unchecked(try SyncRig.device(td))
        defer { hub.value.close(); device.value.close() }
        let t = try Self.trees(3)
        try await SyncRig.serve(hub.value) { url in
            _ = try await SyncRig.sync(device.value, url)
            #expect(try await Self.servedFields(url).contains("PlantedBy"))
            // Offline, the device edits the field the hub is about to remove, and another field of the same tree.
            try SyncRig.set(device.value, t[0], [("PlantedBy", #""Friends of Trees""#), ("SiteWidth", "9.5")], at: "2026-06-03T10:00:00Z",
                            actor: "dana", session: "d-planted")
            let change = try Self.apply(hub.value) { $0.remove("Trees", "PlantedBy") }
            #expect(change.changes.map(\.text) == ["field-removed Trees.PlantedBy"])
            #expect(try await !Self.servedFields(url).contains("PlantedBy"))
            let refused = try await Self.update(url, t[1], #""PlantedBy":"late""#)
            #expect(refused["success"] == false && (refused["error"]?["description"]?.stringValue ?? "").contains("PlantedBy"), "\(refused.serialized())")

            let second = try await SyncRig.sync(device.value, url)
            #expect(second.schemaChanges.map(\.text) == ["field-removed Trees.PlantedBy"])
            let c = try #require(second.conflicts.first { $0.kind == .fieldRemoved })
            #expect(c.globalId == t[0] && c.field == "PlantedBy" && c.local.value == "Friends of Trees")
            // The rest of that session's edit goes through.
            #expect(second.pushed.contains { $0.globalId == t[0] && $0.fields == ["SiteWidth"] }, "\(second.json.serialized())")
            #expect(try hub.value.attributes(t[0])["SiteWidth"]?.doubleValue == 9.5)
            #expect(try device.value.attributes(t[0])["PlantedBy"] == nil)
            let quiet = try await SyncRig.sync(device.value, url)
            #expect(quiet.eventsWritten == 0, "\(quiet.json.serialized())")
        }
        let a = try SyncRig.userState(device.value), b = try SyncRig.userState(hub.value)
        #expect(a == b, "\(SyncRig.differences(a, b).prefix(8))")
        try Self.expectSound(hub.value, device.value)
    }
}
