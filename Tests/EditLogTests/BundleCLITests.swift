import EditLog
import Foundation
import Testing

/// The bundle and keys commands through the real binary: keys, a signed export recorded for a peer, the next
/// export continuing after it, verify with --trust, inspect --json.
@Suite struct BundleCLITests {
    @Test func keysSignedExportsContinuationAndInspect() throws {
        let shared = SharedBundle.shared
        let d = TempDir()
        try shared.copyLog(to: d.file("log.sqlite"))
        let db = d.file("log.sqlite")
        var r = try CLI.run(["keys", "generate", "--out", d.file("hq"), "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try JSONParser.parse(r.stdout)["publicKey"]?.stringValue == d.file("hq.pub"))
        #expect(try CLI.run(["keys", "generate", "--out", d.file("hq")]).status == 67)

        r = try CLI.run(["bundle", "export", db, "--out", d.file("1.bundle"), "--until", "400", "--peer", "hq", "--sign", d.file("hq.key")])
        #expect(r.status == 0 && r.stdout.contains("400 events (positions 1...400)") && r.stdout.contains("signed, recorded as sent to hq"), "\(r.stdout) \(r.stderr)")
        r = try CLI.run(["bundle", "export", db, "--out", d.file("2.bundle"), "--since", "last-export:hq", "--peer", "hq", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let m = try JSONParser.parse(r.stdout)["manifest"]
        #expect(m?["fromPosition"] == 400 && m?["toPosition"] == .int(shared.head) && m?["since"] == "last-export:hq")
        #expect(try JSONParser.parse(r.stdout)["deflater"]?.stringValue == BundleDeflate.auto.deflater)
        r = try CLI.run(["bundle", "export", db, "--out", d.file("z.bundle"), "--since", "400", "--deflate", "zlib", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect((try JSONParser.parse(r.stdout)["deflater"]?.stringValue ?? "").hasPrefix("zlib level 6"), "\(r.stdout)")
        r = try CLI.run(["bundle", "export", db, "--out", d.file("x.bundle"), "--deflate", "brotli"])
        #expect(r.status == 64 && r.stderr.contains("--deflate") && !FileManager.default.fileExists(atPath: d.file("x.bundle")), "\(r.stderr)")
        r = try CLI.run(["bundle", "export", db, "--out", d.file("3.bundle"), "--since", "last-export:hq"])
        #expect(r.status == 0 && r.stdout.contains("an empty bundle"), "\(r.stdout) \(r.stderr)")

        r = try CLI.run(["bundle", "verify", d.file("1.bundle"), "--trust", d.file("hq.pub")])
        #expect(r.status == 0 && r.stdout.contains("a trusted key"), "\(r.stdout) \(r.stderr)")
        r = try CLI.run(["bundle", "verify", d.file("1.bundle"), "--trust", d.file("hq.key"), "--json"])
        #expect(r.status == 66, "a private key is not the signer's public key: \(r.stderr)")

        r = try CLI.run(["bundle", "inspect", d.file("2.bundle"), "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let i = try JSONParser.parse(r.stdout)
        #expect(i["events"] == .int(shared.head - 400))
        let byType = i["byType"]?.objectValue?.values.compactMap(\.intValue).reduce(0, +)
        #expect(byType == shared.head - 400)
        #expect(i["byLayer"]?["Trees"]?.intValue ?? 0 > 0)
        r = try CLI.run(["bundle", "inspect", d.file("1.bundle")])
        #expect(r.status == 0 && r.stdout.contains("signed by") && r.stdout.contains("FeatureBaselined"), "\(r.stdout)")
    }
}
