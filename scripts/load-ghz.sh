#!/usr/bin/env bash
# Load with a stock gRPC load tool: ghz (pinned v0.120.0, installed from the
# Go module proxy when missing) against Query/GetTransaction and
# Query/BatchGetTransactions (100 hashes a call) on a store of LOAD_TXS
# transactions, while `ledgerstore push --mode live` keeps ingesting one
# ledger every LOAD_LIVE_INTERVAL_MS. Loopback only; every run is bounded by
# LOAD_DURATION per call.
#
#   scripts/load-ghz.sh          # long form: release build, 1,000,000 txs, 30 s per call
#   LOAD_TXS=200000 LOAD_DURATION=10s LOAD_CONCURRENCY=32 scripts/load-ghz.sh
#
# Prints a summary and writes LOAD_OUT/summary.{md,json}: req/s, p50, p99,
# p999, errors, the daemon's CPU per request (its utime + stime from
# /proc/PID/stat over the call, divided by the requests; live ingest's share
# is included unless LOAD_LIVE=0), the mark before and after (live ingest
# went on), and the daemon's RSS before and after. The store in LOAD_OUT/data is reused by
# later runs (only missing ledgers are ingested).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh

TXS="${LOAD_TXS:-1000000}"
TXPL="${LOAD_TX_PER_LEDGER:-250}"
TX_BYTES="${LOAD_TX_BYTES:-5000}"
LEDGER_BYTES="${LOAD_LEDGER_BYTES:-200000}"
DUR="${LOAD_DURATION:-30s}"
CONC="${LOAD_CONCURRENCY:-16}"
LIVE_MS="${LOAD_LIVE_INTERVAL_MS:-1000}"
LIVE="${LOAD_LIVE:-1}"
OUT="${LOAD_OUT:-$PWD/load-out}"
BIN="${LOAD_BIN:-}"
GHZ_VERSION=v0.120.0

if [ -z "$BIN" ]; then
  cargo build --release --workspace --locked >&2
  BIN="$CARGO_TARGET_DIR/release/ledgerstore"
fi
GHZ="$(command -v ghz || true)"
if [ -z "$GHZ" ]; then
  gobin="$(go env GOPATH)/bin"
  if [ ! -x "$gobin/ghz" ]; then
    echo "load: installing ghz $GHZ_VERSION" >&2
    go install "github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION" >&2
  fi
  GHZ="$gobin/ghz"
fi

mkdir -p "$OUT"
DATA="$OUT/data"
SHAPE=(--tx-per-ledger "$TXPL" --tx-bytes "$TX_BYTES" --ledger-bytes "$LEDGER_BYTES" --seed 7)
LEDGERS=$(( (TXS + TXPL - 1) / TXPL ))

# 1. The store, bulk-ingested offline (a rerun only adds what is missing).
have=0
if [ -f "$DATA/ledgerstore.json" ]; then
  have=$("$BIN" stats --data-dir "$DATA" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["last_ledger"] or 0)')
fi
if [ "$have" -lt "$LEDGERS" ]; then
  echo "load: ingesting ledgers $((have + 1))..=$LEDGERS ($TXPL txs each)" >&2
  "$BIN" ingest --synthetic --no-progress --data-dir "$DATA" --ledgers $((LEDGERS - have)) \
    --batch-ledgers 500 "${SHAPE[@]}" > "$OUT/ingest.log"
fi

# 2. The daemon on free loopback ports.
"$BIN" serve --data-dir "$DATA" --grpc.listen 127.0.0.1:0 --jsonrpc.listen 127.0.0.1:0 --metrics.listen 127.0.0.1:0 \
  > "$OUT/daemon.log" 2> "$OUT/daemon.err" &
DAEMON=$!
PUSH=
cleanup() {
  [ -n "$PUSH" ] && kill "$PUSH" 2>/dev/null || true
  kill -TERM "$DAEMON" 2>/dev/null || true
  wait "$DAEMON" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 1 600); do
  grep -q "gRPC on" "$OUT/daemon.log" 2>/dev/null && break
  sleep 0.05
done
ADDR=$(sed -n 's/.*gRPC on \([0-9.:]*\) .*/\1/p' "$OUT/daemon.log" | head -1)
[ -n "$ADDR" ] || { echo "load: the daemon did not start" >&2; cat "$OUT/daemon.err" >&2; exit 1; }
for _ in $(seq 1 600); do
  "$BIN" health --endpoint "http://$ADDR" > /dev/null 2>&1 && break
  sleep 0.1
done
rss() { awk '/VmRSS/ {print $2}' "/proc/$DAEMON/status"; }
rss_anon() { awk '/RssAnon/ {print $2}' "/proc/$DAEMON/status"; }
# The daemon's CPU so far, in clock ticks (utime + stime: fields 14 and 15,
# counted after the parenthesised command name).
cpu_ticks() { sed 's/^.*) //' "/proc/$DAEMON/stat" | awk '{print $12 + $13}'; }
TICKS_PER_S=$(getconf CLK_TCK)

# 3. Request data: hashes of ledgers spread over the whole store.
python3 - "$BIN" "$ADDR" "$LEDGERS" "$OUT" <<'EOF'
import base64, json, subprocess, sys
bin_, addr, ledgers, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
hashes = []
step = max(1, ledgers // 40)
for seq in range(1, ledgers + 1, step):
    r = subprocess.run([bin_, "ledger", str(seq), "--endpoint", "http://" + addr, "--json"],
                       capture_output=True, text=True, check=True)
    hashes += [base64.b64encode(bytes.fromhex(h)).decode() for h in json.loads(r.stdout)["tx_hashes"]]
json.dump([{"hash": h} for h in hashes], open(f"{out}/get.json", "w"))
json.dump([{"hashes": hashes[i:i + 100]} for i in range(0, len(hashes) - 99, 100)],
          open(f"{out}/batch.json", "w"))
print(f"load: {len(hashes)} distinct hashes from {len(range(1, ledgers + 1, step))} ledgers", file=sys.stderr)
EOF

# 4. Live ingest during the load (LOAD_LIVE=0: none, so the CPU figures are
# the queries' alone).
: > "$OUT/push.log"
if [ "$LIVE" != 0 ]; then
  "$BIN" push --synthetic --endpoint "http://$ADDR" --ledgers 100000 --mode live \
    --request-ledgers 1 --interval-ms "$LIVE_MS" "${SHAPE[@]}" > "$OUT/push.log" 2>&1 &
  PUSH=$!
  sleep 2
fi
MARK_BEFORE=$(grep -o "acked through ledger [0-9]*" "$OUT/push.log" | tail -1 | grep -o "[0-9]*$" || echo "?")
RSS_BEFORE=$(rss); ANON_BEFORE=$(rss_anon)

# 5. ghz, one call after the other.
run_ghz() { # name call data-file
  local t0
  t0=$(cpu_ticks)
  "$GHZ" --insecure --proto proto/ledgerstore/v1/ledgerstore.proto --call "$2" \
    --data-file "$3" --concurrency "$CONC" --duration "$DUR" --duration-stop wait --connections 4 \
    --format json --output "$OUT/result-$1.json" "$ADDR" > /dev/null
  echo $(( $(cpu_ticks) - t0 )) > "$OUT/cpu-$1.ticks"
}
run_ghz get ledgerstore.v1.Query.GetTransaction "$OUT/get.json"
run_ghz batch ledgerstore.v1.Query.BatchGetTransactions "$OUT/batch.json"
RSS_AFTER=$(rss); ANON_AFTER=$(rss_anon)
MARK_AFTER=$(grep -o "acked through ledger [0-9]*" "$OUT/push.log" | tail -1 | grep -o "[0-9]*$" || echo "?")

# 6. Summary (p999 from ghz's per-request details).
python3 - "$OUT" "$TXS" "$LEDGERS" "$CONC" "$DUR" "$MARK_BEFORE" "$MARK_AFTER" "$RSS_BEFORE" "$RSS_AFTER" "$ANON_BEFORE" "$ANON_AFTER" "$TICKS_PER_S" "$LIVE" <<'EOF'
import json, sys
out, txs, ledgers, conc, dur, m0, m1, r0, r1, a0, a1, hz, live = sys.argv[1:]
rows, summary = [], {"txs": int(txs), "ledgers": int(ledgers), "concurrency": int(conc),
                     "duration": dur, "mark_before": m0, "mark_after": m1,
                     "rss_kib_before": int(r0), "rss_kib_after": int(r1),
                     "anon_kib_before": int(a0), "anon_kib_after": int(a1),
                     "live_ingest": live != "0", "calls": {}}
for name, call in [("get", "GetTransaction"), ("batch", "BatchGetTransactions (100 hashes)")]:
    r = json.load(open(f"{out}/result-{name}.json"))
    lat = sorted(d["latency"] for d in r.get("details", []) if not d.get("error"))
    pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] / 1e6 if lat else float("nan")
    errors = sum(v for k, v in r.get("statusCodeDistribution", {}).items() if k != "OK")
    cpu_s = int(open(f"{out}/cpu-{name}.ticks").read()) / int(hz)
    c = {"requests": r["count"], "rps": r["rps"], "p50_ms": pct(0.50), "p99_ms": pct(0.99),
         "p999_ms": pct(0.999), "errors": errors, "status": r.get("statusCodeDistribution", {}),
         "daemon_cpu_s": cpu_s,
         "daemon_cpu_us_per_request": cpu_s * 1e6 / r["count"] if r["count"] else None}
    summary["calls"][call] = c
    per = c["daemon_cpu_us_per_request"]
    rows.append(f"| {call} | {c['requests']} | {c['rps']:.0f} | {c['p50_ms']:.2f} | {c['p99_ms']:.2f} | {c['p999_ms']:.2f} | {errors} | {per:.1f} |")
md = [f"store: {int(txs):,} txs in {int(ledgers):,} ledgers; ghz {conc} concurrent, {dur} per call, "
      f"4 connections; live ingest {'advanced the mark ' + m0 + ' -> ' + m1 if live != '0' else 'off'}; daemon RSS {int(r0)//1024} -> {int(r1)//1024} MiB "
      f"(heap and other anonymous memory {int(a0)//1024} -> {int(a1)//1024} MiB; the rest is mapped MDBX pages)",
      "", "| call | requests | req/s | p50 ms | p99 ms | p999 ms | errors | daemon CPU µs/req |",
      "|---|---|---|---|---|---|---|---|", *rows]
open(f"{out}/summary.md", "w").write("\n".join(md) + "\n")
json.dump(summary, open(f"{out}/summary.json", "w"), indent=2)
print("\n".join(md))
EOF
