#ifndef STRATA_CLZ4_SHIM_H
#define STRATA_CLZ4_SHIM_H
#if __has_include(<lz4.h>)
#include <lz4.h>
#else
#error "Strata needs liblz4: install it with `sudo apt-get install liblz4-dev` (Debian/Ubuntu) or `brew install lz4` (macOS), or run ./scripts/install-dependencies.sh"
#endif
#endif
