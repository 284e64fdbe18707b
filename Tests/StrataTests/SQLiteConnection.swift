import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An in-memory SQLite database, reached through the system's `libsqlite3` loaded at run time:
/// the differential test's reference. Loading it with `dlopen` keeps SQLite out of the package
/// graph, so an app that depends on Strata never resolves or links it.
final class SQLiteConnection {
    enum Failure: Error, CustomStringConvertible {
        case libraryMissing(String)
        case sqlite(String)
        var description: String {
            switch self {
            case let .libraryMissing(m): "libsqlite3 could not be loaded (\(m)); install it (Debian: libsqlite3-0)"
            case let .sqlite(m): "SQLite: \(m)"
            }
        }
    }

    /// A column of a result row.
    enum Value: Equatable, CustomStringConvertible {
        case null, integer(Int64), real(Double), text(String)

        /// Texts are equal when their bytes are: Swift's `==` on strings would call "é" and
        /// "e\u{301}" equal, and hide an answer that differs from SQLite's in its bytes.
        static func == (a: Value, b: Value) -> Bool {
            switch (a, b) {
            case (.null, .null): true
            case let (.integer(x), .integer(y)): x == y
            case let (.real(x), .real(y)): x == y
            case let (.text(x), .text(y)): x.utf8.elementsEqual(y.utf8)
            default: false
            }
        }
        var description: String {
            switch self {
            case .null: "NULL"
            case let .integer(v): "\(v)"
            case let .real(v): "\(v)"
            case let .text(v): "'\(v)'"
            }
        }
    }

    private typealias OpenFn = @convention(c) (UnsafePointer<CChar>, UnsafeMutablePointer<OpaquePointer?>) -> Int32
    private typealias CloseFn = @convention(c) (OpaquePointer?) -> Int32
    private typealias PrepareFn = @convention(c) (OpaquePointer?, UnsafePointer<CChar>, Int32,
                                                  UnsafeMutablePointer<OpaquePointer?>, UnsafeMutableRawPointer?) -> Int32
    private typealias StepFn = @convention(c) (OpaquePointer?) -> Int32
    private typealias ColumnCountFn = @convention(c) (OpaquePointer?) -> Int32
    private typealias ColumnTypeFn = @convention(c) (OpaquePointer?, Int32) -> Int32
    private typealias ColumnInt64Fn = @convention(c) (OpaquePointer?, Int32) -> Int64
    private typealias ColumnDoubleFn = @convention(c) (OpaquePointer?, Int32) -> Double
    private typealias ColumnTextFn = @convention(c) (OpaquePointer?, Int32) -> UnsafePointer<UInt8>?
    private typealias ErrmsgFn = @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?

    private let library: UnsafeMutableRawPointer
    private var db: OpaquePointer?
    private let close: CloseFn
    private let prepare: PrepareFn
    private let step: StepFn
    private let finalize: StepFn
    private let columnCount: ColumnCountFn
    private let columnType: ColumnTypeFn
    private let columnInt64: ColumnInt64Fn
    private let columnDouble: ColumnDoubleFn
    private let columnText: ColumnTextFn
    private let errmsg: ErrmsgFn

    init() throws {
        #if canImport(Darwin)
        let names = ["libsqlite3.dylib"]
        #else
        let names = ["libsqlite3.so.0", "libsqlite3.so"]
        #endif
        guard let handle = names.lazy.compactMap({ dlopen($0, RTLD_NOW) }).first else {
            throw Failure.libraryMissing(String(cString: dlerror()))
        }
        library = handle
        func symbol<F>(_ name: String, as type: F.Type) throws -> F {
            guard let p = dlsym(handle, name) else { throw Failure.libraryMissing("no symbol \(name)") }
            return unsafeBitCast(p, to: type)
        }
        let open = try symbol("sqlite3_open", as: OpenFn.self)
        close = try symbol("sqlite3_close", as: CloseFn.self)
        prepare = try symbol("sqlite3_prepare_v2", as: PrepareFn.self)
        step = try symbol("sqlite3_step", as: StepFn.self)
        finalize = try symbol("sqlite3_finalize", as: StepFn.self)
        columnCount = try symbol("sqlite3_column_count", as: ColumnCountFn.self)
        columnType = try symbol("sqlite3_column_type", as: ColumnTypeFn.self)
        columnInt64 = try symbol("sqlite3_column_int64", as: ColumnInt64Fn.self)
        columnDouble = try symbol("sqlite3_column_double", as: ColumnDoubleFn.self)
        columnText = try symbol("sqlite3_column_text", as: ColumnTextFn.self)
        errmsg = try symbol("sqlite3_errmsg", as: ErrmsgFn.self)
        guard open(":memory:", &db) == 0 else { throw Failure.sqlite("cannot open an in-memory database") }
    }

    deinit {
        _ = close(db)
        dlclose(library)
    }

    /// Runs one statement and returns its rows.
    @discardableResult
    func query(_ sql: String) throws -> [[Value]] {
        var statement: OpaquePointer?
        guard prepare(db, sql, -1, &statement, nil) == 0 else {
            throw Failure.sqlite("\(errmsg(db).map { String(cString: $0) } ?? "?") in \(sql)")
        }
        defer { _ = finalize(statement) }
        var rows: [[Value]] = []
        while true {
            let r = step(statement)
            if r == 101 { return rows }   // SQLITE_DONE
            guard r == 100 else { throw Failure.sqlite("\(errmsg(db).map { String(cString: $0) } ?? "?") in \(sql)") }
            rows.append((0..<columnCount(statement)).map { i in
                switch columnType(statement, i) {
                case 1: .integer(columnInt64(statement, i))
                case 2: .real(columnDouble(statement, i))
                case 3: .text(columnText(statement, i).map { String(cString: $0) } ?? "")
                default: .null
                }
            })
        }
    }

    /// A string as an SQL literal.
    static func literal(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "''") + "'" }
}
