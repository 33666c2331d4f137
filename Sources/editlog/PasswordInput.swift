import EditLog
import Foundation

/// A password from stdin: on a terminal asked for without echo, else the first line of the input (so a
/// password never has to be an argument, which the process list shows).
enum PasswordInput {
    /// A new password (`users add`): asked for twice on a terminal; at least 8 characters.
    static func readNew(prompt: String) throws(EditLogError) -> String {
        let password: String
        if isatty(STDIN_FILENO) == 1 {
            let first = try ask(prompt)
            guard try ask("Again: ") == first else { throw EditLogError(.invalidInput, "the two passwords differ", at: "password") }
            password = first
        } else {
            password = firstLine()
        }
        guard password.count >= 8 else { throw EditLogError(.invalidInput, "a password must be at least 8 characters", at: "password") }
        return password
    }

    /// A password to log in with (`sync --user`): asked for once on a terminal.
    static func read(prompt: String) throws(EditLogError) -> String {
        let password = isatty(STDIN_FILENO) == 1 ? try ask(prompt) : firstLine()
        guard !password.isEmpty else {
            throw EditLogError(.invalidInput, "no password was given: type it when asked, or send it as the first line of stdin", at: "password")
        }
        return password
    }

    /// The first line of stdin, without its line end.
    private static func firstLine() -> String {
        let data = FileHandle.standardInput.readDataToEndOfFile()
        let text = String(decoding: data, as: UTF8.self)
        return String(text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
            .trimmingCharacters(in: CharacterSet(charactersIn: "\r"))
    }

    /// One line from the terminal with echo off.
    private static func ask(_ prompt: String) throws(EditLogError) -> String {
        FileHandle.standardError.write(Data(prompt.utf8))
        var old = termios()
        guard tcgetattr(STDIN_FILENO, &old) == 0 else { throw EditLogError(.io, "cannot read the terminal's settings", at: "stdin") }
        var quiet = old
        quiet.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet)
        defer {
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &old)
            FileHandle.standardError.write(Data("\n".utf8))
        }
        guard let line = readLine(strippingNewline: true) else { throw EditLogError(.invalidInput, "no password was typed", at: "stdin") }
        return line
    }
}
