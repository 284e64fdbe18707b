import Foundation
import StrataTestSupport
import Testing

/// Typed ids are checked by the compiler (issue 55): small programs against the built `Strata`
/// module, type-checked by `swiftc`. The control must compile; each misuse (another entity's id
/// given to a box, a to-one or a condition) must fail with a type error, and only that.
@Suite struct TypedIdCompileTests {
    static let declarations = """
        import Strata
        @Entity final class Customer { var id: EntityId<Customer> = 0; var name = "" }
        @Entity struct Order { var id: EntityId<Self> = 0; var customer: ToOne<Customer> = nil }
        """

    /// `swiftc -typecheck` of `body` after the declarations; its exit status and diagnostics.
    static func typecheck(_ body: String) throws -> (status: Int32, output: String) {
        let built = try #require(builtExecutable(named: "strata").map { URL(fileURLWithPath: $0).deletingLastPathComponent().path },
                                 "the package's products were not built next to the tests")
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let source = dir.path + "/main.swift"
        try (declarations + "\nfunc check(_ customers: Box<Customer>, _ orders: Box<Order>, _ order: Order, _ ada: Customer) throws {\n" + body + "\n}\n")
            .write(toFile: source, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        var arguments = ["swiftc", "-typecheck", source, "-I", built + "/Modules",
                         "-load-plugin-executable", built + "/StrataMacros-tool#StrataMacros",
                         "-Xcc", "-fmodule-map-file=\(built)/CStrataSupport.build/module.modulemap",
                         "-Xcc", "-I", "-Xcc", root + "/Sources/CStrataSupport/include",
                         "-Xcc", "-fmodule-map-file=\(root)/Sources/CLZ4/module.modulemap"]
        if let map = boringSSLModuleMap(built: built) { arguments += ["-Xcc", "-fmodule-map-file=" + map] }
        process.arguments = arguments
        let output = dir.path + "/out.txt"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        process.waitUntilExit()
        return (process.terminationStatus, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
    }

    /// swift-crypto's BoringSSL, which StrataStorage's cipher context imports where it is built
    /// (SwiftPM hands every transitive C module's map to the compilers of a package's targets;
    /// a bare `swiftc` needs it given): in the checkouts beside the build's products, when there.
    static func boringSSLModuleMap(built: String) -> String? {
        let scratch = URL(fileURLWithPath: built).resolvingSymlinksInPath().deletingLastPathComponent().deletingLastPathComponent()
        let path = scratch.path + "/checkouts/swift-crypto/Sources/CCryptoBoringSSL/include/module.modulemap"
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    @Test func theRightEntitysIdCompiles() throws {
        let result = try Self.typecheck("""
                _ = try customers.get(ada.id)
                _ = try customers.get(order.customer.targetEntityId!)
                _ = try customers.contains(ada.id)
                _ = try orders.remove(order.id)
                order.customer.targetEntityId = ada.id
                _ = ToOne<Customer>(targetId: ada.id)
                _ = orders.query { Order.customer == ada.id }
                _ = try customers.get(1)
            """)
        #expect(result.status == 0, "\(result.output)")
    }

    @Test(arguments: [
        "_ = try customers.get(order.id)",
        "_ = try customers.remove(order.id)",
        "_ = try customers.contains(order.id)",
        "_ = try orders.get(ada.id)",
        "order.customer.targetEntityId = order.id",
        "_ = ToOne<Customer>(targetId: order.id)",
        "_ = orders.query { Order.customer == order.id }",
    ])
    func anotherEntitysIdDoesNotCompile(_ misuse: String) throws {
        let result = try Self.typecheck(misuse)
        #expect(result.status != 0, "compiled: \(misuse)")
        #expect(result.output.contains("EntityId<Order>") || result.output.contains("EntityId<Customer>"), "\(result.output)")
        #expect(!result.output.contains("no such module"), "\(result.output)")
    }
}
