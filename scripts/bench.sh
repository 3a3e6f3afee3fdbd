#!/usr/bin/env bash
# `cargo bench` after the same setup as the tests: the criterion benches
# (codec, ingest, lookups) and the degradation study. Extra arguments go to
# cargo, e.g. `scripts/bench.sh --bench study` or `scripts/bench.sh -- get_tx`.
# Results: target/criterion/ and target/tmp/study/ (see docs/benchmarks.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
cargo bench --workspace --locked "$@"
