#!/usr/bin/env bash
# Runs the same synthetic ingest into every layout, one after the other in
# one invocation, on fresh data dirs, and keeps each run's per-batch report:
#   scripts/side-by-side.sh OUT_DIR [LEDGERS] [BATCH] [TX_PER_LEDGER]
# Extra layouts "hybrid-16k" (16 KiB MDBX pages for tx_data) compare page sizes.
# Uses the release build, or the binary named by BIN.
set -euo pipefail
out="${1:?usage: side-by-side.sh OUT_DIR [LEDGERS] [BATCH] [TX_PER_LEDGER]}"
ledgers="${2:-2000}"; batch="${3:-500}"; tx="${4:-250}"
here="$(cd "$(dirname "$0")/.." && pwd)"
. "$here/scripts/env.sh"
if [ -z "${BIN:-}" ]; then
  cargo build --release --locked --manifest-path "$here/Cargo.toml" --workspace >&2
  BIN="${CARGO_TARGET_DIR:-$here/target}/release/ledgerstore"
fi
bin="$BIN"
mkdir -p "$out"
for run in hybrid rocksdb rocksdb-tuned hybrid-16k; do
  layout="${run%-16k}"; extra=()
  [ "$run" = hybrid-16k ] && extra=(--mdbx.tx-data-page-size 16384)
  dir="$out/data-$run"; rm -rf "$dir"
  echo "== $run: $bin ingest --synthetic --ledgers $ledgers --batch-ledgers $batch --tx-per-ledger $tx --seed 1 --layout $layout ${extra[*]}" | tee "$out/$run.txt"
  "$bin" ingest --synthetic --no-progress --ledgers "$ledgers" --batch-ledgers "$batch" \
    --tx-per-ledger "$tx" --seed 1 --layout "$layout" --data-dir "$dir" "${extra[@]}" | tee -a "$out/$run.txt"
  "$bin" stats --data-dir "$dir" "${extra[@]}" | tee -a "$out/$run.txt"
  sync
done
