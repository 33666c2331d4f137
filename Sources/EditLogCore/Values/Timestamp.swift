import Foundation

/// Times as EditLog stores them: UTC ISO-8601 with milliseconds, e.g. `2026-05-01T09:00:00.000Z`.
/// Parsing and formatting are hand-written (no formatter objects, no locale), so they are fast and
/// identical on every platform.
public enum Timestamp {
    /// Milliseconds since the epoch from ISO-8601 (`YYYY-MM-DD`, `...THH:MM[:SS[.fff]]` with `Z` or `±HH:MM`);
    /// nil for anything else, and for instants outside `minMilliseconds...maxMilliseconds`.
    public static func parse(_ s: String) -> Int64? {
        // Read in place (no copy of the bytes), each separator compared as a byte: an import parses the time of
        // every event it merges.
        var s = s
        return s.withUTF8 { parse(utf8: $0) }
    }

    static func parse(utf8 b: UnsafeBufferPointer<UInt8>) -> Int64? {
        var i = 0
        func num(_ n: Int) -> Int? {
            guard i + n <= b.count else { return nil }
            var v = 0
            for k in 0..<n {
                let c = b[i + k]
                guard c >= 48 && c <= 57 else { return nil }
                v = v * 10 + Int(c - 48)
            }
            i += n
            return v
        }
        func expect(_ c: Unicode.Scalar) -> Bool {
            guard i < b.count, b[i] == UInt8(ascii: c) else { return false }
            i += 1
            return true
        }
        guard let y = num(4), expect("-"), let mo = num(2), expect("-"), let d = num(2) else { return nil }
        guard (1...12).contains(mo), d >= 1, d <= daysIn(month: mo, year: y) else { return nil }
        var h = 0, mi = 0, sec = 0, ms = 0, offset = 0
        if i < b.count {
            guard b[i] == UInt8(ascii: "T") || b[i] == UInt8(ascii: " ") else { return nil }
            i += 1
            guard let hh = num(2), expect(":"), let mm = num(2) else { return nil }
            h = hh; mi = mm
            if expect(":") {
                guard let ss = num(2) else { return nil }
                sec = ss
                if expect(".") {
                    var digits = 0, frac = 0
                    while i < b.count, b[i] >= 48, b[i] <= 57 {
                        if digits < 3 { frac = frac * 10 + Int(b[i] - 48) }
                        digits += 1; i += 1
                    }
                    guard digits > 0 else { return nil }
                    for _ in digits..<max(digits, 3) { frac *= 10 }
                    ms = frac
                }
            }
            guard h < 24, mi < 60, sec < 61 else { return nil }
            if expect("Z") {
            } else if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
                let sign = b[i] == UInt8(ascii: "-") ? -1 : 1
                i += 1
                guard let oh = num(2) else { return nil }
                _ = expect(":")
                guard let om = num(2), oh < 24, om < 60 else { return nil }
                offset = sign * (oh * 60 + om)
            } else {
                return nil  // a time without a zone is ambiguous
            }
        }
        guard i == b.count else { return nil }
        let days = daysFromCivil(y, mo, d)
        let t = ((Int64(days) * 86400 + Int64(h * 3600 + mi * 60 + sec) - Int64(offset * 60)) * 1000) + Int64(ms)
        // Year 0000, or an offset that carries the instant past 0001-01-01 or 9999-12-31 UTC, has no stored
        // form: `format` would clamp the year and `normalize` return a different, well-formed time.
        guard t >= minMilliseconds && t <= maxMilliseconds else { return nil }
        return t
    }

    public static func format(milliseconds: Int64) -> String {
        let msPart = Int(((milliseconds % 1000) + 1000) % 1000)
        let secs = (milliseconds - Int64(msPart)) / 1000
        var days = secs / 86400
        var rem = secs % 86400
        if rem < 0 { rem += 86400; days -= 1 }
        let (y, m, d) = civilFromDays(Int(days))
        // YYYY-MM-DDTHH:MM:SS.fffZ written digit by digit: this runs for every recorded event.
        return String(unsafeUninitializedCapacity: 24) { buf in
            func put(_ v: Int, _ width: Int, at i: Int) {
                var v = v
                for k in stride(from: width - 1, through: 0, by: -1) { buf[i + k] = UInt8(48 + v % 10); v /= 10 }
            }
            put(max(0, min(y, 9999)), 4, at: 0); buf[4] = 45
            put(m, 2, at: 5); buf[7] = 45
            put(d, 2, at: 8); buf[10] = 84
            put(Int(rem / 3600), 2, at: 11); buf[13] = 58
            put(Int(rem % 3600 / 60), 2, at: 14); buf[16] = 58
            put(Int(rem % 60), 2, at: 17); buf[19] = 46
            put(msPart, 3, at: 20); buf[23] = 90
            return 24
        }
    }

    /// The one form text outputs print a time in: ISO-8601 to the second, UTC (`2026-06-01T10:00:00`). JSON
    /// outputs keep the stored form (times) and Esri epoch milliseconds (date fields).
    public static func human(milliseconds: Int64) -> String { String(format(milliseconds: milliseconds).prefix(19)) }
    /// A stored time (`2026-06-01T10:00:00.000Z`) in the human form.
    public static func human(_ stored: String) -> String { String(stored.prefix(19)) }

    /// Normalizes an ISO-8601 string to the stored form.
    public static func normalize(_ s: String) -> String? { parse(s).map { format(milliseconds: $0) } }

    static func isLeap(_ y: Int) -> Bool { (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 }
    static func daysIn(month: Int, year: Int) -> Int {
        [31, isLeap(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    }
    // Howard Hinnant's algorithms.
    static func daysFromCivil(_ y0: Int, _ m: Int, _ d: Int) -> Int {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }
    static func civilFromDays(_ z0: Int) -> (Int, Int, Int) {
        let z = z0 + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp + (mp < 10 ? 3 : -9)
        return (m <= 2 ? y + 1 : y, m, d)
    }

    /// 0001-01-01 .. 9999-12-31, the range ArcGIS date fields hold.
    public static let minMilliseconds: Int64 = -62_135_596_800_000
    public static let maxMilliseconds: Int64 = 253_402_300_799_999
}
