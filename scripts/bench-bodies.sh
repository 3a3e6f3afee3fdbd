#!/usr/bin/env bash
# Body forms side by side in one run: the same SEP-54 lake of real pubnet
# ledgers (`lake-fixture`: the 20 protocol-26 ledgers of 2026 written COPIES
# times with fresh hashes, zstd 19 like the public lake) ingested into an
# `indexed` dir per form, each run pinned to one core, then served and
# queried. For each form it reports:
#   - ingest: wall and CPU seconds (user + sys) on one core, ledgers/s;
#   - bytes: the whole data dir (du, every file) and the tx_bodies table,
#     each per ledger and against the lake's bytes for the same ledgers;
#   - GetTransaction: cold (page cache dropped, first BB_COLD_SECONDS) and
#     warm (BB_SECONDS more) p50/p99 and the daemon's CPU per lookup, the
#     daemon on CPU 0 and `ledgerstore bench-query` on CPU 1.
# Needs root for the cold runs (drop_caches); without it they are warm.
#
#   scripts/bench-bodies.sh                 # 50 copies: 1,000 ledgers, 259K txs
#   BB_COPIES=10 BB_FORMS="records blocks:256" scripts/bench-bodies.sh
#
# Env: BB_LAKE (a lake-fixture lake to reuse; else one is written),
# BB_OUT (./bench-bodies-out), BB_BIN (a built ledgerstore; else a
# release build), BB_COPIES (50), BB_FORMS (records blocks:256 blocks:256:9
# blocks:1024; blocks:K[:L] is blocks of K KiB at zstd level L, default
# BB_LEVEL, for the live tail and for bulk writes alike: segments.block_kib
# and segments.bulk_block_kib; with BB_BULK_SAME=no only the first, so
# bulk writes keep the build's default or
# LEDGERSTORE_SEGMENTS__BULK_BLOCK_KIB), BB_LEVEL (db.zstd_level, 3), BB_BATCH
# (--batch-ledgers, 200), BB_SECONDS (10), BB_COLD_SECONDS (3),
# BB_CONCURRENCY (16). Writes BB_OUT/summary.md.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh

OUT="${BB_OUT:-$PWD/bench-bodies-out}"
COPIES="${BB_COPIES:-50}"
FORMS="${BB_FORMS:-records blocks:256 blocks:256:9 blocks:1024}"
LEVEL="${BB_LEVEL:-3}"
BATCH="${BB_BATCH:-200}"
SECS="${BB_SECONDS:-10}"
COLD="${BB_COLD_SECONDS:-3}"
CONC="${BB_CONCURRENCY:-16}"
BIN="${BB_BIN:-}"
if [ -z "$BIN" ]; then
  cargo build --release --workspace --locked >&2
  BIN="$CARGO_TARGET_DIR/release/ledgerstore"
fi
FIXTURE="$(dirname "$BIN")/lake-fixture"
[ -x "$FIXTURE" ] || { echo "bench-bodies: $FIXTURE is missing (build the workspace)" >&2; exit 1; }
if [ "$(nproc)" -ge 2 ] && command -v taskset > /dev/null; then
  ON_D=(taskset -c 0); ON_C=(taskset -c 1)
else
  ON_D=(); ON_C=()
  echo "bench-bodies: fewer than 2 CPUs (or no taskset): nothing is pinned" >&2
fi
drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; }

rm -rf "$OUT"
mkdir -p "$OUT/lake"
LAKE="${BB_LAKE:-$OUT/lake/pubnet}"
[ -n "${BB_LAKE:-}" ] || "$FIXTURE" "$LAKE" "$COPIES" >&2
LAKE_BYTES=$(find "$LAKE" -type f -name '*.xdr.zst*' -printf '%s\n' | awk '{s+=$1} END {print s}')
: > "$OUT/results.jsonl"

DAEMON=
cleanup() { [ -n "$DAEMON" ] && kill -TERM "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null || true; }
trap cleanup EXIT

BULK_FLAG=no
if [ "${BB_BULK_SAME:-yes}" = yes ]; then
  "$BIN" ingest --help 2> /dev/null | grep -q -- --segments.bulk-block-kib && BULK_FLAG=yes
fi
for form in $FORMS; do
  name=${form//:/-}
  IFS=: read -r kind kib level <<< "$form"
  flags=(--segments.bodies "$kind" --db.zstd-level "${level:-$LEVEL}")
  [ -n "$kib" ] && flags+=(--segments.block-kib "$kib")
  # A backfill's bodies are bulk writes, in blocks of their own: the same
  # size here, so a form is what it says (builds before the setting lack it).
  [ -n "$kib" ] && [ "$BULK_FLAG" = yes ] && flags+=(--segments.bulk-block-kib "$kib")
  data="$OUT/$name"
  log="$OUT/ingest-$name.log"
  echo "bench-bodies: $form: ingest" >&2
  LEDGERSTORE_EVENTS__ENABLED=false \
    "${ON_C[@]}" /usr/bin/time -f "TIME %e %U %S" "$BIN" ingest --no-progress \
    --data-dir "$data" --stellar-datalake "$LAKE" --lake.read-ahead 1 \
    --batch-ledgers "$BATCH" "${flags[@]}" > "$log" 2>&1 || { cat "$log" >&2; exit 1; }
  "$BIN" stats --data-dir "$data" --json > "$OUT/stats-$name.json"
  du -sb "$data" | cut -f1 > "$OUT/du-$name"

  dlog="$OUT/daemon-$name.log"
  "${ON_D[@]}" "$BIN" serve --data-dir "$data" --grpc.listen 127.0.0.1:0 --jsonrpc.listen 127.0.0.1:0 \
    --metrics.listen 127.0.0.1:0 --events.enabled false > "$dlog" 2> "$OUT/daemon-$name.err" &
  DAEMON=$!
  for _ in $(seq 1 600); do grep -q "gRPC on" "$dlog" 2>/dev/null && break; sleep 0.05; done
  addr=$(sed -n 's/.*gRPC on \([0-9.:]*\) .*/\1/p' "$dlog" | head -1)
  [ -n "$addr" ] || { echo "bench-bodies: the daemon did not start" >&2; cat "$OUT/daemon-$name.err" >&2; exit 1; }
  for _ in $(seq 1 600); do "$BIN" health --endpoint "http://$addr" > /dev/null 2>&1 && break; sleep 0.1; done
  for phase in cold warm; do
    secs=$SECS
    if [ "$phase" = cold ]; then drop_caches || echo "bench-bodies: not root: the cold run is warm" >&2; secs=$COLD; fi
    "${ON_C[@]}" "$BIN" bench-query --endpoint "http://$addr" --call get --json --warmup-seconds 0 \
      --seconds "$secs" --concurrency "$CONC" --sample-ledgers 1000 --pid "$DAEMON" \
      | python3 -c 'import json,sys; r=json.load(sys.stdin); r["form"]=sys.argv[1]; r["phase"]=sys.argv[2]; print(json.dumps(r))' "$form" "$phase" \
      > "$OUT/query-$name-$phase.json"
  done
  kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null || true; DAEMON=
  python3 - "$form" "$log" "$OUT/stats-$name.json" "$OUT/du-$name" "$LAKE_BYTES" \
    "$OUT/query-$name-cold.json" "$OUT/query-$name-warm.json" >> "$OUT/results.jsonl" <<'PY'
import json, re, sys
form, log, stats, du, lake, cold, warm = sys.argv[1:]
text = open(log).read()
wall, user, sys_ = map(float, re.search(r"TIME (\S+) (\S+) (\S+)", text).groups())
s = json.load(open(stats))
ledgers = s["ledgers"]
bodies = next(t for t in s["tables"] if t["table"] == "tx_data")["engine_stats"]["disk_bytes"]
q = {p: json.load(open(f)) for p, f in (("cold", cold), ("warm", warm))}
print(json.dumps({
    "form": form, "ledgers": ledgers, "wall_s": wall, "cpu_s": user + sys_,
    "ledgers_per_cpu_s": ledgers / (user + sys_),
    "dir_bytes": int(open(du).read()), "bodies_bytes": bodies, "lake_bytes": int(lake),
    "query": q,
}))
PY
done

python3 - "$OUT/results.jsonl" > "$OUT/summary.md" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def lat(q, k):
    return f"{q['latency'][k] / 1000:.2f}"
print("| form | ingest CPU s (one core) | ledgers / CPU s | dir KB a ledger | ÷ lake | tx_bodies KB a ledger | cold get p50 / p99 ms (gets/s) | warm get p50 / p99 ms (gets/s) | warm daemon CPU µs a get |")
print("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    n = r["ledgers"]
    c, w = r["query"]["cold"], r["query"]["warm"]
    print(f"| {r['form']} | {r['cpu_s']:.2f} | {r['ledgers_per_cpu_s']:.1f} | {r['dir_bytes'] / n / 1e3:.1f} | "
          f"{r['dir_bytes'] / r['lake_bytes']:.2f} | {r['bodies_bytes'] / n / 1e3:.1f} | "
          f"{lat(c, 'p50_us')} / {lat(c, 'p99_us')} ({c['requests_per_s']:.0f}) | "
          f"{lat(w, 'p50_us')} / {lat(w, 'p99_us')} ({w['requests_per_s']:.0f}) | "
          f"{w['daemon_cpu_us_per_request'] or float('nan'):.0f} |")
PY
cat "$OUT/summary.md"
