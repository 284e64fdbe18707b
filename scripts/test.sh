#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: installs what is missing, runs the tests, then
# runs the demo once in a temporary directory so the README's main job is checked too, then the
# documentation's snippets and the DocC build.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-dependencies.sh
# The differential test compares queries with SQLite, loaded at run time (never linked): it
# needs the library, not its headers.
if ! ldconfig -p 2>/dev/null | grep -q 'libsqlite3\.so\.0' && [ "$(uname)" = "Linux" ] && command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    echo "Installing libsqlite3-0 (for the SQLite differential test)…"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libsqlite3-0 >/dev/null
fi
swift build --build-tests
# The S3 tests run against a real S3 server: a throw-away local one (scripts/s3-server.sh),
# unless STRATA_S3_ENDPOINT already names one. In CI they must run; elsewhere, with no way to
# start a server, they are skipped with a line saying so.
demo_dir="$(mktemp -d)"
s3_dir=""
cleanup() {
    if [ -n "$s3_dir" ]; then ./scripts/s3-server.sh stop "$s3_dir" || true; fi
    rm -rf "$demo_dir"
}
trap cleanup EXIT
if [ -z "${STRATA_S3_ENDPOINT:-}" ]; then
    s3_dir="$(mktemp -d /tmp/strata-s3.XXXXXX)"
    if ./scripts/s3-server.sh start "$s3_dir" > "$demo_dir/s3.env" 2> "$demo_dir/s3.log"; then
        # shellcheck disable=SC1091
        source "$s3_dir/env"
        echo "S3 tests: local S3 server at $STRATA_S3_ENDPOINT"
    else
        cat "$demo_dir/s3.log" >&2
        ./scripts/s3-server.sh stop "$s3_dir" || true
        s3_dir=""
        if [ -n "${CI:-}" ]; then
            echo "S3 tests: the local S3 server did not start, and CI must run them" >&2
            exit 1
        fi
        echo "S3 tests skipped: no S3 server could be started (see above)"
    fi
fi
swift test --skip-build
swift run --skip-build strata demo "$demo_dir/store" >/dev/null
echo "demo ran"
# The documentation's examples are the snippets in Snippets/ (built with the package above):
# run each, since each checks what it shows.
bin="$(swift build --show-bin-path)"
for snippet in Snippets/*.swift; do
    "$bin/$(basename "$snippet" .swift)" >/dev/null
done
echo "documentation snippets ran"
# The DocC catalog (Sources/Strata/Strata.docc), with broken symbol links as errors.
if ! swift package generate-documentation --target Strata --warnings-as-errors > "$demo_dir/docc.log" 2>&1; then
    grep -E "error|warning" "$demo_dir/docc.log" >&2
    exit 1
fi
echo "documentation built"
