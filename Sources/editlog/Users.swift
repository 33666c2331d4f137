import ArgumentParser
import EditLog
import EditLogServer
import Foundation

struct UsersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "users",
        abstract: "The users file of `serve --users`: who can log in with a name and a password (generateToken).",
        discussion: """
            Each line is NAME and the password's PBKDF2-HMAC-SHA256 hash (600,000 rounds, a 16-byte random salt, 32 bytes \
            out). The file is written whole with mode 0600; a running server reads it again within a second of a change.
            """,
        subcommands: [UsersAdd.self, UsersRemove.self, UsersList.self])
}

struct UsersAdd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add a user, or set a user's new password. The password is read from stdin (its first line), or asked for twice on a terminal: never from the command line.")

    @Argument(help: "The users file (created where there is none).")
    var file: String

    @Argument(help: "The user name: 1 to 256 characters, no white space. Edits it makes are recorded under this name.")
    var name: String

    @OptionGroup var json: JSONFlag

    func run() throws {
        try handleErrors {
            var users = try UsersFile.load(file, missingIsEmpty: true)
            try UsersFile.checkName(name, at: "user name")  // before a terminal asks for the password twice
            let password = try PasswordInput.readNew(prompt: "Password for \(name): ")
            let added = try users.set(name, PasswordHash.make(password: password))
            try users.write(to: file)
            if json.json {
                out(JSONValue.object(["file": .string(file), "user": .string(name), "added": .bool(added), "users": .int(Int64(users.users.count))]).serialized())
            } else {
                out(added ? "added \(name) to \(file)" : "set a new password for \(name) in \(file)")
            }
        }
    }
}

struct UsersRemove: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Remove a user: the user's tokens stop working on a running server within a second.")

    @Argument(help: "The users file.")
    var file: String

    @Argument(help: "The user name.")
    var name: String

    @OptionGroup var json: JSONFlag

    func run() throws {
        try handleErrors {
            var users = try UsersFile.load(file)
            guard users.remove(name) else { throw EditLogError(.notFound, "there is no user \"\(name)\"", at: file) }
            try users.write(to: file)
            if json.json {
                out(JSONValue.object(["file": .string(file), "user": .string(name), "removed": true]).serialized())
            } else {
                out("removed \(name) from \(file)")
            }
        }
    }
}

struct UsersList: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the users and how each password is hashed (never the hash).")

    @Argument(help: "The users file.")
    var file: String

    @OptionGroup var json: JSONFlag

    func run() throws {
        try handleErrors {
            let users = try UsersFile.load(file)
            if json.json {
                out(JSONValue.array(users.users.map {
                    ["name": .string($0.name), "hash": .string(PasswordHash.scheme), "rounds": .int(Int64($0.hash.rounds))]
                }).serialized())
            } else {
                for u in users.users { out("\(u.name)\t\(PasswordHash.scheme), \(u.hash.rounds) rounds") }
            }
        }
    }
}
