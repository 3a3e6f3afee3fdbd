#!/usr/bin/env bash
# The test command: setup, then every test of the workspace (unit tests next
# to the code, integration tests of the real binary, the SIGKILL crash test),
# on real RocksDB and real MDBX in temp dirs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
cargo test --workspace --locked "$@"
