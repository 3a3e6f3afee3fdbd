#!/usr/bin/env bash
# Read replicas of published ranges, against the writer's own reads, side by
# side in one run, on loopback: a synthetic indexed store (BR_LEDGERS
# ledgers of BR_TX transactions of BR_TX_BYTES raw bytes, BR_RANGE-ledger
# base ranges) is published with `ledgerstore publish` to versitygw (real
# S3 on 127.0.0.1, installed by scripts/lake-servers.sh), then driven with
# `ledgerstore bench-query --call get` (GetTransaction, closed loop,
# BR_CONCURRENCY in flight, hashes of sampled ledgers spread evenly):
#
#   writer   the writer daemon over its data dir (warm page cache), the
#            BR_WARM_SAMPLE ledgers' hashes
#   cold     a fresh replica, the hashes of BR_SAMPLE ledgers for
#            BR_COLD_SECONDS: first sight of almost every hash (the cache
#            hit ratio says how many): the segment is fetched whole on the
#            first probe, then each lookup fetches by ranged GET its
#            ledger table page and its ledger's frame (pack versions 3 and
#            4; 4 is what `publish` writes into a new bucket, and a
#            version-4 lookup also reads its pack's dictionary once), or its body
#            table page and its body (version 2, which the runs in
#            docs/benchmarks.md before 2026-12-02 measured:
#            LEDGERSTORE_COLD__PACK_VERSION=2 for that form)
#   warm     the same replica, the BR_WARM_SAMPLE ledgers' hashes, primed
#            by an unmeasured pass of BR_COLD_SECONDS first (all cached)
#   1 vs 2   aggregate lookups/s of one warm replica, then of two warm
#            replicas each driven by its own client at once
#
# GETs and bytes per lookup are the replica's /metrics deltas
# (ledgerstore_replica_object_gets_total and _object_get_bytes_total,
# refreshed every second) over a run, divided by its requests. The sampled
# ledgers are read once before the cold run (GetLedger), so the run's own
# sampling fetches nothing; the cold run does include the first fetch of
# each segment file, whole.
# Every run's answers must be found (items_found = items_asked) or the
# script fails after writing the summary.
#
#   scripts/bench-replica.sh
#   BR_LEDGERS=200 BR_SECONDS=3 scripts/bench-replica.sh     # quick
#
# Env: BR_LEDGERS (1000), BR_TX (250), BR_TX_BYTES (1200), BR_RANGE (100),
# BR_SAMPLE (200), BR_WARM_SAMPLE (8), BR_SECONDS (10), BR_COLD_SECONDS (3), BR_CONCURRENCY (16),
# BR_OUT (./bench-replica-out), BR_BIN (default: a release build of this
# checkout). The data dir BR_OUT/writer is reused by later runs with the
# same shape; the bucket and caches are made anew. Writes BR_OUT/summary.md
# and BR_OUT/summary.json.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh

LEDGERS="${BR_LEDGERS:-1000}"
TX="${BR_TX:-250}"
TX_BYTES="${BR_TX_BYTES:-1200}"
RANGE="${BR_RANGE:-100}"
SAMPLE="${BR_SAMPLE:-200}"
WARM_SAMPLE="${BR_WARM_SAMPLE:-8}"
SECS="${BR_SECONDS:-10}"
COLD_SECS="${BR_COLD_SECONDS:-3}"
CONC="${BR_CONCURRENCY:-16}"
OUT="${BR_OUT:-$PWD/bench-replica-out}"
BIN="${BR_BIN:-}"
CMDLINE="BR_LEDGERS=$LEDGERS BR_TX=$TX BR_TX_BYTES=$TX_BYTES BR_RANGE=$RANGE BR_SAMPLE=$SAMPLE BR_WARM_SAMPLE=$WARM_SAMPLE BR_SECONDS=$SECS BR_COLD_SECONDS=$COLD_SECS BR_CONCURRENCY=$CONC scripts/bench-replica.sh"

if [ -z "$BIN" ]; then
  cargo build --release --workspace --locked >&2
  BIN="$CARGO_TARGET_DIR/release/ledgerstore"
fi
[ -x "$BIN" ] || { echo "bench-replica: $BIN is not an executable" >&2; exit 1; }
VGW="$(scripts/lake-servers.sh | awk -F= '$1 == "versitygw" {print $2}')"
[ -x "$VGW" ] || { echo "bench-replica: versitygw is not installed (scripts/lake-servers.sh)" >&2; exit 1; }

mkdir -p "$OUT"
WRITER="$OUT/writer"
SHAPE="$LEDGERS $TX $TX_BYTES $RANGE"
if [ "$(cat "$OUT/writer.shape" 2> /dev/null)" != "$SHAPE" ]; then
  rm -rf "$WRITER"
  echo "bench-replica: ingesting $LEDGERS synthetic ledgers of $TX txs" >&2
  "$BIN" ingest --synthetic --no-progress --layout indexed --data-dir "$WRITER" \
    --ledgers "$LEDGERS" --tx-per-ledger "$TX" --tx-bytes "$TX_BYTES" \
    --segments.range-ledgers "$RANGE" > /dev/null
  echo "$SHAPE" > "$OUT/writer.shape"
fi

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2> /dev/null || true; done; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rm -rf "$OUT/s3" "$OUT/vgw-sidecar" "$OUT"/cache-*
mkdir -p "$OUT/s3/cold" "$OUT/vgw-sidecar"
PORT=$(free_port)
export AWS_ACCESS_KEY_ID=bench-replica AWS_SECRET_ACCESS_KEY=bench-replica-secret
"$VGW" --access "$AWS_ACCESS_KEY_ID" --secret "$AWS_SECRET_ACCESS_KEY" --port "127.0.0.1:$PORT" \
  --region us-east-1 posix --sidecar "$OUT/vgw-sidecar" "$OUT/s3" > "$OUT/versitygw.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do (echo > "/dev/tcp/127.0.0.1/$PORT") 2> /dev/null && break; sleep 0.1; done
S3=(--lake.endpoint "http://127.0.0.1:$PORT" --lake.allow-http)
STORE=s3://cold/bench

echo "bench-replica: publishing" >&2
"$BIN" publish --data-dir "$WRITER" --cold.store "$STORE" "${S3[@]}" | tee "$OUT/publish.txt" >&2
PUBLISHED_BYTES=$(du -sb "$OUT/s3/cold" | cut -f1)

cat > "$OUT/serve.toml" << 'EOF'
[metrics]
refresh_secs = 1
EOF

# start NAME ARGS...: a daemon; sets ${NAME}_GRPC, ${NAME}_METRICS, ${NAME}_PID.
start() {
  local name=$1
  shift
  "$BIN" serve --config "$OUT/serve.toml" --grpc.listen 127.0.0.1:0 --metrics.listen 127.0.0.1:0 \
    --jsonrpc.enabled false "$@" > "$OUT/$name.out" 2> "$OUT/$name.err" &
  local pid=$!
  PIDS+=("$pid")
  for _ in $(seq 600); do grep -q "serving gRPC" "$OUT/$name.out" && break; sleep 0.1; done
  local line
  line=$(grep "serving gRPC" "$OUT/$name.out")
  printf -v "${name}_GRPC" '%s' "$(sed -E 's/.*gRPC on ([^ ]+).*/\1/' <<< "$line")"
  printf -v "${name}_METRICS" '%s' "$(sed -E 's#.*metrics on (http://[^)]+)\).*#\1#' <<< "$line")"
  printf -v "${name}_PID" '%s' "$pid"
  local grpc
  grpc=$(sed -E 's/.*gRPC on ([^ ]+).*/\1/' <<< "$line")
  for _ in $(seq 300); do
    "$BIN" health --endpoint "http://$grpc" > /dev/null 2>&1 && return
    sleep 0.2
  done
  echo "bench-replica: $name did not become SERVING (see $OUT/$name.err)" >&2
  exit 1
}
replica() { start "$1" --replica "$STORE" --replica.cache-dir "$OUT/cache-$1" --replica.cache-mb 8192 "${S3[@]}"; }
# metric URL NAME: a metric's value.
metric() { curl -s "$1" | awk -v m="$2" '$1 == m {print $2}'; }
snap() { echo "$(metric "$1" ledgerstore_replica_object_gets_total) $(metric "$1" ledgerstore_replica_object_get_bytes_total) $(metric "$1" ledgerstore_replica_lookups_total) $(metric "$1" ledgerstore_replica_cache_hits_total) $(metric "$1" ledgerstore_replica_cache_misses_total)"; }
# bench NAME GRPC PID SECONDS WARMUP SAMPLE: bench-query JSON into $OUT/NAME.json.
bench() {
  "$BIN" bench-query --endpoint "http://$2" --pid "$3" --call get --concurrency "$CONC" \
    --sample-ledgers "$6" --seconds "$4" --warmup-seconds "$5" --json > "$OUT/$1.json"
}

start writer --data-dir "$WRITER"
echo "bench-replica: writer" >&2
bench writer "$writer_GRPC" "$writer_PID" "$SECS" 1 "$WARM_SAMPLE"

replica A
"$BIN" bench-query --endpoint "http://$A_GRPC" --call ledger --sample-ledgers "$SAMPLE" \
  --seconds 1 --warmup-seconds 0 --json > "$OUT/prime-ledgers.json"
sleep 1.5
before=$(snap "$A_METRICS")
echo "bench-replica: replica, cold cache" >&2
bench cold "$A_GRPC" "$A_PID" "$COLD_SECS" 0 "$SAMPLE"
sleep 1.5
after=$(snap "$A_METRICS")
echo "$before" > "$OUT/cold.before"; echo "$after" > "$OUT/cold.after"
echo "bench-replica: replica, warm cache" >&2
bench prime-a "$A_GRPC" "$A_PID" "$COLD_SECS" 0 "$WARM_SAMPLE"
sleep 1.5
before=$(snap "$A_METRICS")
bench warm "$A_GRPC" "$A_PID" "$SECS" 1 "$WARM_SAMPLE"
sleep 1.5
after=$(snap "$A_METRICS")
echo "$before" > "$OUT/warm.before"; echo "$after" > "$OUT/warm.after"

replica B
bench prime-b "$B_GRPC" "$B_PID" "$COLD_SECS" 0 "$WARM_SAMPLE"
echo "bench-replica: two replicas at once" >&2
bench two-a "$A_GRPC" "$A_PID" "$SECS" 1 "$WARM_SAMPLE" &
ba=$!
bench two-b "$B_GRPC" "$B_PID" "$SECS" 1 "$WARM_SAMPLE"
wait "$ba"

python3 - "$OUT" "$CMDLINE" "$PUBLISHED_BYTES" "$(nproc)" << 'EOF'
import json, sys
out, cmd, published, cores = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
r = {n: json.load(open(f"{out}/{n}.json")) for n in ["writer", "cold", "warm", "two-a", "two-b"]}
def delta(n):
    b = [float(x or 0) for x in open(f"{out}/{n}.before").read().split()]
    a = [float(x or 0) for x in open(f"{out}/{n}.after").read().split()]
    d = [y - x for x, y in zip(b, a)]
    lookups = max(r[n]["requests"], 1)
    hits, misses = d[3], d[4]
    return {"gets_per_lookup": d[0] / lookups, "bytes_per_lookup": d[1] / lookups,
            "hit_ratio": hits / max(hits + misses, 1), "lookups": d[2]}
rows = []
def row(name, rep, extra):
    l = rep["latency"]
    rows.append({"run": name, "req_s": rep["requests_per_s"], "p50_us": l["p50_us"], "p99_us": l["p99_us"],
                 "cpu_us_req": rep["daemon_cpu_us_per_request"], **extra})
row("writer (local data dir)", r["writer"], {})
row("replica, cold cache", r["cold"], delta("cold"))
row("replica, warm cache", r["warm"], delta("warm"))
two = r["two-a"]["requests_per_s"] + r["two-b"]["requests_per_s"]
bad = [n for n, x in r.items() if x["items_found"] != x["items_asked"] or x["errors"]]
lines = [f"`{cmd}` ({cores} cores, loopback, published {published / 2**20:.1f} MiB)", "",
         "| run | lookups/s | p50 µs | p99 µs | daemon CPU µs/lookup | GETs/lookup | bytes/lookup | cache hit ratio |",
         "|---|---|---|---|---|---|---|---|"]
for x in rows:
    g = f"{x['gets_per_lookup']:.2f}" if "gets_per_lookup" in x else "-"
    b = f"{x['bytes_per_lookup']:.0f}" if "bytes_per_lookup" in x else "-"
    h = f"{x['hit_ratio']:.3f}" if "hit_ratio" in x else "-"
    lines.append(f"| {x['run']} | {x['req_s']:.0f} | {x['p50_us']} | {x['p99_us']} | {x['cpu_us_req'] or 0:.0f} | {g} | {b} | {h} |")
lines += ["", f"Aggregate, warm: one replica {r['warm']['requests_per_s']:.0f} lookups/s; two replicas at once "
          f"{two:.0f} lookups/s ({r['two-a']['requests_per_s']:.0f} + {r['two-b']['requests_per_s']:.0f}), "
          f"{two / max(r['warm']['requests_per_s'], 1):.2f}× on {cores} cores shared by both replicas and both clients."]
if bad:
    lines += ["", f"FAILED: runs with lookups not found or errors: {bad}"]
open(f"{out}/summary.md", "w").write("\n".join(lines) + "\n")
json.dump({"command": cmd, "rows": rows, "two_replicas_req_s": two, "published_bytes": published},
          open(f"{out}/summary.json", "w"), indent=2)
print("\n".join(lines))
sys.exit(1 if bad else 0)
EOF
