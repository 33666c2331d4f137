import EditLogCore
import GRDB

extension LogMoment {
    /// SQL over `events`: at or before this moment (`upTo`), or after it.
    func sql(clock: EventClock, after: Bool) -> (String, StatementArguments) {
        switch self {
        case .position(let p): (after ? "position > ?" : "position <= ?", [p])
        case .time(let t): (after ? "\(clock.column) > ?" : "\(clock.column) <= ?", [t])
        }
    }
}
