#!/usr/bin/env bash
# Stellar RPC JSON-RPC getTransaction against gRPC Query/GetTransaction on
# the same store, each driven by a stock load tool: hey (pinned v0.1.4) for
# the JSON-RPC endpoint and ghz (pinned v0.120.0) for gRPC, both installed
# from the Go module proxy when missing. The store holds real pubnet data:
# the 20 ledgers (5,188 txs) of crates/stellar/testdata/FC3D4709--*.xdr.zst,
# one store per layout. Each layout's daemon runs pinned to CPU 0 and the
# load tool to CPU 1; after a 1 s warm-up of each tool, BJ_ROUNDS rounds
# alternate JSON-RPC and gRPC, and the summary gives the medians: req/s,
# p50, p99 and the daemon's CPU per request (utime + stime from
# /proc/PID/stat over the run, divided by the requests completed). Warm, no
# ingest during the load; loopback only; each run is bounded by BJ_SECONDS.
#
# Both tools ask for the same transaction, the oracle's first (hey sends one
# fixed body, so the gRPC side does the same). Before the load a curl of the
# JSON-RPC body must answer HTTP 200 with that tx's status, and `ledgerstore
# tx` must find it over gRPC; after the load the JSON-RPC answer must be
# byte-identical (hey only sees HTTP codes, and a JSON-RPC error is a 200).
# A run with a non-200 answer or a ghz error fails the script (after the
# summary is written).
#
#   scripts/bench-jsonrpc.sh     # release build, layouts indexed and hybrid, 10 s a run, 2 rounds
#   BJ_SECONDS=3 BJ_ROUNDS=1 BJ_LAYOUTS=indexed scripts/bench-jsonrpc.sh
#
# Env: BJ_SECONDS (10), BJ_CONCURRENCY (16: hey workers, each with its own
# keep-alive HTTP/1.1 connection, all from 127.0.0.1, so the daemon runs
# with jsonrpc.max_connections_per_ip off; ghz requests in flight), BJ_CONNECTIONS (4:
# ghz's HTTP/2 connections), BJ_LAYOUTS (indexed,hybrid), BJ_ROUNDS (2),
# BJ_OUT (./bench-jsonrpc-out), BJ_BIN (the daemon; default: a release build
# of this checkout), BJ_EXTRA (more `serve` flags). Stores in BJ_OUT/<layout>
# are reused by later runs. Writes BJ_OUT/summary.md and BJ_OUT/summary.json.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh

SECS="${BJ_SECONDS:-10}"
CONC="${BJ_CONCURRENCY:-16}"
CONNS="${BJ_CONNECTIONS:-4}"
LAYOUTS="${BJ_LAYOUTS:-indexed,hybrid}"
ROUNDS="${BJ_ROUNDS:-2}"
OUT="${BJ_OUT:-$PWD/bench-jsonrpc-out}"
BIN="${BJ_BIN:-}"
FIXTURE=crates/stellar/testdata/FC3D4709--63092982-63093001
PROTO=proto/ledgerstore/v1/ledgerstore.proto
GHZ_VERSION=v0.120.0
HEY_VERSION=v0.1.4
CMDLINE="BJ_SECONDS=$SECS BJ_CONCURRENCY=$CONC BJ_CONNECTIONS=$CONNS BJ_LAYOUTS=$LAYOUTS BJ_ROUNDS=$ROUNDS${BJ_BIN:+ BJ_BIN=$BJ_BIN}${BJ_EXTRA:+ BJ_EXTRA='$BJ_EXTRA'} scripts/bench-jsonrpc.sh"

if [ -z "$BIN" ]; then
  cargo build --release --workspace --locked >&2
  BIN="$CARGO_TARGET_DIR/release/ledgerstore"
fi
[ -x "$BIN" ] || { echo "bench-jsonrpc: $BIN is not an executable" >&2; exit 1; }

# The load tools, from the Go module proxy when missing.
gobin="$(go env GOPATH)/bin"
GHZ="$(command -v ghz || true)"
if [ -z "$GHZ" ]; then
  if [ ! -x "$gobin/ghz" ]; then
    echo "bench-jsonrpc: installing ghz $GHZ_VERSION" >&2
    go install "github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION" >&2
  fi
  GHZ="$gobin/ghz"
fi
HEY="$(command -v hey || true)"
if [ -z "$HEY" ]; then
  if [ ! -x "$gobin/hey" ]; then
    # `go list -m -versions github.com/rakyll/hey` lists only the newest tag
    # (v0.1.5), so ask for the pinned one by name: this fails if the proxy
    # does not have it.
    go list -m "github.com/rakyll/hey@$HEY_VERSION" > /dev/null
    echo "bench-jsonrpc: installing hey $HEY_VERSION" >&2
    go install "github.com/rakyll/hey@$HEY_VERSION" >&2
  fi
  HEY="$gobin/hey"
fi
# The module versions built into the binaries ("?" when unknown).
modver() { go version -m "$1" 2> /dev/null | awk '$1 == "mod" {print $3; exit}' | grep . || echo "?"; }
HEY_HAVE=$(modver "$HEY"); GHZ_HAVE=$(modver "$GHZ")
[ "$HEY_HAVE" = "$HEY_VERSION" ] || echo "bench-jsonrpc: $HEY is hey $HEY_HAVE, not the pinned $HEY_VERSION" >&2

# Pin the daemon and the load tool to different CPUs when there are two.
if [ "$(nproc)" -ge 2 ] && command -v taskset > /dev/null; then
  ON_D=(taskset -c 0); ON_C=(taskset -c 1); PINNED=1
else
  ON_D=(); ON_C=(); PINNED=0
  echo "bench-jsonrpc: fewer than 2 CPUs (or no taskset): daemon and load tool share them" >&2
fi
HZ=$(getconf CLK_TCK)
mkdir -p "$OUT"
: > "$OUT/results.jsonl"
: > "$OUT/layouts.jsonl"

# The transaction both tools ask for: the oracle's first.
read -r HASH HASH_B64 TX_STATUS TX_LEDGER LAST < <(python3 - "$FIXTURE.oracle.json" <<'PY'
import base64, json, sys
o = json.load(open(sys.argv[1]))
t = o["txs"][0]
print(t["hash"], base64.b64encode(bytes.fromhex(t["hash"])).decode(), t["status"], t["ledger"],
      max(l["seq"] for l in o["ledgers"]))
PY
)
printf '{"jsonrpc":"2.0","id":1,"method":"getTransaction","params":{"hash":"%s"}}' "$HASH" > "$OUT/body.json"
GRPC_DATA="{\"hash\":\"$HASH_B64\"}"

DAEMON=
cleanup() { [ -n "$DAEMON" ] && kill -TERM "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null || true; }
trap cleanup EXIT

# The daemon's CPU so far, in clock ticks (utime + stime: fields 14 and 15,
# counted after the parenthesised command name).
cpu_ticks() { sed 's/^.*) //' "/proc/$DAEMON/stat" | awk '{print $12 + $13}'; }

post() { # file-for-the-body -> prints the HTTP code
  curl -sS --max-time 10 -o "$1" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    --data-binary @"$OUT/body.json" "$JURL"
}

# hey NAME SECONDS: one JSON-RPC run; its output in $OUT/NAME.txt.
hey_cmd() {
  echo "${ON_C[*]} $HEY -z ${1}s -c $CONC -cpus 1 -m POST -T application/json -D $OUT/body.json $JURL"
}
run_hey() {
  "${ON_C[@]}" /usr/bin/time -f "%e %U %S" -o "$OUT/$1.time" "$HEY" -z "${2}s" -c "$CONC" -cpus 1 \
    -m POST -T application/json -D "$OUT/body.json" "$JURL" > "$OUT/$1.txt"
}
# ghz NAME SECONDS: one gRPC run; its JSON report in $OUT/NAME.json.
ghz_cmd() {
  echo "${ON_C[*]} $GHZ --insecure --proto $PROTO --call ledgerstore.v1.Query.GetTransaction -d '$GRPC_DATA' --concurrency $CONC --connections $CONNS --duration ${1}s --duration-stop wait --cpus 1 --format json $GADDR"
}
run_ghz() {
  "${ON_C[@]}" /usr/bin/time -f "%e %U %S" -o "$OUT/$2.time" "$GHZ" --insecure --proto "$PROTO" \
    --call ledgerstore.v1.Query.GetTransaction -d "$GRPC_DATA" --concurrency "$CONC" \
    --connections "$CONNS" --duration "${1}s" --duration-stop wait --cpus 1 \
    --format json --output "$OUT/$2.json" "$GADDR" > /dev/null
}

# measure LAYOUT ROUND PROTOCOL: one bounded run, read the daemon's CPU
# around it, append a result line.
measure() {
  local layout="$1" round="$2" proto="$3" name="run-$1-$3-$2" t0 t1
  echo "bench-jsonrpc: $layout round $round $proto" >&2
  t0=$(cpu_ticks)
  if [ "$proto" = jsonrpc ]; then run_hey "$name" "$SECS"; else run_ghz "$SECS" "$name"; fi
  t1=$(cpu_ticks)
  python3 - "$OUT" "$name" "$layout" "$round" "$proto" "$((t1 - t0))" "$HZ" >> "$OUT/results.jsonl" <<'PY'
import json, re, sys
out, name, layout, rnd, proto, ticks, hz = sys.argv[1:]
wall, cu, cs = map(float, open(f"{out}/{name}.time").read().split()[-3:])
if proto == "jsonrpc":
    text = open(f"{out}/{name}.txt").read()
    status_part, _, error_part = text.partition("Error distribution:")
    codes = {c: int(n) for c, n in re.findall(r"^\s+\[(\d+)\]\s+(\d+) responses", status_part, re.M)}
    errs = {m: int(n) for n, m in re.findall(r"^\s+\[(\d+)\]\s+(.*)$", error_part, re.M)}
    lat = {int(p): float(s) * 1e3 for p, s in re.findall(r"^\s+(\d+)% in ([\d.]+) secs", text, re.M)}
    m = re.search(r"Requests/sec:\s+([\d.]+)", text)
    r = {"tool": "hey", "requests": sum(codes.values()) + sum(errs.values()),
         "ok": codes.get("200", 0), "rps": float(m.group(1)) if m else 0.0,
         "p50_ms": lat.get(50), "p99_ms": lat.get(99), "status": codes, "errors": errs}
else:
    rep = json.load(open(f"{out}/{name}.json"))
    lat = {int(d["percentage"]): d["latency"] / 1e6 for d in rep.get("latencyDistribution") or []}
    status = rep.get("statusCodeDistribution") or {}
    r = {"tool": "ghz", "requests": rep["count"], "ok": status.get("OK", 0), "rps": rep["rps"],
         "p50_ms": lat.get(50), "p99_ms": lat.get(99), "status": status,
         "errors": rep.get("errorDistribution") or {}}
    # The per-request details are big and not needed any more.
    rep.pop("details", None)
    json.dump(rep, open(f"{out}/{name}.json", "w"), indent=1)
cpu_s = int(ticks) / int(hz)
r.update({"layout": layout, "round": int(rnd), "protocol": proto, "seconds": wall,
          "daemon_cpu_s": cpu_s, "daemon_cores": cpu_s / wall if wall else None,
          "daemon_cpu_us_per_request": cpu_s * 1e6 / r["requests"] if r["requests"] else None,
          "client_cores": (cu + cs) / wall if wall else None})
print(json.dumps(r))
PY
}

for layout in ${LAYOUTS//,/ }; do
  data="$OUT/$layout"
  have=0
  if [ -f "$data/ledgerstore.json" ]; then
    have=$("$BIN" stats --data-dir "$data" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["last_ledger"] or 0)')
  fi
  if [ "$have" -lt "$LAST" ]; then
    echo "bench-jsonrpc: $layout: ingesting $FIXTURE.xdr.zst" >&2
    "$BIN" ingest --no-progress --data-dir "$data" --layout "$layout" --network pubnet \
      --stellar-file "$FIXTURE.xdr.zst" > "$OUT/ingest-$layout.log" 2>&1 \
      || { cat "$OUT/ingest-$layout.log" >&2; exit 1; }
  fi

  log="$OUT/daemon-$layout.log"
  # Every client connection comes from 127.0.0.1: the per-address limit off.
  # shellcheck disable=SC2086
  LEDGERSTORE_JSONRPC__MAX_CONNECTIONS_PER_IP=0 \
  "${ON_D[@]}" "$BIN" serve --data-dir "$data" --grpc.listen 127.0.0.1:0 --jsonrpc.listen 127.0.0.1:0 \
    --metrics.listen 127.0.0.1:0 ${BJ_EXTRA:-} > "$log" 2> "$OUT/daemon-$layout.err" &
  DAEMON=$!
  for _ in $(seq 1 600); do grep -q "gRPC on" "$log" 2>/dev/null && break; sleep 0.05; done
  GADDR=$(sed -n 's/.*gRPC on \([0-9.:]*\) .*/\1/p' "$log" | head -1)
  [ -n "$GADDR" ] || { echo "bench-jsonrpc: the $layout daemon did not start" >&2; cat "$OUT/daemon-$layout.err" >&2; exit 1; }
  JURL=$(sed -n 's|.*Stellar RPC on \(http://[0-9.:]*/\).*|\1|p' "$log" | head -1)
  [ -n "$JURL" ] || { echo "bench-jsonrpc: the daemon printed no 'Stellar RPC on' address (a build older than the JSON-RPC endpoint?): $(head -1 "$log")" >&2; exit 1; }
  for _ in $(seq 1 600); do "$BIN" health --endpoint "http://$GADDR" > /dev/null 2>&1 && break; sleep 0.1; done

  # The answers the load will ask for, checked once.
  code=000
  for _ in $(seq 1 100); do code=$(post "$OUT/answer-$layout.json") || true; [ "$code" = 000 ] || break; sleep 0.1; done
  timeout 30 "$BIN" tx "$HASH" --endpoint "http://$GADDR" --json > "$OUT/grpc-answer-$layout.json" \
    || { echo "bench-jsonrpc: gRPC GetTransaction of $HASH failed on $layout" >&2; exit 1; }
  python3 - "$OUT" "$layout" "$code" "$HASH" "$TX_STATUS" "$TX_LEDGER" "$GADDR" "$JURL" \
    "$(hey_cmd "$SECS")" "$(ghz_cmd "$SECS")" >> "$OUT/layouts.jsonl" <<'PY'
import json, re, sys
out, layout, code, hash_, status, ledger, gaddr, jurl, hey_cmd, ghz_cmd = sys.argv[1:]
raw = open(f"{out}/answer-{layout}.json", "rb").read()
body = raw.decode()
if code != "200":
    sys.exit(f"bench-jsonrpc: {layout}: JSON-RPC getTransaction answered HTTP {code}: {body[:500]}")
r = json.loads(body)
res = r.get("result") or {}
found = re.findall(r'"(?:SUCCESS|FAILED)"', body)
if "error" in r or res.get("status") != status or res.get("txHash") != hash_ \
        or res.get("ledger") != int(ledger) or len(found) != 1:
    sys.exit(f"bench-jsonrpc: {layout}: JSON-RPC getTransaction answered {body[:500]}")
g = json.load(open(f"{out}/grpc-answer-{layout}.json"))
if g["hash"] != hash_ or g["ledger_seq"] != int(ledger):
    sys.exit(f"bench-jsonrpc: {layout}: gRPC GetTransaction answered {g}")
print(json.dumps({"layout": layout, "grpc": gaddr, "jsonrpc": jurl, "tx_status": res["status"],
                  "jsonrpc_response_bytes": len(raw),
                  "grpc_record_bytes": g["envelope_bytes"] + g["result_bytes"] + g["meta_bytes"],
                  "hey_command": hey_cmd, "ghz_command": ghz_cmd}))
PY

  echo "bench-jsonrpc: $layout: warming up (1 s each)" >&2
  run_hey "warm-$layout-jsonrpc" 1
  run_ghz 1 "warm-$layout-grpc"
  for round in $(seq 1 "$ROUNDS"); do
    measure "$layout" "$round" jsonrpc
    measure "$layout" "$round" grpc
  done

  # After the load the JSON-RPC answer is still the same bytes.
  code=$(post "$OUT/answer-after-$layout.json") || true
  if [ "$code" != 200 ] || ! cmp -s "$OUT/answer-$layout.json" "$OUT/answer-after-$layout.json"; then
    echo "bench-jsonrpc: $layout: the JSON-RPC answer changed after the load (HTTP $code)" >&2
    echo '{"layout":"'"$layout"'","answer_changed":true}' >> "$OUT/layouts.jsonl"
  fi
  kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null || true; DAEMON=
done

python3 - "$OUT" "$SECS" "$CONC" "$CONNS" "$ROUNDS" "$HASH" "$HASH_B64" "$TX_STATUS" "$TX_LEDGER" \
  "$PINNED" "$HEY_HAVE" "$GHZ_HAVE" "$CMDLINE" "$BIN" "$HZ" <<'PY'
import json, statistics, sys
(out, secs, conc, conns, rounds, hash_, hash_b64, status, ledger, pinned, hey_v, ghz_v,
 cmdline, bin_, hz) = sys.argv[1:]
rows = [json.loads(l) for l in open(f"{out}/results.jsonl")]
lays = {}
for l in open(f"{out}/layouts.jsonl"):
    d = json.loads(l)
    lays.setdefault(d["layout"], {}).update(d)
NAMES = {"jsonrpc": "JSON-RPC getTransaction (hey)", "grpc": "gRPC GetTransaction (ghz)"}
FIELDS = ("rps", "p50_ms", "p99_ms", "daemon_cpu_us_per_request", "daemon_cores", "client_cores")

def med(rs, f):
    v = [r[f] for r in rs if r.get(f) is not None]
    return statistics.median(v) if v else None

def fmt(v, spec):
    return "n/a" if v is None else format(v, spec)

def ratio(a, b):
    return a / b if a is not None and b else None

md = [f"Real pubnet data: `{'crates/stellar/testdata/FC3D4709--63092982-63093001.xdr.zst'}` "
      "(20 ledgers, 5,188 txs), one store a layout; warm, no ingest during the load; loopback.",
      "",
      f"Both tools ask for the same transaction, the oracle's first: `{hash_}` "
      f"(ledger {ledger}, {status}; gRPC sends it as base64 `{hash_b64}`). hey sends one fixed "
      "body (it cannot vary bodies), so ghz does the same.",
      "",
      f"{secs} s a run, {rounds} round(s) alternating JSON-RPC then gRPC after a 1 s warm-up of each; "
      f"medians of the rounds. {conc} requests in flight: hey runs {conc} workers on {conc} "
      f"keep-alive HTTP/1.1 connections, ghz {conc} concurrent calls over {conns} HTTP/2 connections. "
      + ("Daemon pinned to CPU 0, load tool to CPU 1 (both tools run with --cpus 1). "
         if pinned == "1" else "Daemon and load tool NOT pinned (fewer than 2 CPUs or no taskset). ")
      + f"Daemon CPU = utime + stime from /proc/PID/stat (clock tick {1000 / int(hz):.0f} ms) over the run "
      "/ requests completed. hey prints latencies in whole 0.1 ms; ghz in ns.",
      "",
      f"Command: `{cmdline}`  ",
      f"daemon: `{bin_}`; hey {hey_v}, ghz {ghz_v}",
      ""]
summary = {"seconds": int(secs), "concurrency": int(conc), "ghz_connections": int(conns),
           "rounds": int(rounds), "hash": hash_, "hash_base64": hash_b64, "tx_status": status,
           "tx_ledger": int(ledger), "pinned": pinned == "1", "hey": hey_v, "ghz": ghz_v,
           "command": cmdline, "bin": bin_, "clk_tck": int(hz), "layouts": {}, "runs": rows}
bad = []
for layout, info in lays.items():
    rs = [r for r in rows if r["layout"] == layout]
    m = {p: {f: med([r for r in rs if r["protocol"] == p], f) for f in FIELDS} for p in NAMES}
    j, g = m["jsonrpc"], m["grpc"]
    r_cpu = ratio(j["daemon_cpu_us_per_request"], g["daemon_cpu_us_per_request"])
    md += [f"## {layout}", "",
           "| protocol | req/s | p50 ms | p99 ms | daemon CPU µs/req | ratio JSON-RPC/gRPC |",
           "|---|---|---|---|---|---|"]
    for p in NAMES:
        x = m[p]
        rc = fmt(r_cpu, ".2f") + " (CPU/req)" if p == "jsonrpc" else "1.00"
        md.append(f"| {NAMES[p]} | {fmt(x['rps'], ',.0f')} | {fmt(x['p50_ms'], '.2f')} | "
                  f"{fmt(x['p99_ms'], '.2f')} | {fmt(x['daemon_cpu_us_per_request'], '.1f')} | {rc} |")
    md += ["",
           f"JSON-RPC/gRPC: req/s ×{fmt(ratio(j['rps'], g['rps']), '.2f')}, "
           f"p50 ×{fmt(ratio(j['p50_ms'], g['p50_ms']), '.2f')}, "
           f"p99 ×{fmt(ratio(j['p99_ms'], g['p99_ms']), '.2f')}, "
           f"daemon CPU/req ×{fmt(r_cpu, '.2f')}. "
           f"Response: JSON-RPC {info.get('jsonrpc_response_bytes', 0):,} bytes of JSON (base64 XDR); "
           f"gRPC record {info.get('grpc_record_bytes', 0):,} raw XDR bytes plus framing.",
           "",
           "| run | protocol | requests | req/s | p50 ms | p99 ms | daemon CPU µs/req | daemon cores | client cores | not OK |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rs:
        not_ok = r["requests"] - r["ok"]
        if not_ok or r["errors"]:
            bad.append((layout, r["protocol"], r["round"], r["status"], r["errors"]))
        md.append(f"| {r['round']} | {r['protocol']} | {r['requests']:,} | {r['rps']:,.0f} | "
                  f"{fmt(r['p50_ms'], '.2f')} | {fmt(r['p99_ms'], '.2f')} | "
                  f"{fmt(r['daemon_cpu_us_per_request'], '.1f')} | {fmt(r['daemon_cores'], '.2f')} | "
                  f"{fmt(r['client_cores'], '.2f')} | {not_ok} |")
    if info.get("answer_changed"):
        bad.append((layout, "jsonrpc", "after", "answer changed", {}))
        md += ["", "**The JSON-RPC answer after the load differs from the one before it.**"]
    md += ["", "```", info.get("hey_command", ""), info.get("ghz_command", ""), "```", ""]
    summary["layouts"][layout] = {**info, "median": m, "ratio_jsonrpc_over_grpc": {
        f: ratio(j[f], g[f]) for f in ("rps", "p50_ms", "p99_ms", "daemon_cpu_us_per_request")}}
open(f"{out}/summary.md", "w").write("\n".join(md) + "\n")
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
print("\n".join(md))
if bad:
    sys.exit(f"bench-jsonrpc: runs with answers other than HTTP 200 / gRPC OK: {bad}")
PY
