#!/usr/bin/env bash
# A replica's version-4 pack dictionaries in memory, builds side by side in
# one run (docs/benchmarks.md, "A replica's dictionaries, held once"):
#
# - a lake-fixture store of DD_COPIES × 20 real pubnet ledgers (zstd 3),
#   ingested in DD_RANGE-ledger base ranges, so each closed range is one
#   version-4 pack with its own dictionary (1 MiB at the default budget);
# - published with `ledgerstore publish` to a local directory (the bucket);
# - for each build of DD_BINS, DD_ROUNDS times, alternated, and each
#   dictionary budget of DD_DICT_MB: a fresh replica of the bucket (its
#   disk cache primed first by an unmeasured pass of DD_PRIME_SECONDS) on
#   CPU 0 with `--replica.dict-memory-mb`, driven by
#   `ledgerstore bench-query --call DD_CALL` on CPU 1 (DD_CONCURRENCY in
#   flight, each request a random hash of DD_SAMPLE ledgers spread over
#   every pack, or with DD_CALL=batch DD_BATCH such hashes) for
#   DD_SECONDS, with `--replica.batch-memory-mb DD_BATCH_MB` when set (a
#   build from before that setting refuses it).
#
# Reports requests/s, the daemon's CPU a request, p50/p99, its peak RSS
# (VmHWM) and, from builds that count them
# (ledgerstore_replica_pack_dict_opens_total), dictionaries opened a
# lookup (over the run's lookups, which include the DD_SAMPLE GetLedger
# calls bench-query samples its hashes with). Every answer must be found,
# or the script fails.
#
#   DD_BINS="/path/ls-before /path/ls-after" scripts/bench-replica-dicts.sh
#
# Env: DD_BINS (required: release `ledgerstore` binaries), DD_FIXTURE (a
# `lake-fixture` binary; default: the release build's), DD_COPIES (50),
# DD_RANGE (10), DD_DICT_MB ("64"), DD_ROUNDS (2), DD_SAMPLE (1000),
# DD_SECONDS (10), DD_PRIME_SECONDS (10), DD_CONCURRENCY (16), DD_CALL
# (get), DD_BATCH (1000), DD_BATCH_MB (unset: the build's default), DD_OUT
# (./bench-replica-dicts-out; the store and bucket are reused by runs
# with the same shape). Writes DD_OUT/summary.md.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh

BINS="${DD_BINS:?DD_BINS: the ledgerstore binaries to compare}"
FIXTURE="${DD_FIXTURE:-${CARGO_TARGET_DIR:-$HOME/.cache/ledgerstore/target}/release/lake-fixture}"
COPIES="${DD_COPIES:-50}"
RANGE="${DD_RANGE:-10}"
DICT_MB="${DD_DICT_MB:-64}"
ROUNDS="${DD_ROUNDS:-2}"
SAMPLE="${DD_SAMPLE:-1000}"
SECS="${DD_SECONDS:-10}"
PRIME="${DD_PRIME_SECONDS:-10}"
CONC="${DD_CONCURRENCY:-16}"
CALL="${DD_CALL:-get}"
BATCH="${DD_BATCH:-1000}"
BATCH_MB="${DD_BATCH_MB:-}"
case "$CALL" in get | batch) ;; *) echo "bench-replica-dicts: DD_CALL is get or batch, not $CALL" >&2; exit 1 ;; esac
BATCH_FLAG=()
[ -n "$BATCH_MB" ] && BATCH_FLAG=(--replica.batch-memory-mb "$BATCH_MB")
OUT="${DD_OUT:-$PWD/bench-replica-dicts-out}"
CMDLINE="DD_COPIES=$COPIES DD_RANGE=$RANGE DD_DICT_MB=\"$DICT_MB\" DD_ROUNDS=$ROUNDS DD_SAMPLE=$SAMPLE DD_SECONDS=$SECS DD_PRIME_SECONDS=$PRIME DD_CONCURRENCY=$CONC DD_CALL=$CALL DD_BATCH=$BATCH DD_BATCH_MB=$BATCH_MB scripts/bench-replica-dicts.sh"
for b in $BINS; do [ -x "$b" ] || { echo "bench-replica-dicts: $b is not an executable" >&2; exit 1; }; done
[ -x "$FIXTURE" ] || { echo "bench-replica-dicts: $FIXTURE is not an executable (DD_FIXTURE)" >&2; exit 1; }
# shellcheck disable=SC2086 # the list splits on whitespace
set -- $BINS
FIRST_BIN=$1
[ "$(nproc)" -ge 2 ] || { echo "bench-replica-dicts: needs 2 CPUs (the replica on 0, the client on 1)" >&2; exit 1; }

mkdir -p "$OUT"
SHAPE="$COPIES $RANGE v4"
if [ "$(cat "$OUT/shape" 2> /dev/null)" != "$SHAPE" ] || [ ! -d "$OUT/bucket" ]; then
  rm -rf "$OUT/lake" "$OUT/data" "$OUT/bucket"
  echo "bench-replica-dicts: a lake of $((COPIES * 20)) ledgers" >&2
  "$FIXTURE" "$OUT/lake" "$COPIES" 1 64000 3 > /dev/null
  "$FIRST_BIN" ingest --no-progress --data-dir "$OUT/data" --stellar-datalake "$OUT/lake" \
    --segments.range-ledgers "$RANGE" --segments.merge-fanout 2 --segments.merge-levels 1 > /dev/null
  mkdir -p "$OUT/bucket"
  "$FIRST_BIN" publish --data-dir "$OUT/data" --cold.store "$OUT/bucket" --cold.pack-version 4 \
    | tee "$OUT/publish.txt" >&2
  grep -q "in version-4 packs" "$OUT/publish.txt" \
    || { echo "bench-replica-dicts: $FIRST_BIN did not publish version-4 packs" >&2; exit 1; }
  echo "$SHAPE" > "$OUT/shape"
fi
PACKS=$(find "$OUT/bucket" -name '*.pack' | wc -l)

PID=""
cleanup() { [ -n "$PID" ] && kill "$PID" 2> /dev/null || true; }
trap cleanup EXIT
cat > "$OUT/serve.toml" << 'EOF'
[metrics]
refresh_secs = 1
EOF
# metric URL NAME: a metric's value, empty if the build has none.
metric() { curl -s --max-time 5 "$1" | awk -v m="$2" '$1 == m {print $2}' || true; }

: > "$OUT/runs.tsv"
for round in $(seq "$ROUNDS"); do
  for mb in $DICT_MB; do
    for bin in $BINS; do
      rm -rf "$OUT/cache"
      taskset -c 0 "$bin" serve --config "$OUT/serve.toml" --grpc.listen 127.0.0.1:0 \
        --metrics.listen 127.0.0.1:0 --jsonrpc.enabled false --replica "$OUT/bucket" \
        --replica.cache-dir "$OUT/cache" --replica.cache-mb 8192 \
        --replica.dict-memory-mb "$mb" ${BATCH_FLAG[@]+"${BATCH_FLAG[@]}"} > "$OUT/serve.out" 2> "$OUT/serve.err" &
      PID=$!
      for _ in $(seq 600); do grep -q "serving gRPC" "$OUT/serve.out" && break; sleep 0.1; done
      line=$(grep "serving gRPC" "$OUT/serve.out") || { echo "bench-replica-dicts: the replica did not start (see $OUT/serve.err)" >&2; exit 1; }
      grpc=$(sed -E 's/.*gRPC on ([^ ]+).*/\1/' <<< "$line")
      metrics=$(sed -E 's#.*metrics on (http://[^)]+)\).*#\1#' <<< "$line")
      for _ in $(seq 300); do "$bin" health --endpoint "http://$grpc" > /dev/null 2>&1 && break; sleep 0.2; done
      taskset -c 1 "$bin" bench-query --endpoint "http://$grpc" --call "$CALL" --batch-hashes "$BATCH" \
        --concurrency "$CONC" --sample-ledgers "$SAMPLE" --seconds "$PRIME" --warmup-seconds 0 --json > "$OUT/prime.json"
      sleep 1.5
      opens0=$(metric "$metrics" ledgerstore_replica_pack_dict_opens_total)
      lookups0=$(metric "$metrics" ledgerstore_replica_lookups_total)
      taskset -c 1 "$bin" bench-query --endpoint "http://$grpc" --pid "$PID" --call "$CALL" \
        --batch-hashes "$BATCH" --concurrency "$CONC" --sample-ledgers "$SAMPLE" --seconds "$SECS" --warmup-seconds 0 \
        --json > "$OUT/run.json"
      sleep 1.5
      opens1=$(metric "$metrics" ledgerstore_replica_pack_dict_opens_total)
      lookups1=$(metric "$metrics" ledgerstore_replica_lookups_total)
      held=$(metric "$metrics" ledgerstore_replica_pack_dict_bytes)
      hwm=$(awk '/VmHWM/ {print $2}' "/proc/$PID/status" 2> /dev/null || true)
      [ -n "$hwm" ] || { echo "bench-replica-dicts: the replica exited during the run (see $OUT/serve.err)" >&2; exit 1; }
      kill "$PID" 2> /dev/null || true
      wait "$PID" 2> /dev/null || true
      PID=""
      python3 - "$OUT/run.json" "$round" "$mb" "$bin" "${opens0:-}" "${opens1:-}" "${lookups0:-}" "${lookups1:-}" "${held:-}" "$hwm" >> "$OUT/runs.tsv" << 'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
rnd, mb, b, o0, o1, l0, l1, held, hwm = sys.argv[2:]
if r["items_found"] != r["items_asked"] or r["errors"]:
    sys.exit(f"bench-replica-dicts: {b}: {r['items_asked'] - r['items_found']} not found, {r['errors']} errors")
opens = "-"
if o0 and o1 and l0 and l1 and float(l1) > float(l0):
    opens = f"{(float(o1) - float(o0)) / (float(l1) - float(l0)):.3f}"
held = f"{float(held) / 2**20:.1f}" if held else "-"
lat = r["latency"]
rps = r["requests_per_s"]
print("\t".join([rnd, mb, b, f"{rps:.1f}" if rps < 100 else f"{rps:.0f}", f"{r['daemon_cpu_us_per_request'] or 0:.0f}",
                 f"{lat['p50_us'] / 1000:.2f}", f"{lat['p99_us'] / 1000:.2f}", f"{int(hwm) / 1024:.0f}",
                 opens, held]))
EOF
      tail -1 "$OUT/runs.tsv" >&2
    done
  done
done

{
  echo "\`$CMDLINE\` ($PACKS packs of $RANGE ledgers; builds: $BINS)"
  echo
  echo "| round | dict MiB | build | $CALL requests/s | daemon CPU µs a request | p50 / p99 ms | peak RSS MiB | dictionaries opened a lookup | held MiB |"
  echo "|---|---|---|---|---|---|---|---|---|"
  awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s / %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10}' "$OUT/runs.tsv"
} | tee "$OUT/summary.md"
