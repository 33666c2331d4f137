import EditLog
import Foundation
import Testing

/// The merge engine through the import: devices made from the same fixtures exchange their events and converge.
@Suite struct MergeTests {
    /// Carries every event of `from` (and the blobs they reference) to `to`: in a change bundle (exported to a file,
    /// imported from it, as devices exchange them), or directly through the import API the bundle import uses
    /// (a debug build writes bundles slowly; the property test runs most seeds directly).
    @discardableResult
    static func exchange(_ from: EditLog, into to: EditLog, policy: MergePolicy = .lastInWins, viaBundle: Bool = true) throws -> ImportReport {
        guard viaBundle else {
            let events = try from.events()
            var shas = Set<String>()
            for e in events where e.type == EventType.attachmentStaged.rawValue { if let s = e.payload["sha256"]?.stringValue { shas.insert(s) } }
            return try to.importEvents(policy: policy, actor: "operator", device: "test", source: "test:\(from.logId)") { event, blob in
                for e in events { try event(e) }
                for s in shas.sorted() { if let b = try from.blob(sha256: s) { try blob(b) } }
            }
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("editlog-merge-\(UUID().uuidString).bundle").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        _ = try from.exportBundle(to: file)
        return try to.importBundle(at: file, policy: policy, actor: "operator", device: "test").report
    }

    /// A device log made from the fixtures. Devices of one test share a clock (devices whose clocks agree, as
    /// last-in-wins by client time assumes), unless `clock` is nil.
    static func device(_ name: String, _ tmp: TempPath, seed: UInt64, baseline: Bool = true, clock: StepClock? = nil) throws -> EditLog {
        try Fixture.treesLog(at: tmp.path, baseline: baseline, seed: seed, logId: "log-\(name)", clockStart: 1_780_000_000_000 + Int64(seed), clock: clock)
    }

    static let tree = "{32F8DBAB-B462-43E8-9C41-8A83EB04159C}"

    static func set(_ log: EditLog, _ gid: String, _ fields: [(String, String)], at minute: Int, actor: String, session: String) throws {
        var lines = [#"{"op":"edit","layer":"Trees","globalId":"\#(gid)","session":"\#(session)","actor":"\#(actor)","at":"2026-06-20T10:\#(String(format: "%02d", minute)):00Z"}"#]
        for (f, v) in fields { lines.append(#"{"op":"set","field":"\#(f)","value":\#(v),"session":"\#(session)","at":"2026-06-20T10:\#(String(format: "%02d", minute)):10Z"}"#) }
        lines.append(#"{"op":"finish","session":"\#(session)","at":"2026-06-20T10:\#(String(format: "%02d", minute)):20Z"}"#)
        for cmd in try script(lines, actor: actor) { try log.apply(cmd) }
    }

    // MARK: Field by field, three-way

    @Test func oneSideChangesAreTakenSameValuesAreNoConflictDifferentValuesAreOne() throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try Self.device("a", ta, seed: 1), b = try Self.device("b", tb, seed: 2)
        try Self.set(a, Self.tree, [("SiteWidth", "10"), ("PlantedBy", "\"crew A\""), ("Wires", "2")], at: 1, actor: "ann", session: "ann-1")
        try Self.set(b, Self.tree, [("SiteWidth", "20"), ("PlantedDate", "1777334400000"), ("Wires", "2")], at: 5, actor: "bob", session: "bob-2")
        let intoB = try Self.exchange(a, into: b)
        let intoA = try Self.exchange(b, into: a)
        for log in [a, b] {
            let t = try log.attributes(Self.tree)
            #expect(t["SiteWidth"] == .double(20) || t["SiteWidth"] == .int(20), "the later write wins: \(String(describing: t["SiteWidth"]))")
            #expect(t["PlantedBy"] == "crew A")  // changed on A only
            #expect(t["PlantedDate"] == .int(1777334400000))  // changed on B only
            // The editor tracking names the latest write on both sides (the winner), not the last event applied there.
            #expect(t["Editor"] == "bob", "\(log.logId): \(String(describing: t["Editor"]))")
        }
        #expect(try a.digestOfContent() == (try b.digestOfContent()))
        // One conflict each way, on SiteWidth only (Wires: the same value on both sides).
        for r in [intoA, intoB] {
            #expect(r.conflicts.count == 1)
            #expect(r.conflicts.first?.field == "SiteWidth" && r.conflicts.first?.kind == .field)
        }
        let c = try #require(intoB.conflicts.first)
        #expect(c.local.writer?.actor == "bob" && c.remote.writer?.actor == "ann" && c.winner == .local && c.policy == .lastInWins)
        #expect(c.base != c.local.value && c.base != c.remote.value)
        // history, blame and show name the conflict behind the value; blame says where an imported value came from.
        let bBlame = try b.blame(globalId: Self.tree).fields
        #expect(bBlame.first { $0.field == "SiteWidth" }?.conflict == c.id, "the kept local value names its conflict")
        #expect(bBlame.first { $0.field == "SiteWidth" }?.actor == "bob")
        #expect(bBlame.first { $0.field == "PlantedBy" }?.importedFrom == "log-a")
        #expect(try b.history(globalId: Self.tree).entries.contains { $0.cause.contains("conflict \(c.id)") && $0.field == "SiteWidth" })
        #expect(try !b.history(globalId: Self.tree).entries.contains { $0.field == "SiteWidth" && $0.new.doubleValue == 10 && !$0.cause.contains("conflict") }, "a value the merge did not take is not history")
        // The conflict's line is the value before the decision and the one kept: no change where local won, local →
        // remote where remote won.
        let keptLine = try #require(try b.history(globalId: Self.tree).entries.first { $0.cause.contains("conflict \(c.id)") })
        #expect(keptLine.old.doubleValue == 20 && keptLine.new.doubleValue == 20 && keptLine.cause.contains("local won"), "\(keptLine)")
        let taken = try #require(intoA.conflicts.first)
        let takenLine = try #require(try a.history(globalId: Self.tree).entries.first { $0.cause.contains("conflict \(taken.id)") })
        #expect(taken.winner == .remote && takenLine.old.doubleValue == 10 && takenLine.new.doubleValue == 20, "\(takenLine)")
        #expect(try b.show(globalId: Self.tree)["conflicts"]?.arrayValue?.first?["id"]?.stringValue == c.id)
        // Both logs list the same conflict.
        #expect(Set(try a.conflicts().map(\.conflict.key)) == Set(try b.conflicts().map(\.conflict.key)))
        // The report lists it: both sides with their writers, the policy's winner, then a resolution by hand.
        let before = try b.report()
        #expect(before.conflicts.map(\.conflict) == [c] && before.conflicts.first?.resolutions.isEmpty == true)
        #expect(before.html.contains("id=\"total-conflicts\">1<") && before.html.contains("class=\"conflict field\""))
        #expect(before.html.contains("last-in-wins (client-time) → <b>local</b>"), "\(before.html.suffix(1500))")
        let head = try b.lastPosition()
        _ = try b.resolveConflict(id: c.id, take: .remote, actor: "carol", device: "desk")
        let after = try b.report()
        #expect(after.conflicts.first?.resolutions.map(\.take) == ["remote"] && after.conflicts.first?.resolutions.first?.actor == "carol")
        #expect(after.html.contains("remote = 10") && after.html.contains("by carol"), "\(after.html.suffix(1500))")
        #expect(try b.report(from: .position(head)).conflicts.isEmpty, "a window after the decision holds no conflict")
        // A's decision, carried to B, changed nothing here: its history line is the value A kept, twice.
        try Self.exchange(a, into: b)
        let carried = try #require(try b.history(globalId: Self.tree).entries.first { $0.cause.contains("conflict \(taken.id)") })
        #expect(carried.old.doubleValue == 20 && carried.new.doubleValue == 20 && carried.cause.contains("decided in log log-a"), "\(carried)")
        // Rebuild equals incremental with imported events and decisions.
        for log in [a, b] {
            #expect(try log.digestOfProjections() == (try log.digestOfRebuild()))
            #expect(try log.verify().ok)
        }
    }

    @Test(arguments: [MergePolicy.localWins, .remoteWins, .manual])
    func eachPolicyDecides(policy: MergePolicy) throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try Self.device("a", ta, seed: 1), b = try Self.device("b", tb, seed: 2)
        try Self.set(a, Self.tree, [("SiteWidth", "10")], at: 9, actor: "ann", session: "ann-3")
        try Self.set(b, Self.tree, [("SiteWidth", "20"), ("PlantedBy", "\"b\"")], at: 1, actor: "bob", session: "bob-4")
        let r = try Self.exchange(a, into: b, policy: policy)
        let c = try #require(r.conflicts.first)
        let width = try b.attributes(Self.tree)["SiteWidth"]?.doubleValue
        switch policy {
        case .localWins: #expect(c.winner == .local && width == 20)
        case .remoteWins: #expect(c.winner == .remote && width == 10)
        case .manual: #expect(c.winner == .open && width == 20)
        case .lastInWins: Issue.record("not a case here")
        }
        // A re-resolution is a new event that writes the chosen value.
        let before = try b.eventCount()
        try b.resolveConflict(id: c.id, take: .remote, actor: "investigator", device: "desk")
        #expect(try b.eventCount() == before + 1)
        #expect(try b.attributes(Self.tree)["SiteWidth"]?.doubleValue == 10)
        // Every event of the merged log (imports, decisions, resolutions) validates against the schemas.
        let v = SchemaFilesTests.validator()
        for e in try b.events() {
            let errors = try v.validate(try JSONParser.parse(e.json.serialized()), against: SchemaFilesTests.recordedEvent)
            #expect(errors.isEmpty, "event \(e.position) \(e.type): \(errors)")
        }
        let record = try b.conflict(id: c.id)
        #expect(record.status == "resolved" && record.resolutions.first?.actor == "investigator")
        try b.resolveConflict(id: String(c.id.prefix(30)), take: .value(.int(33)), actor: "investigator", device: "desk")
        #expect(try b.attributes(Self.tree)["SiteWidth"]?.doubleValue == 33)
        #expect(try b.conflict(id: c.id).resolutions.count == 2)
        #expect(try b.digestOfProjections() == (try b.digestOfRebuild()))
        // A value the field refuses is refused, nothing written.
        let n = try b.eventCount()
        #expect(throws: EditLogError.self) { try b.resolveConflict(id: c.id, take: .value(.string("wide")), actor: "x", device: "y") }
        #expect(try b.eventCount() == n)
        #expect(Set(["manual", "local-wins", "remote-wins"]).contains(policy.rawValue))
        _ = a
    }

    /// A resolution is checked as a pop-up edit is (a relationship key must name a live parent of the right layer,
    /// never nothing), and the rules derive again from the resolved state (a child's value rolls up to its parent).
    @Test func aResolutionIsCheckedAsAPopupEditAndTheRulesDeriveAgain() throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try Self.device("a", ta, seed: 1), b = try Self.device("b", tb, seed: 2)
        let (tree, inspections) = try Fixture.treeWithInspections()
        let inspection = inspections[0]
        let species = try Fixture.features("Species").compactMap { $0["GlobalID"]?.stringValue.flatMap(GlobalID.normalize) }
        func edit(_ log: EditLog, _ layer: String, _ gid: String, _ ops: [String], at minute: Int, actor: String) throws {
            let s = "\(actor)-\(layer)-\(minute)"
            var lines = [#"{"op":"edit","layer":"\#(layer)","globalId":"\#(gid)","session":"\#(s)","at":"2026-06-20T10:\#(String(format: "%02d", minute)):00Z"}"#]
            for op in ops { lines.append(#"{"session":"\#(s)",\#(op.dropFirst())"#) }
            lines.append(#"{"op":"finish","session":"\#(s)","at":"2026-06-20T10:\#(String(format: "%02d", minute)):20Z"}"#)
            for cmd in try script(lines, actor: actor) { try log.apply(cmd) }
        }
        // Both make the same inspection the tree's latest, with a different Condition; both give the tree another species.
        let latest = #"{"op":"set","field":"CollectedDate","value":"2026-07-01T00:00:00Z"}"#
        try edit(a, "Inspections", inspection, [latest, #"{"op":"set","field":"Condition","value":"Poor"}"#], at: 1, actor: "ann")
        try edit(b, "Inspections", inspection, [latest, #"{"op":"set","field":"Condition","value":"Dead"}"#], at: 2, actor: "bob")
        try edit(a, "Trees", tree, [#"{"op":"relate","relationship":"Species_Trees","globalId":"\#(species[1])"}"#], at: 3, actor: "ann")
        try edit(b, "Trees", tree, [#"{"op":"relate","relationship":"Species_Trees","globalId":"\#(species[2])"}"#], at: 4, actor: "bob")
        #expect(try b.attributes(tree)["Condition"] == "Dead")
        let r = try Self.exchange(a, into: b, policy: .manual)
        let condition = try #require(r.conflicts.first { $0.field == "Condition" && $0.globalId == inspection })
        let key = try #require(r.conflicts.first { $0.field == "SpeciesGlobalID" })

        // A key that names nothing, a record of another layer, or nothing at all: refused, nothing written.
        let n = try b.eventCount()
        for (value, kind) in [(JSONValue.string("{00000000-0000-4000-8000-000000000000}"), EditLogError.Kind.notFound),
                              (.string(inspection), .notFound), (.null, .validation)] {
            let e = try #require(throws: EditLogError.self) { try b.resolveConflict(id: key.id, take: .value(value), actor: "ivy", device: "desk") }
            #expect(e.kind == kind && e.message.contains("SpeciesGlobalID"), "\(e)")
            if value == .string(inspection) { #expect(e.message.contains("names a record of Inspections"), "\(e)") }
        }
        #expect(try b.eventCount() == n)
        try b.resolveConflict(id: key.id, take: .remote, actor: "ivy", device: "desk")
        #expect(try b.attributes(tree)["SpeciesGlobalID"]?.stringValue.flatMap(GlobalID.normalize) == species[1])

        // The inspection takes the remote Condition, and the tree's rollup follows, naming the conflict.
        try b.resolveConflict(id: condition.id, take: .remote, actor: "ivy", device: "desk")
        #expect(try b.attributes(inspection)["Condition"] == "Poor")
        #expect(try b.attributes(tree)["Condition"] == "Poor")
        let derived = try b.events().last { $0.type == EventType.featureDerived.rawValue }
        #expect(derived?.payload["conflictId"]?.stringValue == condition.id && derived?.payload["globalId"]?.stringValue == tree)
        // history and blame name the conflict behind each resolved or re-derived value.
        let keyLine = try b.history(globalId: tree).entries.last { $0.field == "SpeciesGlobalID" }
        #expect(keyLine?.cause == "resolution of conflict \(key.id) (took remote)", "\(String(describing: keyLine))")
        let derivedLine = try b.history(globalId: tree).entries.last { $0.field == "Condition" }
        #expect(derivedLine?.cause.hasSuffix("after the resolution of conflict \(condition.id)") == true, "\(String(describing: derivedLine))")
        #expect(try b.blame(globalId: inspection).fields.first { $0.field == "Condition" }?.conflict == condition.id)
        #expect(try b.blame(globalId: tree).fields.first { $0.field == "Condition" }?.conflict == condition.id)
        // `show` names the conflict behind a value only while it is: a later session's value has none.
        func shown(_ field: String) throws -> String {
            let r = try CLI.run(["show", tb.path, tree])
            return r.stdout.split(separator: "\n").first { $0.hasPrefix(field + " ") }.map(String.init) ?? "(no \(field) line: \(r.stderr))"
        }
        #expect(try shown("SpeciesGlobalID").contains(key.id))
        try edit(b, "Trees", tree, [#"{"op":"relate","relationship":"Species_Trees","globalId":"\#(species[3])"}"#], at: 30, actor: "bob")
        #expect(try !shown("SpeciesGlobalID").contains(key.id) && shown("SpeciesGlobalID").contains(species[3]))
        let blamed = try CLI.run(["blame", tb.path, inspection]).stdout.split(separator: "\n").first { $0.hasPrefix("Condition ") } ?? ""
        #expect(blamed.contains("conflict \(condition.id)"), "\(blamed)")
        #expect(try b.digestOfProjections() == (try b.digestOfRebuild()))
        #expect(try b.verify().ok)
        let v = SchemaFilesTests.validator()
        for e in try b.events() where e.position > n {
            let errors = try v.validate(try JSONParser.parse(e.json.serialized()), against: SchemaFilesTests.recordedEvent)
            #expect(errors.isEmpty, "event \(e.position) \(e.type): \(errors)")
        }
    }

    /// An attachment GlobalID added on both sides: the same attachment (same feature, name and bytes) is one; another
    /// attachment under that id is refused by name, the log unchanged (before, a raw SQLite UNIQUE error).
    @Test func anAttachmentIdAddedOnBothSidesIsOneWhenTheSameAndRefusedOtherwise() throws {
        let id = "{ABCD0000-0000-4000-8000-00000000ABCD}"
        func attach(_ log: EditLog, _ tree: String, _ name: String, _ bytes: String, actor: String, minute: Int) throws {
            let lines = [#"{"op":"edit","layer":"Trees","globalId":"\#(tree)","session":"\#(actor)-att","at":"2026-06-20T10:\#(String(format: "%02d", minute)):00Z"}"#,
                         #"{"op":"attach","attachmentId":"\#(id)","name":"\#(name)","contentType":"image/jpeg","dataBase64":"\#(Data(bytes.utf8).base64EncodedString())","session":"\#(actor)-att"}"#,
                         #"{"op":"finish","session":"\#(actor)-att"}"#]
            for cmd in try script(lines, actor: actor) { try log.apply(cmd) }
        }
        let (other, _) = try Fixture.treeWithInspections()
        for same in [true, false] {
            let ta = TempPath("a"), tb = TempPath("b")
            let a = try Self.device("a", ta, seed: 1), b = try Self.device("b", tb, seed: 2)
            try attach(a, Self.tree, "photo.jpg", "the photo", actor: "ann", minute: 1)
            try attach(b, same ? Self.tree : other, same ? "photo.jpg" : "mine.jpg", same ? "the photo" : "another photo", actor: "bob", minute: 2)
            if same {
                try Self.exchange(a, into: b)
                try Self.exchange(b, into: a)
                for log in [a, b] {
                    #expect(try log.attachmentInfos(parents: [Self.tree])[Self.tree]?.map(\.globalId) == [id])
                    #expect(try log.digestOfProjections() == (try log.digestOfRebuild()))
                    #expect(try log.verify().ok)
                }
                #expect(try Self.differences([a, b]).isEmpty)
            } else {
                let n = try b.eventCount()
                let e = try #require(throws: EditLogError.self) { try Self.exchange(a, into: b) }
                #expect(e.kind == .invalidInput && e.message.contains(id) && e.message.contains("mine.jpg") && e.message.contains("photo.jpg"), "\(e)")
                #expect(try b.eventCount() == n)
            }
        }
    }

    // MARK: Update against delete

    /// Device a deletes a tree (10:01) that device b updates later (10:30); returns the tree.
    static func deleteHereUpdateThere(_ a: EditLog, _ b: EditLog) throws -> String {
        let t = try Fixture.treeWithoutInspections()
        for cmd in try script([#"{"op":"delete","layer":"Trees","globalId":"\#(t)","at":"2026-06-20T10:01:00Z"}"#], actor: "ann") { try a.apply(cmd) }
        try set(b, t, [("PlantedBy", "\"still here\"")], at: 30, actor: "bob", session: "bob-5")
        return t
    }

    @Test func aLaterUpdateKeepsADeletedFeatureAndALaterDeleteWins() throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try Self.device("a", ta, seed: 1), b = try Self.device("b", tb, seed: 2)
        let t = try Self.deleteHereUpdateThere(a, b)
        let r1 = try Self.exchange(a, into: b)
        let r2 = try Self.exchange(b, into: a)
        #expect(r1.conflicts.contains { $0.kind == .updateDelete && $0.winner == .local })
        #expect(r2.conflicts.contains { $0.kind == .deleteUpdate && $0.winner == .remote })
        for log in [a, b] {
            #expect(try log.show(globalId: t)["deleted"] == false)
            #expect(try log.attributes(t)["PlantedBy"] == "still here")
        }
        #expect(try a.digestOfContent() == (try b.digestOfContent()))
        for log in [a, b] { #expect(try log.digestOfProjections() == (try log.digestOfRebuild())) }
    }

    /// A conflict that takes no value (here update against delete, under manual) closes with --take local: a
    /// resolution that changes nothing, here or in a log it travels to; any other --take is refused, naming the way out.
    @Test func aConflictWithoutAValueClosesAsThisLogHoldsIt() throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try Self.device("a", ta, seed: 1), b = try Self.device("b", tb, seed: 2)
        _ = try Self.deleteHereUpdateThere(a, b)
        let c = try #require(try Self.exchange(a, into: b, policy: .manual).conflicts.first { $0.kind == .updateDelete })
        #expect(c.winner == .open)
        #expect(try b.conflict(id: c.id).status == "open")
        let n = try b.eventCount(), digest = try b.digestOfProjections()
        for choice in [ConflictChoice.remote, .base, .value("x")] {
            let e = try #require(throws: EditLogError.self) { try b.resolveConflict(id: c.id, take: choice, actor: "ivy", device: "desk") }
            #expect(e.kind == .unsupported && e.message.contains("--take local closes it"), "\(e)")
        }
        #expect(try b.eventCount() == n)
        try b.resolveConflict(id: c.id, take: .local, actor: "ivy", device: "desk")
        #expect(try b.conflict(id: c.id).status == "resolved")
        #expect(try b.eventCount() == n + 1)
        #expect(try b.digestOfProjections() == digest)
        #expect(try b.digestOfRebuild() == digest)
        // Carried to the log that deleted (under manual, so the tree stays deleted there): its own conflict with b's
        // update, none from the closure.
        let r = try Self.exchange(b, into: a, policy: .manual)
        #expect(r.conflicts.count == 1 && r.conflicts[0].kind == .deleteUpdate, "\(r.conflicts)")
        #expect(try a.digestOfProjections() == (try a.digestOfRebuild()))
        let v = SchemaFilesTests.validator()
        for e in try b.events() where e.position > n {
            #expect(try v.validate(try JSONParser.parse(e.json.serialized()), against: SchemaFilesTests.recordedEvent).isEmpty)
        }
    }

    /// Logs made separately from the same fixtures baselined the same features (their own events, the same content).
    /// A tree deleted on one side, with its inspections (the delete cascades), and left alone on the other is no
    /// conflict either way, and stays deleted under every policy: the other side's baseline is the common base.
    @Test(arguments: MergePolicy.allCases)
    func aCommonBaselineFeatureDeletedOnOneSideIsNoConflictAndStaysDeleted(policy: MergePolicy) throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try Self.device("a", ta, seed: 1), b = try Self.device("b", tb, seed: 2)
        let (t, inspections) = try Fixture.treeWithInspections()
        for cmd in try script([#"{"op":"delete","layer":"Trees","globalId":"\#(t)","at":"2026-06-20T10:01:00Z"}"#], actor: "ann") { try a.apply(cmd) }
        #expect(try inspections.allSatisfy { try a.show(globalId: $0)["deleted"] == true }, "the delete cascades")
        let intoA = try Self.exchange(b, into: a, policy: policy)
        let intoB = try Self.exchange(a, into: b, policy: policy)
        for (r, log) in [(intoA, a), (intoB, b)] {
            #expect(r.conflicts.isEmpty, "\(policy): \(r.conflicts.map { "\($0.kind) \($0.globalId)" })")
            for g in [t] + inspections { #expect(try log.show(globalId: g)["deleted"] == true, "\(policy): \(g)") }
        }
        #expect(try a.digestOfContent() == (try b.digestOfContent()))
    }

    /// One GlobalID created on both sides (ann at 10:02, bob at 10:07), then edited by ann (10:20): under
    /// last-in-wins both logs show the later creation's creator and the latest editor, in either exchange order.
    @Test(arguments: [false, true])
    func theEditorTrackingOfACreateCreateFollowsTheLaterWrites(aFirst: Bool) throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try Self.device("a", ta, seed: 1), b = try Self.device("b", tb, seed: 2)
        let g = newGID(77)
        func create(_ log: EditLog, actor: String, minute: Int, dbh: Int) throws {
            let lines = [
                #"{"op":"create","layer":"Trees","globalId":"\#(g)","session":"\#(actor)-c","geometry":{"x":-122.63,"y":45.52},"attributes":{"DBH":\#(dbh)},"at":"2026-06-20T10:\#(String(format: "%02d", minute)):00Z"}"#,
                #"{"op":"finish","session":"\#(actor)-c","at":"2026-06-20T10:\#(String(format: "%02d", minute)):30Z"}"#,
            ]
            for cmd in try script(lines, actor: actor) { try log.apply(cmd) }
        }
        try create(a, actor: "ann", minute: 2, dbh: 3)
        try create(b, actor: "bob", minute: 7, dbh: 5)
        try Self.set(a, g, [("PlantedBy", "\"crew A\"")], at: 20, actor: "ann", session: "ann-e")
        if aFirst { try Self.exchange(a, into: b); try Self.exchange(b, into: a) } else { try Self.exchange(b, into: a); try Self.exchange(a, into: b) }
        for log in [a, b] {
            let t = try log.attributes(g)
            #expect(t["DBH"] == .double(5) || t["DBH"] == .int(5), "\(log.logId): the later creation's value")
            #expect(t["Creator"] == "bob", "\(log.logId): \(String(describing: t["Creator"]))")
            #expect(t["Editor"] == "ann", "\(log.logId): \(String(describing: t["Editor"]))")
            #expect(try log.digestOfProjections() == (try log.digestOfRebuild()))
        }
        #expect(try a.digestOfContent() == (try b.digestOfContent()))
    }

    // MARK: A delete's cascade follows its parent

    /// Device a deletes a tree with its inspections (the delete cascades, 10:01); device b edits the tree later
    /// (10:30). Whichever side's decision keeps the tree (b's kept update, a's revival) keeps its inspections: the
    /// cascade is part of the tree's delete, so it loses with it. Both exchange orders, every policy.
    @Test(arguments: MergePolicy.allCases, [false, true])
    func aKeptOrRevivedTreeKeepsTheInspectionsItsDeleteTookAlong(policy: MergePolicy, aFirst: Bool) throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try Self.device("a", ta, seed: 1), b = try Self.device("b", tb, seed: 2)
        let (t, inspections) = try Fixture.treeWithInspections()
        #expect(inspections.count >= 2)
        for cmd in try script([#"{"op":"delete","layer":"Trees","globalId":"\#(t)","at":"2026-06-20T10:01:00Z"}"#], actor: "ann") { try a.apply(cmd) }
        try Self.set(b, t, [("PlantedBy", "\"still here\"")], at: 30, actor: "bob", session: "bob-5")
        if aFirst { try Self.exchange(a, into: b, policy: policy); try Self.exchange(b, into: a, policy: policy) }
        else { try Self.exchange(b, into: a, policy: policy); try Self.exchange(a, into: b, policy: policy) }
        // The tree lives where the policy keeps the update: b (its own) under every policy but remote-wins; a (b's
        // later update) under last-in-wins and remote-wins.
        let lives: [(EditLog, Bool)] = [(a, policy == .lastInWins || policy == .remoteWins), (b, policy != .remoteWins)]
        for (log, live) in lives {
            let name = log === a ? "a" : "b"
            #expect(try log.show(globalId: t)["deleted"] == .bool(!live), "\(policy) \(name): the tree")
            for g in inspections {
                #expect(try log.show(globalId: g)["deleted"] == .bool(!live), "\(policy) \(name): inspection \(g) follows its tree")
            }
            #expect(try log.digestOfProjections() == (try log.digestOfRebuild()), "\(policy) \(name)")
            #expect(try log.verify().ok, "\(policy) \(name)")
        }
        if policy == .lastInWins { #expect(try a.digestOfContent() == (try b.digestOfContent())) }
        // Each log's own decisions about the inspections name the tree they follow: b skips their cascaded deletes while
        // it keeps the tree; a revives them with the tree.
        for (log, decides) in [(a, policy == .lastInWins || policy == .remoteWins), (b, policy != .remoteWins)] {
            let followed = try log.events().filter {
                $0.type == EventType.mergeDecided.rawValue && $0.payload["log"]?.stringValue == log.logId && $0.payload["cascadeOf"]?.stringValue == t
            }
            #expect(Set(followed.compactMap { $0.payload["globalId"]?.stringValue }) == (decides ? Set(inspections) : []), "\(policy) \(log.logId)")
        }
    }

    /// Device a deletes a tree with its inspections; device b adds an inspection under it. The tree is kept so the new
    /// inspection is no orphan, and the inspections the delete took along come back with it: on both sides, in both
    /// orders, whatever the policy.
    @Test(arguments: [MergePolicy.lastInWins, .localWins], [false, true])
    func aTreeKeptForAnOrphanKeepsItsOtherInspections(policy: MergePolicy, aFirst: Bool) throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try Self.device("a", ta, seed: 1), b = try Self.device("b", tb, seed: 2)
        let (t, inspections) = try Fixture.treeWithInspections()
        for cmd in try script([#"{"op":"delete","layer":"Trees","globalId":"\#(t)","at":"2026-06-20T10:01:00Z"}"#], actor: "ann") { try a.apply(cmd) }
        let insp = newGID(40)
        let lines = [
            #"{"op":"create","layer":"Inspections","globalId":"\#(insp)","session":"bob-i","parent":{"relationship":"Tree_Inspections","globalId":"\#(t)"},"attributes":{"Condition":"Poor","DBH":4,"CollectedDate":"2026-06-01T00:00:00Z"},"at":"2026-06-20T10:30:00Z"}"#,
            #"{"op":"finish","session":"bob-i","at":"2026-06-20T10:31:00Z"}"#,
        ]
        for cmd in try script(lines, actor: "bob") { try b.apply(cmd) }
        for (from, to) in aFirst ? [(a, b), (b, a)] : [(b, a), (a, b)] {
            let r = try Self.exchange(from, into: to, policy: policy)
            // The report's positions cover what the import appended, its own decisions (the orphan's) included.
            #expect(r.lastPosition == (try to.lastPosition()))
        }
        for (log, other) in [(a, b), (b, a)] {
            // This log's decisions name the other log, whose events they decide about.
            for e in try log.events() where e.type == EventType.mergeDecided.rawValue && e.payload["log"]?.stringValue == log.logId {
                #expect(e.cause == "merge:\(other.logId)", "\(e.payload.serialized())")
            }
        }
        for log in [a, b] {
            #expect(try log.show(globalId: t)["deleted"] == false, "\(policy): the tree, kept for the new inspection")
            for g in inspections + [insp] {
                #expect(try log.show(globalId: g)["deleted"] == false, "\(policy): inspection \(g)")
                #expect(try log.attributes(g)["TreeGlobalID"]?.stringValue.flatMap(GlobalID.normalize) == t)
            }
            #expect(try log.digestOfProjections() == (try log.digestOfRebuild()))
        }
        #expect(try a.digestOfContent() == (try b.digestOfContent()))
    }

    /// Device a deletes one inspection by itself (10:00) and adds another under the tree (10:05); device b deletes the
    /// tree (10:30), its cascade reaching the first inspection too. The tree is kept for a's new inspection and the
    /// inspections b's cascade took come back, but not the one a deleted itself: in both logs, in both orders.
    @Test(arguments: [false, true])
    func aRecordDeletedByItselfStaysDeletedWhenACascadeThatReachedItIsUndone(aFirst: Bool) throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try Self.device("a", ta, seed: 1), b = try Self.device("b", tb, seed: 2)
        let (t, inspections) = try Fixture.treeWithInspections()
        let own = inspections[0]
        let insp = newGID(41)
        let lines = [
            #"{"op":"delete","layer":"Inspections","globalId":"\#(own)","at":"2026-06-20T10:00:00Z"}"#,
            #"{"op":"create","layer":"Inspections","globalId":"\#(insp)","session":"ann-i","parent":{"relationship":"Tree_Inspections","globalId":"\#(t)"},"attributes":{"Condition":"Poor","DBH":4,"CollectedDate":"2026-06-01T00:00:00Z"},"at":"2026-06-20T10:05:00Z"}"#,
            #"{"op":"finish","session":"ann-i","at":"2026-06-20T10:05:30Z"}"#,
        ]
        for cmd in try script(lines, actor: "ann") { try a.apply(cmd) }
        for cmd in try script([#"{"op":"delete","layer":"Trees","globalId":"\#(t)","at":"2026-06-20T10:30:00Z"}"#], actor: "bob") { try b.apply(cmd) }
        for _ in 0..<2 {
            if aFirst { try Self.exchange(a, into: b); try Self.exchange(b, into: a) } else { try Self.exchange(b, into: a); try Self.exchange(a, into: b) }
        }
        for log in [a, b] {
            #expect(try log.show(globalId: t)["deleted"] == false, "\(log.logId): the tree, kept for the new inspection")
            #expect(try log.show(globalId: own)["deleted"] == true, "\(log.logId): the inspection a deleted by itself")
            for g in inspections.dropFirst() + [insp] { #expect(try log.show(globalId: g)["deleted"] == false, "\(log.logId): \(g)") }
            #expect(try log.digestOfProjections() == (try log.digestOfRebuild()))
        }
        #expect(try a.digestOfContent() == (try b.digestOfContent()))
    }

    /// Re-points `inspection` to `tree` in one session.
    static func relate(_ log: EditLog, _ inspection: String, to tree: String, at minute: Int, actor: String) throws {
        let at = "2026-06-20T10:\(String(format: "%02d", minute)):00Z"
        let lines = [
            #"{"op":"edit","layer":"Inspections","globalId":"\#(inspection)","session":"\#(actor)-r\#(minute)","at":"\#(at)"}"#,
            #"{"op":"relate","relationship":"Tree_Inspections","globalId":"\#(tree)","at":"\#(at)"}"#,
            #"{"op":"finish","at":"\#(at)"}"#,
        ]
        for cmd in try script(lines, actor: actor) { try log.apply(cmd) }
    }

    static func delete(_ log: EditLog, _ layer: String, _ g: String, at minute: Int, actor: String) throws {
        for cmd in try script([#"{"op":"delete","layer":"\#(layer)","globalId":"\#(g)","at":"2026-06-20T10:\#(String(format: "%02d", minute)):00Z"}"#], actor: actor) {
            try log.apply(cmd)
        }
    }

    /// Every pair of logs exchanges everything, twice.
    static func exchangeAll(_ logs: [EditLog], order: [(Int, Int)]) throws {
        for _ in 0..<2 { for (f, t) in order { try exchange(logs[f], into: logs[t], viaBundle: false) } }
    }

    /// Three devices; c points inspection i of tree w2 at tree w (10:01), b deletes w (10:02), and c imports b's events:
    /// w is kept for i, with the inspections b's cascade took (`kept`).
    static func treeKeptForAnOrphan(_ paths: [TempPath]) throws -> (logs: [EditLog], w: String, kept: [String], w2: String, i: String) {
        let logs = try ["a", "b", "c"].enumerated().map { try device($1, paths[$0], seed: UInt64($0 + 1)) }
        let trees = try Fixture.treesWithInspections()
        let (w, kept) = trees[0], (w2, others) = trees[1]
        let i = others[0]
        try relate(logs[2], i, to: w, at: 1, actor: "carol")
        try delete(logs[1], "Trees", w, at: 2, actor: "bob")
        try exchange(logs[1], into: logs[2], viaBundle: false)
        #expect(try logs[2].show(globalId: w)["deleted"] == false, "w, kept for i")
        for g in kept { #expect(try logs[2].show(globalId: g)["deleted"] == false, "w's inspection \(g), back with it") }
        return (logs, w, kept, w2, i)
    }

    /// The orphan gap the three-device fuzz found. Device c re-points inspection i (of tree w2) to tree w (10:01);
    /// device b deletes w (10:02) and c imports it: w is kept for i, and the inspections b's cascade took come back
    /// with it. Then b deletes w2 (10:03), whose cascade takes i (on b, i still points at w2). Once all logs hold every
    /// event, i is deleted (b's cascade is later than c's re-point), so nothing keeps w: c deletes it again with the
    /// inspections it kept, and holds what a and b hold (they never needed w kept), whatever order the rest comes in.
    @Test(arguments: [[(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)], [(2, 1), (1, 0), (2, 0), (0, 2), (1, 2), (0, 1)]])
    func aParentKeptForAnOrphanIsDeletedAgainWhenTheOrphanGoes(order: [(Int, Int)]) throws {
        let paths = [TempPath("a"), TempPath("b"), TempPath("c")]
        let (logs, w, kept, w2, i) = try Self.treeKeptForAnOrphan(paths)
        let (a, b, c) = (logs[0], logs[1], logs[2])
        try Self.delete(b, "Trees", w2, at: 3, actor: "bob")
        try Self.exchangeAll(logs, order: order)
        for log in logs {
            #expect(try log.show(globalId: w)["deleted"] == true, "\(log.logId): w")
            #expect(try log.show(globalId: i)["deleted"] == true, "\(log.logId): i")
            for g in kept { #expect(try log.show(globalId: g)["deleted"] == true, "\(log.logId): \(g)") }
            #expect(try log.digestOfProjections() == (try log.digestOfRebuild()), "\(log.logId): rebuild differs")
        }
        let digests = try logs.map { try $0.digestOfContent() }
        let diff = try Self.differences(logs)
        #expect(Set(digests).count == 1, "content digests differ: \(diff)")
        // c's decision, with its own history line; a and b never kept w, so never deleted it again.
        let again = try c.events().filter { $0.type == EventType.mergeDecided.rawValue && $0.payload["deleteAgain"] == true }
        #expect(Set(again.compactMap { $0.payload["globalId"]?.stringValue }) == Set([w] + kept), "\(again.map { $0.payload.serialized() })")
        #expect(again.filter { $0.payload["cascadeOf"]?.stringValue == w }.count == kept.count)
        for log in [a, b] { #expect(try log.events().allSatisfy { $0.payload["deleteAgain"] == nil || $0.payload["log"]?.stringValue != log.logId }) }
        // The decisions validate against the schemas (deleteAgain, detachAttachments, cascadeOf).
        let v = SchemaFilesTests.validator()
        for e in try c.events() where e.type == EventType.mergeDecided.rawValue {
            let errors = try v.validate(try JSONParser.parse(e.json.serialized()), against: SchemaFilesTests.recordedEvent)
            #expect(errors.isEmpty, "position \(e.position): \(errors)")
        }
        let history = try c.history(globalId: w).entries
        #expect(history.contains { $0.field == "@deleted" && $0.new == true && $0.position == again.first?.position }, "\(history.map { "\($0.position) \($0.field) \($0.new.serialized())" })")
    }

    /// Device a re-points inspection i (of tree w2) to tree w (10:01); device b, which has not seen it, deletes w2 (10:02),
    /// its cascade taking i; a edits w2 later (10:03). w2 lives (a's edit is later), so its cascade does not apply: i
    /// lives, under w, in both logs and both orders, although on b it pointed elsewhere by the time w2 came back.
    @Test(arguments: [false, true])
    func aRecordRepointedSinceComesBackWithTheParentWhoseCascadeTookIt(aFirst: Bool) throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try Self.device("a", ta, seed: 1), b = try Self.device("b", tb, seed: 2)
        let trees = try Fixture.treesWithInspections()
        let (w, _) = trees[0], (w2, others) = trees[1]
        let i = others[0]
        try Self.relate(a, i, to: w, at: 1, actor: "ann")
        try Self.delete(b, "Trees", w2, at: 2, actor: "bob")
        try Self.set(a, w2, [("SiteWidth", "7")], at: 3, actor: "ann", session: "ann-w2")
        for _ in 0..<2 {
            if aFirst { try Self.exchange(a, into: b); try Self.exchange(b, into: a) } else { try Self.exchange(b, into: a); try Self.exchange(a, into: b) }
        }
        for log in [a, b] {
            #expect(try log.show(globalId: w2)["deleted"] == false, "\(log.logId): w2")
            #expect(try log.show(globalId: i)["deleted"] == false, "\(log.logId): i")
            #expect(try log.attributes(i)["TreeGlobalID"]?.stringValue.flatMap(GlobalID.normalize) == w, "\(log.logId): i under w")
            for g in others.dropFirst() { #expect(try log.show(globalId: g)["deleted"] == false, "\(log.logId): \(g)") }
            #expect(try log.digestOfProjections() == (try log.digestOfRebuild()), "\(log.logId): rebuild differs")
        }
        let diff = try Self.differences([a, b])
        #expect(try a.digestOfContent() == (try b.digestOfContent()), "\(diff)")
    }

    /// Device c points inspection i of tree w2 at tree w (10:01); b deletes w (10:02) and c imports it: w is kept for i.
    /// Then c points i back at w2 (10:03): nothing keeps w, so c deletes it again (with the inspections kept with it) as
    /// it records the change, and every log ends with w deleted and i under w2.
    @Test func aParentKeptForAnOrphanIsDeletedAgainWhenTheOrphanIsPointedElsewhereHere() throws {
        let paths = [TempPath("a"), TempPath("b"), TempPath("c")]
        let (logs, w, kept, w2, i) = try Self.treeKeptForAnOrphan(paths)
        let c = logs[2]
        let before = try c.lastPosition()
        try Self.relate(c, i, to: w2, at: 3, actor: "carol")
        let again = try c.events(after: before).filter { $0.type == EventType.mergeDecided.rawValue }
        #expect(Set(again.compactMap { $0.payload["globalId"]?.stringValue }) == Set([w] + kept) && again.allSatisfy { $0.payload["deleteAgain"] == true },
                "\(again.map { $0.payload.serialized() })")
        try Self.exchangeAll(logs, order: [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)])
        for log in logs {
            #expect(try log.show(globalId: w)["deleted"] == true, "\(log.logId): w")
            #expect(try log.attributes(i)["TreeGlobalID"]?.stringValue.flatMap(GlobalID.normalize) == w2, "\(log.logId): i under w2")
            #expect(try log.show(globalId: i)["deleted"] == false, "\(log.logId): i")
            #expect(try log.digestOfProjections() == (try log.digestOfRebuild()), "\(log.logId): rebuild differs")
        }
        let diff = try Self.differences(logs)
        #expect(Set(try logs.map { try $0.digestOfContent() }).count == 1, "\(diff)")
    }

    /// `diff` (and serve's extractChanges, the report's map) follows this log's decisions as the projection does: over
    /// c's import of b's delete of w, w and its inspections are not deleted (kept for i, and revived with w); over the
    /// import that deletes them again, they are; over both, each change's kind agrees with the projection.
    @Test func diffFollowsTheDecisionsOfThisLog() throws {
        let paths = [TempPath("a"), TempPath("b"), TempPath("c")]
        let (logs, w, kept, w2, _) = try Self.treeKeptForAnOrphan(paths)
        let (b, c) = (logs[1], logs[2])
        let start = try #require(try c.events().first { $0.type == EventType.featureDeleted.rawValue && $0.payload["globalId"]?.stringValue == w }).position - 1
        let mid = try c.lastPosition()
        let first = try c.diff(from: .position(start), to: .position(mid))
        for g in [w] + kept { #expect(first.changes.first { $0.globalId == g }?.kind != .deleted, "\(g) is live here") }
        try Self.delete(b, "Trees", w2, at: 3, actor: "bob")
        try Self.exchange(b, into: c, viaBundle: false)
        let second = try c.diff(from: .position(mid), to: .position(try c.lastPosition()))
        for g in [w] + kept { #expect(second.changes.first { $0.globalId == g }?.kind == .deleted, "\(g), deleted again") }
        let whole = try c.diff(from: .position(start), to: .position(try c.lastPosition()))
        #expect(!whole.changes.isEmpty)
        for change in whole.changes {
            let shown = try c.show(globalId: change.globalId)
            #expect((change.kind == .deleted) == (shown["deleted"] == true), "\(change.globalId): \(change.kind)")
            // Editor tracking as this log's projection holds it, merge decisions (`keepTracking`) included.
            let layer = try #require(c.schema.layer(id: change.layer))
            for f in change.fields where change.kind != .deleted && layer.isEditorTrackingField(f.field) {
                #expect(f.new == (shown["attributes"]?[f.field] ?? .null), "\(change.globalId) \(f.field)")
            }
            // blame reads the same rule (`EditorTracking`).
            for b in try c.blame(globalId: change.globalId).fields where layer.isEditorTrackingField(b.field) {
                #expect(b.value == (shown["attributes"]?[b.field] ?? .null), "blame \(change.globalId) \(b.field)")
            }
        }
    }

    /// c keeps tree w for inspection i (`treeKeptForAnOrphan`). Device a had pointed i at a third tree w3 earlier (10:00):
    /// when c imports it, i's key is a field conflict that c's later re-point wins. An investigator on c then takes a's
    /// value: i leaves w, nothing keeps w, and c deletes it again in the resolution's transaction; every log ends so.
    @Test func aResolutionThatPointsTheOrphanElsewhereDeletesItsKeptParentAgain() throws {
        let paths = [TempPath("a"), TempPath("b"), TempPath("c")]
        let (logs, w, kept, _, i) = try Self.treeKeptForAnOrphan(paths)
        let (a, c) = (logs[0], logs[2])
        let w3 = try Fixture.treesWithInspections()[2].tree
        try Self.relate(a, i, to: w3, at: 0, actor: "ann")
        try Self.exchange(a, into: c, viaBundle: false)
        let conflict = try #require(try c.conflicts().map(\.conflict).first { $0.globalId == i && $0.field?.lowercased() == "treeglobalid" })
        #expect(try c.show(globalId: w)["deleted"] == false)
        let before = try c.lastPosition()
        try c.resolveConflict(id: conflict.id, take: .remote, actor: "ivy", device: "desk", at: "2026-06-20T10:05:00Z")
        let again = try c.events(after: before).filter { $0.type == EventType.mergeDecided.rawValue }
        #expect(Set(again.compactMap { $0.payload["globalId"]?.stringValue }) == Set([w] + kept) && again.allSatisfy { $0.payload["deleteAgain"] == true },
                "\(again.map { $0.payload.serialized() })")
        try Self.exchangeAll(logs, order: [(2, 0), (2, 1), (0, 1), (1, 0), (0, 2), (1, 2)])
        for log in logs {
            #expect(try log.show(globalId: w)["deleted"] == true, "\(log.logId): w")
            #expect(try log.attributes(i)["TreeGlobalID"]?.stringValue.flatMap(GlobalID.normalize) == w3, "\(log.logId): i under w3")
            #expect(try log.digestOfProjections() == (try log.digestOfRebuild()), "\(log.logId): rebuild differs")
        }
        let diff = try Self.differences(logs)
        #expect(Set(try logs.map { try $0.digestOfContent() }).count == 1, "\(diff)")
    }

    /// Device b points inspection r of tree p at tree q (10:01); device a, which has not seen it, deletes p (10:02), its
    /// cascade taking r; b edits p (10:03), so p lives and r with it (under q). Then a deletes p again (10:04): r lives only
    /// because p did (its earlier cascade undone) and this delete's cascade does not reach it (it points at q), so a
    /// deletes it again as it records the delete, and b when it imports that delete. Both end with p and r deleted.
    @Test(arguments: [false, true])
    func aRecordLivingOnlyByItsOldParentGoesWhenTheParentIsDeletedAgain(aFirst: Bool) throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try Self.device("a", ta, seed: 1), b = try Self.device("b", tb, seed: 2)
        let trees = try Fixture.treesWithInspections()
        let (p, inspections) = trees[0], q = trees[1].tree
        let r = inspections[0]
        try Self.relate(b, r, to: q, at: 1, actor: "bob")
        try Self.delete(a, "Trees", p, at: 2, actor: "ann")
        try Self.set(b, p, [("SiteWidth", "7")], at: 3, actor: "bob", session: "bob-p")
        if aFirst { try Self.exchange(a, into: b); try Self.exchange(b, into: a) } else { try Self.exchange(b, into: a); try Self.exchange(a, into: b) }
        for log in [a, b] {
            #expect(try log.show(globalId: p)["deleted"] == false, "\(log.logId): p, edited after its delete")
            #expect(try log.show(globalId: r)["deleted"] == false, "\(log.logId): r, its cascade undone")
            #expect(try log.attributes(r)["TreeGlobalID"]?.stringValue.flatMap(GlobalID.normalize) == q)
        }
        // b skipped a's delete of p (b's edit is later): a diff over that delete applies the decision, whether the window
        // holds the decision too or starts between it and the delete.
        let skip = try #require(try b.events().first {
            $0.type == EventType.mergeDecided.rawValue && $0.payload["log"]?.stringValue == b.logId && $0.payload["globalId"]?.stringValue == p
                && $0.payload["skipDelete"] == true
        })
        for from in [skip.position - 1, skip.position] {
            let window = try b.diff(from: .position(from), to: .position(skip.position + 1))
            #expect(window.events >= 1 && !window.changes.contains { $0.globalId == p && $0.kind == .deleted }, "from \(from): \(window.changes.map(\.globalId))")
        }
        let before = try a.lastPosition()
        try Self.delete(a, "Trees", p, at: 4, actor: "ann")
        let again = try a.events(after: before).filter { $0.type == EventType.mergeDecided.rawValue }
        #expect(again.map { $0.payload["globalId"]?.stringValue } == [r] && again.allSatisfy { $0.payload["deleteAgain"] == true && $0.payload["cascadeOf"]?.stringValue == p },
                "\(again.map { $0.payload.serialized() })")
        try Self.exchange(a, into: b)
        try Self.exchange(b, into: a)
        for log in [a, b] {
            #expect(try log.show(globalId: p)["deleted"] == true, "\(log.logId): p")
            for g in inspections { #expect(try log.show(globalId: g)["deleted"] == true, "\(log.logId): \(g)") }
            #expect(try log.digestOfProjections() == (try log.digestOfRebuild()), "\(log.logId): rebuild differs")
        }
        let diff = try Self.differences([a, b])
        #expect(try a.digestOfContent() == (try b.digestOfContent()), "\(diff)")
        // A log that held nothing, given all of it at once, meets the same deletes (its import deletes r again too).
        let tc = TempPath("c")
        let c = try Self.device("c", tc, seed: 3, baseline: false)
        try Self.exchange(a, into: c)
        #expect(try c.show(globalId: r)["deleted"] == true)
        let diffC = try Self.differences([a, c])
        #expect(try c.digestOfContent() == (try a.digestOfContent()), "\(diffC)")
    }

    // MARK: Relationships never break (geodiff issue 39)

    @Test(arguments: [false, true])
    func treesWithInspectionsAndPhotosAddedOnBothSidesStayLinked(aFirst: Bool) throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try Self.device("a", ta, seed: 1), b = try Self.device("b", tb, seed: 2)
        func addTree(_ log: EditLog, _ n: Int, actor: String) throws -> (tree: String, inspection: String, photo: String) {
            let tree = newGID(n), insp = newGID(n + 1), photo = newGID(n + 2)
            let lines = [
                #"{"op":"create","layer":"Trees","globalId":"\#(tree)","session":"\#(actor)-t","geometry":{"x":-122.63,"y":45.52},"attributes":{"DBH":3}}"#,
                #"{"op":"attach","attachmentId":"\#(photo)","name":"tree-\#(actor).jpg","contentType":"image/jpeg","dataBase64":"\#(Data(actor.utf8).base64EncodedString())","session":"\#(actor)-t"}"#,
                #"{"op":"finish","session":"\#(actor)-t"}"#,
                #"{"op":"create","layer":"Inspections","globalId":"\#(insp)","session":"\#(actor)-i","parent":{"relationship":"Tree_Inspections","globalId":"\#(tree)"},"attributes":{"Condition":"Poor","DBH":4,"CollectedDate":"2026-06-01T00:00:00Z"}}"#,
                #"{"op":"finish","session":"\#(actor)-i"}"#,
            ]
            for cmd in try script(lines, actor: actor) { try log.apply(cmd) }
            return (tree, insp, photo)
        }
        // Both devices number their new records the same way: only GlobalIDs tell them apart.
        let fromA = try addTree(a, 10, actor: "ann"), fromB = try addTree(b, 20, actor: "bob")
        if aFirst { try Self.exchange(a, into: b); try Self.exchange(b, into: a) } else { try Self.exchange(b, into: a); try Self.exchange(a, into: b) }
        for log in [a, b] {
            for side in [fromA, fromB] {
                #expect(try log.attributes(side.inspection)["TreeGlobalID"]?.stringValue == side.tree)
                let atts = try log.show(globalId: side.tree)["attachments"]?.arrayValue ?? []
                #expect(atts.compactMap { $0["attachmentId"]?.stringValue ?? $0["globalId"]?.stringValue } == [side.photo], "\(atts)")
                #expect(try log.attributes(side.tree)["Condition"] == "Poor")  // the rollup, derived again after the merge
            }
        }
        #expect(try a.digestOfContent() == (try b.digestOfContent()))
    }

    // MARK: Identity

    @Test func aWholeLogImportedIntoAnEmptyLogIsEqualAndASecondImportAddsNothing() throws {
        let ta = TempPath("a"), tb = TempPath("b")
        let a = try Self.device("a", ta, seed: 1)
        let bytes = try InputFiles.bytes(Paths.trees + "/scripts/01-new-plantings.ndjson")
        _ = try a.record(try ScriptParser.parse(bytes, defaultActor: "t", defaultDevice: "d"), name: "01", sha256: InputFiles.sha256(bytes))
        let b = try Self.device("b", tb, seed: 2, baseline: false)
        let count = Int(try a.eventCount())
        let first = try Self.exchange(a, into: b)
        #expect(first.imported == count && first.conflicts.isEmpty)
        #expect(try a.digestOfContent() == (try b.digestOfContent()))
        let second = try Self.exchange(a, into: b)
        #expect(second.imported == 0 && second.alreadyPresent == count && second.decisions == 0 && second.derived == 0)
        #expect(try b.verify().ok)
    }

    /// A bundle that carries a conflict about a feature it also creates (made on A, edited on B and on C, merged on B)
    /// imports into an empty log as B holds it: the import's shortcuts for features it creates itself (no read of a
    /// feature whose every event came from one log) must leave such a feature to the merge. Debug builds check
    /// every shortcut against the whole merge; this is the case where they would differ.
    @Test func aBundleCarryingAConflictAboutAFeatureItCreatesImportsIntoAnEmptyLogAsItsExporterHoldsIt() throws {
        let ta = TempPath("a"), tb = TempPath("b"), tc = TempPath("c"), td = TempPath("d")
        let clock = StepClock(start: 1_780_000_000_000, step: 7)
        let a = try Self.device("a", ta, seed: 1, clock: clock), b = try Self.device("b", tb, seed: 2, clock: clock)
        let c = try Self.device("c", tc, seed: 3, clock: clock)
        let tree = newGID(40)
        let create = [#"{"op":"create","layer":"Trees","globalId":"\#(tree)","session":"ann-t","geometry":{"x":-122.63,"y":45.52},"attributes":{"DBH":3}}"#,
                      #"{"op":"finish","session":"ann-t"}"#]
        for cmd in try script(create, actor: "ann") { try a.apply(cmd) }
        try Self.exchange(a, into: b)
        try Self.exchange(a, into: c)
        try Self.set(b, tree, [("SiteWidth", "10"), ("Wires", "1")], at: 1, actor: "bob", session: "bob-1")
        try Self.set(c, tree, [("SiteWidth", "20")], at: 5, actor: "cid", session: "cid-1")
        try Self.set(b, tree, [("Wires", "2")], at: 3, actor: "bob", session: "bob-2")
        let intoB = try Self.exchange(c, into: b)
        try #require(intoB.conflicts.map(\.field) == ["SiteWidth"], "B met C's edit as a conflict")

        let d = try Self.device("d", td, seed: 4, baseline: false, clock: clock)
        let intoD = try Self.exchange(b, into: d)
        #expect(intoD.conflicts.map(\.field) == ["SiteWidth"], "D meets the conflict B met")
        let t = try d.attributes(tree)
        #expect(t["SiteWidth"] == .double(20) || t["SiteWidth"] == .int(20), "the later write wins: \(String(describing: t["SiteWidth"]))")
        #expect(t["Wires"] == .double(2) || t["Wires"] == .int(2))
        #expect(try d.digestOfContent() == (try b.digestOfContent()))
        #expect(Set(try d.conflicts().map(\.conflict.key)) == Set(try b.conflicts().map(\.conflict.key)))
        #expect(try d.digestOfProjections() == (try d.digestOfRebuild()))
        #expect(try d.verify().ok)
    }

    // MARK: Convergence under last-in-wins

    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6])
    func threeDevicesConvergeInAnyExchangeOrder(seed: UInt64) throws {
        let paths = [TempPath("a"), TempPath("b"), TempPath("c")]
        var logs: [EditLog] = []
        let clock = StepClock(start: 1_780_000_000_000, step: 7)
        for (i, name) in ["a", "b", "c"].enumerated() {
            let log = try Self.device(name, paths[i], seed: seed * 10 + UInt64(i), clock: clock)
            var editor = RebuildPropertyTests.RandomEditor(rng: SplitMix64(seed: seed * 100 + UInt64(i)), trees: Array(try Fixture.globalIds("Trees").prefix(12)),
                                                           species: try Fixture.globalIds("Species"))
            editor.n = 10_000 * (i + 1)
            _ = try RebuildPropertyTests.drive(log, editor: &editor, steps: 90, sessionPrefix: "\(name)-")
            logs.append(log)
        }
        let bundles = seed == 1  // one seed through real bundle files, the others through the same import directly
        // Random exchanges, then full rounds (every pair, in a random order) until one adds nothing anywhere.
        var rng = SplitMix64(seed: seed)
        for _ in 0..<8 {
            let from = Int(rng.next() % 3), to = (from + 1 + Int(rng.next() % 2)) % 3
            try Self.exchange(logs[from], into: logs[to], viaBundle: bundles)
        }
        var pairs = [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
        var rounds = 0
        while true {
            rounds += 1
            for i in pairs.indices.reversed() { pairs.swapAt(i, Int(rng.next() % UInt64(i + 1))) }
            var added = 0
            for (f, t) in pairs { added += try Self.exchange(logs[f], into: logs[t], viaBundle: bundles).imported }
            if added == 0 { break }
            try #require(rounds < 10, "seed \(seed): exchanges keep adding events after \(rounds) rounds")
        }
        let digests = try logs.map { try $0.digestOfContent() }
        let diff = Set(digests).count == 1 ? "" : try Self.differences(logs)
        #expect(Set(digests).count == 1, "seed \(seed): content digests differ: \(diff)")
        let keys = try logs.map { Set(try $0.conflicts().map(\.conflict.key)) }
        #expect(keys[0] == keys[1] && keys[1] == keys[2], "seed \(seed): the logs list different conflicts")
        for log in logs { #expect(try log.digestOfProjections() == (try log.digestOfRebuild()), "seed \(seed): rebuild differs from incremental") }
    }

    /// Where two logs' data differ (for a failing convergence).
    static func differences(_ logs: [EditLog]) throws -> String {
        var out: [String] = []
        for layer in ["Trees", "Inspections", "Species"] {
            let sets = try logs.map { log -> [String: JSONValue] in
                var m: [String: JSONValue] = [:]
                for f in try log.query(layer: layer)["features"]?.arrayValue ?? [] {
                    var a = f["attributes"]?.objectValue ?? [:]
                    for k in ["OBJECTID", "CreationDate", "Creator", "EditDate", "Editor"] { a[k] = nil }
                    if let g = a["GlobalID"]?.stringValue { m[g] = .object(a) }
                }
                return m
            }
            for g in Set(sets.flatMap(\.keys)).sorted() where sets.contains(where: { $0[g] != sets[0][g] }) {
                out.append("\(layer) \(g): " + sets.map { $0[g].map { $0.serialized() } ?? "absent" }.joined(separator: " | "))
            }
        }
        return out.prefix(6).joined(separator: "\n")
    }
}
