import Foundation
import StrataStorage

extension Store {
    /// The version of the last migration step this store ran (0: none).
    func storedSchemaVersion() throws -> Int {
        guard let raw = try engine.get(MetaKey.schemaVersion.key(), in: meta) else { return 0 }
        guard raw.count == 8 else { throw StrataError.corruptCatalog(reason: "schema version record has \(raw.count) bytes") }
        let v = raw.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
        guard v <= UInt64(Int.max) else { throw StrataError.corruptCatalog(reason: "schema version \(v) is out of range") }
        return Int(v)
    }

    /// Runs the steps of `plan` above the stored version, each in a transaction of its own that
    /// records its version (``MigrationStep``). A store that holds no entity yet starts at the
    /// plan's last version: it has nothing to migrate.
    func migrate(_ plan: [MigrationStep], progress: (@Sendable (MigrationProgress) -> Void)?) throws(StrataError) {
        guard !plan.isEmpty, !isReadOnly else { return }
        do {
            for (a, b) in zip(plan, plan.dropFirst()) where b.version <= a.version {
                throw StrataError.invalidValue(entity: "(migrations)", id: 0, property: "version",
                                               reason: "steps must have increasing versions: \(b.version) after \(a.version)")
            }
            guard plan[0].version >= 1 else {
                throw StrataError.invalidValue(entity: "(migrations)", id: 0, property: "version", reason: "versions start at 1")
            }
            let latest = plan.last!.version
            let stored = try storedSchemaVersion()
            guard stored <= latest else { throw StrataError.schemaVersionTooNew(stored: stored, latest: latest) }
            if stored == 0 && catalogRecords().isEmpty {
                try withWriteTransaction { t in t.metaWrites.append(Self.versionRecord(latest)) }
                return
            }
            for step in plan where step.version > stored {
                let start = DispatchTime.now().uptimeNanoseconds
                func seconds() -> Double { Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 }
                progress?(MigrationProgress(version: step.version, name: step.name, phase: .started, objectsWritten: 0, seconds: 0))
                var changed: [String: EntityRecord] = [:]
                var written = 0
                do {
                    try withWriteTransaction { t in
                        let migration = Migration(step: step, store: self, transaction: t)
                        try step.body(migration)
                        for record in migration.changedRecords.values {
                            t.metaWrites.append((MetaKey.entity.key(entity: record.entityId), record.encoded()))
                        }
                        t.metaWrites.append(Self.versionRecord(step.version))
                        changed = migration.changedRecords
                        written = migration.objectsWritten
                    }
                } catch {
                    throw StrataError.migrationFailed(version: step.version, name: step.name, reason: "\(error)")
                }
                // Committed: the session's catalog takes the step's records.
                catalog.withLock { c in
                    for record in changed.values {
                        c.records[record.name] = record
                        c.indexes[record.entityId] = EntityIndexes(record)
                    }
                }
                progress?(MigrationProgress(version: step.version, name: step.name, phase: .finished, objectsWritten: written,
                                            seconds: seconds()))
            }
        } catch let e as StrataError {
            throw e
        } catch {
            throw StrataError(error)
        }
    }

    private static func versionRecord(_ version: Int) -> (key: [UInt8], value: [UInt8]) {
        (MetaKey.schemaVersion.key(), withUnsafeBytes(of: UInt64(version).littleEndian) { Array($0) })
    }
}
