import EditLog
import EditLogServer
import Testing

/// The `where` parser (tokenizer + recursive descent) and its compilation to SQL with bound parameters.
@Suite("Where clause")
struct WhereParserTests {
    static let layer: LayerSchema = {
        let log = try! Fixture.treesLog(at: TempPath("where").path, baseline: false)
        defer { log.close() }
        return try! log.layer("Trees")
    }()

    func compile(_ text: String) throws -> CompiledFilter {
        let p = try #require(try WhereParser.parse(text))
        return try FeatureFilterCompiler.compile(p, layer: Self.layer)
    }

    @Test func parsesTheSubset() throws {
        #expect(try WhereParser.parse("") == nil)
        #expect(try WhereParser.parse("   ") == nil)
        #expect(try WhereParser.parse("1=1") == .compare(.value(1), .equal, .value(1)))
        #expect(try WhereParser.parse("a <> 'x' AND b != -2.5") == .and(.compare(.field("a"), .notEqual, .value("x")), .compare(.field("b"), .notEqual, .value(.double(-2.5)))))
        #expect(try WhereParser.parse("a = 1 OR b = 2 AND c = 3") == .or(.compare(.field("a"), .equal, .value(1)),
                                                                        .and(.compare(.field("b"), .equal, .value(2)), .compare(.field("c"), .equal, .value(3)))))
        #expect(try WhereParser.parse("(a = 1 OR b = 2) AND NOT c = 3") == .and(.or(.compare(.field("a"), .equal, .value(1)), .compare(.field("b"), .equal, .value(2))),
                                                                               .not(.compare(.field("c"), .equal, .value(3)))))
        #expect(try WhereParser.parse("a between 1 and 2") == .between(.field("a"), low: .value(1), high: .value(2), negated: false))
        #expect(try WhereParser.parse("a NOT IN (1, 'b', NULL)") == .inList(.field("a"), [.value(1), .value("b"), .value(.null)], negated: true))
        #expect(try WhereParser.parse("a LIKE 'x!_%' ESCAPE '!'") == .like(.field("a"), pattern: .value("x!_%"), escape: "!", negated: false))
        #expect(try WhereParser.parse("a IS NOT NULL") == .isNull(.field("a"), negated: true))
        #expect(try WhereParser.parse("a is null") == .isNull(.field("a"), negated: false))
        #expect(try WhereParser.parse("a = 'it''s'") == .compare(.field("a"), .equal, .value("it's")))
        #expect(try WhereParser.parse("lower(a) = 'x'") == .compare(.lower(.field("a")), .equal, .value("x")))
        #expect(try WhereParser.parse("d >= DATE '2020-01-02'") == .compare(.field("d"), .greaterOrEqual, .value(1_577_923_200_000)))
        #expect(try WhereParser.parse("d < TIMESTAMP '2020-01-02 00:00:01'") == .compare(.field("d"), .less, .value(1_577_923_201_000)))
        #expect(try WhereParser.parse("a <= 1e3") == .compare(.field("a"), .lessOrEqual, .value(.double(1000))))
    }

    @Test func compilesToQuotedSchemaColumnsAndBoundValues() throws {
        let c = try compile("condition = 'Fair' AND dbh > 3 OR objectid IN (1,2) OR globalid = '{b5cbe3f5-6a66-4184-bde1-bf5daf4847f0}'")
        #expect(c.sql == #"(((("Condition" = ?) AND ("DBH" > ?)) OR (_oid IN (?, ?))) OR (_globalid = ?))"#)
        #expect(c.sql.contains(#""Condition" = ?"#) && c.sql.contains(#""DBH" > ?"#) && c.sql.contains("_oid IN (?, ?)") && c.sql.contains("_globalid = ?"))
        #expect(!c.sql.contains("Fair") && !c.sql.lowercased().contains("condition\" = 'f"))
        #expect(c.arguments == ["Fair", 3, 1, 2, "{B5CBE3F5-6A66-4184-BDE1-BF5DAF4847F0}"])
        let like = try compile("Address NOT LIKE '%''; DROP TABLE events; --%'")
        #expect(like.sql == #"("Address" NOT LIKE ?)"#)
        #expect(like.arguments == ["%'; DROP TABLE events; --%"])
    }

    /// Every attempt is refused by the tokenizer, the parser or the schema check; none compiles.
    @Test(arguments: [
        "1=1; DROP TABLE x", "1=1; DROP TABLE p_layer_0", "OBJECTID=1 OR 1=1--", "OBJECTID=1 OR 1=1 -- comment", "OBJECTID=1 /* */",
        "\"OBJECTID\"=1", "OBJECT\"ID=1", "[OBJECTID]=1", "`OBJECTID`=1", "OBJECTID=1;", "; SELECT 1", "Condition = 'a'; DELETE FROM events",
        "Condition = 'unterminated", "OBJECTID = 1 UNION SELECT * FROM events", "(SELECT 1) = 1", "OBJECTID", "OBJECTID = ", "= 1", "OBJECTID = 1)",
        "(OBJECTID = 1", "NOT", "OBJECTID IN ()", "OBJECTID BETWEEN 1", "a LIKE 'x' ESCAPE 'xy'", "1 = 1 AND", "OBJECTID = 1 OR x",
        "_deleted = 0", "_oid = 1", "sqlite_master = 1", "Shape = 1", "Condition = 'a' COLLATE NOCASE", "Condition || 'x' = 'a'",
        "OBJECTID = 0x10", "OBJECTID = 1e", "1abc = 1", "OBJECTID = ?", "OBJECTID = :a", "OBJECTID = $a", "Condition = @a",
        String(repeating: "(", count: 200) + "1=1" + String(repeating: ")", count: 200),
        String(repeating: "NOT ", count: 200) + "1=1",
    ])
    func refusesInjectionAndNonsense(_ text: String) {
        #expect(throws: (any Error).self, "\(text)") { _ = try compile(text) }
    }

    @Test func errorsSayWhere() {
        do { _ = try WhereParser.parse("Condition = 'x' ; DROP"); Issue.record("parsed") } catch {
            #expect(error.offset == 16)
            #expect(error.description.contains("character 17"))
        }
    }
}
