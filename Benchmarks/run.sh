#!/usr/bin/env bash
# One command: installs LevelDB, SQLite (and lz4) if missing, builds the benchmarks in release
# mode and runs every engine workload on Strata and LevelDB. Extra arguments go to strata-bench:
#   Benchmarks/run.sh --num 100000 --reps 3 --workload readrandom
# With "objects" first, runs the object workloads on Strata and GRDB instead:
#   Benchmarks/run.sh objects --flat 1000000 --reps 3
set -euo pipefail
cd "$(dirname "$0")"
../scripts/install-dependencies.sh
if { [ ! -f /usr/include/leveldb/c.h ] && [ ! -f /usr/local/include/leveldb/c.h ]; } || [ ! -f /usr/include/sqlite3.h ]; then
    if command -v apt-get >/dev/null 2>&1; then
        SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libleveldb-dev libsqlite3-dev >/dev/null
    else
        brew install leveldb sqlite
    fi
fi
# Manifest caching can miss files added to the parent package; planning anew costs seconds.
swift build -c release --disable-build-manifest-caching
if [ "${1:-}" = "objects" ]; then
    shift
    ./.build/release/strata-objects-bench "$@"
else
    ./.build/release/strata-bench "$@"
fi
