#!/usr/bin/env bash
# The main job: install what is missing, build, and run the demo in ./strata-demo-store.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-dependencies.sh
swift build --product strata
swift run --skip-build strata demo "${1:-strata-demo-store}"
