#!/usr/bin/env bash
# Cold lookups against the disk's random-read limit: a store at least 4x
# larger than the memory cgroup the daemon runs in, page cache dropped first,
# GetTransaction of hashes spread over the whole store at several depths
# (`ledgerstore bench-query`, closed loop), and fio's 4K random reads on the
# same filesystem in the same run. Reports hits/s against the device's IOPS,
# the device reads per hit and the queue depth the disk saw (from
# /proc/diskstats), for each read placement (`query.inline_read_us`).
# Needs root (cgroup v2, drop_caches) and fio (Debian's `fio`).
#
#   scripts/bench-query-cold.sh DATA_DIR       # an existing store, >= 4x BQC_MEM
#   BQC_MEM=1G BQC_DEPTHS=16,64 BQC_SECONDS=20 BQC_PLACEMENTS=100,0,10000 scripts/bench-query-cold.sh DATA_DIR
#
# BQC_PLACEMENTS: query.inline_read_us values to compare for GetTransaction
# (100: the default, adaptive; 0: always the blocking pool; 10000: inline
# unless reads take 10 ms). Then BatchGetTransactions of 100 hashes (always
# on the pool) at each depth. The requests ask for the transactions of
# BQC_SAMPLE_LEDGERS ledgers spread over the store (default: every ledger).
# Writes BQC_OUT/summary.md.
set -euo pipefail
DATA=$(realpath "${1:?usage: bench-query-cold.sh DATA_DIR}")
cd "$(dirname "$0")/.."
. scripts/env.sh
MEM="${BQC_MEM:-1G}"
DEPTHS="${BQC_DEPTHS:-16,64}"
SECS="${BQC_SECONDS:-20}"
PLACEMENTS="${BQC_PLACEMENTS:-100,0,10000}"
SAMPLE="${BQC_SAMPLE_LEDGERS:-1000000}"
OUT="${BQC_OUT:-$PWD/bench-cold-out}"
BIN="${BQC_BIN:-$CARGO_TARGET_DIR/release/ledgerstore}"
command -v fio > /dev/null || { echo "bench-query-cold: needs fio (apt-get install fio)" >&2; exit 1; }
mkdir -p "$OUT"
bytes=$(numfmt --from=iec "$MEM")
store=$(du -sb "$DATA" | cut -f1)
[ "$store" -ge $((4 * bytes)) ] || { echo "bench-query-cold: the store ($store bytes) is under 4x $MEM" >&2; exit 1; }
dev=$(lsblk -no PKNAME "$(df --output=source "$DATA" | tail -1)" 2>/dev/null | head -1)
[ -n "$dev" ] || dev=$(basename "$(df --output=source "$DATA" | tail -1)")
# Reads completed (field 4) and ms weighted by in-flight I/Os (field 14).
disk() { awk -v d="$dev" '$3 == d {print $4, $14}' /proc/diskstats; }

echo +memory > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
cg="/sys/fs/cgroup/ledgerstore-cold-$$"
mkdir "$cg"; echo "$bytes" > "$cg/memory.max"; echo 0 > "$cg/memory.swap.max" 2>/dev/null || true
DAEMON=
cleanup() { [ -n "$DAEMON" ] && kill -TERM "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null; rmdir "$cg" 2>/dev/null || true; }
trap cleanup EXIT

echo "| what | in flight | lookups/s | of fio's IOPS | device reads/lookup | disk queue depth | p50 µs (a request) | p99 µs | p999 µs | daemon CPU µs/lookup |" > "$OUT/summary.md"
echo "|---|---|---|---|---|---|---|---|---|---|" >> "$OUT/summary.md"
declare -A IOPS
for d in ${DEPTHS//,/ }; do
  r=$(fio --name=cold --directory="$DATA" --rw=randread --bs=4k --direct=1 --ioengine=libaio \
        --iodepth="$d" --size=2G --runtime="$SECS" --time_based --output-format=json 2> /dev/null \
      | python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]["read"]; p=j["clat_ns"]["percentile"]; print(round(j["iops"]), round(p["50.000000"]/1e3), round(p["99.000000"]/1e3), round(p["99.900000"]/1e3))')
  rm -f "$DATA"/cold.0.0
  read -r iops p50 p99 p999 <<< "$r"
  IOPS[$d]=$iops
  echo "| fio 4K random read | $d | $iops | 100% | 1 | $d | $p50 | $p99 | $p999 | |" >> "$OUT/summary.md"
done

run() { # call inline depth
  local call=$1 inline=$2 d=$3 log="$OUT/daemon-$1-$2-$3.log"
  sync; echo 3 > /proc/sys/vm/drop_caches
  bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' _ "$cg" \
    "$BIN" serve --data-dir "$DATA" --grpc.listen 127.0.0.1:0 --jsonrpc.listen 127.0.0.1:0 --metrics.listen 127.0.0.1:0 \
    --query.inline-read-us "$inline" > "$log" 2> "$OUT/daemon-$call-$inline-$d.err" &
  DAEMON=$!
  for _ in $(seq 1 1200); do grep -q "stores open" "$OUT/daemon-$call-$inline-$d.err" 2>/dev/null && break; sleep 0.05; done
  addr=$(sed -n 's/.*gRPC on \([0-9.:]*\) .*/\1/p' "$log" | head -1)
  local r0 q0 r1 q1 t0 t1
  read -r r0 q0 <<< "$(disk)"; t0=$(date +%s%N)
  "$BIN" bench-query --endpoint "http://$addr" --call "$call" --json --seconds "$SECS" \
    --warmup-seconds 0 --concurrency "$d" --connections 4 --sample-ledgers "$SAMPLE" \
    --pid "$DAEMON" --client-threads 2 > "$OUT/cold-$call-$inline-$d.json"
  read -r r1 q1 <<< "$(disk)"; t1=$(date +%s%N)
  kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null || true; DAEMON=
  python3 - "$OUT/cold-$call-$inline-$d.json" "$inline" "$d" "${IOPS[$d]}" "$((r1 - r0))" "$((q1 - q0))" "$(( (t1 - t0) / 1000000 ))" >> "$OUT/summary.md" <<'PY'
import json, sys
f, inline, d, iops, reads, qms, wall_ms = sys.argv[1:]
r = json.load(open(f))
assert not r["errors"] and r["items_found"] == r["items_asked"], r
l = r["latency"]
if r["call"].startswith("Batch"):
    what = r["call"] + ", per hash"
else:
    what = {"100": "GetTransaction, adaptive (default)", "0": "GetTransaction, always pool"}.get(
        inline, f"GetTransaction, inline up to {inline} µs")
# The disk counters include the sampling (GetLedger of the sampled ledgers,
# without raw bytes) before the load, and the daemon's start.
items = max(1, r["items_asked"])
print(f"| {what} | {d} | {r['items_per_s']:,.0f} | {100 * r['items_per_s'] / int(iops):.0f}% | "
      f"{int(reads) / items:.2f} | {int(qms) / int(wall_ms):.1f} | {l['p50_us']} | {l['p99_us']} | {l['p999_us']} | "
      f"{r['daemon_cpu_us_per_item']:.1f} |")
PY
  tail -1 "$OUT/summary.md" >&2
}
for inline in ${PLACEMENTS//,/ }; do
  for d in ${DEPTHS//,/ }; do run get "$inline" "$d"; done
done
if [ "${BQC_BATCH:-1}" != 0 ]; then
  for d in ${DEPTHS//,/ }; do run batch 100 "$d"; done
fi
cat "$OUT/summary.md"
