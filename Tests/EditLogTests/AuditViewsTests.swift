import EditLog
import EditLogProjections
import EditLogStore
import Foundation
import GRDB
import Testing

/// The audit views on the Trees of Portland day: one clock, blame, history with relationships and
/// `--as-of`, diff between two moments, discarded sessions.
@Suite struct AuditViewsTests {
    /// The baseline plus every fixture script, in order.
    static func fullLog(_ path: String) throws -> EditLog {
        let log = try Fixture.treesLog(at: path)
        let dir = Paths.trees + "/scripts"
        for name in try FileManager.default.contentsOfDirectory(atPath: dir).filter({ $0.hasSuffix(".ndjson") }).sorted() {
            let bytes = try InputFiles.bytes(dir + "/" + name)
            _ = try log.record(try ScriptParser.parse(bytes, defaultActor: "unknown", defaultDevice: "unknown"), name: name,
                           sha256: InputFiles.sha256(bytes), allowRepeat: false)
        }
        return log
    }

    static func position(_ path: String, _ sql: String, _ args: StatementArguments = []) throws -> Int64 {
        try RawLog.read(path) { db in try Int64.fetchOne(db, sql: sql, arguments: args) ?? 0 }
    }

    static let tree96 = "{96F61C09-059C-4BA0-BBEC-721D3610901C}"
    static let inspection0502 = "{1D9D1D80-F47E-4CA0-B23F-D85AE57B084D}"

    @Test func oneClockFiltersAndLabels() throws {
        let tmp = TempPath()
        let log = try Self.fullLog(tmp.path)
        // The fixture's devices worked on 2026-06-08 (script 06); the test clock recorded everything on 2026-05-28.
        var byClient: [RecordedEvent] = []
        try log.events(LogFilter(since: "2026-06-08T00:00:00.000Z", until: "2026-06-09T00:00:00.000Z", clock: .client)) { byClient.append($0) }
        #expect(!byClient.isEmpty && byClient.allSatisfy { ($0.clientTime ?? "").hasPrefix("2026-06-08") })
        #expect(try log.events(LogFilter(since: "2026-06-08T00:00:00.000Z", until: "2026-06-09T00:00:00.000Z", clock: .recorded)) { _ in } == 0)
        #expect(EventClock.default == .client)
        let client = try log.history(globalId: Self.tree96).entries, recorded = try log.history(globalId: Self.tree96, clock: .recorded).entries
        #expect(client.count == recorded.count && client.allSatisfy { $0.clock == .client } && recorded.allSatisfy { $0.time == $0.recordedTime })
        #expect(client.contains { $0.time.hasPrefix("2026-06-01") })
        #expect(client.first?.json["clock"] == "client")
        let s = try log.sessions(status: "canceled", clock: .recorded)
        #expect(s.allSatisfy { $0.clock == .recorded && $0.startedTime.hasPrefix("2026-05-28") && $0.json["clock"] == "recorded" })
    }

    @Test func blameNamesTheInspectionSessionBehindATreesCondition() throws {
        let tmp = TempPath()
        let log = try Self.fullLog(tmp.path)
        // Tree 2E2BDC6C's latest inspection is edited twice on 2026-06-08: s-0601 downgrades 9A244525 to Poor, then s-0602
        // re-dates 148113B4 (Fair) as today's re-inspection. The latestChildRollup rule copies each onto the tree.
        let tree = "{2E2BDC6C-B736-4C4F-9CC5-D97550FE8199}"
        let b = try log.blame(globalId: tree)
        let condition = try #require(b.fields.first { $0.field == "Condition" })
        #expect(condition.value == "Fair" && condition.cause == "rule:tree-latest-inspection" && condition.type == "FeatureDerived")
        #expect(condition.session == "s-0602" && condition.actor == "maria.lopez" && condition.source == "{148113B4-DDCF-4003-8627-41EC08AC784F}")
        #expect(condition.clock == .client && condition.time.hasPrefix("2026-06-08"))
        #expect(b.json["fields"]?.arrayValue?.contains { $0["field"] == "Condition" && $0["session"] == "s-0602" && $0["clock"] == "client" } == true)
        // As of the end of s-0601 (a position, then a client time): the first inspection session.
        let mid = try Self.position(tmp.path, "SELECT MAX(position) FROM events WHERE session = 's-0601'")
        for asOf in [LogMoment.position(mid), .time("2026-06-08T15:45:00.000Z")] {
            let c = try #require(try log.blame(globalId: tree, asOf: asOf).fields.first { $0.field == "Condition" })
            #expect(c.value == "Poor" && c.session == "s-0601" && c.source == "{9A244525-6BBE-4BD6-9A13-41E710FD7164}", "\(asOf)")
        }
        // Before either: the baseline.
        let before = try Self.position(tmp.path, "SELECT MIN(position) FROM events WHERE session = 's-0501'")
        #expect(try log.blame(globalId: tree, asOf: .position(before)).fields.first { $0.field == "Condition" }?.cause == "baseline")
        // A user edit: s-0701 set SiteWidth 9.5 on tree 9256D707.
        let w = try #require(try log.blame(globalId: "{9256D707-9CC0-4B67-A19B-224A6BFC2A47}").fields.first { $0.field == "SiteWidth" })
        #expect(w.cause == "session" && w.session == "s-0701" && w.actor == "maria.lopez" && w.device == "ipad-07")
        // A deleted tree names its deletion; one that did not exist yet says so.
        let gone = try log.blame(globalId: "{6F74E55D-99A9-4F6A-AD05-473278BF46FA}")
        #expect(gone.deleted?.cause == "delete" && gone.deleted?.actor == "dev.patel")
        let created = "{F1B7BD1E-C0D5-4828-ABA1-7F78362E17D4}"
        #expect(try !log.blame(globalId: created, asOf: .position(before)).exists)
        #expect(try log.blame(globalId: created).fields.first { $0.field == "SpeciesGlobalID" }?.session == "s-0503")
        #expect(throws: EditLogError.self) { try log.blame(globalId: newGID(999_999)) }
    }

    /// A tree's history shows each inspection for the time it was the tree's: one re-pointed to it joins when it moved
    /// (not at its baseline, under the tree it had then); one re-pointed away and back leaves and joins again.
    @Test func aRepointedChildJoinsAParentsHistoryWhenItMoved() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path)
        let (from, inspections) = try Fixture.treeWithInspections()
        let to = try Fixture.treeWithoutInspections()
        func move(_ inspection: String, to tree: String, _ session: String) throws -> Int64 {
            let events = try log.run(#"{"op":"edit","layer":"Inspections","globalId":"\#(inspection)","session":"\#(session)"}"#,
                                     #"{"op":"relate","relationship":"Tree_Inspections","globalId":"\#(tree)"}"#, #"{"op":"finish"}"#, actor: "ivy")
            return try #require(events.last { $0.type == EventType.sessionCommitted.rawValue }).position
        }
        let field = "@related:Inspections"
        func lines(_ tree: String, _ child: String) throws -> [[String]] {
            try log.history(globalId: tree).entries.filter { $0.field == field && ($0.old == .string(child) || $0.new == .string(child)) }
                .map { [$0.cause, $0.old.serialized(), $0.new.serialized(), $0.session ?? "-"] }
        }
        let moved = inspections[0], back = inspections[1]
        let p1 = try move(moved, to: to, "s-move")
        #expect(try lines(to, moved) == [["session", "null", "\"\(moved)\"", "s-move"]])
        #expect(try log.history(globalId: to).entries.first { $0.field == field }?.position == p1)
        #expect(try log.history(globalId: to, asOf: .position(p1 - 1)).entries.filter { $0.field == field }.isEmpty)
        _ = try move(back, to: to, "s-away")
        _ = try move(back, to: from, "s-back")
        #expect(try lines(from, back) == [["baseline", "null", "\"\(back)\"", "-"], ["session", "\"\(back)\"", "null", "s-away"],
                                          ["session", "null", "\"\(back)\"", "s-back"]])
    }

    @Test func historyShowsRelationshipsAndStopsAtAsOf() throws {
        let tmp = TempPath()
        let log = try Self.fullLog(tmp.path)
        // A child inspection added under the tree.
        let h = try log.history(globalId: Self.tree96).entries
        let added = try #require(h.first { $0.field == "@related:Inspections" && $0.new == .string(Self.inspection0502) })
        #expect(added.session == "s-0502" && added.relationship == "Tree_Inspections" && added.old == .null && added.cause == "session")
        #expect(h.filter { $0.field == "@related:Inspections" && $0.cause == "baseline" }.count == (try Fixture.features("Inspections")
            .filter { $0["TreeGlobalID"]?.stringValue.flatMap(GlobalID.normalize) == Self.tree96 }.count))
        #expect(h.map(\.position) == h.map(\.position).sorted())
        // A child inspection deleted (script 06: dev.patel deletes 15E59A0F under tree 32F8DBAB).
        let h32 = try log.history(globalId: "{32F8DBAB-B462-43E8-9C41-8A83EB04159C}").entries
        #expect(h32.contains { $0.field == "@related:Inspections" && $0.old == "{15E59A0F-1FF4-4F0A-9435-0CB1724AF3FB}" && $0.new == .null && $0.actor == "dev.patel" })
        // A species re-pointed (s-0303) is a relationship change.
        let h8 = try log.history(globalId: "{8D532691-6C93-4F69-8269-041A74533044}").entries
        let rel = try #require(h8.first { $0.session == "s-0303" })
        #expect(rel.field == "SpeciesGlobalID" && rel.relationship == "Species_Trees" && rel.new == "{E53F9644-B39E-4DF2-9C0A-1FEBF7EAE66E}")
        #expect(rel.json["relationship"] == "Species_Trees")
        // --as-of: only what happened up to the moment.
        let cut = added.position - 1
        let early = try log.history(globalId: Self.tree96, asOf: .position(cut)).entries
        #expect(early == h.filter { $0.position <= cut } && early.count < h.count)
    }

    // MARK: diff

    struct Snapshot: Equatable { var layer: Int; var attributes: [String: JSONValue]; var live: Bool }

    /// The projections after the first `n` events: `Projections.replay` of a copy of those events in memory.
    static func projection(_ path: String, upTo n: Int64, schema: ServiceSchema) throws -> [String: Snapshot] {
        let memory = try DatabaseQueue()
        return try memory.writeWithoutTransaction { db in
            try db.execute(sql: "ATTACH DATABASE ? AS src", arguments: [path])
            try db.execute(sql: "CREATE TABLE events AS SELECT * FROM src.events WHERE position <= ?", arguments: [n])
            try db.execute(sql: "DETACH DATABASE src")
            try db.inTransaction {
                _ = try Projections.replay(from: db, into: db)
                return .commit
            }
            var out: [String: Snapshot] = [:]
            for l in schema.layers {
                for r in try Row.fetchAll(db, sql: "SELECT * FROM \(ProjectionTables.featureTable(l.id))") {
                    var a: [String: JSONValue] = [:]
                    for f in l.attributeFields {
                        let v: DatabaseValue = r[f.name]
                        switch v.storage {
                        case .null: break
                        case .int64(let i): a[f.name] = .int(i)
                        case .double(let d): a[f.name] = .double(d)
                        case .string(let s): a[f.name] = .string(s)
                        case .blob: break
                        }
                    }
                    out[r["_globalid"]] = Snapshot(layer: l.id, attributes: a, live: (r["_deleted"] as Int64) == 0)
                }
            }
            return out
        }
    }

    static func same(_ a: JSONValue?, _ b: JSONValue?) -> Bool {
        let a = a ?? .null, b = b ?? .null
        if let x = a.doubleValue, let y = b.doubleValue { return x == y }
        return a == b
    }

    @Test(arguments: [("baseline end", "07-removals"), ("01-new-plantings", "03-maintenance"), ("04-resume-and-photos", "08-wrap-up"), ("05-cancel-and-abandon", "07-removals")])
    func diffListsExactlyTheChangesBetweenTwoPositions(window: (String, String)) throws {
        let tmp = TempPath()
        let log = try Self.fullLog(tmp.path)
        // A window ends at the ScriptRecorded event of a script; "baseline end" is the last baseline event.
        func end(_ name: String) throws -> Int64 {
            if name == "baseline end" { return try Self.position(tmp.path, "SELECT MAX(position) FROM events WHERE type = 'FeatureBaselined'") }
            return try Self.position(tmp.path, "SELECT position FROM events WHERE type = 'ScriptRecorded' AND payload LIKE ?", ["%\(name)%"])
        }
        let from = try end(window.0), to = try end(window.1)
        #expect(from > 0 && to > from)
        let d = try log.diff(from: .position(from), to: .position(to))
        let a = try Self.projection(tmp.path, upTo: from, schema: log.schema), b = try Self.projection(tmp.path, upTo: to, schema: log.schema)
        var expected: [String: (FeatureChange.Kind, [String: (JSONValue, JSONValue)])] = [:]
        for g in Set(a.keys).union(b.keys) {
            let x = a[g], y = b[g]
            let wasLive = x?.live ?? false, isLive = y?.live ?? false
            let before = wasLive ? x!.attributes : [:], after = isLive ? y!.attributes : [:]
            var fields: [String: (JSONValue, JSONValue)] = [:]
            for k in Set(before.keys).union(after.keys) where !Self.same(before[k], after[k]) { fields[k] = (before[k] ?? .null, after[k] ?? .null) }
            switch (wasLive, isLive) {
            case (false, true): expected[g] = (.added, fields)
            case (true, false): expected[g] = (.deleted, fields)
            case (true, true) where !fields.isEmpty: expected[g] = (.updated, fields)
            default: break
            }
        }
        #expect(!expected.isEmpty, "\(window): an empty window proves nothing")
        // Attachment-only updates are changes too, but not of the feature tables (their commit moves editor tracking, so
        // the row shows one when the tracking moved).
        let got = d.changes.filter { c in c.kind != .updated || c.fields.contains { !$0.field.hasPrefix("@attachment:") } }
        #expect(Set(got.map(\.globalId)) == Set(expected.keys), "\(window)")
        for c in got {
            guard let (kind, fields) = expected[c.globalId] else { continue }
            #expect(c.kind == kind, "\(c.globalId)")
            let l = try #require(log.schema.layer(id: c.layer))
            let mine = c.fields.filter { !$0.field.hasPrefix("@attachment:") }
            #expect(c.trackingOnly == (c.kind == .updated && !mine.isEmpty && mine.count == c.fields.count && mine.allSatisfy { l.isEditorTrackingField($0.field) }))
            #expect(Set(mine.map(\.field)) == Set(fields.keys), "\(window) \(c.globalId)")
            for f in mine {
                #expect(Self.same(f.old, fields[f.field]?.0) && Self.same(f.new, fields[f.field]?.1), "\(c.globalId) \(f.field): \(f.old) → \(f.new), projections \(String(describing: fields[f.field]))")
                #expect(!f.actors.isEmpty && !f.causes.isEmpty)
            }
        }
        #expect(d.changes.count == Set(d.changes.map(\.globalId)).count)
        // The windows hold commits that moved editor tracking only (s-0203 in 02-inspections, for one).
        if from < (try Self.position(tmp.path, "SELECT position FROM events WHERE session = 's-0203' AND type = 'SessionCommitted'")) {
            #expect(d.changes.contains { $0.trackingOnly }, "\(window)")
        }
    }

    /// Issue 44 item 4: s-0203 commits tree A48AA108 with the values it had. The projection and blame name dev.patel as its
    /// editor with a new EditDate, so diff names the tree (editor tracking only) and history shows the change.
    @Test func aCommitThatMovedOnlyEditorTrackingIsInDiffAndHistory() throws {
        let tmp = TempPath()
        let log = try Self.fullLog(tmp.path)
        let tree = "{A48AA108-B599-477F-B78E-E9E8B676291D}"
        let p = try Self.position(tmp.path, "SELECT position FROM events WHERE session = 's-0203' AND type = 'SessionCommitted'")
        let blame = try log.blame(globalId: tree, asOf: .position(p))
        let editor = try #require(blame.fields.first { $0.field == "Editor" }), editDate = try #require(blame.fields.first { $0.field == "EditDate" })
        #expect(editor.value == "dev.patel" && editor.position == p && editDate.position == p)
        let before = try log.blame(globalId: tree, asOf: .position(p - 1))
        let oldEditDate = try #require(before.fields.first { $0.field == "EditDate" }).value
        // The commit alone, and a window of many events around it.
        let baselineEnd = try Self.position(tmp.path, "SELECT MAX(position) FROM events WHERE type = 'FeatureBaselined'")
        for (from, to) in [(p - 1, p), (baselineEnd, try log.eventCount())] {
            let d = try log.diff(from: .position(from), to: .position(to))
            let c = try #require(d.changes.first { $0.globalId == tree }, "diff \(from) \(to) does not name the tree")
            #expect(c.kind == .updated && c.trackingOnly && c.json["trackingOnly"] == true)
            #expect(Set(c.fields.map(\.field)).isSubset(of: ["Editor", "EditDate"]) && c.sessions.contains("s-0203"))
            let date = try #require(c.fields.first { $0.field == "EditDate" })
            #expect(date.old == oldEditDate && date.sessions == ["s-0203"])
            if to == p { #expect(date.new == editDate.value && c.fields.first { $0.field == "Editor" }?.new == "dev.patel") }
        }
        // A value change is no tracking-only change.
        let d = try log.diff(from: .position(baselineEnd), to: .position(try log.eventCount()))
        #expect(d.changes.contains { $0.kind == .updated && !$0.trackingOnly && $0.fields.contains { $0.field == "Editor" } })
        // history: the commit's tracking change, at its position.
        let h = try log.history(globalId: tree).entries.filter { $0.position == p }
        #expect(h.contains { $0.field == "Editor" && $0.new == "dev.patel" && $0.session == "s-0203" && $0.cause == "session" })
        #expect(h.contains { $0.field == "EditDate" && $0.old == oldEditDate && $0.new == editDate.value })
    }

    /// A commit that changed no value and did not move editor tracking (the same editor within the same millisecond)
    /// leaves the row as it was: diff lists nothing, history still shows the session that touched the feature.
    @Test func aCommitThatChangedNothingIsASessionInHistoryAndNoDiff() throws {
        let tmp = TempPath()
        let log = try Fixture.treesLog(at: tmp.path, clock: StepClock(start: 1_780_000_000_000, step: 0))
        let tree = AuditViewsTests.tree96
        func commit(_ session: String, _ width: Double) throws -> Int64 {
            let events = try log.run(#"{"op":"edit","layer":"Trees","globalId":"\#(tree)","session":"\#(session)"}"#,
                                     #"{"op":"set","field":"SiteWidth","value":\#(width)}"#, #"{"op":"finish"}"#, actor: "ivy")
            return try #require(events.last { $0.type == EventType.sessionCommitted.rawValue }).position
        }
        let p1 = try commit("s-one", 7.5), p2 = try commit("s-two", 7.5)
        #expect(try log.diff(from: .position(p1), to: .position(p2)).changes.isEmpty)
        let first = try log.diff(from: .position(p1 - 1), to: .position(p1)).changes
        #expect(first.count == 1 && first.first?.trackingOnly == false)
        let h = try log.history(globalId: tree).entries
        #expect(h.filter { $0.position == p2 }.map { [$0.field, $0.old.serialized(), $0.new.serialized(), $0.session ?? "-"] }
            == [["@session", "\"open\"", "\"committed\"", "s-two"]])
        #expect(h.contains { $0.position == p1 && $0.field == "Editor" && $0.new == "ivy" })
    }

    @Test func diffByLayerAndGeoJSON() throws {
        let tmp = TempPath()
        let log = try Self.fullLog(tmp.path)
        let from = try Self.position(tmp.path, "SELECT MAX(position) FROM events WHERE type = 'FeatureBaselined'")
        let to = try log.eventCount()
        let trees = try log.diff(from: .position(from), to: .position(to), layer: "Trees", geometry: true)
        #expect(!trees.changes.isEmpty && trees.changes.allSatisfy { $0.layerName == "Trees" && $0.geometry != nil })
        // s-0701 by maria.lopez changed 9256D707's SiteWidth.
        let u = try #require(trees.changes.first { $0.globalId == "{9256D707-9CC0-4B67-A19B-224A6BFC2A47}" })
        #expect(u.kind == .updated && u.fields.first { $0.field == "SiteWidth" }?.sessions.contains("s-0701") == true)
        #expect(trees.changes.contains { $0.kind == .deleted && $0.globalId == "{6F74E55D-99A9-4F6A-AD05-473278BF46FA}" })
        let gj = trees.geoJSON
        #expect(gj["type"] == "FeatureCollection" && gj["features"]?.arrayValue?.count == trees.changes.count)
        #expect(gj["features"]?.arrayValue?.first?["geometry"]?["type"] == "Point" && gj["features"]?.arrayValue?.first?["properties"]?["change"] != nil)
        // An empty window, and the same window by time on the recorded clock (everything was recorded in one instant here).
        #expect(try log.diff(from: .position(to), to: .position(to)).changes.isEmpty)
        #expect(throws: EditLogError.self) { try log.diff(from: .position(to), to: .position(from)) }
        // By client time: the day of script 06 (2026-06-08) alone.
        let day = try log.diff(from: .time("2026-06-08T00:00:00.000Z"), to: .time("2026-06-09T00:00:00.000Z"))
        #expect(day.changes.contains { $0.globalId == "{9A244525-6BBE-4BD6-9A13-41E710FD7164}" } && !day.changes.contains { $0.globalId == u.globalId })
    }

    /// The diff's fold runs inline or on a second thread: either way an event it cannot read fails the diff, naming it.
    @Test func aDiffOverACorruptEventFailsNamingIt() throws {
        let tmp = TempPath()
        let log = try Self.fullLog(tmp.path)
        let from = try Self.position(tmp.path, "SELECT MAX(position) FROM events WHERE type = 'FeatureBaselined'")
        let to = try log.eventCount()
        let bad = try Self.position(tmp.path, "SELECT MAX(position) FROM events WHERE type = 'SessionCommitted'")
        let good = try log.diff(from: .position(from), to: .position(to))
        #expect(!good.changes.isEmpty)
        log.close()
        try RawLog.writeWithoutTransaction(tmp.path) { db in
            try db.execute(sql: #"DROP TRIGGER events_append_only_update; UPDATE events SET payload = replace(payload, '"changes":{', '"changes":7,"x":{') WHERE position = ?"#,
                           arguments: [bad])
        }
        let reopened = try EditLog.open(at: tmp.path)
        defer { reopened.close() }
        // A short window of positions is folded inline; a window of times always on the second thread.
        for (label, a, b) in [("positions", LogMoment.position(from), LogMoment.position(to)),
                              ("times", LogMoment.time("2000-01-01T00:00:00.000Z"), LogMoment.time("2100-01-01T00:00:00.000Z"))] {
            do {
                _ = try reopened.diff(from: a, to: b)
                Issue.record("a diff over a corrupt payload (window of \(label)) succeeded")
            } catch {
                #expect(error.kind == .corrupt && error.description.contains("position \(bad)"), "\(label): \(error)")
            }
        }
        // The window before it is still read.
        #expect(try !reopened.diff(from: .position(from), to: .position(bad - 1)).changes.isEmpty)
    }
}

/// `editlog report`: one self-contained HTML file, loaded in headless Chromium.
@Suite struct ReportTests {
    static func chromium() -> String? {
        ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

extension AuditViewsTests {
    @Suite(.tags(.process)) struct ProcessTests {
        @Test func sessionsShowWhatCanceledAndAbandonedSessionsDiscarded() throws {
            let tmp = TempPath()
            let log = try AuditViewsTests.fullLog(tmp.path)
            let canceled = try log.sessions(status: "canceled")
            let s0501 = try #require(canceled.first { $0.id == "s-0501" })
            let att = try #require(s0501.state.attachmentsAdded.first)
            #expect(att.name == "wrong-tree.jpg" && att.size > 0 && att.sha256.count == 64)
            let s0801 = try #require(canceled.first { $0.id == "s-0801" })
            #expect(s0801.relationships.map(\.name) == ["Species_Trees"] && s0801.relationships.map(\.globalId) == ["{2A131C1F-CCD0-45C1-AD59-00DD1BFF3142}"])
            #expect(s0801.json["relationships"]?.arrayValue?.first?["relationship"] == "Species_Trees")
            #expect(s0501.json["attachmentsAdded"]?.arrayValue?.first?["sha256"] == .string(att.sha256))
            guard FileManager.default.isExecutableFile(atPath: CLI.binary) else { return }
            let text = try CLI.run("sessions", tmp.path, "--status", "canceled").stdout
            #expect(text.contains("attachment wrong-tree.jpg  \(att.size) bytes  sha256 \(att.sha256)"))
            #expect(text.contains("relationship Species_Trees → {2A131C1F-CCD0-45C1-AD59-00DD1BFF3142}") && text.contains("started (client)"))
        }

        @Test func cliAuditCommands() throws {
            guard FileManager.default.isExecutableFile(atPath: CLI.binary) else { Issue.record("no binary at \(CLI.binary)"); return }
            let tmp = TempPath()
            _ = try AuditViewsTests.fullLog(tmp.path)
            let blame = try CLI.run("blame", tmp.path, AuditViewsTests.tree96, "--json")
            #expect(blame.status == 0, "\(blame.stderr)")
            let bj = try JSONParser.parse(blame.stdout)
            #expect(bj["clock"] == "client" && bj["fields"]?.arrayValue?.contains { $0["field"] == "DBH" && $0["session"] == "s-0502" } == true)
            let text = try CLI.run("blame", tmp.path, AuditViewsTests.tree96, "--by", "recorded").stdout
            #expect(text.contains("time (recorded)") && text.contains("rule:tree-latest-inspection"))
            #expect(try CLI.run("blame", tmp.path, AuditViewsTests.tree96, "--by", "server").status == 64)
            // --by takes the clock's cases, and the help lists them.
            let help = try CLI.run("blame", "--help").stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(help.contains("--by <clock>") && help.contains("(values: client, recorded; default: client)"), "\(help)")
            #expect(try CLI.run("blame", tmp.path, AuditViewsTests.tree96, "--as-of", "soon").status == 64)
            #expect(try CLI.run("blame", tmp.path, newGID(999_999)).status == 68)
            let h = try CLI.run("history", tmp.path, AuditViewsTests.tree96, "--as-of", "2026-06-01T17:00:00Z")
            #expect(h.status == 0 && h.stdout.contains("time (client)") && h.stdout.contains("@related:Inspections (Tree_Inspections)"))
            let hj = try JSONParser.parse(try CLI.run("history", tmp.path, AuditViewsTests.tree96, "--json", "--by", "recorded").stdout)
            #expect(hj["clock"] == "recorded" && hj["entries"]?.arrayValue?.first?["clock"] == "recorded")
            let diff = try CLI.run("diff", tmp.path, "450", "2026-07-01T00:00:00Z", "--layer", "Trees")
            #expect(diff.status == 0 && diff.stdout.contains("Trees:") && diff.stdout.contains("Condition: Good → Fair  (maria.lopez; session)"), "\(diff.stderr)")
            // A tracking-only update is marked, its dates in the one human form.
            let s0203 = try AuditViewsTests.position(tmp.path, "SELECT position FROM events WHERE session = 's-0203' AND type = 'SessionCommitted'")
            let tracking = try CLI.run("diff", tmp.path, "\(s0203 - 1)", "\(s0203)").stdout
            #expect(tracking.contains("~ {A48AA108-B599-477F-B78E-E9E8B676291D}  by dev.patel; sessions s-0203  (editor tracking only)"), "\(tracking)")
            #expect(tracking.contains("Trees: 0 added, 0 deleted, 1 updated (1 editor tracking only)") && tracking.contains("EditDate: 20"))
            let ht = try CLI.run("history", tmp.path, "{A48AA108-B599-477F-B78E-E9E8B676291D}").stdout
            #expect(ht.split(separator: "\n").contains { $0.hasPrefix("\(s0203) ") && $0.contains("Editor") && $0.contains("dev.patel") }, "\(ht)")
            // show prints dates as history and blame do (`--json` keeps Esri epoch milliseconds).
            let shown = try CLI.run("show", tmp.path, "{A48AA108-B599-477F-B78E-E9E8B676291D}").stdout
            let ms = try #require(try JSONParser.parse(try CLI.run("show", tmp.path, "{A48AA108-B599-477F-B78E-E9E8B676291D}", "--json").stdout)["attributes"]?["EditDate"]?.intValue)
            #expect(shown.split(separator: "\n").contains { $0.hasPrefix("EditDate ") && $0.hasSuffix(" \(Timestamp.human(milliseconds: ms))") }
                    && !shown.contains(String(ms)), "\(shown)")
            #expect(ht.contains(Timestamp.human(milliseconds: ms)))
            for f in ["json", "geojson"] {
                let r = try CLI.run("diff", tmp.path, "0", "2026-07-01T00:00:00Z", "--format", f)
                #expect(r.status == 0 && (try? JSONParser.parse(r.stdout)) != nil, "\(f): \(r.stderr)")
            }
            #expect(try CLI.run("diff", tmp.path, "10", "5").status == 64)
            let log = try CLI.run("log", tmp.path, "--since", "2026-06-08T00:00:00Z", "--until", "2026-06-09T00:00:00Z")
            #expect(log.stdout.hasPrefix("pos\ttime (client)") && !log.stdout.hasSuffix("\n0 events\n"))
            #expect(try CLI.run("log", tmp.path, "--since", "2026-06-08T00:00:00Z", "--until", "2026-06-09T00:00:00Z", "--by", "recorded").stdout.hasSuffix("\n0 events\n"))
        }
    }
}

extension ReportTests {
    @Suite(.tags(.process)) struct ProcessTests {
        @Test func reportFiguresMatchTheLogAndChromiumRendersThem() throws {
            let tmp = TempPath()
            let log = try AuditViewsTests.fullLog(tmp.path)
            let (from, to) = ("2026-06-01T00:00:00.000Z", "2026-06-30T00:00:00.000Z")
            let r = try log.report(from: .time(from), to: .time(to))
            let window = "COALESCE(client_time, recorded_time) > ? AND COALESCE(client_time, recorded_time) <= ?"
            func count(_ type: String) throws -> Int {
                try RawLog.read(tmp.path) { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM events WHERE type = ? AND \(window)", arguments: [type, from, to]) ?? 0 }
            }
            #expect(r.sessionCount == (try count("SessionStarted")) && r.sessionCount > 0)
            #expect(r.derived.count == (try count("FeatureDerived")) && r.derived.allSatisfy { $0.cause.hasPrefix("rule:") })
            let changes = try ["SessionCommitted", "FeatureDerived", "FeatureDeleted", "FeatureBaselined"].map(count).reduce(0, +)
            #expect(r.byCause.values.reduce(0, +) == changes && r.byLayer.values.reduce(0, +) == changes && r.byActor.values.reduce(0, +) == changes)
            #expect(Set(r.discarded.map(\.id)) == ["s-0501", "s-0504", "s-0801"])
            // The report keeps each changed feature's kind and the centre of its geometry (its fields are diff's).
            let diff = try log.diff(from: .time(from), to: .time(to), geometry: true).changes
            func key(_ c: FeatureChange) -> String {
                let b = Geometry.bounds(c.geometry)
                return "\(c.layer) \(c.globalId) \(c.kind) \(b.map { "\(($0.minX + $0.maxX) / 2) \(($0.minY + $0.maxY) / 2)" } ?? "-")"
            }
            func key(_ c: AuditReport.ChangedFeature) -> String { "\(c.layer) \(c.globalId) \(c.kind) \(c.centre.map { "\($0.x) \($0.y)" } ?? "-")" }
            #expect(r.changes.map(key) == diff.map(key) && !r.changes.isEmpty)
            #expect(r.changes.contains { $0.centre != nil })

            let html = TempPath("report")
            let page = html.path + ".html"
            defer { try? FileManager.default.removeItem(atPath: page) }
            guard FileManager.default.isExecutableFile(atPath: CLI.binary) else { Issue.record("no binary at \(CLI.binary)"); return }
            let run = try CLI.run("report", tmp.path, "--from", from, "--to", to, "--out", page)
            #expect(run.status == 0, "\(run.stderr)")
            let text = try String(contentsOfFile: page, encoding: .utf8)
            // Self-contained: no script, no stylesheet or image link, nothing fetched.
            for bad in ["<script", "<link", "<img", "src=", "url(", "@import"] { #expect(!text.contains(bad), "\(bad)") }
            #expect(text.replacingOccurrences(of: "http://www.w3.org/2000/svg", with: "").range(of: "http") == nil)

            guard let chromium = ReportTests.chromium() else {
                Issue.record("chromium is not installed (apt-get install -y chromium; .ci/run installs it)")
                return
            }
            let flags = "--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --virtual-time-budget=2000"
            let dom = try CLI.sh("\(chromium) \(flags) --dump-dom file://\(page) 2>/dev/null")
            #expect(dom.status == 0)
            let kinds = Dictionary(grouping: r.changes, by: \.kind).mapValues(\.count)
            #expect(dom.stdout.contains("id=\"total-sessions\">\(r.sessionCount)<"))
            #expect(dom.stdout.contains("id=\"changed-added\">\(kinds[.added] ?? 0)<") && dom.stdout.contains("id=\"changed-deleted\">\(kinds[.deleted] ?? 0)<"))
            #expect(dom.stdout.contains("id=\"cause-session\">\(r.byCause["session"] ?? -1)<"))
            #expect(dom.stdout.components(separatedBy: "class=\"derived\"").count - 1 == r.derived.count)
            #expect(dom.stdout.components(separatedBy: "class=\"discarded ").count - 1 == 3)
            let placed = r.changes.filter { $0.centre != nil }.count
            #expect(placed > 0 && dom.stdout.components(separatedBy: "<circle class=\"feature ").count - 1 == placed)
            let shot = page + ".png"
            defer { try? FileManager.default.removeItem(atPath: shot) }
            _ = try CLI.sh("\(chromium) \(flags) --window-size=1200,2000 --screenshot=\(shot) file://\(page) 2>/dev/null")
            let size = (try? FileManager.default.attributesOfItem(atPath: shot)[.size] as? Int) ?? 0
            #expect((size ?? 0) > 10_000, "the screenshot is \(String(describing: size)) bytes")
        }
    }
}
