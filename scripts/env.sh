# Sourced by the scripts: a shared build cache outside the clone, so a fresh
# clone does not recompile RocksDB (C++, ~15 min on 2 cores) when a cache exists.
if [ -z "${CARGO_TARGET_DIR:-}" ]; then
  cache="${XDG_CACHE_HOME:-$HOME/.cache}/ledgerstore/target"
  if mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ]; then
    export CARGO_TARGET_DIR="$cache"
  fi
fi
