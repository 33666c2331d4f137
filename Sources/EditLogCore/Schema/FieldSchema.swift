/// An ArcGIS field type. Unknown `esriFieldType*` names are kept, and such fields are read-only.
public enum FieldType: Sendable, Hashable {
    case oid, globalID, guid, string, smallInteger, integer, bigInteger, single, double
    case date, dateOnly, timeOnly, timestampOffset
    case geometry, blob, raster, xml
    case unknown(String)

    public init(esriName: String) {
        switch esriName {
        case "esriFieldTypeOID": self = .oid
        case "esriFieldTypeGlobalID": self = .globalID
        case "esriFieldTypeGUID": self = .guid
        case "esriFieldTypeString": self = .string
        case "esriFieldTypeSmallInteger": self = .smallInteger
        case "esriFieldTypeInteger": self = .integer
        case "esriFieldTypeBigInteger": self = .bigInteger
        case "esriFieldTypeSingle": self = .single
        case "esriFieldTypeDouble": self = .double
        case "esriFieldTypeDate": self = .date
        case "esriFieldTypeDateOnly": self = .dateOnly
        case "esriFieldTypeTimeOnly": self = .timeOnly
        case "esriFieldTypeTimestampOffset": self = .timestampOffset
        case "esriFieldTypeGeometry": self = .geometry
        case "esriFieldTypeBlob": self = .blob
        case "esriFieldTypeRaster": self = .raster
        case "esriFieldTypeXML": self = .xml
        default: self = .unknown(esriName)
        }
    }

    public var esriName: String {
        switch self {
        case .oid: return "esriFieldTypeOID"
        case .globalID: return "esriFieldTypeGlobalID"
        case .guid: return "esriFieldTypeGUID"
        case .string: return "esriFieldTypeString"
        case .smallInteger: return "esriFieldTypeSmallInteger"
        case .integer: return "esriFieldTypeInteger"
        case .bigInteger: return "esriFieldTypeBigInteger"
        case .single: return "esriFieldTypeSingle"
        case .double: return "esriFieldTypeDouble"
        case .date: return "esriFieldTypeDate"
        case .dateOnly: return "esriFieldTypeDateOnly"
        case .timeOnly: return "esriFieldTypeTimeOnly"
        case .timestampOffset: return "esriFieldTypeTimestampOffset"
        case .geometry: return "esriFieldTypeGeometry"
        case .blob: return "esriFieldTypeBlob"
        case .raster: return "esriFieldTypeRaster"
        case .xml: return "esriFieldTypeXML"
        case .unknown(let n): return n
        }
    }

    /// Types a pop-up can never edit (the seed app's `assertionFailure` cases), which we reject with an error.
    public var isUnsupportedInPopup: Bool {
        switch self {
        case .geometry, .blob, .raster, .xml: return true
        default: return false
        }
    }
}

public struct CodedValue: Sendable, Hashable {
    public var name: String
    public var code: JSONValue
}

public enum Domain: Sendable, Hashable {
    case codedValue(name: String, values: [CodedValue])
    case range(name: String, min: Double, max: Double)
    case inherited
}

public struct FieldSchema: Sendable, Hashable {
    public var name: String
    public var type: FieldType
    public var alias: String?
    public var nullable: Bool
    public var editable: Bool
    public var length: Int?
    public var defaultValue: JSONValue?
    public var domain: Domain?

    public init(name: String, type: FieldType, alias: String? = nil, nullable: Bool = true, editable: Bool = true,
                length: Int? = nil, defaultValue: JSONValue? = nil, domain: Domain? = nil) {
        self.name = name; self.type = type; self.alias = alias; self.nullable = nullable
        self.editable = editable; self.length = length; self.defaultValue = defaultValue; self.domain = domain
    }
}
