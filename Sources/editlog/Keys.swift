import ArgumentParser
import EditLog
import Foundation

struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys", abstract: "Ed25519 signing keys for bundles.", subcommands: [KeysGenerate.self])
}

struct KeysGenerate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate",
        abstract: "Write <name>.key (private, mode 0600) and <name>.pub: a line naming the kind, then the base64 of the raw 32-byte key. Never overwrites.")

    @Option(name: .customLong("out"), help: "The key files' name, without extension.")
    var outPath: String

    @OptionGroup var json: JSONFlag

    func run() throws {
        try handleErrors {
            let k = try BundleSignature.generateKeyFiles(name: outPath)
            let pub = Data(k.publicKey).base64EncodedString()
            if json.json {
                out(JSONValue.object(["privateKey": .string(k.privatePath), "publicKey": .string(k.publicPath), "public": .string(pub)]).serialized())
            } else {
                out("wrote \(k.privatePath) (private: keep it secret) and \(k.publicPath) (public key \(pub))")
            }
        }
    }
}
