import EditLog
import EditLogServer
import Foundation
import Testing

/// `editlog users add|remove|list`: the password comes from stdin, never the command line; bad input changes
/// nothing and exits with its kind's code.
@Suite("editlog users")
struct UsersCommandTests {}

extension UsersCommandTests {
    @Suite(.tags(.process)) struct ProcessTests {
        @Test func addListRemoveAndRefuseBadInputWithoutWriting() throws {
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("editlog-users-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let file = dir + "/users"
            func add(_ name: String, _ password: String) throws -> CLI.Result {
                try password.write(toFile: dir + "/pw", atomically: true, encoding: .utf8)
                return try CLI.sh("'\(CLI.binary)' users add '\(file)' '\(name)' --json < '\(dir)/pw'")
            }
            let a = try add("dana_pdx", "a long password\n")
            #expect(a.status == 0, "\(a.stderr)")
            #expect(try JSONParser.parse(a.stdout)["added"] == true)
            let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            let users = try UsersFile.load(file)
            #expect(users.hash(of: "dana_pdx")?.matches("a long password") == true)
            #expect(users.hash(of: "dana_pdx")?.rounds == 600_000)

            // A second add of the name sets a new password.
            let again = try add("dana_pdx", "another password")
            #expect(try JSONParser.parse(again.stdout)["added"] == false)
            #expect(try UsersFile.load(file).hash(of: "dana_pdx")?.matches("another password") == true)

            // Bad input: exit 65, the file as it was.
            let before = try String(contentsOfFile: file, encoding: .utf8)
            for (name, password) in [("eve", "short"), ("two words", "a long password"), ("eve", "")] {
                let r = try add(name, password)
                #expect(r.status == 65, "\(name): \(r.stdout)\(r.stderr)")
                #expect(r.stderr.contains("editlog: error:"), "\(r.stderr)")
            }
            #expect(try String(contentsOfFile: file, encoding: .utf8) == before)

            let list = try CLI.run("users", "list", file, "--json")
            #expect(try JSONParser.parse(list.stdout) == [["name": "dana_pdx", "hash": "pbkdf2-sha256", "rounds": 600_000]])
            #expect(!list.stdout.contains(try UsersFile.load(file).hash(of: "dana_pdx")!.text))

            let missing = try CLI.run("users", "remove", file, "nobody")
            #expect(missing.status == 68, "\(missing.stderr)")
            let removed = try CLI.run("users", "remove", file, "dana_pdx")
            #expect(removed.status == 0)
            #expect(try UsersFile.load(file).users.isEmpty)
        }
    }
}
