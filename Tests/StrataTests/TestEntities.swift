import Foundation
import Strata

@Entity
final class Customer {
    var id: Id = 0
    var name: String = ""
    var email: String? = nil
    @Transient var scratch = 0

    init(name: String, email: String? = nil) {
        self.name = name
        self.email = email
    }
}

@Entity
struct Note {
    var id: Id = 0
    var text = ""
}

enum Priority: Int {
    case low = 0, high = 7
}

enum Mood: String {
    case happy, grumpy
}

/// One property of every supported type, optionals included.
@Entity
struct Everything: Equatable {
    var id: Id = 0
    var bool = false
    var int = 0
    var int8: Int8 = 0
    var int16: Int16 = 0
    var int32: Int32 = 0
    var int64: Int64 = 0
    var uint: UInt = 0
    var uint8: UInt8 = 0
    var uint16: UInt16 = 0
    var uint32: UInt32 = 0
    var uint64: UInt64 = 0
    var float: Float = 0
    var double = 0.0
    var string = ""
    var date = Date(timeIntervalSince1970: 0)
    var data = Data()
    var bytes: [UInt8] = []
    var priority = Priority.low
    var mood: Mood = .happy
    var optionalBool: Bool? = nil
    var optionalInt: Int? = nil
    var optionalInt8: Int8? = nil
    var optionalUInt64: UInt64? = nil
    var optionalFloat: Float? = nil
    var optionalDouble: Double? = nil
    var optionalString: String? = nil
    var optionalDate: Date? = nil
    var optionalData: Data? = nil
    var optionalBytes: [UInt8]? = nil
    var optionalPriority: Priority? = nil
    var optionalMood: Mood? = .grumpy

    /// Equality that treats NaN as equal to NaN, bit for bit.
    static func == (a: Everything, b: Everything) -> Bool {
        a.id == b.id && a.bool == b.bool && a.int == b.int && a.int8 == b.int8 && a.int16 == b.int16
            && a.int32 == b.int32 && a.int64 == b.int64 && a.uint == b.uint && a.uint8 == b.uint8
            && a.uint16 == b.uint16 && a.uint32 == b.uint32 && a.uint64 == b.uint64
            && a.float.bitPattern == b.float.bitPattern && a.double.bitPattern == b.double.bitPattern
            && a.string == b.string && a.date == b.date && a.data == b.data && a.bytes == b.bytes
            && a.priority == b.priority && a.mood == b.mood && a.optionalBool == b.optionalBool
            && a.optionalInt == b.optionalInt && a.optionalInt8 == b.optionalInt8
            && a.optionalUInt64 == b.optionalUInt64 && a.optionalFloat?.bitPattern == b.optionalFloat?.bitPattern
            && a.optionalDouble?.bitPattern == b.optionalDouble?.bitPattern && a.optionalString == b.optionalString
            && a.optionalDate == b.optionalDate && a.optionalData == b.optionalData
            && a.optionalBytes == b.optionalBytes && a.optionalPriority == b.optionalPriority
            && a.optionalMood == b.optionalMood
    }
}
