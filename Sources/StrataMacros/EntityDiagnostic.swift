import SwiftDiagnostics

/// Every declaration error `@Entity` reports, with the message the user sees.
enum EntityDiagnostic: DiagnosticMessage {
    case notClassOrStruct
    case classNotFinal(String)
    case generic(String)
    case missingId(String)
    case idWrongType(String)
    case idIsLet
    case letProperty(String)
    case lazyProperty(String)
    case noDefault(String)
    case unsupportedType(property: String, type: String)
    case unsupportedPattern
    case multipleBindings
    case indexOnNonValue(String)
    case nonLiteralIndexOption
    case indexComponentArgument
    case unknownIndexComponent(property: String, component: String)
    case markerOnNonProperty(String)
    case renamedArgument
    case entityNameArgument
    case embeddedArgument
    case duplicateRename(String)
    case backlinkNotToMany(String)
    case backlinkArgument
    case deleteRuleArgument
    case deleteRuleOnNonRelation
    case backlinkRootMismatch(property: String, root: String, element: String)

    var message: String {
        switch self {
        case .notClassOrStruct:
            "@Entity applies to a final class or a struct"
        case let .classNotFinal(name):
            "@Entity class '\(name)' must be final: the store creates instances of exactly this class"
        case let .generic(name):
            "@Entity type '\(name)' cannot be generic: the store needs one schema per entity"
        case let .missingId(name):
            "@Entity type '\(name)' needs an id property: add 'var id: Id = 0'"
        case let .idWrongType(typeName):
            "the id property must be declared as 'var id: Id = 0' (Id is UInt64) or 'var id: EntityId<\(typeName)> = 0'"
        case .idIsLet:
            "the id property must be a 'var': put assigns it"
        case let .letProperty(name):
            "stored property '\(name)' is a 'let': the store sets properties when it reads an object; make it a 'var' or mark it @Transient"
        case let .lazyProperty(name):
            "lazy property '\(name)' cannot be stored; mark it @Transient"
        case let .noDefault(name):
            "stored property '\(name)' needs a default value (objects stored before it existed read it as that default), or the type needs an 'init()'"
        case let .unsupportedType(property, type):
            "property '\(property)' has type '\(type)', which Strata cannot store; use Bool, Int, Int8…Int64, UInt8…UInt64, Float, Double, String, Date, Data, [UInt8], UUID, URL, Decimal, a RawRepresentable enum over those, any Codable value (arrays, sets, dictionaries, your own structs), or an optional of one, or mark it @Transient"
        case .unsupportedPattern:
            "declare one stored property per name ('var a = 0'); tuple patterns cannot be stored"
        case let .indexOnNonValue(name):
            "@\(name) applies to a stored value property; relations are looked up through their edges already"
        case .nonLiteralIndexOption:
            "@Index(caseInsensitive:) needs the literal true or false"
        case .indexComponentArgument:
            "@Index(with:) takes key paths to other stored properties of the type: @Index(with: \\Order.date)"
        case let .unknownIndexComponent(property, component):
            "the composite index of '\(property)' names '\(component)', which is not another stored property or to-one of the type"
        case .multipleBindings:
            "declare each stored property in its own 'var' ('var a = 0' then 'var b = 0'): @Entity attaches a query descriptor to each declaration"
        case let .markerOnNonProperty(name):
            "@\(name) applies to a stored property of an @Entity type"
        case .renamedArgument:
            "@Renamed needs the old name as a string literal: @Renamed(from: \"oldName\")"
        case .entityNameArgument:
            "@Entity takes name: \"…\" (a non-empty string literal) and embedded: true or false"
        case .embeddedArgument:
            "@Entity(embedded:) needs the literal true or false"
        case let .duplicateRename(name):
            "two properties claim the stored name '\(name)'"
        case let .backlinkNotToMany(name):
            "@Backlink property '\(name)' must be declared as 'ToMany<Source>'"
        case .backlinkArgument:
            "@Backlink needs a key path to the relation it reverses: @Backlink(\\Order.customer)"
        case .deleteRuleArgument:
            "@DeleteRule takes one of .nullify, .cascade or .deny, written as a literal: @DeleteRule(.cascade)"
        case .deleteRuleOnNonRelation:
            "@DeleteRule applies to a relation: a ToOne, a ToMany or a @Backlink"
        case let .backlinkRootMismatch(property, root, element):
            "@Backlink of '\(property)' starts at '\(root)' but the property holds ToMany<\(element)>"
        }
    }

    var diagnosticID: MessageID {
        let id: String = switch self {
        case .notClassOrStruct: "notClassOrStruct"
        case .classNotFinal: "classNotFinal"
        case .generic: "generic"
        case .missingId: "missingId"
        case .idWrongType: "idWrongType"
        case .idIsLet: "idIsLet"
        case .letProperty: "letProperty"
        case .lazyProperty: "lazyProperty"
        case .noDefault: "noDefault"
        case .unsupportedType: "unsupportedType"
        case .unsupportedPattern: "unsupportedPattern"
        case .multipleBindings: "multipleBindings"
        case .indexOnNonValue: "indexOnNonValue"
        case .nonLiteralIndexOption: "nonLiteralIndexOption"
        case .indexComponentArgument: "indexComponentArgument"
        case .unknownIndexComponent: "unknownIndexComponent"
        case .markerOnNonProperty: "markerOnNonProperty"
        case .renamedArgument: "renamedArgument"
        case .entityNameArgument: "entityNameArgument"
        case .embeddedArgument: "embeddedArgument"
        case .duplicateRename: "duplicateRename"
        case .backlinkNotToMany: "backlinkNotToMany"
        case .backlinkArgument: "backlinkArgument"
        case .deleteRuleArgument: "deleteRuleArgument"
        case .deleteRuleOnNonRelation: "deleteRuleOnNonRelation"
        case .backlinkRootMismatch: "backlinkRootMismatch"
        }
        return MessageID(domain: "Strata", id: id)
    }

    var severity: DiagnosticSeverity { .error }
}
