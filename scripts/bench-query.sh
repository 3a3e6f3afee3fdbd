#!/usr/bin/env bash
# Daemon CPU per request, every layout side by side in one run: each layout's
# store is served by `ledgerstore serve` pinned to CPU 0 while the light load
# client `ledgerstore bench-query` runs pinned to CPU 1, so the client's own
# CPU does not compete with the daemon (ghz, in scripts/load-ghz.sh, stays
# the stock-client check). Warm, no ingest during the load; loopback only;
# every call is bounded by BQ_SECONDS (plus 1 s of warm-up).
#
#   scripts/bench-query.sh     # release build, 200,000 txs a layout, 10 s a call
#   BQ_TXS=50000 BQ_SECONDS=3 BQ_LAYOUTS=indexed BQ_CALLS=get scripts/bench-query.sh
#
# Env: BQ_TXS, BQ_SECONDS, BQ_LAYOUTS (indexed,rocksdb-tuned,hybrid,rocksdb),
# BQ_CALLS (health,get,batch,tx-ledger,ledger,stream; health is an RPC that
# reads nothing: the transport's floor), BQ_CONCURRENCY (16),
# BQ_CONNECTIONS (4), BQ_OUT (./bench-query-out), BQ_BIN (the daemon;
# default: a release build of this checkout), BQ_CLIENT_BIN (default BQ_BIN;
# set it to compare an older daemon that lacks bench-query), BQ_EXTRA (more
# `serve` flags). Stores in BQ_OUT/<layout> are reused by later runs.
# Writes BQ_OUT/summary.md and BQ_OUT/summary.json.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh

TXS="${BQ_TXS:-200000}"
SECS="${BQ_SECONDS:-10}"
LAYOUTS="${BQ_LAYOUTS:-indexed,rocksdb-tuned,hybrid,rocksdb}"
CALLS="${BQ_CALLS:-health,get,batch,tx-ledger,ledger,stream}"
CONC="${BQ_CONCURRENCY:-16}"
CONNS="${BQ_CONNECTIONS:-4}"
OUT="${BQ_OUT:-$PWD/bench-query-out}"
BIN="${BQ_BIN:-}"
TXPL=250
SHAPE=(--tx-per-ledger "$TXPL" --tx-bytes 5000 --ledger-bytes 200000 --seed 7)
LEDGERS=$(( (TXS + TXPL - 1) / TXPL ))

if [ -z "$BIN" ]; then
  cargo build --release --workspace --locked >&2
  BIN="$CARGO_TARGET_DIR/release/ledgerstore"
fi
CLIENT="${BQ_CLIENT_BIN:-$BIN}"
# Pin the daemon and the client to different CPUs when there are two.
if [ "$(nproc)" -ge 2 ] && command -v taskset > /dev/null; then
  ON_D=(taskset -c 0); ON_C=(taskset -c 1)
else
  ON_D=(); ON_C=()
  echo "bench-query: fewer than 2 CPUs (or no taskset): daemon and client share them" >&2
fi
mkdir -p "$OUT"
: > "$OUT/results.jsonl"

DAEMON=
cleanup() { [ -n "$DAEMON" ] && kill -TERM "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null || true; }
trap cleanup EXIT

for layout in ${LAYOUTS//,/ }; do
  data="$OUT/$layout"
  have=0
  if [ -f "$data/ledgerstore.json" ]; then
    have=$("$BIN" stats --data-dir "$data" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["last_ledger"] or 0)')
  fi
  if [ "$have" -lt "$LEDGERS" ]; then
    echo "bench-query: $layout: ingesting ledgers $((have + 1))..=$LEDGERS" >&2
    "$BIN" ingest --synthetic --no-progress --data-dir "$data" --layout "$layout" \
      --ledgers $((LEDGERS - have)) --batch-ledgers 500 "${SHAPE[@]}" > "$OUT/ingest-$layout.log"
  fi
  log="$OUT/daemon-$layout.log"
  # shellcheck disable=SC2086
  "${ON_D[@]}" "$BIN" serve --data-dir "$data" --grpc.listen 127.0.0.1:0 --jsonrpc.listen 127.0.0.1:0 \
    --metrics.listen 127.0.0.1:0 ${BQ_EXTRA:-} > "$log" 2> "$OUT/daemon-$layout.err" &
  DAEMON=$!
  for _ in $(seq 1 600); do grep -q "gRPC on" "$log" 2>/dev/null && break; sleep 0.05; done
  addr=$(sed -n 's/.*gRPC on \([0-9.:]*\) .*/\1/p' "$log" | head -1)
  [ -n "$addr" ] || { echo "bench-query: the $layout daemon did not start" >&2; cat "$OUT/daemon-$layout.err" >&2; exit 1; }
  for _ in $(seq 1 600); do "$BIN" health --endpoint "http://$addr" > /dev/null 2>&1 && break; sleep 0.1; done
  for call in ${CALLS//,/ }; do
    echo "bench-query: $layout $call" >&2
    "${ON_C[@]}" "$CLIENT" bench-query --endpoint "http://$addr" --call "$call" --json \
      --seconds "$SECS" --concurrency "$CONC" --connections "$CONNS" --pid "$DAEMON" \
      | python3 -c 'import json,sys; r=json.load(sys.stdin); r["layout"]=sys.argv[1]; print(json.dumps(r))' "$layout" \
      >> "$OUT/results.jsonl"
  done
  kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null || true; DAEMON=
done

python3 - "$OUT" "$TXS" "$SECS" "$CONC" "$CONNS" <<'PY'
import json, sys
out, txs, secs, conc, conns = sys.argv[1:]
rows = [json.loads(l) for l in open(f"{out}/results.jsonl")]
md = [f"{int(txs):,} txs a layout, warm, {secs} s a call, {conc} in flight over {conns} connections; "
      "daemon on CPU 0, bench-query on CPU 1.", "",
      "| layout | call | req/s | items/s | p50 µs | p99 µs | p999 µs | daemon CPU µs/req | µs/item | daemon RSS MiB | client CPU µs/req | errors |",
      "|---|---|---|---|---|---|---|---|---|---|---|---|"]
for r in rows:
    l = r["latency"]
    md.append(f"| {r['layout']} | {r['call']} | {r['requests_per_s']:,.0f} | {r['items_per_s']:,.0f} | "
              f"{l['p50_us']} | {l['p99_us']} | {l['p999_us']} | {r['daemon_cpu_us_per_request']:.1f} | "
              f"{r['daemon_cpu_us_per_item']:.2f} | {r['daemon_rss_kib'] / 1024:.0f} | "
              f"{r['client_cpu_us_per_request']:.1f} | {sum(r['errors'].values())} |")
open(f"{out}/summary.md", "w").write("\n".join(md) + "\n")
json.dump(rows, open(f"{out}/summary.json", "w"), indent=1)
print("\n".join(md))
bad = [r for r in rows if r["errors"] or r["items_found"] != r["items_asked"]]
if bad:
    sys.exit(f"bench-query: errors or misses in {[(r['layout'], r['call']) for r in bad]}")
PY
