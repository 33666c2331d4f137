import EditLog
import Foundation
import Testing

/// The report read as an auditor reads it: each feature named by its layer's display field beside its GlobalID, the
/// summary's counts as the window's events made them (after the baseline by default), and every derived edit's trigger.
@Suite struct ReportAuditorTests {
    /// A scripted day on the Trees of Portland baseline: a tree planted; one planted and pulled again; an existing tree
    /// edited three times (its address last); an inspection added under another tree (the rollup derives onto it in
    /// that session) and deleted outside a session (the rollup derives again, with no session).
    struct Day {
        let tmp = TempPath()
        let log: EditLog
        let planted = newGID(1), pulled = newGID(2), inspection = newGID(3)
        let edited: String, inspectedTree: String
        /// The position of the inspection's delete, and the last position before the edited tree's address changed.
        var deletedAt: Int64 = 0, beforeRename: Int64 = 0

        init() throws {
            log = try Fixture.treesLog(at: tmp.path)
            edited = try Fixture.treeWithoutInspections()
            inspectedTree = try Fixture.treeWithInspections().tree
            // Far from Portland: no neighbourhood or address is derived, so the address is the crew's.
            let away = #""geometry":{"x":0.5,"y":0.5,"spatialReference":{"wkid":4326}}"#
            try log.run(#"{"op":"create","session":"s1","layer":"Trees","globalId":"\#(planted)",\#(away),"attributes":{"Address":"1 Auditor Way","Condition":"Good"}}"#,
                        #"{"op":"finish","session":"s1"}"#, actor: "ann")
            try log.run(#"{"op":"create","session":"s2","layer":"Trees","globalId":"\#(pulled)",\#(away),"attributes":{"Address":"2 Gone Lane"}}"#,
                        #"{"op":"finish","session":"s2"}"#, actor: "ann")
            try log.run(#"{"op":"delete","layer":"Trees","globalId":"\#(pulled)"}"#, actor: "bob")
            try log.run(#"{"op":"edit","session":"s3","layer":"Trees","globalId":"\#(edited)"}"#, #"{"op":"set","session":"s3","field":"Condition","value":"Poor"}"#,
                        #"{"op":"finish","session":"s3"}"#, actor: "bob")
            try log.run(#"{"op":"edit","session":"s4","layer":"Trees","globalId":"\#(edited)"}"#, #"{"op":"set","session":"s4","field":"DBH","value":3.3}"#,
                        #"{"op":"finish","session":"s4"}"#, actor: "bob")
            try log.run(#"{"op":"create","session":"s5","layer":"Inspections","globalId":"\#(inspection)","parent":{"relationship":"Tree_Inspections","globalId":"\#(inspectedTree)"},"attributes":{"Condition":"Dead","DBH":99.0,"CollectedDate":"2030-01-01T00:00:00Z"}}"#,
                        #"{"op":"finish","session":"s5"}"#, actor: "carol")
            let deleted = try log.run(#"{"op":"delete","layer":"Inspections","globalId":"\#(inspection)"}"#, actor: "dave")
            deletedAt = try #require(deleted.first { $0.type == "FeatureDeleted" }).position
            beforeRename = try log.lastPosition()
            try log.run(#"{"op":"edit","session":"s6","layer":"Trees","globalId":"\#(edited)"}"#, #"{"op":"set","session":"s6","field":"Address","value":"6 Renamed Rd"}"#,
                        #"{"op":"finish","session":"s6"}"#, actor: "bob")
        }

        /// A baseline feature's attribute as the baseline file has it.
        static func baseline(_ layer: String, _ g: String, _ field: String) throws -> String? {
            try Fixture.features(layer).first { $0["GlobalID"]?.stringValue.flatMap(GlobalID.normalize) == g }?[field]?.stringValue
        }
    }

    @Test func theDefaultWindowStartsAfterTheBaselineAndCountsWhatTheEventsDid() throws {
        let day = try Day()
        let r = try day.log.report()
        let baselineEnd = try day.log.baselineEnd()
        #expect(baselineEnd > 1 && r.from == .position(baselineEnd) && r.baselineEnd == baselineEnd)
        // Created: the two trees and the inspection (one tree and the inspection deleted again); updated: the edited
        // tree and the inspected one (derived onto twice), each once; deleted: the pulled tree and the inspection.
        #expect(r.edited == EditCounts(created: 3, updated: 2, deleted: 2), "\(r.edited)")
        #expect(r.byCause["baseline"] == nil)
        // The net change (the map) leaves out what was created and deleted in the window.
        #expect(r.changes.filter { $0.kind == .added }.map(\.globalId) == [day.planted] && !r.changes.contains { $0.kind == .deleted })
        let page = r.html
        #expect(page.contains(#"id="edited-created">3<"#) && page.contains(#"id="edited-updated">2<"#) && page.contains(#"id="edited-deleted">2<"#))
        #expect(page.contains("position \(baselineEnd), the end of the baseline"), "\(page.prefix(3000))")
        // From position 0 the baseline's features are created in the window, and the page says so.
        let all = try day.log.report(from: .position(0))
        let baselined = try RawLog.count(day.tmp.path, type: "FeatureBaselined")
        #expect(baselined > 0 && all.edited == EditCounts(created: baselined + 3, updated: 0, deleted: 2), "\(all.edited)")
        #expect(all.html.contains("before the end of the baseline (position \(baselineEnd))"))
    }

    @Test func featuresAreNamedByTheirDisplayFieldAsOfTheWindowsEnd() throws {
        let day = try Day()
        let inspectedAddress = try #require(try Day.baseline("Trees", day.inspectedTree, "Address"))
        let editedAddress = try #require(try Day.baseline("Trees", day.edited, "Address"))
        let r = try day.log.report()
        func name(_ g: String) -> String? { r.changes.first { $0.globalId == g }?.name }
        #expect(name(day.planted) == "1 Auditor Way" && name(day.edited) == "6 Renamed Rd" && name(day.inspectedTree) == inspectedAddress)
        #expect(r.derived.count == 2 && r.derived.allSatisfy { $0.globalId == day.inspectedTree && $0.name == inspectedAddress })
        let page = r.html
        #expect(page.contains(#"<span class="name">\#(inspectedAddress)</span> <small class="gid">\#(day.inspectedTree)</small>"#))
        #expect(page.contains("Trees 1 Auditor Way \(day.planted): added"))
        // A window that ends before the rename names the edited tree by its baseline address, and the deleted inspection
        // (the trigger of a derived edit) by its last value.
        let early = try day.log.report(to: .position(day.beforeRename))
        #expect(early.changes.first { $0.globalId == day.edited }?.name == editedAddress)
        if case .delete(_, _, _, let n)? = early.derived.last?.trigger { #expect(n == "Dead") } else { Issue.record("\(early.derived)") }
        // The facade's one home (history's related records): a deleted feature keeps its last value.
        #expect(try day.log.displayValue(of: day.pulled) == "2 Gone Lane" && day.log.displayValue(of: day.planted) == "1 Auditor Way")
    }

    /// The changed features and the figures come from one scan of the window: the progress runs once over its
    /// positions, never backwards, and ends at the window's end (a second scan would run it over twice the positions).
    @Test func theReportReadsItsWindowInOneScan() throws {
        let day = try Day()
        var calls: [(done: Int64, total: Int64)] = []
        let r = try day.log.report(progress: { calls.append(($0, $1)) })
        let span = try day.log.lastPosition() - day.log.baselineEnd()
        #expect(span > 0 && calls.last?.done == span && calls.allSatisfy { $0.total == span }, "\(calls)")
        #expect(zip(calls, calls.dropFirst()).allSatisfy { $0.done <= $1.done }, "\(calls)")
        // The figures the scan gathered beside the fold: every session started in the window, and the derived edits.
        #expect(r.sessionCount == 6 && r.derived.count == 2 && r.edited == EditCounts(created: 3, updated: 2, deleted: 2), "\(r.sessionCount) \(r.edited)")
    }

    @Test func eachDerivedEditNamesItsTrigger() throws {
        let day = try Day()
        let r = try day.log.report()
        let bySession = try #require(r.derived.first)
        #expect(bySession.session == "s5" && bySession.trigger == nil && bySession.cause == "rule:tree-latest-inspection")
        let byDelete = try #require(r.derived.last)
        #expect(byDelete.session == nil && byDelete.position > day.deletedAt)
        #expect(byDelete.trigger == .delete(position: day.deletedAt, layer: "Inspections", globalId: day.inspection, name: "Dead"), "\(String(describing: byDelete.trigger))")
        #expect(r.html.contains("delete of Inspections \(day.inspection) (Dead) at position \(day.deletedAt)"))
        #expect(r.html.contains("<td class=\"trigger\">session s5</td>"))
    }
}

extension ReportAuditorTests {
    @Suite(.tags(.process)) struct ProcessTests {
        /// `editlog report --json` gives the page's figures: the same counts, measured from the same start.
        @Test func theJSONFiguresAreThePages() throws {
            guard FileManager.default.isExecutableFile(atPath: CLI.binary) else { Issue.record("no binary at \(CLI.binary)"); return }
            let day = try Day()
            let r = try day.log.report()
            day.log.close()
            let page = day.tmp.path + ".html"
            defer { try? FileManager.default.removeItem(atPath: page) }
            let run = try CLI.run("report", day.tmp.path, "--out", page, "--json")
            #expect(run.status == 0, "\(run.stderr)")
            let j = try JSONParser.parse(run.stdout)
            #expect(j["edited"] == r.edited.json && j["from"] == r.from.json && j["baselineEnd"]?.intValue == r.baselineEnd)
            let html = try String(contentsOfFile: page, encoding: .utf8)
            for (k, n) in [("created", r.edited.created), ("updated", r.edited.updated), ("deleted", r.edited.deleted)] {
                #expect(j["edited"]?[k]?.intValue == Int64(n) && html.contains("id=\"edited-\(k)\">\(n)<"), "\(k)")
            }
        }
    }
}
