import EditLog
import Foundation
import Testing

/// `Timestamp.parse`/`format` against values computed another way: a day count done year by year
/// (no shared code with Timestamp's civil-date algorithms), constants checked with GNU `date -u -d … +%s`,
/// and Foundation's `ISO8601DateFormatter`.
@Suite struct TimestampTests {
    /// Epoch milliseconds of a proleptic Gregorian UTC time, by counting days one year and one month at a time.
    static func oracle(_ y: Int, _ mo: Int, _ d: Int, _ h: Int = 0, _ mi: Int = 0, _ s: Int = 0, _ ms: Int = 0) -> Int64 {
        func leap(_ y: Int) -> Bool { y % 400 == 0 || (y % 100 != 0 && y % 4 == 0) }
        var days = 0
        if y >= 1970 { for yy in 1970..<y { days += leap(yy) ? 366 : 365 } } else { for yy in y..<1970 { days -= leap(yy) ? 366 : 365 } }
        let lengths = [31, leap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        days += lengths.prefix(mo - 1).reduce(0, +) + d - 1
        return (Int64(days) * 86400 + Int64(h * 3600 + mi * 60 + s)) * 1000 + Int64(ms)
    }

    @Test func theOracleAgreesWithGNUDate() {
        // `date -u -d 2024-02-29T00:00:00Z +%s` and so on.
        #expect(Self.oracle(1970, 1, 1) == 0)
        #expect(Self.oracle(2024, 2, 29) == 1_709_164_800_000)
        #expect(Self.oracle(2000, 2, 29) == 951_782_400_000)
        #expect(Self.oracle(1900, 3, 1) == -2_203_891_200_000)
        #expect(Self.oracle(1900, 2, 28) == -2_203_977_600_000)
        #expect(Self.oracle(2023, 12, 31, 18, 30) == 1_704_047_400_000)
        #expect(Self.oracle(2025, 1, 1, 8) == 1_735_718_400_000)
        #expect(Self.oracle(1, 1, 1) == -62_135_596_800_000)
        #expect(Self.oracle(9999, 12, 31, 23, 59, 59) == 253_402_300_799_000)
    }

    @Test func leapDays() {
        #expect(Timestamp.parse("2024-02-29") == 1_709_164_800_000)
        #expect(Timestamp.parse("2024-02-29T23:59:59.999Z") == Self.oracle(2024, 2, 29, 23, 59, 59, 999))
        #expect(Timestamp.parse("2000-02-29") == 951_782_400_000)  // divisible by 400: leap
        #expect(Timestamp.parse("2023-02-29") == nil)
        #expect(Timestamp.parse("1900-02-29") == nil)  // divisible by 100, not 400: not leap
        #expect(Timestamp.parse("2100-02-29T00:00:00Z") == nil)
        #expect(Timestamp.parse("2024-02-30") == nil)
        #expect(Timestamp.parse("1900-02-28") == -2_203_977_600_000)
        // The day after a leap day, and after a common February.
        #expect(Timestamp.parse("2024-03-01")! - Timestamp.parse("2024-02-28")! == 2 * 86_400_000)
        #expect(Timestamp.parse("2023-03-01")! - Timestamp.parse("2023-02-28")! == 86_400_000)
        #expect(Timestamp.format(milliseconds: 1_709_164_800_000) == "2024-02-29T00:00:00.000Z")
        #expect(Timestamp.format(milliseconds: 951_782_400_000 + 86_400_000) == "2000-03-01T00:00:00.000Z")
    }

    @Test func monthLengths() {
        for (m, last) in [(1, 31), (3, 31), (4, 30), (5, 31), (6, 30), (7, 31), (8, 31), (9, 30), (10, 31), (11, 30), (12, 31)] {
            let mm = m < 10 ? "0\(m)" : "\(m)"
            #expect(Timestamp.parse("2023-\(mm)-\(last)") == Self.oracle(2023, m, last))
            #expect(Timestamp.parse("2023-\(mm)-\(last + 1)") == nil)
            #expect(Timestamp.parse("2023-\(mm)-00") == nil)
        }
    }

    @Test func fractionalSecondsAreTruncatedToMilliseconds() {
        let base = Self.oracle(2026, 5, 1, 9)
        let cases: [(String, Int64)] = [
            ("", 0), (".5", 500), (".05", 50), (".005", 5), (".12", 120), (".123", 123),
            (".1239", 123), (".123999", 123), (".999999999", 999),  // truncated, never rounded up into the next second
            (".000", 0), (".0009", 0), (".12345678901234567890", 123),  // any number of digits
        ]
        for (frac, ms) in cases {
            #expect(Timestamp.parse("2026-05-01T09:00:00\(frac)Z") == base + ms, "\(frac)")
        }
        #expect(Timestamp.normalize("2026-05-01T09:00:59.9999Z") == "2026-05-01T09:00:59.999Z")
        #expect(Timestamp.parse("2026-05-01T09:00:00.Z") == nil)  // a point needs digits
        #expect(Timestamp.parse("2026-05-01T09:00.5Z") == nil)  // a fraction needs seconds
        #expect(Timestamp.parse("2026-05-01T09:00:00,5Z") == nil)  // the comma form is not read
    }

    @Test func offsetsMoveTheInstant() {
        // Each pair: the same instant written with an offset and in UTC.
        let pairs: [(String, Int64)] = [
            ("2024-01-01T00:00:00+05:30", Self.oracle(2023, 12, 31, 18, 30)),  // back across a year
            ("2024-12-31T15:30:00-08:00", Self.oracle(2024, 12, 31, 23, 30)),
            ("2024-12-31T20:00:00-12:00", Self.oracle(2025, 1, 1, 8)),  // forward across a year
            ("2024-03-01T01:00:00+02:00", Self.oracle(2024, 2, 29, 23)),  // back onto a leap day
            ("2024-02-29T23:00:00-02:00", Self.oracle(2024, 3, 1, 1)),  // forward off a leap day
            ("1970-01-01T00:00:00+00:01", -60_000),  // before the epoch
            ("2026-05-01T09:00:00Z", 1_777_626_000_000),
            ("2026-05-01T09:00:00+00:00", 1_777_626_000_000),
            ("2026-05-01T09:00:00-00:00", 1_777_626_000_000),
            ("2026-05-01T14:30:00+0530", 1_777_626_000_000),  // the colon in an offset is optional
            ("2026-05-01 09:00Z", 1_777_626_000_000),  // a space for the T, seconds optional
            ("2026-05-02T08:59:00+23:59", 1_777_626_000_000),  // the largest offset: 08:59 on the 2nd less 23 h 59 min
        ]
        for (s, ms) in pairs { #expect(Timestamp.parse(s) == ms, "\(s)") }
        #expect(Timestamp.normalize("2024-01-01T00:00:00+05:30") == "2023-12-31T18:30:00.000Z")
        #expect(Timestamp.normalize("2024-12-31T20:00:00.250-12:00") == "2025-01-01T08:00:00.250Z")
        for bad in ["2026-05-01T09:00:00+24:00", "2026-05-01T09:00:00+05:60", "2026-05-01T09:00:00+5:30", "2026-05-01T09:00:00+05:3",
                    "2026-05-01T09:00:00+05", "2026-05-01T09:00:00+", "2026-05-01T09:00:00 +05:00", "2026-05-01T09:00:00UTC"] {
            #expect(Timestamp.parse(bad) == nil, "\(bad)")
        }
    }

    /// Each separator is the one byte the format names (compared as bytes since the parse reads UTF-8 in place).
    @Test func separatorsAreExact() {
        #expect(Timestamp.parse("2026-05-01T09:00:00Z") != nil)
        for bad in ["2026/05/01", "2026-05/01", "2026-05-01T09-00Z", "2026-05-01T09:00;00Z", "2026-05-01T09:00:00z", "2026-05-01T09:00:00.5z",
                    "2026-05-01T09:00:00+01-00", "2026\u{2010}05-01", "２026-05-01", "2026-05-01T09:00:00Ｚ"] {
            #expect(Timestamp.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func aTimeWithoutAZoneIsRefused() {
        #expect(Timestamp.parse("2026-05-01T09:00:00") == nil)
        #expect(Timestamp.parse("2026-05-01T09:00") == nil)
        #expect(Timestamp.parse("2026-05-01T09:00:00.123") == nil)
    }

    @Test func theFirstAndLastMillisecondOfTheRange() {
        #expect(Timestamp.parse("0001-01-01T00:00:00Z") == Timestamp.minMilliseconds)
        #expect(Timestamp.parse("0001-01-01") == -62_135_596_800_000)
        #expect(Timestamp.parse("9999-12-31T23:59:59.999Z") == Timestamp.maxMilliseconds)
        #expect(Timestamp.maxMilliseconds == Self.oracle(9999, 12, 31, 23, 59, 59, 999))
        #expect(Timestamp.minMilliseconds == Self.oracle(1, 1, 1))
        #expect(Timestamp.format(milliseconds: Timestamp.minMilliseconds) == "0001-01-01T00:00:00.000Z")
        #expect(Timestamp.format(milliseconds: Timestamp.maxMilliseconds) == "9999-12-31T23:59:59.999Z")
        // Inside the range through an offset.
        #expect(Timestamp.parse("0001-01-01T01:00:00+01:00") == Timestamp.minMilliseconds)
        #expect(Timestamp.parse("9999-12-31T22:59:59.999-01:00") == Timestamp.maxMilliseconds)
    }

    @Test func instantsOutsideTheRangeAreRefused() {
        #expect(Timestamp.parse("10000-01-01T00:00:00Z") == nil)  // five-digit years are not read
        #expect(Timestamp.parse("+10000-01-01T00:00:00Z") == nil)
        #expect(Timestamp.parse("-0001-01-01T00:00:00Z") == nil)
        #expect(Timestamp.parse("0000-01-01") == nil)  // year 0 is before 0001-01-01
        #expect(Timestamp.parse("0000-12-31T23:59:59.999Z") == nil)
        // An offset that carries the instant out of the range: UTC would be year 10000, or year 0.
        #expect(Timestamp.parse("9999-12-31T23:30:00-01:00") == nil)
        #expect(Timestamp.parse("0001-01-01T00:30:00+01:00") == nil)
        // normalize must not clamp such an instant into a wrong but well-formed time.
        #expect(Timestamp.normalize("9999-12-31T23:30:00-01:00") == nil)
        #expect(Timestamp.normalize("0001-01-01T00:00:00+00:01") == nil)
    }

    @Test func invalidInputs() {
        let bad = [
            "", " ", "garbage", "2026", "2026-05", "2026-5-01", "2026-05-1", "26-05-01", "2026/05/01", "2026-05-01T", "2026-05-01 ",
            " 2026-05-01", "2026-05-01Z", "2026-13-01", "2026-00-10", "2026-05-32", "2026-05-01T24:00:00Z", "2026-05-01T23:60:00Z",
            "2026-05-01T23:59:61Z", "2026-05-01T9:00:00Z", "2026-05-01T09:00:0Z", "2026-05-01t09:00:00Z", "2026-05-01T09:00:00z",
            "2026-05-01T09:00:00Zjunk", "2026-05-01T09:00:00Z ", "2026-05-01T09:00:00+05:30x", "2026-05-01junk", "2026-05-01T09:00:00.1.2Z",
            "２０２６-05-01", "2026-05-01T09:00:00\u{0}Z", "-2026-05-01",
        ]
        for s in bad { #expect(Timestamp.parse(s) == nil, "\(s.debugDescription)") }
        #expect(Timestamp.normalize("garbage") == nil)
    }

    @Test func secondSixtyIsReadAsTheNextMinute() {
        // Pinned behaviour: :60 is accepted (ISO 8601 allows a leap second) and, without a leap-second table,
        // lands on the first millisecond of the next minute.
        #expect(Timestamp.parse("2016-12-31T23:59:60Z") == 1_483_228_800_000)
        #expect(Timestamp.normalize("2016-12-31T23:59:60.500Z") == "2017-01-01T00:00:00.500Z")
    }

    @Test func formatThenParseRoundTrips() {
        var rng = SplitMix64(seed: 2026)
        var values: [Int64] = [0, -1, 1, 999, -999, -1000, 86_399_999, -86_400_000, 951_782_400_000, 1_709_164_800_000,
                               Timestamp.minMilliseconds, Timestamp.minMilliseconds + 1, Timestamp.maxMilliseconds, Timestamp.maxMilliseconds - 1]
        for _ in 0..<20_000 { values.append(Int64.random(in: Timestamp.minMilliseconds...Timestamp.maxMilliseconds, using: &rng)) }
        for ms in values {
            let s = Timestamp.format(milliseconds: ms)
            guard Timestamp.parse(s) == ms else { Issue.record("\(ms) formats as \(s), which parses back as \(String(describing: Timestamp.parse(s)))"); return }
            #expect(s.utf8.count == 24)
        }
        #expect(Timestamp.format(milliseconds: -1) == "1969-12-31T23:59:59.999Z")
        #expect(Timestamp.format(milliseconds: 1_777_626_000_123) == "2026-05-01T09:00:00.123Z")
    }

    @Test func formatAgreesWithTheOracleOnEveryFirstOfTheMonth() {
        for y in stride(from: 1, through: 9999, by: 97) {
            for m in 1...12 {
                func pad(_ v: Int, _ w: Int) -> String { String(repeating: "0", count: max(0, w - String(v).count)) + String(v) }
                let expected = "\(pad(y, 4))-\(pad(m, 2))-01T00:00:00.000Z"
                #expect(Timestamp.format(milliseconds: Self.oracle(y, m, 1)) == expected)
                #expect(Timestamp.parse(expected) == Self.oracle(y, m, 1))
            }
        }
    }

    @Test func parseAgreesWithFoundation() {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for s in ["2024-02-29T12:34:56.789Z", "2024-01-01T00:00:00.000+05:30", "2024-12-31T20:00:00.250-12:00", "1969-07-20T20:17:40.000Z",
                  "2038-01-19T03:14:08.000Z", "1900-03-01T00:00:00.001Z"] {
            let date = f.date(from: s)
            #expect(date != nil, "\(s)")
            guard let date else { continue }
            #expect(Timestamp.parse(s) == Int64((date.timeIntervalSince1970 * 1000).rounded()), "\(s)")
        }
    }
}
