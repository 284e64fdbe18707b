#ifndef STRATA_CLEVELDB_SHIM_H
#define STRATA_CLEVELDB_SHIM_H
#if __has_include(<leveldb/c.h>)
#include <leveldb/c.h>
#else
#error "The benchmarks need LevelDB: sudo apt-get install libleveldb-dev (or run Benchmarks/run.sh)"
#endif
#endif
