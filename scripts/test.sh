#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: installs what is missing, runs the tests, then
# runs the demo once in a temporary directory so the README's main job is checked too.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-dependencies.sh
swift build --build-tests
swift test --skip-build
demo_dir="$(mktemp -d)"
trap 'rm -rf "$demo_dir"' EXIT
swift run --skip-build strata demo "$demo_dir/store" >/dev/null
echo "demo ran"
