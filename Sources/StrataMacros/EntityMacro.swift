import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Entity`: conforms a final class or a struct to `Strata.Entity` by generating its schema and
/// a binary codec that reads and writes the stored properties directly.
///
/// The member role adds `init()` only when the type's own initializers hide the implicit one;
/// the extension role carries the conformance and reports every declaration error (once).
public struct EntityMacro: MemberMacro, ExtensionMacro, MemberAttributeMacro {
    public static func expansion(of node: AttributeSyntax, providingMembersOf declaration: some DeclGroupSyntax,
                                 conformingTo protocols: [TypeSyntax],
                                 in context: some MacroExpansionContext) throws -> [DeclSyntax] {
        var diagnostics: [Diagnostic] = []
        guard let model = EntityModel.analyze(attribute: node, declaration: declaration, diagnostics: &diagnostics),
              model.needsNoArgumentInit else { return [] }
        return ["\(raw: model.accessPrefix)init() {}"]
    }

    /// Marks each stored property, relation and backlink with `@Strata._StrataDescriptor`, whose
    /// peer expansion declares the query descriptor (`Order.amount`). Declaring descriptors as
    /// peers with `names: overloaded` rather than from the extension (`names: arbitrary`) keeps
    /// the compiler from expanding the extension while it looks up `==`: that lookup cycle made
    /// it synthesize a memberwise `Equatable` witness over a hand-written `==`.
    public static func expansion(of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
                                 providingAttributesFor member: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [AttributeSyntax] {
        guard let variable = member.as(VariableDeclSyntax.self) else { return [] }
        var diagnostics: [Diagnostic] = []
        guard let model = EntityModel.analyze(attribute: node, declaration: declaration, diagnostics: &diagnostics) else {
            return []
        }
        let names = Set(variable.bindings.compactMap {
            $0.pattern.as(IdentifierPatternSyntax.self)?.identifier.text.trimmingCharacters(in: "`")
        })
        var slots = fields(model).filter { names.contains($0.property.name) }.map { "\($0.property.name):field:\($0.index)" }
        slots += backlinks(model).filter { names.contains($0.property.name) }.map { "\($0.property.name):backlink:\($0.index)" }
        var attributes: [AttributeSyntax] = []
        if !slots.isEmpty {
            let arguments = ([model.typeName, model.accessPrefix] + slots).map(literal).joined(separator: ", ")
            attributes.append("@Strata._StrataDescriptor(\(raw: arguments))")
        }
        // A class's stored properties are checked for exclusive access at run time on every
        // access (`swift_beginAccess`): the generated decoder's assignments paid about 390
        // instructions an object read, a sixth of decoding it. The store's own accesses never
        // overlap; an app that wants the check on a property can write the attribute itself.
        if model.kind == .finalClass, !slots.isEmpty || names.contains("id"),
           variable.bindings.allSatisfy({ $0.accessorBlock == nil }),
           EntityModel.findAttribute(variable, named: "exclusivity") == nil {
            attributes.append("@exclusivity(unchecked)")
        }
        return attributes
    }

    public static func expansion(of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
                                 providingExtensionsOf type: some TypeSyntaxProtocol, conformingTo protocols: [TypeSyntax],
                                 in context: some MacroExpansionContext) throws -> [ExtensionDeclSyntax] {
        var diagnostics: [Diagnostic] = []
        guard let model = EntityModel.analyze(attribute: node, declaration: declaration, diagnostics: &diagnostics) else {
            diagnostics.forEach(context.diagnose)
            return []
        }
        let conformance = protocols.isEmpty ? "" : ": Strata.Entity"
        let decl: DeclSyntax = """
            extension \(type.trimmed)\(raw: conformance) {
            \(raw: schema(model))
            \(raw: encoder(model))
            \(raw: decoder(model))
            \(raw: relations(model))
            }
            """
        return [decl.cast(ExtensionDeclSyntax.self)]
    }

    /// Stored properties (values, to-ones, to-manys) in declaration order: their positions are
    /// the `field` numbers of the codec.
    private static func fields(_ m: EntityModel) -> [(index: Int, property: EntityModel.StoredProperty)] {
        m.properties.filter { if case .backlink = $0.kind { false } else { true } }.enumerated().map { ($0, $1) }
    }

    private static func backlinks(_ m: EntityModel) -> [(index: Int, property: EntityModel.StoredProperty, source: String, sourceProperty: String)] {
        m.properties.compactMap { p -> (EntityModel.StoredProperty, String, String)? in
            if case let .backlink(source, property) = p.kind { return (p, source, property) }
            return nil
        }.enumerated().map { ($0, $1.0, $1.1, $1.2) }
    }

    private static func schema(_ m: EntityModel) -> String {
        let properties = fields(m).map { _, p in
            let renamed = p.renamedFrom.map { ", renamedFrom: \(literal($0))" } ?? ""
            let index = (p.index.map { ", index: .\($0)" } ?? "")
                + (p.indexWith.isEmpty ? "" : ", indexWith: [\(p.indexWith.map(literal).joined(separator: ", "))]")
            let rule = p.deleteRule.map { ", deleteRule: .\($0)" } ?? ""
            return "        Strata.PropertySchema(name: \(literal(p.name)), keyPath: \\\(m.typeName).\(p.name)\(renamed)\(index)\(rule)),"
        }
        let links = backlinks(m).map { _, p, _, sourceProperty in
            let rule = p.deleteRule.map { ", deleteRule: .\($0)" } ?? ""
            return "        Strata.BacklinkSchema(name: \(literal(p.name)), keyPath: \\\(m.typeName).\(p.name), sourceProperty: \(literal(sourceProperty))\(rule)),"
        }
        let backlinkArgument = links.isEmpty ? "" : ", backlinks: [\n\(links.joined(separator: "\n"))\n    ]"
        return """
            \(m.accessPrefix)static var _strataEntityName: String {
                \(literal(m.entityName))
            }
            \(m.accessPrefix)var _strataId: Strata.Id {
                get {
                    \(m.idIsTyped ? "id.rawValue" : "id")
                }
                set {
                    id = \(m.idIsTyped ? "Strata.EntityId(newValue)" : "newValue")
                }
            }
            \(m.accessPrefix)static var _strataSchema: Strata.EntitySchema {
                Strata.EntitySchema(name: _strataEntityName\(m.isEmbedded ? ", isEmbedded: true" : ""), properties: [
            \(properties.joined(separator: "\n"))
                ]\(backlinkArgument))
            }
            """
    }

    private static func encoder(_ m: EntityModel) -> String {
        let lines = fields(m).compactMap { i, p in
            p.kind == .toMany ? nil : "    writer.write(self.\(p.name), field: \(i))"
        }
        return """
            \(m.accessPrefix)func _strataEncode(to writer: inout Strata.ObjectWriter) {
            \(lines.joined(separator: "\n"))
            }
            """
    }

    private static func decoder(_ m: EntityModel) -> String {
        let binding = m.kind == .finalClass ? "let" : "var"
        let stored = fields(m).filter { $0.property.kind != .toMany }
        let loop: String
        if stored.isEmpty {
            loop = "    while try reader.nextField() != nil {}"
        } else {
            // Assignments, not inout reads: an inout access to a class's stored property is a
            // long access, checked for exclusivity at run time on every decode.
            let cases = stored.map { i, p in
                p.kind == .toOne
                    ? "        case \(i): try reader.read(object.\(p.name))"
                    : "        case \(i): object.\(p.name) = try reader.read()"
            }
            loop = """
                    while let field = try reader.nextField() {
                        switch field {
                \(cases.joined(separator: "\n"))
                        default: break
                        }
                    }
                """
        }
        // To-manys and backlinks hold no bytes: they learn their owner and load lazily.
        var attach = fields(m).filter { $0.property.kind == .toMany }.map { i, p in
            "    reader.attach(object.\(p.name), field: \(i))"
        }
        attach += backlinks(m).map { i, p, _, _ in "    reader.attach(object.\(p.name), backlink: \(i))" }
        return """
            \(m.accessPrefix)static func _strataDecode(id: Strata.Id, from reader: inout Strata.ObjectReader) throws -> \(m.typeName) {
                \(binding) object = \(m.typeName)()
                object._strataId = id
            \(loop)
            \(attach.map { $0 + "\n" }.joined())    return object
            }
            """
    }

    /// Visits every relation so that `put` can store new targets first and maintain edges.
    private static func relations(_ m: EntityModel) -> String {
        var lines = fields(m).compactMap { i, p in
            p.kind == .value ? nil : "    try visitor.visit(self.\(p.name), field: \(i))"
        }
        lines += backlinks(m).map { i, p, _, _ in "    try visitor.visit(self.\(p.name), backlink: \(i))" }
        if lines.isEmpty {
            return "\(m.accessPrefix)func _strataVisitRelations(_ visitor: inout Strata.RelationVisitor) throws {}"
        }
        return """
            \(m.accessPrefix)func _strataVisitRelations(_ visitor: inout Strata.RelationVisitor) throws {
            \(lines.joined(separator: "\n"))
            }
            """
    }

    static func literal(_ s: String) -> String {
        var out = "\""
        for c in s.unicodeScalars {
            switch c {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(c)
            }
        }
        return out + "\""
    }
}
