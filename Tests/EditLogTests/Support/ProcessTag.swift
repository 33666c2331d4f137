import Testing

extension Tag {
    /// The test runs a child process: the `editlog` binary (`CLI`) or an outside tool (sqlite3, gzip, tar, GDAL,
    /// chromium, python3 with pygeodiff, esridump, arcgis or bmi-arcgis-restapi). Such tests are in suites named
    /// `ProcessTests`, nested in the suite of their topic and tagged so, and `swift test --skip ProcessTests` runs
    /// every other test, in process only. `CLI` records an issue when a test outside such a suite starts a process.
    @Tag static var process: Self
}
