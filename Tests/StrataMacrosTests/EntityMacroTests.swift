import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacrosGenericTestSupport
import StrataMacros
import Testing

private let macros: [String: MacroSpec] = [
    "Entity": MacroSpec(type: EntityMacro.self, conformances: ["Entity"]),
    "Transient": MacroSpec(type: PropertyMarkerMacro.self),
    "Renamed": MacroSpec(type: PropertyMarkerMacro.self),
    "Backlink": MacroSpec(type: PropertyMarkerMacro.self),
    "Index": MacroSpec(type: PropertyMarkerMacro.self),
    "DeleteRule": MacroSpec(type: PropertyMarkerMacro.self),
]

/// Expands `source` and compares with `expanded` and the expected diagnostics.
private func expect(_ source: String, expandsTo expanded: String, diagnostics: [DiagnosticSpec] = [],
                    sourceLocation: SourceLocation = #_sourceLocation) {
    assertMacroExpansion(source, expandedSource: expanded, diagnostics: diagnostics, macroSpecs: macros,
                         failureHandler: { Issue.record("\($0.message)", sourceLocation: sourceLocation) })
}

/// Expects exactly one diagnostic with `message`, and no generated code.
private func expect(_ source: String, expanded: String? = nil, diagnoses message: String, line: Int = 1, column: Int = 1,
                    sourceLocation: SourceLocation = #_sourceLocation) {
    assertMacroExpansion(source, expandedSource: expanded ?? String(source.split(separator: "\n", maxSplits: 1)[1]),
                         diagnostics: [DiagnosticSpec(message: message, line: line, column: column)],
                         macroSpecs: macros,
                         failureHandler: { Issue.record("\($0.message)", sourceLocation: sourceLocation) })
}

@Suite struct EntityMacroTests {
    @Test func classWithTransientOptionalAndRename() {
        expect("""
            @Entity
            final class Customer {
                var id: Id = 0
                var name: String = ""
                @Renamed(from: "mail") var email: String? = nil
                @Transient var scratch = 0
                var computed: Int { 1 }
                static var shared = 0
            }
            """, expandsTo: """
            final class Customer {
                @exclusivity(unchecked)
                var id: Id = 0
                @Strata._StrataDescriptor("Customer", "", "name:field:0") @exclusivity(unchecked)
                var name: String = ""
                @Strata._StrataDescriptor("Customer", "", "email:field:1") @exclusivity(unchecked) var email: String? = nil
                var scratch = 0
                var computed: Int { 1 }
                static var shared = 0
            }

            extension Customer: Strata.Entity {
                static var _strataEntityName: String {
                    "Customer"
                }
                var _strataId: Strata.Id {
                    get {
                        id
                    }
                    set {
                        id = newValue
                    }
                }
                static var _strataSchema: Strata.EntitySchema {
                    Strata.EntitySchema(name: _strataEntityName, properties: [
                        Strata.PropertySchema(name: "name", keyPath: \\Customer.name),
                        Strata.PropertySchema(name: "email", keyPath: \\Customer.email, renamedFrom: "mail"),
                    ])
                }
                func _strataEncode(to writer: inout Strata.ObjectWriter) {
                    writer.write(self.name, field: 0)
                    writer.write(self.email, field: 1)
                }
                static func _strataDecode(id: Strata.Id, from reader: inout Strata.ObjectReader) throws -> Customer {
                    let object = Customer()
                    object._strataId = id
                    while let field = try reader.nextField() {
                        switch field {
                        case 0:
                            object.name = try reader.read()
                        case 1:
                            object.email = try reader.read()
                        default:
                            break
                        }
                    }
                    return object
                }
                func _strataVisitRelations(_ visitor: inout Strata.RelationVisitor) throws {
                }
            }
            """)
    }

    @Test func publicStructWithOwnInitializerGetsInitAndName() {
        expect("""
            @Entity(name: "Memo")
            public struct Note {
                public var id: Id = 0
                public var text = ""
                public init(text: String) { self.text = text }
            }
            """, expandsTo: """
            public struct Note {
                public var id: Id = 0
                @Strata._StrataDescriptor("Note", "public ", "text:field:0")
                public var text = ""
                public init(text: String) { self.text = text }

                public init() {
                }
            }

            extension Note: Strata.Entity {
                public static var _strataEntityName: String {
                    "Memo"
                }
                public var _strataId: Strata.Id {
                    get {
                        id
                    }
                    set {
                        id = newValue
                    }
                }
                public static var _strataSchema: Strata.EntitySchema {
                    Strata.EntitySchema(name: _strataEntityName, properties: [
                        Strata.PropertySchema(name: "text", keyPath: \\Note.text),
                    ])
                }
                public func _strataEncode(to writer: inout Strata.ObjectWriter) {
                    writer.write(self.text, field: 0)
                }
                public static func _strataDecode(id: Strata.Id, from reader: inout Strata.ObjectReader) throws -> Note {
                    var object = Note()
                    object._strataId = id
                    while let field = try reader.nextField() {
                        switch field {
                        case 0:
                            object.text = try reader.read()
                        default:
                            break
                        }
                    }
                    return object
                }
                public func _strataVisitRelations(_ visitor: inout Strata.RelationVisitor) throws {
                }
            }
            """)
    }

    /// The macro marks stored properties `@exclusivity(unchecked)`, except where the app chose the
    /// check itself or the property has observers (whose accesses call the app's code).
    @Test func aUserWrittenInitIsNeverDuplicatedNorTheAppsExclusivity() {
        expect("""
            @Entity
            final class Tag {
                @exclusivity(checked) var id: Id = 0
                var label: String {
                    didSet { print(label) }
                }
                init(label: String = "") { self.label = label }
            }
            """, expandsTo: """
            final class Tag {
                @exclusivity(checked) var id: Id = 0
                @Strata._StrataDescriptor("Tag", "", "label:field:0")
                var label: String {
                    didSet { print(label) }
                }
                init(label: String = "") { self.label = label }
            }

            extension Tag: Strata.Entity {
                static var _strataEntityName: String {
                    "Tag"
                }
                var _strataId: Strata.Id {
                    get {
                        id
                    }
                    set {
                        id = newValue
                    }
                }
                static var _strataSchema: Strata.EntitySchema {
                    Strata.EntitySchema(name: _strataEntityName, properties: [
                        Strata.PropertySchema(name: "label", keyPath: \\Tag.label),
                    ])
                }
                func _strataEncode(to writer: inout Strata.ObjectWriter) {
                    writer.write(self.label, field: 0)
                }
                static func _strataDecode(id: Strata.Id, from reader: inout Strata.ObjectReader) throws -> Tag {
                    let object = Tag()
                    object._strataId = id
                    while let field = try reader.nextField() {
                        switch field {
                        case 0:
                            object.label = try reader.read()
                        default:
                            break
                        }
                    }
                    return object
                }
                func _strataVisitRelations(_ visitor: inout Strata.RelationVisitor) throws {
                }
            }
            """)
    }

    @Test func missingId() {
        expect("@Entity\nstruct A {\n    var name = \"\"\n}",
               diagnoses: "@Entity type 'A' needs an id property: add 'var id: Id = 0'")
    }

    @Test func idOfTheWrongType() {
        expect("@Entity\nstruct A {\n    var id = 0\n}",
               diagnoses: "the id property must be declared as 'var id: Id = 0' (Id is UInt64) or 'var id: EntityId<A> = 0'", line: 3, column: 9)
    }

    /// A typed id: the store's id is its raw value; a class names itself (no `Self` in a class's
    /// stored property).
    @Test func typedIds() {
        expect("@Entity\nstruct A {\n    var id: EntityId<Self> = 0\n}", expandsTo: """
            struct A {
                var id: EntityId<Self> = 0
            }

            extension A: Strata.Entity {
                static var _strataEntityName: String {
                    "A"
                }
                var _strataId: Strata.Id {
                    get {
                        id.rawValue
                    }
                    set {
                        id = Strata.EntityId(newValue)
                    }
                }
                static var _strataSchema: Strata.EntitySchema {
                    Strata.EntitySchema(name: _strataEntityName, properties: [

                    ])
                }
                func _strataEncode(to writer: inout Strata.ObjectWriter) {

                }
                static func _strataDecode(id: Strata.Id, from reader: inout Strata.ObjectReader) throws -> A {
                    var object = A()
                    object._strataId = id
                    while try reader.nextField() != nil {
                    }
                    return object
                }
                func _strataVisitRelations(_ visitor: inout Strata.RelationVisitor) throws {
                }
            }
            """)
        expect("@Entity\nfinal class B {\n    var id: EntityId<Self> = 0\n}",
               expanded: "final class B {\n    var id: EntityId<Self> = 0\n}",
               diagnoses: "the id property must be declared as 'var id: Id = 0' (Id is UInt64) or 'var id: EntityId<B> = 0'", line: 3, column: 9)
    }

    @Test func letIdAndLetProperty() {
        expect("@Entity\nstruct A {\n    let id: Id = 0\n}", diagnoses: "the id property must be a 'var': put assigns it",
               line: 3, column: 5)
        expect("@Entity\nstruct A {\n    var id: Id = 0\n    let name = \"\"\n}",
               diagnoses: "stored property 'name' is a 'let': the store sets properties when it reads an object; make it a 'var' or mark it @Transient",
               line: 4, column: 9)
    }

    @Test func unsupportedTypes() {
        // Arrays, sets and dictionaries are Codable values now: the type checker decides.
        for type in ["(Int, Int)", "Int??", "() -> Void", "Any", "Int!"] {
            expect("@Entity\nstruct A {\n    init() {}\n    var id: Id = 0\n    var x: \(type)\n}",
                   diagnoses: "property 'x' has type '\(type)', which Strata cannot store; use Bool, Int, Int8…Int64, UInt8…UInt64, Float, Double, String, Date, Data, [UInt8], UUID, URL, Decimal, a RawRepresentable enum over those, any Codable value (arrays, sets, dictionaries, your own structs), or an optional of one, or mark it @Transient",
                   line: 5, column: 12)
        }
    }

    @Test func propertyWithoutDefault() {
        expect("@Entity\nstruct A {\n    var id: Id = 0\n    var name: String\n}",
               diagnoses: "stored property 'name' needs a default value (objects stored before it existed read it as that default), or the type needs an 'init()'",
               line: 4, column: 9)
    }

    @Test func caseInsensitiveIndexNeedsALiteral() {
        expect("@Entity\nstruct A {\n    var id: Id = 0\n    @Index(caseInsensitive: folded) var name = \"\"\n}",
               expanded: "struct A {\n    var id: Id = 0\n    var name = \"\"\n}",
               diagnoses: "@Index(caseInsensitive:) needs the literal true or false", line: 4, column: 29)
    }

    @Test func compositeIndexNamesAnotherStoredProperty() {
        expect("@Entity\nstruct A {\n    var id: Id = 0\n    @Index(with: \\A.missing) var name = \"\"\n}",
               expanded: "struct A {\n    var id: Id = 0\n    var name = \"\"\n}",
               diagnoses: "the composite index of 'name' names 'missing', which is not another stored property or to-one of the type")
    }

    @Test func lazyProperty() {
        expect("@Entity\nstruct A {\n    var id: Id = 0\n    lazy var name = \"\"\n}",
               diagnoses: "lazy property 'name' cannot be stored; mark it @Transient", line: 4, column: 14)
    }

    @Test func severalStoredPropertiesInOneDeclaration() {
        expect("@Entity\nstruct A {\n    var id: Id = 0\n    var x = 0, y = 0\n}",
               diagnoses: "declare each stored property in its own 'var' ('var a = 0' then 'var b = 0'): @Entity attaches a query descriptor to each declaration",
               line: 4, column: 5)
    }

    @Test func nonFinalClassGenericTypeAndEnum() {
        expect("@Entity\nclass A {\n    var id: Id = 0\n}",
               diagnoses: "@Entity class 'A' must be final: the store creates instances of exactly this class",
               line: 2, column: 7)
        expect("@Entity\nstruct A<T> {\n    var id: Id = 0\n}",
               diagnoses: "@Entity type 'A' cannot be generic: the store needs one schema per entity", line: 2, column: 8)
        expect("@Entity\nenum A {\n    case a\n}", diagnoses: "@Entity applies to a final class or a struct")
    }

    @Test func badRenameAndEntityName() {
        expect("@Entity\nstruct A {\n    var id: Id = 0\n    @Renamed(from: x) var name = \"\"\n}",
               expanded: "struct A {\n    var id: Id = 0\n    var name = \"\"\n}",
               diagnoses: "@Renamed needs the old name as a string literal: @Renamed(from: \"oldName\")", line: 4, column: 5)
        expect("@Entity(name: \"\")\nstruct A {\n    var id: Id = 0\n}",
               diagnoses: "@Entity takes name: \"…\" (a non-empty string literal) and embedded: true or false", line: 1, column: 9)
    }

    @Test func twoPropertiesClaimingOneStoredName() {
        expect("@Entity\nstruct A {\n    var id: Id = 0\n    var a = 0\n    @Renamed(from: \"a\") var b = 0\n}",
               expanded: "struct A {\n    var id: Id = 0\n    var a = 0\n    var b = 0\n}",
               diagnoses: "two properties claim the stored name 'a'")
    }

    @Test func relationsAndBacklinks() {
        expect("""
            @Entity
            final class Customer {
                var id: Id = 0
                var best: ToOne<Order> = nil
                var favorites: ToMany<Order> = nil
                @Backlink(\\Order.customer) var orders: ToMany<Order> = nil
            }
            """, expandsTo: """
            final class Customer {
                @exclusivity(unchecked)
                var id: Id = 0
                @Strata._StrataDescriptor("Customer", "", "best:field:0") @exclusivity(unchecked)
                var best: ToOne<Order> = nil
                @Strata._StrataDescriptor("Customer", "", "favorites:field:1") @exclusivity(unchecked)
                var favorites: ToMany<Order> = nil
                @Strata._StrataDescriptor("Customer", "", "orders:backlink:0") @exclusivity(unchecked) var orders: ToMany<Order> = nil
            }

            extension Customer: Strata.Entity {
                static var _strataEntityName: String {
                    "Customer"
                }
                var _strataId: Strata.Id {
                    get {
                        id
                    }
                    set {
                        id = newValue
                    }
                }
                static var _strataSchema: Strata.EntitySchema {
                    Strata.EntitySchema(name: _strataEntityName, properties: [
                        Strata.PropertySchema(name: "best", keyPath: \\Customer.best),
                        Strata.PropertySchema(name: "favorites", keyPath: \\Customer.favorites),
                    ], backlinks: [
                        Strata.BacklinkSchema(name: "orders", keyPath: \\Customer.orders, sourceProperty: "customer"),
                    ])
                }
                func _strataEncode(to writer: inout Strata.ObjectWriter) {
                    writer.write(self.best, field: 0)
                }
                static func _strataDecode(id: Strata.Id, from reader: inout Strata.ObjectReader) throws -> Customer {
                    let object = Customer()
                    object._strataId = id
                    while let field = try reader.nextField() {
                        switch field {
                        case 0:
                            try reader.read(object.best)
                        default:
                            break
                        }
                    }
                    reader.attach(object.favorites, field: 1)
                    reader.attach(object.orders, backlink: 0)
                    return object
                }
                func _strataVisitRelations(_ visitor: inout Strata.RelationVisitor) throws {
                    try visitor.visit(self.best, field: 0)
                    try visitor.visit(self.favorites, field: 1)
                    try visitor.visit(self.orders, backlink: 0)
                }
            }
            """)
    }

    /// `@DeleteRule` reaches the schema of to-ones, to-manys and backlinks.
    @Test func deleteRulesGoIntoTheSchema() {
        expect("""
            @Entity
            final class Customer {
                var id: Id = 0
                @DeleteRule(.deny) var best: ToOne<Order> = nil
                @DeleteRule(DeleteRule.nullify) var favorites: ToMany<Order> = nil
                @DeleteRule(.cascade) @Backlink(\\Order.customer) var orders: ToMany<Order> = nil
            }
            """, expandsTo: """
            final class Customer {
                @exclusivity(unchecked)
                var id: Id = 0
                @Strata._StrataDescriptor("Customer", "", "best:field:0") @exclusivity(unchecked) var best: ToOne<Order> = nil
                @Strata._StrataDescriptor("Customer", "", "favorites:field:1") @exclusivity(unchecked) var favorites: ToMany<Order> = nil
               \u{20}
                @Strata._StrataDescriptor("Customer", "", "orders:backlink:0") @exclusivity(unchecked) var orders: ToMany<Order> = nil
            }

            extension Customer: Strata.Entity {
                static var _strataEntityName: String {
                    "Customer"
                }
                var _strataId: Strata.Id {
                    get {
                        id
                    }
                    set {
                        id = newValue
                    }
                }
                static var _strataSchema: Strata.EntitySchema {
                    Strata.EntitySchema(name: _strataEntityName, properties: [
                        Strata.PropertySchema(name: "best", keyPath: \\Customer.best, deleteRule: .deny),
                        Strata.PropertySchema(name: "favorites", keyPath: \\Customer.favorites, deleteRule: .nullify),
                    ], backlinks: [
                        Strata.BacklinkSchema(name: "orders", keyPath: \\Customer.orders, sourceProperty: "customer", deleteRule: .cascade),
                    ])
                }
                func _strataEncode(to writer: inout Strata.ObjectWriter) {
                    writer.write(self.best, field: 0)
                }
                static func _strataDecode(id: Strata.Id, from reader: inout Strata.ObjectReader) throws -> Customer {
                    let object = Customer()
                    object._strataId = id
                    while let field = try reader.nextField() {
                        switch field {
                        case 0:
                            try reader.read(object.best)
                        default:
                            break
                        }
                    }
                    reader.attach(object.favorites, field: 1)
                    reader.attach(object.orders, backlink: 0)
                    return object
                }
                func _strataVisitRelations(_ visitor: inout Strata.RelationVisitor) throws {
                    try visitor.visit(self.best, field: 0)
                    try visitor.visit(self.favorites, field: 1)
                    try visitor.visit(self.orders, backlink: 0)
                }
            }
            """)
    }

    @Test func badDeleteRules() {
        expect("@Entity\nstruct A {\n    var id: Id = 0\n    @DeleteRule(.cascade) var name = \"\"\n}",
               expanded: "struct A {\n    var id: Id = 0\n    var name = \"\"\n}",
               diagnoses: "@DeleteRule applies to a relation: a ToOne, a ToMany or a @Backlink", line: 4, column: 5)
        expect("@Entity\nstruct A {\n    var id: Id = 0\n    @DeleteRule(rule) var b: ToOne<B> = nil\n}",
               expanded: "struct A {\n    var id: Id = 0\n    var b: ToOne<B> = nil\n}",
               diagnoses: "@DeleteRule takes one of .nullify, .cascade or .deny, written as a literal: @DeleteRule(.cascade)", line: 4, column: 5)
        expect("@Entity\nstruct A {\n    var id: Id = 0\n    @DeleteRule(.destroy) var b: ToOne<B> = nil\n}",
               expanded: "struct A {\n    var id: Id = 0\n    var b: ToOne<B> = nil\n}",
               diagnoses: "@DeleteRule takes one of .nullify, .cascade or .deny, written as a literal: @DeleteRule(.cascade)", line: 4, column: 5)
    }

    @Test func badBacklinks() {
        expect("@Entity\nstruct A {\n    var id: Id = 0\n    @Backlink(\\B.a) var bs: [UInt8] = []\n}",
               expanded: "struct A {\n    var id: Id = 0\n    var bs: [UInt8] = []\n}",
               diagnoses: "@Backlink property 'bs' must be declared as 'ToMany<Source>'", line: 4, column: 5)
        expect("@Entity\nstruct A {\n    var id: Id = 0\n    @Backlink(\\C.a) var bs: ToMany<B> = nil\n}",
               expanded: "struct A {\n    var id: Id = 0\n    var bs: ToMany<B> = nil\n}",
               diagnoses: "@Backlink of 'bs' starts at 'C' but the property holds ToMany<B>", line: 4, column: 5)
        expect("@Entity\nstruct A {\n    var id: Id = 0\n    @Backlink(x) var bs: ToMany<B> = nil\n}",
               expanded: "struct A {\n    var id: Id = 0\n    var bs: ToMany<B> = nil\n}",
               diagnoses: "@Backlink needs a key path to the relation it reverses: @Backlink(\\Order.customer)", line: 4, column: 5)
    }
}

@Suite struct DescriptorMacroTests {
    @Test func declaresTheDescriptorWithTheOwnersAccess() {
        assertMacroExpansion("""
            @_StrataDescriptor("Pair", "public ", "left:field:0")
            public var left = 0
            @_StrataDescriptor("Pair", "", "children:backlink:2")
            var children: ToMany<Pair> = nil
            """, expandedSource: """
            public var left = 0

            public static let `left` = Strata.Property(\\Pair.`left`, field: 0, name: "left")
            var children: ToMany<Pair> = nil

            static let `children` = Strata.Property(\\Pair.`children`, backlink: 2, name: "children")
            """, macroSpecs: ["_StrataDescriptor": MacroSpec(type: DescriptorMacro.self)],
            failureHandler: { Issue.record("\($0.message)") })
    }
}
