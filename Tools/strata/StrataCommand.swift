import ArgumentParser

/// `strata`: the store tool. Every subcommand works on a store directory through Strata's public
/// API; all but `demo`, `compact`, `load` and `replicate` open it read-only and never change it
/// (`backup`, `restore` and `replicate` write only their destination).
@main
struct StrataCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata",
        abstract: "Inspect, verify, compact, dump, load, back up and restore Strata stores; run the demo.",
        discussion: """
        Examples:
          strata demo /tmp/shop                 build the example graphs, traverse, reopen
          strata inspect /tmp/shop              what the store holds: levels, entities, schema
          strata verify /tmp/shop               check every checksum and the object graph
          strata compact /tmp/shop              full compaction with a progress bar
          strata dump /tmp/shop Order --limit 5 objects as JSON Lines
          strata dump /tmp/shop --edges Order.customer
          strata load /tmp/copy Order o.jsonl   dump's JSON Lines put back
          strata stats /tmp/shop --json         engine counters, machine-readable
          strata backup /tmp/shop /backups/shop a backup (incremental into an earlier one)
          strata restore /backups/shop /tmp/new check a backup and restore it
          strata replicate s3://b/shop /srv/r   a read replica that follows an archive
          strata encrypt /tmp/shop --new-key-file k  encrypt a store (decrypt undoes it)
          strata verify /tmp/shop --key-file k  any command opens an encrypted store so

        Exit status: 0 success; 1 `verify` found problems; 2 the command could not run (no such
        directory, not a store, locked by another process, written by a newer Strata, damaged
        file); 64 bad command line.
        """,
        subcommands: [DemoCommand.self, InspectCommand.self, VerifyCommand.self, CompactCommand.self,
                      DumpCommand.self, LoadCommand.self, StatsCommand.self, BackupCommand.self, RestoreCommand.self,
                      ArchiveStatusCommand.self, ReplicateCommand.self, EncryptCommand.self, DecryptCommand.self]
    )
}

/// Options every command that reads a store takes.
struct StoreArguments: ParsableArguments {
    @Argument(help: "The store directory.")
    var directory: String

    @Flag(help: "Write machine-readable JSON instead of text.")
    var json = false

    @Option(name: .customLong("key-file"),
            help: "A file holding the encrypted store's 32-byte key (raw, or 64 hex digits). Never give a key on the command line.")
    var keyFile: String?

    /// The key `--key-file` names, or nil for a plaintext store.
    func encryptionKey() throws -> [UInt8]? { try keyFile.map(KeyFile.read) }
}
