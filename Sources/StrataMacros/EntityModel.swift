import SwiftDiagnostics
import SwiftSyntax

/// What `@Entity` learned from a declaration: everything the generated code needs, or the
/// diagnostics that explain why nothing can be generated.
struct EntityModel {
    enum Kind { case finalClass, structure }

    struct StoredProperty {
        enum Kind: Equatable {
            /// A value stored in the object's bytes (scalars, enums, optionals).
            case value
            /// A `ToOne`: the target's id in the object's bytes, plus a backlink edge.
            case toOne
            /// A standalone `ToMany`: edges only, nothing in the object's bytes.
            case toMany
            /// A `@Backlink` view over another entity's relation; not stored at all.
            case backlink(sourceType: String, sourceProperty: String)
        }

        /// The Swift name.
        var name: String
        /// "index", "unique", "caseInsensitive" or nil, from `@Index` / `@Unique`.
        var index: String? = nil
        /// The name the property was stored under before a rename, from `@Renamed(from:)`.
        var renamedFrom: String?
        var kind: Kind = .value
        /// The later components of a composite index, from `@Index(with:)`.
        var indexWith: [String] = []
        /// "cascade", "deny" or "nullify" from `@DeleteRule(…)` on a relation; nil without one.
        var deleteRule: String? = nil
    }

    var typeName: String
    var entityName: String
    /// `@Entity(embedded: true)`: owned by one parent, removed with it.
    var isEmbedded = false
    var kind: Kind
    /// "public ", "package " or "": generated members match the type's own access.
    var accessPrefix: String
    /// Stored properties in declaration order, without `id`.
    var properties: [StoredProperty]
    /// `id` is an `EntityId<…>` (else an `Id`).
    var idIsTyped = false
    /// The type declares initializers but none callable without arguments: the macro adds `init()`.
    var needsNoArgumentInit: Bool

    /// Reads `declaration`; returns nil and fills `diagnostics` when it cannot be an entity.
    static func analyze(attribute: AttributeSyntax, declaration: some DeclGroupSyntax,
                        diagnostics: inout [Diagnostic]) -> EntityModel? {
        let typeName: String
        let kind: Kind
        let modifiers: DeclModifierListSyntax
        if let c = declaration.as(ClassDeclSyntax.self) {
            typeName = c.name.text
            kind = .finalClass
            modifiers = c.modifiers
            if !c.modifiers.contains(where: { $0.name.tokenKind == .keyword(.final) }) {
                diagnostics.append(Diagnostic(node: c.name, message: EntityDiagnostic.classNotFinal(typeName)))
            }
            if c.genericParameterClause != nil {
                diagnostics.append(Diagnostic(node: c.name, message: EntityDiagnostic.generic(typeName)))
            }
        } else if let s = declaration.as(StructDeclSyntax.self) {
            typeName = s.name.text
            kind = .structure
            modifiers = s.modifiers
            if s.genericParameterClause != nil {
                diagnostics.append(Diagnostic(node: s.name, message: EntityDiagnostic.generic(typeName)))
            }
        } else {
            diagnostics.append(Diagnostic(node: attribute, message: EntityDiagnostic.notClassOrStruct))
            return nil
        }

        var entityName = typeName
        var isEmbedded = false
        if case let .argumentList(args)? = attribute.arguments {
            for argument in args {
                switch argument.label?.text {
                case "name":
                    if let literal = stringLiteral(argument.expression), !literal.isEmpty {
                        entityName = literal
                    } else {
                        diagnostics.append(Diagnostic(node: argument, message: EntityDiagnostic.entityNameArgument))
                    }
                case "embedded":
                    if let literal = argument.expression.as(BooleanLiteralExprSyntax.self) {
                        isEmbedded = literal.literal.tokenKind == .keyword(.true)
                    } else {
                        diagnostics.append(Diagnostic(node: argument, message: EntityDiagnostic.embeddedArgument))
                    }
                default:
                    diagnostics.append(Diagnostic(node: argument, message: EntityDiagnostic.entityNameArgument))
                }
            }
        }

        let accessPrefix: String =
            if modifiers.contains(where: { [.keyword(.public), .keyword(.open)].contains($0.name.tokenKind) }) {
                "public "
            } else if modifiers.contains(where: { $0.name.tokenKind == .keyword(.package) }) {
                "package "
            } else {
                ""
            }

        // Initializers: decoding calls `init()`, so one must exist; the macro adds it only
        // where the user's own initializers hide the implicit one.
        var hasDesignatedInit = false
        var hasNoArgumentInit = false
        for member in declaration.memberBlock.members {
            guard let initializer = member.decl.as(InitializerDeclSyntax.self) else { continue }
            let isConvenience = initializer.modifiers.contains { $0.name.tokenKind == .keyword(.convenience) }
            if kind == .structure || !isConvenience { hasDesignatedInit = true }
            if initializer.signature.parameterClause.parameters.allSatisfy({ $0.defaultValue != nil }) {
                hasNoArgumentInit = true
            }
        }

        var properties: [StoredProperty] = []
        var sawId = false
        var idIsTyped = false
        for member in declaration.memberBlock.members {
            guard let variable = member.decl.as(VariableDeclSyntax.self) else { continue }
            if variable.modifiers.contains(where: { [.keyword(.static), .keyword(.class)].contains($0.name.tokenKind) }) {
                continue
            }
            let isTransient = hasAttribute(variable, named: "Transient")
            let isLet = variable.bindingSpecifier.tokenKind == .keyword(.let)
            let isLazy = variable.modifiers.contains { $0.name.tokenKind == .keyword(.lazy) }
            let indexAttribute = findAttribute(variable, named: "Unique") ?? findAttribute(variable, named: "Index")
            var indexKind = indexAttribute.map { $0.attributeName.trimmedDescription.hasSuffix("Unique") ? "unique" : "index" }
            if indexKind == "index", let arguments = indexAttribute?.arguments?.as(LabeledExprListSyntax.self),
               let folded = arguments.first(where: { $0.label?.text == "caseInsensitive" }) {
                // Only a literal says at compile time which index the store keeps.
                guard let literal = folded.expression.as(BooleanLiteralExprSyntax.self) else {
                    diagnostics.append(Diagnostic(node: folded.expression, message: EntityDiagnostic.nonLiteralIndexOption))
                    continue
                }
                if literal.literal.tokenKind == .keyword(.true) { indexKind = "caseInsensitive" }
            }
            // `@Index(with: \Order.date, \Order.status)`: the names of the later components.
            var indexWith: [String] = []
            if indexKind == "index", let arguments = indexAttribute?.arguments?.as(LabeledExprListSyntax.self),
               let start = arguments.firstIndex(where: { $0.label?.text == "with" }) {
                var bad = false
                for (k, argument) in arguments[start...].enumerated() {
                    if k > 0 && argument.label != nil { break }
                    guard let keyPath = argument.expression.as(KeyPathExprSyntax.self), keyPath.components.count == 1,
                          let component = keyPath.components.first?.component.as(KeyPathPropertyComponentSyntax.self) else {
                        diagnostics.append(Diagnostic(node: argument.expression, message: EntityDiagnostic.indexComponentArgument))
                        bad = true
                        break
                    }
                    indexWith.append(component.declName.baseName.text)
                }
                if bad { continue }
            }
            if let indexAttribute {
                let type = variable.bindings.first?.typeAnnotation?.type
                // A to-one may lead a composite index (by its target's id); on its own it needs no
                // index: its lookups use the edges.
                if isTransient || findAttribute(variable, named: "Backlink") != nil
                    || (type.map { (isToOne($0) && indexWith.isEmpty) || toManyElementType($0) != nil } ?? false) {
                    diagnostics.append(Diagnostic(node: indexAttribute, message: EntityDiagnostic.indexOnNonValue(indexAttribute.attributeName.trimmedDescription)))
                    continue
                }
            }
            if !isTransient && variable.bindings.filter({ !isComputed($0) }).count > 1 {
                diagnostics.append(Diagnostic(node: variable.bindingSpecifier, message: EntityDiagnostic.multipleBindings))
                continue
            }
            // `@DeleteRule(.cascade)`: a literal case, on a relation (checked below).
            var deleteRule: String?
            let deleteRuleAttribute = findAttribute(variable, named: "DeleteRule")
            if let deleteRuleAttribute {
                let cases = ["nullify", "cascade", "deny"]
                guard case let .argumentList(args)? = deleteRuleAttribute.arguments, args.count == 1, args.first?.label == nil,
                      let member = args.first?.expression.as(MemberAccessExprSyntax.self),
                      member.base == nil || ["DeleteRule", "Strata.DeleteRule"].contains(member.base!.trimmedDescription),
                      cases.contains(member.declName.baseName.text) else {
                    diagnostics.append(Diagnostic(node: deleteRuleAttribute, message: EntityDiagnostic.deleteRuleArgument))
                    continue
                }
                deleteRule = member.declName.baseName.text
                let type = variable.bindings.first?.typeAnnotation?.type
                let isRelation = type.map { isToOne($0) || toManyElementType($0) != nil } ?? false
                if isTransient || !isRelation {
                    diagnostics.append(Diagnostic(node: deleteRuleAttribute, message: EntityDiagnostic.deleteRuleOnNonRelation))
                    continue
                }
            }
            var renamedFrom: String?
            if let renamed = findAttribute(variable, named: "Renamed") {
                if case let .argumentList(args)? = renamed.arguments, let first = args.first,
                   first.label?.text == "from", let old = stringLiteral(first.expression), !old.isEmpty {
                    renamedFrom = old
                } else {
                    diagnostics.append(Diagnostic(node: renamed, message: EntityDiagnostic.renamedArgument))
                }
            }
            for binding in variable.bindings {
                if isComputed(binding) { continue }
                guard let pattern = binding.pattern.as(IdentifierPatternSyntax.self) else {
                    if !isTransient { diagnostics.append(Diagnostic(node: binding.pattern, message: EntityDiagnostic.unsupportedPattern)) }
                    continue
                }
                let name = pattern.identifier.text.trimmingCharacters(in: "`")
                let type = binding.typeAnnotation?.type
                if !hasNoArgumentInit && binding.initializer == nil && !(type.map(isOptional) ?? false) && !isLazy {
                    diagnostics.append(Diagnostic(node: binding.pattern, message: EntityDiagnostic.noDefault(name)))
                }
                if isTransient { continue }
                if name == "id" {
                    sawId = true
                    if isLet { diagnostics.append(Diagnostic(node: variable.bindingSpecifier, message: EntityDiagnostic.idIsLet)) }
                    let typeText = (type?.trimmedDescription ?? "").filter { !$0.isWhitespace }
                    // `EntityId<Self>` in a struct; a class names itself (no `Self` in a class's
                    // stored property).
                    let own = kind == .structure ? ["Self", typeName] : [typeName]
                    let typed = own.flatMap { ["EntityId<\($0)>", "Strata.EntityId<\($0)>"] }
                    if typed.contains(typeText) {
                        idIsTyped = true
                    } else if !["Id", "UInt64", "Strata.Id", "Swift.UInt64"].contains(typeText) {
                        diagnostics.append(Diagnostic(node: binding.pattern, message: EntityDiagnostic.idWrongType(typeName)))
                    }
                    continue
                }
                if isLazy {
                    diagnostics.append(Diagnostic(node: binding.pattern, message: EntityDiagnostic.lazyProperty(name)))
                    continue
                }
                if isLet {
                    diagnostics.append(Diagnostic(node: binding.pattern, message: EntityDiagnostic.letProperty(name)))
                    continue
                }
                let toManyElement = type.flatMap(toManyElementType)
                if let backlink = findAttribute(variable, named: "Backlink") {
                    guard let element = toManyElement else {
                        diagnostics.append(Diagnostic(node: backlink, message: EntityDiagnostic.backlinkNotToMany(name)))
                        continue
                    }
                    guard case let .argumentList(args)? = backlink.arguments, args.count == 1,
                          let keyPath = args.first?.expression.as(KeyPathExprSyntax.self),
                          let root = keyPath.root?.trimmedDescription, keyPath.components.count == 1,
                          let component = keyPath.components.first?.component.as(KeyPathPropertyComponentSyntax.self) else {
                        diagnostics.append(Diagnostic(node: backlink, message: EntityDiagnostic.backlinkArgument))
                        continue
                    }
                    guard root == element else {
                        diagnostics.append(Diagnostic(node: backlink, message: EntityDiagnostic.backlinkRootMismatch(property: name, root: root, element: element)))
                        continue
                    }
                    properties.append(StoredProperty(name: name, kind: .backlink(sourceType: root, sourceProperty: component.declName.baseName.text),
                                                     deleteRule: deleteRule))
                    continue
                }
                if type.map(isToOne) ?? false {
                    properties.append(StoredProperty(name: name, index: indexKind, renamedFrom: renamedFrom, kind: .toOne, indexWith: indexWith,
                                                     deleteRule: deleteRule))
                    continue
                }
                if toManyElement != nil {
                    properties.append(StoredProperty(name: name, renamedFrom: renamedFrom, kind: .toMany, deleteRule: deleteRule))
                    continue
                }
                if let type, !isSupported(type) {
                    diagnostics.append(Diagnostic(node: type, message: EntityDiagnostic.unsupportedType(property: name, type: type.trimmedDescription)))
                    continue
                }
                properties.append(StoredProperty(name: name, index: indexKind, renamedFrom: renamedFrom, indexWith: indexWith))
            }
        }
        // The later components of a composite index: stored values or to-ones of this entity.
        for p in properties {
            for component in p.indexWith {
                let target = properties.first { $0.name == component }
                let storable: Bool
                switch target?.kind {
                case .value?, .toOne?: storable = component != p.name
                default: storable = false
                }
                if !storable { diagnostics.append(Diagnostic(node: attribute, message: EntityDiagnostic.unknownIndexComponent(property: p.name, component: component))) }
            }
        }
        if !sawId {
            diagnostics.append(Diagnostic(node: attribute, message: EntityDiagnostic.missingId(typeName)))
        }
        var claimed = Set<String>()
        for p in properties {
            if case .backlink = p.kind { continue }
            for stored in [p.name] + (p.renamedFrom.map { [$0] } ?? []) where !claimed.insert(stored).inserted {
                diagnostics.append(Diagnostic(node: attribute, message: EntityDiagnostic.duplicateRename(stored)))
            }
        }
        guard diagnostics.isEmpty else { return nil }
        return EntityModel(typeName: typeName, entityName: entityName, isEmbedded: isEmbedded, kind: kind,
                           accessPrefix: accessPrefix, properties: properties, idIsTyped: idIsTyped,
                           needsNoArgumentInit: hasDesignatedInit && !hasNoArgumentInit)
    }

    static func findAttribute(_ variable: VariableDeclSyntax, named name: String) -> AttributeSyntax? {
        for element in variable.attributes {
            guard let a = element.as(AttributeSyntax.self) else { continue }
            let text = a.attributeName.trimmedDescription
            if text == name || text == "Strata.\(name)" { return a }
        }
        return nil
    }

    private static func hasAttribute(_ variable: VariableDeclSyntax, named name: String) -> Bool {
        findAttribute(variable, named: name) != nil
    }

    /// A binding with a getter is computed; one with only observers (`didSet`) is stored.
    private static func isComputed(_ binding: PatternBindingSyntax) -> Bool {
        guard let block = binding.accessorBlock else { return false }
        switch block.accessors {
        case .getter: return true
        case let .accessors(list):
            return list.contains { [.keyword(.get), .keyword(.set), .keyword(._read), .keyword(._modify)].contains($0.accessorSpecifier.tokenKind) }
        }
    }

    static func stringLiteral(_ expr: ExprSyntax) -> String? {
        guard let literal = expr.as(StringLiteralExprSyntax.self), literal.segments.count == 1,
              case let .stringSegment(segment)? = literal.segments.first else { return nil }
        return segment.content.text
    }

    private static func isOptional(_ type: TypeSyntax) -> Bool {
        if type.is(OptionalTypeSyntax.self) { return true }
        if let id = type.as(IdentifierTypeSyntax.self), id.name.text == "Optional" { return true }
        return false
    }

    /// Rejects what can be seen to be unstorable without type information; anything else
    /// (a user's enum, `Date`, an array, a Codable struct) is left to the type checker, which
    /// needs the codec's overloads (a `Codable` value is stored whole).
    private static func isSupported(_ type: TypeSyntax, insideOptional: Bool = false) -> Bool {
        if let optional = type.as(OptionalTypeSyntax.self) {
            return !insideOptional && isSupported(optional.wrappedType, insideOptional: true)
        }
        if let tuple = type.as(TupleTypeSyntax.self) {
            guard tuple.elements.count == 1, let only = tuple.elements.first, only.firstName == nil else { return false }
            return isSupported(only.type, insideOptional: insideOptional)
        }
        if type.is(ArrayTypeSyntax.self) || type.is(DictionaryTypeSyntax.self) { return true }
        if let id = type.as(IdentifierTypeSyntax.self) {
            let arguments = id.genericArgumentClause?.arguments.compactMap { $0.argument.as(TypeSyntax.self) } ?? []
            switch id.name.text {
            case "Optional":
                return !insideOptional && arguments.count == 1 && isSupported(arguments[0], insideOptional: true)
            case "Any", "AnyObject", "Never", "Void": return false
            default: return true
            }
        }
        return type.is(MemberTypeSyntax.self)
    }

    private static func isToOne(_ type: TypeSyntax) -> Bool {
        if let id = type.as(IdentifierTypeSyntax.self) { return id.name.text == "ToOne" && id.genericArgumentClause != nil }
        if let member = type.as(MemberTypeSyntax.self) {
            return member.baseType.trimmedDescription == "Strata" && member.name.text == "ToOne"
        }
        return false
    }

    /// "Teacher" for `ToMany<Teacher>` (or `Strata.ToMany<Teacher>`), else nil.
    private static func toManyElementType(_ type: TypeSyntax) -> String? {
        let generic: GenericArgumentClauseSyntax?
        if let id = type.as(IdentifierTypeSyntax.self), id.name.text == "ToMany" {
            generic = id.genericArgumentClause
        } else if let member = type.as(MemberTypeSyntax.self), member.baseType.trimmedDescription == "Strata",
                  member.name.text == "ToMany" {
            generic = member.genericArgumentClause
        } else {
            return nil
        }
        guard let args = generic?.arguments, args.count == 1 else { return nil }
        return args.first?.argument.trimmedDescription
    }

}

extension String {
    func trimmingCharacters(in character: Character) -> String {
        var s = Substring(self)
        while s.first == character { s.removeFirst() }
        while s.last == character { s.removeLast() }
        return String(s)
    }
}
