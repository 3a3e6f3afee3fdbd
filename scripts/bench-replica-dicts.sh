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
# With DD_STORE=s3 the bucket is versitygw (real S3 on 127.0.0.1, from
# scripts/lake-servers.sh) and the replicas reach it through toxiproxy
# (installed pinned from the Go module proxy), which holds every answer
# DD_DELAY_MS (a list; each a run of its own) before passing it on: an
# object store's round trip, on loopback. Also reported: object-store GETs
# a request (ledgerstore_replica_object_gets_total over the run, which
# counts the GETs of bench-query's GetLedger sampling too: DD_SAMPLE
# ledgers at most, one frame each). DD_CACHE_MB sets the
# replica's disk cache: a small one lets go of the frames between
# requests, so they are fetched again, as from a store much larger than
# the cache. It also decides the form the disk cache keeps dictionaries in,
# in builds that choose it (unpacked while the packs' unpacked dictionaries
# take at most an eighth of the cache, as stored beyond that; builds up to
# 8a2d08d keep them unpacked at any size).
#
#   DD_BINS="/path/ls-before /path/ls-after" scripts/bench-replica-dicts.sh
#   DD_BINS=… DD_STORE=s3 DD_DELAY_MS="0 20" DD_CACHE_MB=64 DD_CALL=batch DD_CONCURRENCY=1 scripts/bench-replica-dicts.sh
#
# Env: DD_BINS (required: release `ledgerstore` binaries), DD_FIXTURE (a
# `lake-fixture` binary; default: the release build's), DD_COPIES (50),
# DD_RANGE (10), DD_DICT_MB ("64"), DD_ROUNDS (2), DD_SAMPLE (1000),
# DD_SECONDS (10), DD_PRIME_SECONDS (10), DD_CONCURRENCY (16), DD_CALL
# (get), DD_BATCH (1000), DD_BATCH_MB (unset: the build's default),
# DD_STORE (dir or s3), DD_DELAY_MS ("0"; s3 only), DD_CACHE_MB (8192),
# DD_OUT (./bench-replica-dicts-out; the store and bucket are reused by
# runs with the same shape). Writes DD_OUT/summary.md.
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
STORE_KIND="${DD_STORE:-dir}"
DELAYS="${DD_DELAY_MS:-0}"
CACHE_MB="${DD_CACHE_MB:-8192}"
case "$CALL" in get | batch) ;; *) echo "bench-replica-dicts: DD_CALL is get or batch, not $CALL" >&2; exit 1 ;; esac
case "$STORE_KIND" in dir | s3) ;; *) echo "bench-replica-dicts: DD_STORE is dir or s3, not $STORE_KIND" >&2; exit 1 ;; esac
for d in $DELAYS; do
  [[ "$d" =~ ^[0-9]+$ ]] || { echo "bench-replica-dicts: DD_DELAY_MS lists whole milliseconds, not $d" >&2; exit 1; }
  [ "$STORE_KIND" = s3 ] || [ "$d" = 0 ] || { echo "bench-replica-dicts: DD_DELAY_MS needs DD_STORE=s3" >&2; exit 1; }
done
[ "$PRIME" -ge 1 ] || { echo "bench-replica-dicts: DD_PRIME_SECONDS is at least 1, not $PRIME" >&2; exit 1; }
BATCH_FLAG=()
[ -n "$BATCH_MB" ] && BATCH_FLAG=(--replica.batch-memory-mb "$BATCH_MB")
OUT="${DD_OUT:-$PWD/bench-replica-dicts-out}"
CMDLINE="DD_COPIES=$COPIES DD_RANGE=$RANGE DD_DICT_MB=\"$DICT_MB\" DD_ROUNDS=$ROUNDS DD_SAMPLE=$SAMPLE DD_SECONDS=$SECS DD_PRIME_SECONDS=$PRIME DD_CONCURRENCY=$CONC DD_CALL=$CALL DD_BATCH=$BATCH DD_BATCH_MB=$BATCH_MB DD_STORE=$STORE_KIND DD_DELAY_MS=\"$DELAYS\" DD_CACHE_MB=$CACHE_MB scripts/bench-replica-dicts.sh"
for b in $BINS; do [ -x "$b" ] || { echo "bench-replica-dicts: $b is not an executable" >&2; exit 1; }; done
[ -x "$FIXTURE" ] || { echo "bench-replica-dicts: $FIXTURE is not an executable (DD_FIXTURE)" >&2; exit 1; }
# shellcheck disable=SC2086 # the list splits on whitespace
set -- $BINS
FIRST_BIN=$1
TOXIPROXY_VERSION=v2.5.0
[ "$(nproc)" -ge 2 ] || { echo "bench-replica-dicts: needs 2 CPUs (the replica on 0, the client on 1)" >&2; exit 1; }

mkdir -p "$OUT"
PID=""
SERVERS=()
cleanup() {
  if [ -n "$PID" ]; then kill "$PID" 2> /dev/null || true; fi
  for p in ${SERVERS[@]+"${SERVERS[@]}"}; do kill "$p" 2> /dev/null || true; done
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
  for _ in $(seq 100); do (echo > "/dev/tcp/127.0.0.1/$1") 2> /dev/null && return; sleep 0.1; done
  echo "bench-replica-dicts: nothing listens on 127.0.0.1:$1 (see $OUT/*.log)" >&2
  exit 1
}

# The store: a directory, or versitygw behind toxiproxy.
STORE="$OUT/bucket"
BUCKET_DIR="$OUT/bucket"
S3=()
if [ "$STORE_KIND" = s3 ]; then
  VGW="$(scripts/lake-servers.sh | awk -F= '$1 == "versitygw" {print $2}')"
  [ -x "$VGW" ] || { echo "bench-replica-dicts: versitygw is not installed (scripts/lake-servers.sh)" >&2; exit 1; }
  TOXI_DIR="$HOME/.cache/ledgerstore/tools/toxiproxy-$TOXIPROXY_VERSION"
  if [ ! -x "$TOXI_DIR/server" ]; then
    echo "bench-replica-dicts: installing toxiproxy $TOXIPROXY_VERSION (go install)" >&2
    GOBIN="$TOXI_DIR" CGO_ENABLED=0 go install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION" >&2
  fi
  BUCKET_DIR="$OUT/s3/cold"
  mkdir -p "$BUCKET_DIR" "$OUT/vgw-sidecar"
  export AWS_ACCESS_KEY_ID=bench-replica AWS_SECRET_ACCESS_KEY=bench-replica-secret
  VPORT=$(free_port)
  "$VGW" --access "$AWS_ACCESS_KEY_ID" --secret "$AWS_SECRET_ACCESS_KEY" --port "127.0.0.1:$VPORT" \
    --region us-east-1 posix --sidecar "$OUT/vgw-sidecar" "$OUT/s3" > "$OUT/versitygw.log" 2>&1 &
  SERVERS+=($!)
  TPORT=$(free_port)
  "$TOXI_DIR/server" -host 127.0.0.1 -port "$TPORT" > "$OUT/toxiproxy.log" 2>&1 &
  SERVERS+=($!)
  wait_port "$VPORT"
  wait_port "$TPORT"
  PPORT=$(free_port)
  curl -sf -X POST "http://127.0.0.1:$TPORT/proxies" \
    -d "{\"name\":\"s3\",\"listen\":\"127.0.0.1:$PPORT\",\"upstream\":\"127.0.0.1:$VPORT\"}" > /dev/null
  STORE=s3://cold/bench
  S3=(--lake.endpoint "http://127.0.0.1:$PPORT" --lake.allow-http)
fi
# delay MS: toxiproxy holds each answer from the store MS ms.
delay() {
  [ "$STORE_KIND" = s3 ] || return 0
  curl -s -X DELETE "http://127.0.0.1:$TPORT/proxies/s3/toxics/latency" > /dev/null || true
  [ "$1" = 0 ] && return 0
  curl -sf -X POST "http://127.0.0.1:$TPORT/proxies/s3/toxics" \
    -d "{\"name\":\"latency\",\"type\":\"latency\",\"stream\":\"downstream\",\"attributes\":{\"latency\":$1,\"jitter\":0}}" > /dev/null
}

SHAPE="$COPIES $RANGE v4 $STORE_KIND"
if [ "$(cat "$OUT/shape" 2> /dev/null)" != "$SHAPE" ] || [ ! -d "$BUCKET_DIR" ] \
  || [ -z "$(find "$BUCKET_DIR" -name '*.pack' -print -quit)" ]; then
  rm -f "$OUT/shape"
  rm -rf "$OUT/lake" "$OUT/data" "$OUT/bucket"
  if [ "$STORE_KIND" = s3 ]; then rm -rf "${BUCKET_DIR:?}"/* "$OUT/vgw-sidecar"/*; fi
  echo "bench-replica-dicts: a lake of $((COPIES * 20)) ledgers" >&2
  "$FIXTURE" "$OUT/lake" "$COPIES" 1 64000 3 > /dev/null
  "$FIRST_BIN" ingest --no-progress --data-dir "$OUT/data" --stellar-datalake "$OUT/lake" \
    --segments.range-ledgers "$RANGE" --segments.merge-fanout 2 --segments.merge-levels 1 > /dev/null
  mkdir -p "$BUCKET_DIR"
  "$FIRST_BIN" publish --data-dir "$OUT/data" --cold.store "$STORE" ${S3[@]+"${S3[@]}"} --cold.pack-version 4 \
    | tee "$OUT/publish.txt" >&2
  grep -q "in version-4 packs" "$OUT/publish.txt" \
    || { echo "bench-replica-dicts: $FIRST_BIN did not publish version-4 packs" >&2; exit 1; }
  echo "$SHAPE" > "$OUT/shape"
fi
PACKS=$(find "$BUCKET_DIR" -name '*.pack' | wc -l)
cat > "$OUT/serve.toml" << 'EOF'
[metrics]
refresh_secs = 1
EOF
# metric URL NAME: a metric's value, empty if the build has none.
metric() { curl -s --max-time 5 "$1" | awk -v m="$2" '$1 == m {print $2}' || true; }

: > "$OUT/runs.tsv"
for round in $(seq "$ROUNDS"); do
  for ms in $DELAYS; do
    delay "$ms"
    for mb in $DICT_MB; do
      for bin in $BINS; do
        rm -rf "$OUT/cache"
        taskset -c 0 "$bin" serve --config "$OUT/serve.toml" --grpc.listen 127.0.0.1:0 \
          --metrics.listen 127.0.0.1:0 --jsonrpc.enabled false --replica "$STORE" ${S3[@]+"${S3[@]}"} \
          --replica.cache-dir "$OUT/cache" --replica.cache-mb "$CACHE_MB" \
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
        gets0=$(metric "$metrics" ledgerstore_replica_object_gets_total)
        taskset -c 1 "$bin" bench-query --endpoint "http://$grpc" --pid "$PID" --call "$CALL" \
          --batch-hashes "$BATCH" --concurrency "$CONC" --sample-ledgers "$SAMPLE" --seconds "$SECS" --warmup-seconds 0 \
          --json > "$OUT/run.json"
        sleep 1.5
        opens1=$(metric "$metrics" ledgerstore_replica_pack_dict_opens_total)
        lookups1=$(metric "$metrics" ledgerstore_replica_lookups_total)
        gets1=$(metric "$metrics" ledgerstore_replica_object_gets_total)
        held=$(metric "$metrics" ledgerstore_replica_pack_dict_bytes)
        hwm=$(awk '/VmHWM/ {print $2}' "/proc/$PID/status" 2> /dev/null || true)
        [ -n "$hwm" ] || { echo "bench-replica-dicts: the replica exited during the run (see $OUT/serve.err)" >&2; exit 1; }
        kill "$PID" 2> /dev/null || true
        wait "$PID" 2> /dev/null || true
        PID=""
        python3 - "$OUT/run.json" "$round" "$mb" "$bin" "${opens0:-}" "${opens1:-}" "${lookups0:-}" "${lookups1:-}" "${held:-}" "$hwm" \
          "$ms" "${gets0:-}" "${gets1:-}" >> "$OUT/runs.tsv" << 'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
rnd, mb, b, o0, o1, l0, l1, held, hwm, ms, g0, g1 = sys.argv[2:]
if r["items_found"] != r["items_asked"] or r["errors"]:
    sys.exit(f"bench-replica-dicts: {b}: {r['items_asked'] - r['items_found']} not found, {r['errors']} errors")
opens = "-"
if o0 and o1 and l0 and l1 and float(l1) > float(l0):
    opens = f"{(float(o1) - float(o0)) / (float(l1) - float(l0)):.3f}"
held = f"{float(held) / 2**20:.1f}" if held else "-"
lat = r["latency"]
rps = r["requests_per_s"]
gets = "-"
if g0 and g1 and r["requests"]:
    gets = f"{(float(g1) - float(g0)) / r['requests']:.1f}"
print("\t".join([rnd, ms, mb, b, f"{rps:.1f}" if rps < 100 else f"{rps:.0f}", f"{r['daemon_cpu_us_per_request'] or 0:.0f}",
                 f"{lat['p50_us'] / 1000:.2f}", f"{lat['p99_us'] / 1000:.2f}", f"{int(hwm) / 1024:.0f}",
                 opens, held, gets]))
EOF
        tail -1 "$OUT/runs.tsv" >&2
      done
    done
  done
done

{
  echo "\`$CMDLINE\` ($PACKS packs of $RANGE ledgers; builds: $BINS)"
  echo
  echo "| round | store delay ms | dict MiB | build | $CALL requests/s | daemon CPU µs a request | p50 / p99 ms | peak RSS MiB | dictionaries opened a lookup | held MiB | GETs a request (sampling's included) |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s | %s / %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12}' "$OUT/runs.tsv"
} | tee "$OUT/summary.md"
