import EditLog
import EditLogProjections
import EditLogStore
import Foundation
import GRDB
import Testing

/// One mapping from SQLite's errors to EditLog's kinds (and so exit codes), used by every path.
@Suite struct ErrorMappingTests {
    @Test(arguments: [
        (ResultCode.SQLITE_BUSY, EditLogError.Kind.conflict), (.SQLITE_LOCKED, .conflict),
        (.SQLITE_CORRUPT, .corrupt), (.SQLITE_NOTADB, .corrupt),
        (.SQLITE_IOERR, .io), (.SQLITE_FULL, .io), (.SQLITE_CANTOPEN, .io),
    ])
    func databaseErrorsMapToOneKindEach(_ code: ResultCode, _ kind: EditLogError.Kind) {
        let e = EditLogError.wrapping(DatabaseError(resultCode: code, message: "m"), at: "/x.sqlite")
        #expect(e.kind == kind && e.location == "/x.sqlite")
    }

    @Test func anEditLogErrorPassesThroughUnchanged() {
        let original = EditLogError(.validation, "v", at: "line 3")
        #expect(EditLogError.wrapping(original, at: "/x") == original)
    }

    @Test func theDecidersReadsUseTheSameMapping() throws {
        let q = try DatabaseQueue()
        let kind = try q.read { db in
            ProjectedState(db: db, schema: ServiceSchema(layers: [])).describe(DatabaseError(resultCode: .SQLITE_BUSY)).kind
        }
        #expect(kind == .conflict)
    }
}
