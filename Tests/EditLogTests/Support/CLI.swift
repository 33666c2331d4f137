import Foundation
import Testing

/// Runs the real `editlog` binary.
struct CLI {
    struct Result { var status: Int32; var stdout: String; var stderr: String }

    static var binary: String { Paths.editlogBinary }

    /// Starts the binary with `args` (and `env` over this process's environment); `stdin`, where given, is
    /// its whole standard input.
    static func start(_ args: [String], env: [String: String] = [:], stdin: String? = nil) throws -> (Process, Pipe, Pipe) {
        expectProcessSuite()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments = args
        if !env.isEmpty { p.environment = ProcessInfo.processInfo.environment.merging(env) { $1 } }
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        let input = stdin.map { _ in Pipe() }
        if let input { p.standardInput = input }
        try p.run()
        if let input, let stdin {
            input.fileHandleForWriting.write(Data(stdin.utf8))
            try input.fileHandleForWriting.close()
        }
        return (p, out, err)
    }

    @discardableResult
    static func run(_ args: String...) throws -> Result { try run(args) }

    static func run(_ args: [String]) throws -> Result {
        let (p, out, err) = try start(args)
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return Result(status: p.terminationStatus, stdout: String(decoding: o, as: UTF8.self), stderr: String(decoding: e, as: UTF8.self))
    }

    static func sh(_ command: String) throws -> Result {
        expectProcessSuite()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", command]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return Result(status: p.terminationStatus, stdout: String(decoding: o, as: UTF8.self), stderr: String(decoding: e, as: UTF8.self))
    }

    /// A test that starts a process belongs in a `ProcessTests` suite (`Tag.process`): `swift test --skip ProcessTests`
    /// must leave out every such test. Work off the test's task (no current test) is not checked.
    static func expectProcessSuite() {
        guard let test = Test.current else { return }
        if !String(describing: test.id).contains("ProcessTests") {
            Issue.record("\(test.id) starts a process outside a ProcessTests suite (see Tag.process)")
        }
    }
}
