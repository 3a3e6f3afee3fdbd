#!/usr/bin/env bash
# Cold lookups against the disk's random-read limit: a store at least 4x
# larger than the memory cgroup the daemon runs in, page cache dropped first,
# GetTransaction of hashes spread over the whole store at several depths
# (`ledgerstore bench-query`, closed loop), and fio's 4K random reads on the
# same filesystem in the same run. Reports hits/s against the device's IOPS,
# the device reads per hit and the queue depth the disk saw (from
# /proc/diskstats, over the load only: `bench-query --disk`, so the
# GetLedger calls that sample the hashes before it do not count), for each
# read placement (`query.inline_read_us`).
# Needs root (a cgroup v2 or v1 memory controller, drop_caches) and fio
# (Debian's `fio`). The daemon's two RocksDB block caches are
# BQC_BLOCK_CACHE_MB each (default 64; the daemon's own default, 256, takes
# a warm daemon to ~700 MB and a BQC_MEM below ~1G gets it killed).
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
CACHE_MB="${BQC_BLOCK_CACHE_MB:-64}"
OUT="${BQC_OUT:-$PWD/bench-cold-out}"
BIN="${BQC_BIN:-$CARGO_TARGET_DIR/release/ledgerstore}"
command -v fio > /dev/null || { echo "bench-query-cold: needs fio (apt-get install fio)" >&2; exit 1; }
mkdir -p "$OUT"
bytes=$(numfmt --from=iec "$MEM")
store=$(du -sb "$DATA" | cut -f1)
[ "$store" -ge $((4 * bytes)) ] || { echo "bench-query-cold: the store ($store bytes) is under 4x $MEM" >&2; exit 1; }
# The filesystem's own device (a partition, dm-0, md0), as /proc/diskstats
# names it; BQC_DISK overrides.
dev="${BQC_DISK:-$(lsblk -no KNAME "$(df --output=source "$DATA" | tail -1)" 2>/dev/null | head -1 || true)}"
[ -n "$dev" ] || dev=$(basename "$(df --output=source "$DATA" | tail -1)")
dev=${dev#/dev/}
grep -q " $dev " /proc/diskstats || { echo "bench-query-cold: no device $dev in /proc/diskstats" >&2; exit 1; }
free=$(df --output=avail -B1 "$DATA" | tail -1)
[ "$free" -ge $((3 << 30)) ] || { echo "bench-query-cold: fio lays out a 2 GiB file in $DATA and needs 3 GiB free; $free bytes are" >&2; exit 1; }

DAEMON=
cg=
# Keeps the script's exit status: nothing in here may end it early (a
# daemon killed by TERM or by the limit waits with 143 or 137).
cleanup() {
  local rc=$?
  set +e
  if [ -n "$DAEMON" ]; then kill -TERM "$DAEMON" 2>/dev/null; wait "$DAEMON" 2>/dev/null; fi
  rm -f "$DATA"/cold.0.0
  if [ -n "$cg" ] && [ -d "$cg" ]; then
    for _ in 1 2 3 4 5; do rmdir "$cg" 2>/dev/null && break; sleep 0.2; done
    [ -d "$cg" ] && echo "bench-query-cold: could not remove cgroup $cg" >&2
  fi
  exit "$rc"
}
trap cleanup EXIT
# The daemon's memory cgroup: v2 (memory.max) where the unified hierarchy
# has the memory controller, else v1 (memory.limit_in_bytes); refused
# when the limit does not hold, rather than measured without one.
if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
  echo +memory > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
  cg="/sys/fs/cgroup/ledgerstore-cold-$$"
  mkdir "$cg"; echo "$bytes" > "$cg/memory.max" 2>/dev/null || true; echo 0 > "$cg/memory.swap.max" 2>/dev/null || true
  limit="$cg/memory.max"
elif [ -d /sys/fs/cgroup/memory ]; then
  cg="/sys/fs/cgroup/memory/ledgerstore-cold-$$"
  mkdir "$cg"; echo "$bytes" > "$cg/memory.limit_in_bytes" 2>/dev/null || true
  echo "$bytes" > "$cg/memory.memsw.limit_in_bytes" 2>/dev/null || true
  limit="$cg/memory.limit_in_bytes"
else
  echo "bench-query-cold: no memory cgroup controller (v2 or v1) to bound the daemon" >&2; exit 1
fi
# The kernel rounds a limit down to whole pages.
[ "$(cat "$limit" 2>/dev/null)" = "$((bytes / 4096 * 4096))" ] || { echo "bench-query-cold: could not set $limit to $bytes" >&2; exit 1; }

echo "| what | in flight | lookups/s | of fio's IOPS | device reads/lookup | disk queue depth | p50 µs (a request) | p99 µs | p999 µs | daemon CPU µs/lookup |" > "$OUT/summary.md"
echo "|---|---|---|---|---|---|---|---|---|---|" >> "$OUT/summary.md"
declare -A IOPS
for d in ${DEPTHS//,/ }; do
  fio --name=cold --directory="$DATA" --rw=randread --bs=4k --direct=1 --ioengine=libaio \
      --iodepth="$d" --size=2G --runtime="$SECS" --time_based --output-format=json \
      > "$OUT/fio-$d.json" 2> "$OUT/fio-$d.err" || { cat "$OUT/fio-$d.err" >&2; exit 1; }
  r=$(python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]["read"]; p=j["clat_ns"]["percentile"]; print(round(j["iops"]), round(p["50.000000"]/1e3), round(p["99.000000"]/1e3), round(p["99.900000"]/1e3))' < "$OUT/fio-$d.json")
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
    --query.inline-read-us "$inline" --rocksdb.block-cache-mb "$CACHE_MB" > "$log" 2> "$OUT/daemon-$call-$inline-$d.err" &
  DAEMON=$!
  for _ in $(seq 1 1200); do grep -q "stores open" "$OUT/daemon-$call-$inline-$d.err" 2>/dev/null && break; sleep 0.05; done
  addr=$(sed -n 's/.*gRPC on \([0-9.:]*\) .*/\1/p' "$log" | head -1)
  if [ -z "$addr" ]; then
    if kill -0 "$DAEMON" 2>/dev/null; then
      echo "bench-query-cold: the daemon did not open its stores within 60 s" >&2
    else
      echo "bench-query-cold: the daemon exited before serving (killed by the cgroup's $MEM limit?)" >&2
    fi
    tail -5 "$OUT/daemon-$call-$inline-$d.err" >&2; exit 1
  fi
  "$BIN" bench-query --endpoint "http://$addr" --call "$call" --json --seconds "$SECS" \
    --warmup-seconds 0 --concurrency "$d" --connections 4 --sample-ledgers "$SAMPLE" \
    --pid "$DAEMON" --disk "$dev" --client-threads 2 > "$OUT/cold-$call-$inline-$d.json"
  kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null || true; DAEMON=
  python3 - "$OUT/cold-$call-$inline-$d.json" "$inline" "$d" "${IOPS[$d]}" >> "$OUT/summary.md" <<'PY'
import json, sys
f, inline, d, iops = sys.argv[1:]
r = json.load(open(f))
assert not r["errors"] and r["items_found"] == r["items_asked"], r
l = r["latency"]
if r["call"].startswith("Batch"):
    what = r["call"] + ", per hash"
else:
    what = {"100": "GetTransaction, adaptive (default)", "0": "GetTransaction, always pool"}.get(
        inline, f"GetTransaction, inline up to {inline} µs")
# The disk counters cover the load only (bench-query --disk), not the
# sampling before it; every process's reads of the device count.
print(f"| {what} | {d} | {r['items_per_s']:,.0f} | {100 * r['items_per_s'] / int(iops):.0f}% | "
      f"{r['device_reads_per_item']:.2f} | {r['device_queue_depth']:.1f} | {l['p50_us']} | {l['p99_us']} | {l['p999_us']} | "
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
