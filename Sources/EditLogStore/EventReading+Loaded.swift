import EditLogCore
import GRDBSQLite

/// Where a row's columns are read out of SQLite once, for a reader that goes over them more than once (the
/// export checks each event's chain hash, then writes its line from the same columns). Reading a column from a
/// statement is three calls into SQLite (type, bytes pointer, length), and the export made them twice per column,
/// a large part of its producing thread's time.
///
/// One loader serves a whole statement: each row read overwrites the last one's columns.
public final class EventColumnLoader {
    private static let count = EventHash.Column.allCases.count
    private let slots = UnsafeMutablePointer<UnsafeRawBufferPointer?>.allocate(capacity: EventColumnLoader.count)
    private let integers = UnsafeMutablePointer<Int64>.allocate(capacity: EventColumnLoader.count)

    public init() {
        slots.initialize(repeating: nil, count: Self.count)
        integers.initialize(repeating: 0, count: Self.count)
    }

    deinit {
        slots.deallocate()
        integers.deallocate()
    }

    /// Calls `body` with the current row's columns, read once. They must not be kept past `body`: they point into
    /// this loader and into SQLite's buffers, valid until the statement steps again.
    public func withColumns<R>(of row: StatementEventColumns, _ body: (LoadedEventColumns) throws -> R) rethrows -> R {
        for column in EventHash.Column.allCases {
            let i = Int(column.rawValue)
            if column.isInteger { integers[i] = row.integer(column) } else { slots[i] = row.bytes(column) }
        }
        return try withExtendedLifetime(self) { try body(LoadedEventColumns(slots: slots, integers: integers)) }
    }
}

/// A row's columns as an `EventColumnLoader` read them: the same answers as the `StatementEventColumns` they were
/// read from, without calling SQLite. The integer columns (`EventHash.Column.isInteger`) are read as integers only:
/// `bytes` is nil for them (`EventHash.encode` and the bundle line read them with `integer`).
public struct LoadedEventColumns: EventHash.Source {
    @usableFromInline let slots: UnsafeMutablePointer<UnsafeRawBufferPointer?>
    @usableFromInline let integers: UnsafeMutablePointer<Int64>

    init(slots: UnsafeMutablePointer<UnsafeRawBufferPointer?>, integers: UnsafeMutablePointer<Int64>) {
        self.slots = slots
        self.integers = integers
    }

    @inlinable
    public func integer(_ column: EventHash.Column) -> Int64 { integers[Int(column.rawValue)] }

    @inlinable
    public func withBytes<R>(_ column: EventHash.Column, _ body: (UnsafeRawBufferPointer?) -> R) -> R {
        body(slots[Int(column.rawValue)])
    }

    /// The column's bytes (text as UTF-8), nil for NULL.
    @inlinable
    public func bytes(_ column: EventHash.Column) -> UnsafeRawBufferPointer? { slots[Int(column.rawValue)] }
}
