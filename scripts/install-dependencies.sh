#!/usr/bin/env bash
# Installs the system libraries Strata builds against, when they are missing.
# Debian/Ubuntu: liblz4-dev. macOS: lz4 from Homebrew.
set -euo pipefail

have_lz4() {
    pkg-config --exists liblz4 2>/dev/null || [ -f /usr/include/lz4.h ] || [ -f /usr/local/include/lz4.h ]
}

if have_lz4; then
    exit 0
fi

if command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    echo "Installing liblz4-dev (and pkg-config) with apt-get…"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq liblz4-dev pkg-config >/dev/null
elif command -v brew >/dev/null 2>&1; then
    brew install lz4 pkg-config
else
    echo "Strata needs lz4: install liblz4-dev (Debian/Ubuntu) or lz4 (Homebrew) and run again." >&2
    exit 1
fi
