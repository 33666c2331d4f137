/// Checks and normalizes one value for one field, as a pop-up's `updateValue` does:
/// JSON type, nullability, length, numeric range of the type, coded and range domains, dates.
public enum FieldValidator {
    /// Returns the value as it will be stored (dates as epoch milliseconds, GUIDs in `{UPPER}` form).
    public static func normalize(_ value: JSONValue, for field: FieldSchema, layer: String) throws(EditLogError) -> JSONValue {
        let where_ = "\(layer).\(field.name)"
        func bad(_ msg: String) -> EditLogError { EditLogError(.validation, msg, at: where_) }
        if field.type.isUnsupportedInPopup {
            throw bad("field type \(field.type.esriName) is not supported in a pop-up (geometry, raster, XML and blob fields cannot be edited)")
        }
        if case .unknown(let n) = field.type { throw bad("field type \(n) is unknown to EditLog, so the field is read-only") }
        if value.isNull {
            guard field.nullable else { throw bad("field does not accept null") }
            return .null
        }
        var v: JSONValue
        switch field.type {
        case .string:
            guard case .string(let s) = value else { throw bad("expected a string, found \(value.typeName) \(value.serialized().prefix(40))") }
            if let max = field.length, max > 0, s.count > max {
                throw bad("string of \(s.count) characters exceeds the field length \(max)")
            }
            v = value
        case .smallInteger, .integer, .bigInteger:
            guard let i = value.intValue else {
                throw bad("expected an integer, found \(value.typeName) \(value.serialized().prefix(40))")
            }
            let range: ClosedRange<Int64> = field.type == .smallInteger ? -32768...32767
                : field.type == .integer ? Int64(Int32.min)...Int64(Int32.max) : Int64.min...Int64.max
            guard range.contains(i) else { throw bad("\(i) overflows \(field.type.esriName) (\(range.lowerBound)...\(range.upperBound))") }
            v = .int(i)
        case .single, .double:
            guard let d = value.doubleValue, d.isFinite else {
                throw bad("expected a number, found \(value.typeName) \(value.serialized().prefix(40))")
            }
            if field.type == .single, abs(d) > Double(Float.greatestFiniteMagnitude) { throw bad("\(d) overflows esriFieldTypeSingle") }
            v = .double(d)
        case .date:
            let ms: Int64
            if let i = value.intValue { ms = i }
            else if case .string(let s) = value, let p = Timestamp.parse(s) { ms = p }
            else { throw bad("expected a date (epoch milliseconds or ISO-8601), found \(value.serialized().prefix(40))") }
            guard ms >= Timestamp.minMilliseconds && ms <= Timestamp.maxMilliseconds else {
                throw bad("date \(value.serialized().prefix(40)) is out of range (years 1 to 9999)")
            }
            v = .int(ms)
        case .dateOnly:
            guard case .string(let s) = value, s.utf8.count == 10, Timestamp.parse(s) != nil else { throw bad("expected a date as YYYY-MM-DD") }
            v = value
        case .timeOnly:
            guard case .string(let s) = value, Timestamp.parse("2000-01-01T\(s)Z") != nil else { throw bad("expected a time as HH:MM:SS") }
            v = value
        case .timestampOffset:
            guard case .string(let s) = value, Timestamp.parse(s) != nil else { throw bad("expected an ISO-8601 timestamp with offset") }
            v = value
        case .guid, .globalID:
            guard case .string(let s) = value, let g = GlobalID.normalize(s) else { throw bad("expected a GUID, found \(value.serialized().prefix(40))") }
            v = .string(g)
        case .oid:
            throw bad("ObjectID fields are read-only")
        case .geometry, .blob, .raster, .xml, .unknown:
            throw bad("field type \(field.type.esriName) cannot be edited")
        }
        switch field.domain {
        case .codedValue(let name, let values)?:
            guard values.contains(where: { codeMatches($0.code, v) }) else {
                let shown = values.prefix(8).map { $0.code.serialized() }.joined(separator: ", ")
                throw bad("\(v.serialized().prefix(40)) is not in the coded value domain \(name.isEmpty ? "" : "\"\(name)\" ")(\(shown)\(values.count > 8 ? ", ..." : ""))")
            }
            // Keep the domain's own code type (an integer code of a string field stays what the domain says).
            if let match = values.first(where: { codeMatches($0.code, v) }), case .string = v, case .string = match.code { v = match.code }
        case .range(let name, let lo, let hi)?:
            if let d = v.doubleValue, d < lo || d > hi {
                throw bad("\(v.serialized()) is outside the range domain \(name.isEmpty ? "" : "\"\(name)\" ")[\(lo), \(hi)]")
            }
        default: break
        }
        return v
    }

    static func codeMatches(_ code: JSONValue, _ v: JSONValue) -> Bool {
        if code == v { return true }
        if let a = code.doubleValue, let b = v.doubleValue { return a == b }
        if case .string(let s) = v, let a = code.intValue { return String(a) == s }
        if case .string(let s) = code, let b = v.intValue { return String(b) == s }
        return false
    }
}
