#!/usr/bin/env bash
# Instructions per operation of one object-graph phase, under callgrind: stable on a noisy
# machine, where timings are not. Builds the benchmarks (release), strips debug info (callgrind
# reads it slowly), runs `graph-child strata` at a small scale with the phase repeated, counting
# only inside the phase's own function, and prints the count per operation and the functions
# that cost most (inclusive and exclusive).
#   Benchmarks/profile.sh forward            # scale 0.1, the phase run 3 times
#   Benchmarks/profile.sh query-equality 0.1 10
#   Benchmarks/profile.sh put-new-related 20000   # a put whose related object is new, own transaction
#   Benchmarks/profile.sh get 20000               # a get by id (SCALE is the count of objects here)
# Each run builds a fresh store, so compare two commits' counts function by function too: the
# memtable's contents differ a little between runs (flushes run on their own thread).
set -euo pipefail
cd "$(dirname "$0")"
phase=${1:?"usage: profile.sh PHASE [SCALE] [REPEAT]  (forward, backlink, prefetch, query-equality, query-range, query-link, many-to-many, put-new-related, get)"}
scale=${2:-0.1}
repeat=${3:-3}
# The phase's function in StrataGraph: forward, queryEquality, manyToMany, ...
function=$(echo "$phase" | awk -F- '{ printf "%s", $1; for (i = 2; i <= NF; i++) printf "%s", toupper(substr($i, 1, 1)) substr($i, 2) }')
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
swift build -c release --disable-build-manifest-caching >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp .build/release/strata-objects-bench "$work/bench"
strip -g "$work/bench"
case "$phase" in
put-new-related|get)
    # PutGetProfile's two frames: putNewRelated, getOne. SCALE is the number of objects.
    count=${2:-20000}; repeat=1
    [ "$phase" = get ] && function=getOne || function=putNewRelated
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" \
        --toggle-collect="*PutGetProfile*$function*" "$work/bench" put-get-child "$work/db" "$count" \
        > "$work/out.json" 2> "$work/valgrind.log" ;;
*)
    STRATA_BENCH_REPEAT="$phase:$repeat" valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" \
        --toggle-collect="*StrataGraph*$function*" "$work/bench" graph-child strata "$work/db" "$scale" \
        > "$work/out.json" 2> "$work/valgrind.log" ;;
esac
total=$(grep -o 'refs: *[0-9,]*' "$work/valgrind.log" | tr -dc '0-9')
operations=$(grep -o '"operations":{[^}]*}' "$work/out.json" | grep -o "\"$phase\":[0-9]*" | cut -d: -f2)
[ -n "$operations" ] && [ "$operations" -gt 0 ] && [ "$total" -gt 0 ] || { echo "no count for $phase (see $work)" >&2; trap - EXIT; exit 1; }
echo "$phase at scale $scale, run $repeat times: $total instructions, $((total / (operations * repeat))) per operation ($operations operations a run)"
echo "-- inclusive"
# The first lines are the program's frames down to the phase: skip to its callees.
callgrind_annotate --inclusive=yes "$work/cg.out" 2>/dev/null | grep -E '^ *[0-9,]+ \(' | grep -v '(100.0%)' | sed 's/ \[.*//' | head -25
echo "-- exclusive"
callgrind_annotate "$work/cg.out" 2>/dev/null | grep -E '^ *[0-9,]+ \(' | sed 's/ \[.*//' | head -25
