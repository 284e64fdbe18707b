#!/usr/bin/env bash
# Fuzzes one decoder with libFuzzer and AddressSanitizer (RELIABILITY.md §6):
#   scripts/fuzz.sh TARGET SECONDS            fuzz for a time
#   scripts/fuzz.sh TARGET -runs=10000000     or any libFuzzer options
# TARGET: wal, segment, block, footer, manifest, object, entityRecord, and the targets that fix
# checksums after mutating (RELIABILITY.md §6): walChecked, manifestChecked, segmentChecked, store. New inputs go to
# Fuzz/work/TARGET (not committed); crashes to Fuzz/work/TARGET-crash-*. The committed seed
# corpus, Tests/FuzzCorpus/TARGET, is read as well and replayed by the test suite.
set -euo pipefail
cd "$(dirname "$0")/../Fuzz"
if [ $# -lt 1 ]; then echo "usage: scripts/fuzz.sh TARGET [SECONDS | libFuzzer options]" >&2; exit 2; fi
target=$1; shift
options=("$@")
if [ ${#options[@]} -eq 1 ] && [[ ${options[0]} =~ ^[0-9]+$ ]]; then options=("-max_total_time=${options[0]}"); fi
# The store target opens engines whose background threads free memory after an input returns,
# so every input looks like a leak and libFuzzer runs a full LeakSanitizer scan after each (70%
# of the time, 200 instead of 1,600 executions a second). Leaks are checked by the ASan soak.
if [ "$target" = store ]; then options=("-detect_leaks=0" "${options[@]}"); fi
# Release, as RELIABILITY.md's figures are: the decoders run optimised, with AddressSanitizer
# (the first build takes about 13 minutes, swift-syntax included). The sanitizer flags reach
# every target; lld links where gold fails on the debug info.
# Manifest caching misses files added to the parent package (a new source file failed the build).
swift build -c release --disable-build-manifest-caching --scratch-path .build-fuzz-release -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING \
    -Xswiftc -use-ld=lld >&2
mkdir -p "work/$target" "../Tests/FuzzCorpus/$target"
# -print_funcs=0: printing each newly covered function runs the symbolizer, minutes of a short run.
SWIFT_BACKTRACE=enable=no exec .build-fuzz-release/release/strata-fuzz "$target" -max_len=65536 -print_final_stats=1 \
    -print_funcs=0 "-artifact_prefix=work/$target-" "${options[@]}" "work/$target" "../Tests/FuzzCorpus/$target"
