import EditLog
import Foundation
import Testing

/// The bundle and keys commands through the real binary: keys, a signed export recorded for a peer, the next
/// export continuing after it, verify with --trust, inspect --json.
@Suite struct BundleCLITests {}

extension BundleCLITests {
    @Suite(.tags(.process)) struct ProcessTests {
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
            #expect(r.status == 65 && r.stderr.contains("hq.key: this is a private key file, not a public key"), "a private key is no trusted key: \(r.stderr)")
            r = try CLI.run(["bundle", "import", db, d.file("1.bundle"), "--trust", d.file("hq.key")])
            #expect(r.status == 65 && r.stderr.contains("hq.key: this is a private key file"), "\(r.stderr)")

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

        /// A public key file is never a signing key: `--sign ops.pub` is refused, names the file and what it is, and
        /// writes nothing (the public key's bytes used as a private seed would let anyone holding ops.pub sign as it).
        /// Without $USER or $LOGNAME (cron, systemd, containers), the bundle still names who made it, and an import's
        /// actor is that account rather than a placeholder.
        @Test func theCreatorIsTheAccountWhenNoVariableNamesIt() throws {
            let d = TempDir()
            try SharedBundle.shared.copyLog(to: d.file("log.sqlite"))
            let account = try CLI.sh("id -un").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            try #require(!account.isEmpty)
            let r = try CLI.sh("env -u USER -u LOGNAME '\(CLI.binary)' bundle export '\(d.file("log.sqlite"))' --out '\(d.file("u.bundle"))' --until 50 --json")
            #expect(r.status == 0, "\(r.stderr)")
            #expect(try JSONParser.parse(r.stdout)["manifest"]?["creator"]?.stringValue == "editlog \(EditLogVersion.current) (user \(account))", "\(r.stdout)")
            let help = try CLI.sh("env -u USER -u LOGNAME '\(CLI.binary)' bundle import --help")
            #expect(help.stdout.contains("(default: \(account))"), "\(help.stdout)")
        }

        @Test func aPublicKeyFileDoesNotSign() throws {
            let d = TempDir(), logs = TempDir()
            let db = logs.file("log.sqlite")
            try SharedBundle.shared.copyLog(to: db)
            var r = try CLI.run(["keys", "generate", "--out", d.file("ops")])
            #expect(r.status == 0, "\(r.stderr)")
            r = try CLI.run(["bundle", "export", db, "--out", d.file("s.bundle"), "--since", "600", "--sign", d.file("ops.pub")])
            #expect(r.status == 65 && r.stderr.contains("ops.pub: this is a public key file, not a private key") && !r.stdout.contains("signed"), "\(r.stdout) \(r.stderr)")
            // An unmarked public key (as keys generate wrote them before), by its .pub name or under another.
            let publicKey = try BundleSignature.readKeyFile(d.file("ops.pub"), as: .publicKey)
            try (Data(publicKey).base64EncodedString() + "\n").write(toFile: d.file("old.pub"), atomically: false, encoding: .utf8)
            try FileManager.default.copyItem(atPath: d.file("old.pub"), toPath: d.file("signing"))
            for f in ["old.pub", "signing"] {
                r = try CLI.run(["bundle", "export", db, "--out", d.file("s.bundle"), "--since", "600", "--sign", d.file(f)])
                #expect(r.status == 65 && r.stderr.contains("\(f): this"), "\(f): \(r.stdout) \(r.stderr)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: d.path).sorted() == ["old.pub", "ops.key", "ops.pub", "signing"])
            r = try CLI.run(["bundle", "export", db, "--out", d.file("s.bundle"), "--since", "600", "--sign", d.file("ops.key")])
            #expect(r.status == 0 && r.stdout.contains("signed"), "\(r.stdout) \(r.stderr)")
            r = try CLI.run(["bundle", "verify", d.file("s.bundle"), "--trust", d.file("old.pub")])
            #expect(r.status == 0 && r.stdout.contains("a trusted key"), "\(r.stdout) \(r.stderr)")
        }
    }
}
