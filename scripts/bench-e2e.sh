#!/usr/bin/env bash
# Full history end to end at scale (issue 31, item 6): a SEP-54 lake of
# real-shaped pubnet ledgers (`lake-fixture`: the 20 protocol-26 ledgers of
# 2026 written E2E_COPIES times with fresh hashes; 5,000 copies = 100,000
# ledgers, ~26M transactions) served by versitygw (real S3 on 127.0.0.1),
# then, in one run:
#
#   ingest    `ingest --stellar-datalake s3://lake/pubnet` into a new data
#             dir with the production segment policy scaled down so that
#             windows merge (E2E_RANGE-ledger base ranges, fan-out
#             E2E_FANOUT, E2E_LEVELS merge levels): ledgers/s, CPU, peak RSS
#   bytes     the data dir (every file) and each table (`stats`), against
#             the lake's bytes for the same ledgers
#   publish   `publish` of every closed range to a second bucket (in the
#             default pack version, 4 into a new bucket since 2026-12-02;
#             the run in docs/benchmarks.md published version 2:
#             LEDGERSTORE_COLD__PACK_VERSION=2 for that form)
#             (s3://cold/pubnet): time and the bucket's bytes
#   serve     the writer daemon, then a replica of the bucket with an empty
#             cache, each loaded with Stellar RPC getTransaction by vegeta
#             (pinned v12.13.0, from the Go module proxy), closed loop with
#             E2E_CONCURRENCY workers, over the hashes of E2E_SAMPLE ledgers
#             spread evenly over the published ledgers (every transaction of
#             each, in a shuffled order). The daemon runs on CPU 0; vegeta
#             and versitygw share CPU 1. Each daemon gets a "bodies cold" run
#             and then a warm run over the hashes the cold run reached:
#             - writer: the page cache is dropped (root only), the daemon
#               starts, and the run waits for its own start-up warming of
#               the segments' index (segments.warm_mib, filter_mib, on by
#               default), so the index is warm and every body is first read
#               from the device (a guest's drop does not reach the host's
#               cache of the disk image);
#             - replica: the page cache is dropped, the replica starts with
#               an empty cache and the run waits for its prefetch of every
#               segment (on by default when they fit its cache), so the
#               index is cached and each body is fetched by ranged GET on
#               first sight.
#             The replica's /metrics (cache hits and misses, GETs) are read
#             around each of its runs; a warm run with a GET fails.
#
# Every answer must be HTTP 200 with the asked transaction found (its id
# and txHash, status SUCCESS or FAILED, never NOT_FOUND or a JSON-RPC
# error), a cold run must not wrap around its targets, and the replica must
# not fail to cache; else the script fails after writing the summary.
#
#   scripts/bench-e2e.sh                              # 100,000 ledgers
#   E2E_COPIES=100 E2E_SECONDS=3 scripts/bench-e2e.sh # 2,000 ledgers, quick
#
# Env: E2E_COPIES (5000), E2E_LEVEL (the lake's zstd level, 3: level 19 like
# the public lake costs ~0.26 s a ledger to write, 7 h for 100,000 ledgers;
# docs/benchmarks.md scales bytes by the measured 19/3 ratio), E2E_RANGE
# (500), E2E_FANOUT (10), E2E_LEVELS (2), E2E_BATCH (--batch-ledgers, 200),
# E2E_SAMPLE (1000), E2E_SECONDS (10), E2E_CONCURRENCY (16), E2E_OUT
# (./bench-e2e-out), E2E_BIN (default: a release build of this checkout),
# E2E_DROP_LAKE (set: delete the lake once ingested, when the disk cannot
# hold the lake, the data dir and the bucket at once; ~14 + 19 + 22 GB at
# 100,000 ledgers), E2E_SERVE_ONLY (set: skip the lake, ingest and publish
# and serve again what the last run left in E2E_OUT).
# The lake in E2E_OUT/s3/lake is reused by later runs of the same shape;
# the data dir, bucket and cache are made anew. Writes E2E_OUT/summary.md
# and E2E_OUT/summary.json.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh

COPIES="${E2E_COPIES:-5000}"
LEVEL="${E2E_LEVEL:-3}"
RANGE="${E2E_RANGE:-500}"
FANOUT="${E2E_FANOUT:-10}"
LEVELS="${E2E_LEVELS:-2}"
BATCH="${E2E_BATCH:-200}"
SAMPLE="${E2E_SAMPLE:-1000}"
SECS="${E2E_SECONDS:-10}"
CONC="${E2E_CONCURRENCY:-16}"
OUT="${E2E_OUT:-$PWD/bench-e2e-out}"
BIN="${E2E_BIN:-}"
VEGETA_VERSION=v12.13.0
CMDLINE="E2E_COPIES=$COPIES E2E_LEVEL=$LEVEL E2E_RANGE=$RANGE E2E_FANOUT=$FANOUT E2E_LEVELS=$LEVELS E2E_BATCH=$BATCH E2E_SAMPLE=$SAMPLE E2E_SECONDS=$SECS E2E_CONCURRENCY=$CONC scripts/bench-e2e.sh"

if [ -z "$BIN" ]; then
  cargo build --release --workspace --locked >&2
  BIN="$CARGO_TARGET_DIR/release/ledgerstore"
fi
[ -x "$BIN" ] || { echo "bench-e2e: $BIN is not an executable" >&2; exit 1; }
FIXTURE="$(dirname "$BIN")/lake-fixture"
[ -x "$FIXTURE" ] || { echo "bench-e2e: $FIXTURE is missing (build the workspace)" >&2; exit 1; }
VGW="$(scripts/lake-servers.sh | awk -F= '$1 == "versitygw" {print $2}')"
[ -x "$VGW" ] || { echo "bench-e2e: versitygw is not installed (scripts/lake-servers.sh)" >&2; exit 1; }
gobin="$(go env GOPATH)/bin"
VEGETA="$(command -v vegeta || true)"
if [ -z "$VEGETA" ]; then
  if [ ! -x "$gobin/vegeta" ]; then
    echo "bench-e2e: installing vegeta $VEGETA_VERSION" >&2
    go install "github.com/tsenart/vegeta/v12@$VEGETA_VERSION" >&2
  fi
  VEGETA="$gobin/vegeta"
fi
VEGETA_HAVE=$(go version -m "$VEGETA" 2> /dev/null | awk '$1 == "mod" {print $3; exit}')
[ "$VEGETA_HAVE" = "$VEGETA_VERSION" ] || {
  echo "bench-e2e: $VEGETA is vegeta ${VEGETA_HAVE:-of an unknown version}, not $VEGETA_VERSION" >&2
  exit 1
}
if [ "$(nproc)" -ge 2 ] && command -v taskset > /dev/null; then
  ON_D=(taskset -c 0); ON_C=(taskset -c 1)
else
  ON_D=(); ON_C=()
  echo "bench-e2e: fewer than 2 CPUs (or no taskset): daemon and load tool share them" >&2
fi

SERVE_ONLY="${E2E_SERVE_ONLY:-}"
mkdir -p "$OUT"
LAKE="$OUT/s3/lake/pubnet"
if [ -n "$SERVE_ONLY" ]; then
  for f in lake.bytes ingest.log publish.log stats.json SEGMENTS.json dir.bytes bucket.bytes; do
    [ -s "$OUT/$f" ] || { echo "bench-e2e: E2E_SERVE_ONLY: $OUT/$f is missing (run without it first)" >&2; exit 1; }
  done
elif [ "$(cat "$OUT/lake.shape" 2> /dev/null)" != "$COPIES $LEVEL" ]; then
  rm -rf "$OUT/s3/lake" "$OUT/lake.shape"
  echo "bench-e2e: writing the lake ($COPIES copies of 20 ledgers, zstd $LEVEL)" >&2
  "$FIXTURE" "$LAKE" "$COPIES" 1 64000 "$LEVEL" >&2
  echo "$COPIES $LEVEL" > "$OUT/lake.shape"
fi
[ -n "$SERVE_ONLY" ] || du -sb --apparent-size "$LAKE" | cut -f1 > "$OUT/lake.bytes"

PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2> /dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2> /dev/null || true; done
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches 2> /dev/null; }

rm -rf "$OUT/cache" "$OUT"/*.bin "$OUT"/*.check "$OUT"/*.cpu "$OUT"/*.metrics "$OUT"/writer* "$OUT"/replica* \
  "$OUT/summary.md" "$OUT/summary.json"
[ -n "$SERVE_ONLY" ] || rm -rf "$OUT/s3/cold" "$OUT/vgw-sidecar" "$OUT/data" "$OUT"/*.json "$OUT"/*.log \
  "$OUT/dir.bytes" "$OUT/bucket.bytes"
mkdir -p "$OUT/s3/cold" "$OUT/vgw-sidecar"
PORT=$(free_port)
export AWS_ACCESS_KEY_ID=bench-e2e AWS_SECRET_ACCESS_KEY=bench-e2e-secret
"$VGW" --access "$AWS_ACCESS_KEY_ID" --secret "$AWS_SECRET_ACCESS_KEY" --port "127.0.0.1:$PORT" \
  --region us-east-1 posix --sidecar "$OUT/vgw-sidecar" "$OUT/s3" > "$OUT/versitygw.log" 2>&1 &
VGW_PID=$!
PIDS+=("$VGW_PID")
for _ in $(seq 100); do (echo > "/dev/tcp/127.0.0.1/$PORT") 2> /dev/null && break; sleep 0.1; done
S3=(--lake.endpoint "http://127.0.0.1:$PORT" --lake.allow-http)
STORE=s3://cold/pubnet
DIR="$OUT/data"
POLICY=(--segments.range-ledgers "$RANGE" --segments.merge-fanout "$FANOUT" --segments.merge-levels "$LEVELS")

if [ -z "$SERVE_ONLY" ]; then
  echo "bench-e2e: ingesting from s3://lake/pubnet" >&2
  /usr/bin/time -f "TIME %e %U %S %M" "$BIN" ingest --no-progress --data-dir "$DIR" \
    --stellar-datalake s3://lake/pubnet "${S3[@]}" --batch-ledgers "$BATCH" "${POLICY[@]}" \
    > "$OUT/ingest.log" 2>&1 || { tail -20 "$OUT/ingest.log" >&2; exit 1; }
  if [ -n "${E2E_DROP_LAKE:-}" ]; then
    echo "bench-e2e: E2E_DROP_LAKE: deleting the lake to make room for the bucket" >&2
    rm -rf "$OUT/s3/lake" "$OUT/lake.shape"
  fi
  "$BIN" stats --data-dir "$DIR" --json > "$OUT/stats.json"
  du -sb "$DIR" | cut -f1 > "$OUT/dir.bytes"
  cp "$DIR/segments/SEGMENTS" "$OUT/SEGMENTS.json"

  echo "bench-e2e: publishing to $STORE" >&2
  /usr/bin/time -f "TIME %e %U %S %M" "$BIN" publish --data-dir "$DIR" --cold.store "$STORE" "${S3[@]}" \
    > "$OUT/publish.log" 2>&1 || { tail -20 "$OUT/publish.log" >&2; exit 1; }
  du -sb "$OUT/s3/cold" | cut -f1 > "$OUT/bucket.bytes"
fi

# start NAME ARGS...: a daemon on CPU 0 with Stellar RPC; sets NAME_GRPC,
# NAME_RPC and NAME_PID.
start() {
  local name=$1
  shift
  rm -f "$OUT/$name.out" "$OUT/$name.err"
  "${ON_D[@]}" "$BIN" serve --config "$OUT/serve.toml" --grpc.listen 127.0.0.1:0 --metrics.listen 127.0.0.1:0 --jsonrpc.enabled true \
    --jsonrpc.listen 127.0.0.1:0 "$@" > "$OUT/$name.out" 2> "$OUT/$name.err" &
  local pid=$!
  PIDS+=("$pid")
  for _ in $(seq 600); do grep -q "serving gRPC" "$OUT/$name.out" && break; sleep 0.1; done
  local line
  line=$(grep "serving gRPC" "$OUT/$name.out") || { echo "bench-e2e: $name did not start (see $OUT/$name.err)" >&2; exit 1; }
  printf -v "${name}_GRPC" '%s' "$(sed -E 's/.*gRPC on ([^ ,]+).*/\1/' <<< "$line")"
  printf -v "${name}_RPC" '%s' "$(sed -E 's#.*Stellar RPC on (http://[^ ,]+).*#\1#' <<< "$line")"
  printf -v "${name}_PID" '%s' "$pid"
  printf -v "${name}_METRICS" '%s' "$(sed -E 's#.*metrics on (http://[^)]+)\).*#\1#' <<< "$line")"
  local grpc
  grpc=$(sed -E 's/.*gRPC on ([^ ,]+).*/\1/' <<< "$line")
  for _ in $(seq 300); do
    "$BIN" health --endpoint "http://$grpc" > /dev/null 2>&1 && return
    sleep 0.2
  done
  echo "bench-e2e: $name did not become SERVING (see $OUT/$name.err)" >&2
  exit 1
}
stop() { kill "$1" 2> /dev/null || true; wait "$1" 2> /dev/null || true; }
cat > "$OUT/serve.toml" << 'EOF'
[metrics]
refresh_secs = 1
EOF
cpu_ticks() {
  local t
  t=$(awk '{print $14 + $15}' "/proc/$1/stat" 2> /dev/null) || true
  [ -n "$t" ] || { echo "bench-e2e: process $1 is gone" >&2; exit 1; }
  echo "$t"
}
# metric URL NAME: a metric's value (0 when absent).
metric() { curl -s "$1" | awk -v m="$2" '$1 == m {v = $2} END {print v + 0}'; }
rmetrics() {
  local u=$1
  echo "$(metric "$u" ledgerstore_replica_object_gets_total) $(metric "$u" ledgerstore_replica_object_get_bytes_total) $(metric "$u" ledgerstore_replica_cache_hits_total) $(metric "$u" ledgerstore_replica_cache_misses_total)"
}
# load NAME URL PID [N]: vegeta over the targets (the first N hashes only,
# if given) for E2E_SECONDS, closed loop; writes NAME.bin (results),
# NAME.json (report) and NAME.cpu (daemon ticks).
load() {
  local name=$1 url=$2 pid=$3 count=${4:-0} t0 t1 v0 v1
  python3 - "$url" "$OUT/hashes.txt" "$count" > "$OUT/targets.jsonl" << 'EOF'
import base64, json, sys
url, count = sys.argv[1], int(sys.argv[3])
hashes = open(sys.argv[2]).read().split()
for i, h in enumerate(hashes[:count] if count else hashes):
    body = json.dumps({"jsonrpc": "2.0", "id": i, "method": "getTransaction", "params": {"hash": h}})
    print(json.dumps({"method": "POST", "url": url, "body": base64.b64encode(body.encode()).decode(),
                      "header": {"Content-Type": ["application/json"]}}))
EOF
  # Only each answer's first 512 bytes are kept: id, status and txHash come
  # first (vegeta still reads the whole answer, so latency is unchanged).
  t0=$(cpu_ticks "$pid")
  v0=$(cpu_ticks "$VGW_PID")
  "${ON_C[@]}" /usr/bin/time -f "TIME %e %U %S" -o "$OUT/$name.vegeta-time" \
    "$VEGETA" attack -format=json -targets="$OUT/targets.jsonl" -rate=0 \
    -max-workers="$CONC" -workers="$CONC" -duration="${SECS}s" -keepalive=true -max-body=512 \
    > "$OUT/$name.bin"
  t1=$(cpu_ticks "$pid")
  v1=$(cpu_ticks "$VGW_PID")
  echo "$((t1 - t0)) $((v1 - v0))" > "$OUT/$name.cpu"
  "$VEGETA" report -type=json < "$OUT/$name.bin" > "$OUT/$name.json"
  # Every answer must be the asked transaction, found.
  "$VEGETA" encode --to json < "$OUT/$name.bin" | python3 -c '
import base64, json, re, sys
hashes = open(sys.argv[1]).read().split()
bad = n = 0
for line in sys.stdin:
    n += 1
    try:
        r = json.loads(line)
        body = base64.b64decode(r.get("body") or b"").decode("utf-8", "replace")
        m = re.match(r"\{\"jsonrpc\":\"2.0\",\"id\":(\d+),\"result\":\{.*?\"status\":\"(\w+)\",\"txHash\":\"([0-9a-f]{64})\"", body)
        ok = r["code"] == 200 and m is not None and m.group(2) in ("SUCCESS", "FAILED") \
            and hashes[int(m.group(1))] == m.group(3)
    except Exception as e:
        ok, body = False, f"{e!r}: {line[:300]}"
    if not ok:
        bad += 1
        if bad <= 3: print("bad answer:", body[:300], file=sys.stderr)
print(json.dumps({"answers": n, "bad": bad}))' "$OUT/hashes.txt" > "$OUT/$name.check"
}

start writer --data-dir "$DIR"
# The sampled ledgers' hashes, shuffled with a fixed seed.
# Only published ledgers: the replica serves closed ranges, not the open one.
python3 - "$OUT/stats.json" "$OUT/publish.log" > "$OUT/sample.txt" << EOF
import json, re, sys
s = json.load(open(sys.argv[1]))
published = int(re.search(r"ledgers up to (\d+)", open(sys.argv[2]).read()).group(1))
def find(o, k):
    if isinstance(o, dict):
        if k in o: return o[k]
        for v in o.values():
            r = find(v, k)
            if r is not None: return r
first, last = find(s, "first_ledger"), min(find(s, "last_ledger"), published)
n = min($SAMPLE, last - first + 1)
for i in range(n):
    print(first + (last - first) * i // max(n - 1, 1))
EOF
: > "$OUT/hashes.txt"
while read -r seq; do
  "$BIN" ledger --endpoint "http://$writer_GRPC" --json "$seq" |
    python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin)["tx_hashes"]))' >> "$OUT/hashes.txt"
done < "$OUT/sample.txt"
python3 -c '
import random, sys
h = open(sys.argv[1]).read().split(); random.Random(31).shuffle(h)
open(sys.argv[1], "w").write("\n".join(h) + "\n")' "$OUT/hashes.txt"
ROOT=1
stop "$writer_PID"
drop_caches || { ROOT=0; echo "bench-e2e: not root: the cold runs read from the page cache" >&2; }
start writer --data-dir "$DIR"
# The daemon's start-up read of the segments' index (segments.warm_mib).
for _ in $(seq 600); do grep -q "read the newest segments' index" "$OUT/writer.err" && break; sleep 0.5; done
grep -q "read the newest segments' index" "$OUT/writer.err" || echo "bench-e2e: the writer's index warming did not finish in 300 s" >&2
echo "bench-e2e: writer, bodies cold then warm" >&2
# A warm run asks again only the hashes its cold run reached (vegeta walks
# the targets in order), so each is then in the page cache or replica cache.
asked() {
  local n
  n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["requests"])' "$OUT/$1.json")
  [ "$n" -gt 0 ] || { echo "bench-e2e: $1 made no requests" >&2; exit 1; }
  echo "$n"
}
load writer-cold "$writer_RPC" "$writer_PID"
N=$(asked writer-cold)
load writer-warm "$writer_RPC" "$writer_PID" "$N"
awk '/VmHWM|RssAnon/ {print $1, $2}' "/proc/$writer_PID/status" > "$OUT/writer.rss"
stop "$writer_PID"

drop_caches || true
start replica --replica "$STORE" --replica.cache-dir "$OUT/cache" --replica.cache-mb 8192 "${S3[@]}"
# Its prefetch of every segment, in the background (cold/src/replica.rs).
SEG_BYTES=$(cat "$DIR"/segments/seg-*.idx | wc -c)
for _ in $(seq 600); do
  [ "$(metric "$replica_METRICS" ledgerstore_replica_cache_bytes)" -ge "$SEG_BYTES" ] && break
  sleep 0.5
done
PREFETCHED=$(metric "$replica_METRICS" ledgerstore_replica_cache_bytes)
[ "$PREFETCHED" -ge "$SEG_BYTES" ] || echo "bench-e2e: the replica's prefetch reached $PREFETCHED of $SEG_BYTES bytes" >&2
echo "bench-e2e: replica, bodies cold then warm" >&2
sleep 1.5
rmetrics "$replica_METRICS" > "$OUT/replica-cold.metrics"
load replica-cold "$replica_RPC" "$replica_PID"
sleep 1.5
rmetrics "$replica_METRICS" >> "$OUT/replica-cold.metrics"
N=$(asked replica-cold)
rmetrics "$replica_METRICS" > "$OUT/replica-warm.metrics"
load replica-warm "$replica_RPC" "$replica_PID" "$N"
sleep 1.5
rmetrics "$replica_METRICS" >> "$OUT/replica-warm.metrics"
awk '/VmHWM|RssAnon/ {print $1, $2}' "/proc/$replica_PID/status" > "$OUT/replica.rss"
stop "$replica_PID"
CACHE_BYTES=$(du -sb "$OUT/cache" | cut -f1)
CACHE_FAILED=$(grep -c "caching a piece failed" "$OUT/replica.err" || true)

python3 - "$OUT" "$CMDLINE" "$CACHE_BYTES" "$CACHE_FAILED" "$(getconf CLK_TCK)" "$ROOT" "$LEVEL" "$SECS" << 'EOF'
import json, re, sys
out, cmd = sys.argv[1], sys.argv[2]
cache, cache_failed, hz, root, level, secs = map(int, sys.argv[3:9])
num = lambda f: int(open(f"{out}/{f}").read().split()[0])
lake, dirb, bucket = num("lake.bytes"), num("dir.bytes"), num("bucket.bytes")
def timed(log):
    t = open(f"{out}/{log}").read()
    wall, user, sys_, rss = re.search(r"TIME (\S+) (\S+) (\S+) (\d+)", t).groups()
    return t, float(wall), float(user) + float(sys_), int(rss) * 1024
itext, iwall, icpu, irss = timed("ingest.log")
ledgers = int(re.search(r"done: (\d+) ledgers", itext).group(1))
ptext, pwall, pcpu, prss = timed("publish.log")
stats = json.load(open(f"{out}/stats.json"))
published = int(re.search(r"ledgers up to (\d+)", ptext).group(1)) - stats["first_ledger"] + 1
ranges = json.load(open(f"{out}/SEGMENTS.json"))["ranges"]
widths = sorted({r[1] - r[0] + 1 for r in ranges})
def rss(name):
    v = dict(l.split() for l in open(f"{out}/{name}.rss"))
    return int(v["VmHWM:"]) * 1024, int(v["RssAnon:"]) * 1024
GB, KB, MB = 1e9, 1e3, 1e6
lines = [f"`{cmd}`", "",
         f"Lake: {ledgers:,} ledgers, {lake / GB:.2f} GB at zstd {level} ({lake / ledgers / KB:.1f} KB a ledger).", "",
         "| step | ledgers | wall s | ledgers/s | CPU s (its own) | cores used | peak RSS MB |", "|---|---|---|---|---|---|---|",
         f"| ingest from S3 | {ledgers:,} | {iwall:.0f} | {ledgers / iwall:.0f} | {icpu:.0f} | {icpu / iwall:.2f} | {irss / MB:.0f} |",
         f"| publish to S3 | {published:,} | {pwall:.0f} | {published / pwall:.0f} | {pcpu:.0f} | {pcpu / pwall:.2f} | {prss / MB:.0f} |", "",
         f"Segments after ingest: {len(ranges)} ranges, widths {widths} ledgers.", "",
         "| bytes | ledgers | total GB | KB a ledger | ÷ this lake's KB a ledger |", "|---|---|---|---|---|",
         f"| data dir (every file) | {ledgers:,} | {dirb / GB:.2f} | {dirb / ledgers / KB:.1f} | {dirb / lake:.2f} |",
         f"| published bucket | {published:,} | {bucket / GB:.2f} | {bucket / published / KB:.1f} | {bucket / published / (lake / ledgers):.2f} |",
         f"| replica cache after the runs | | {cache / GB:.3f} | | |", "",
         "| run (Stellar RPC getTransaction) | lookups | lookups/s | p50 ms | p99 ms | daemon CPU µs a lookup | daemon cores | versitygw CPU µs a lookup | vegeta cores | GETs a lookup | cache hit ratio | bad answers |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
hashes = len(open(f"{out}/hashes.txt").read().split())
bad_runs, rows = [], {}
for name in ["writer-cold", "writer-warm", "replica-cold", "replica-warm"]:
    r = json.load(open(f"{out}/{name}.json"))
    chk = json.load(open(f"{out}/{name}.check"))
    d_ticks, v_ticks = map(int, open(f"{out}/{name}.cpu").read().split())
    vt = re.search(r"TIME (\S+) (\S+) (\S+)", open(f"{out}/{name}.vegeta-time").read()).groups()
    n = r["requests"]
    lat = r["latencies"]
    row = {"lookups": n, "lookups_per_s": r["throughput"], "p50_ms": lat["50th"] / 1e6, "p99_ms": lat["99th"] / 1e6,
           "daemon_cpu_us": d_ticks / hz / max(n, 1) * 1e6, "daemon_cores": d_ticks / hz / secs,
           "versitygw_cpu_us": v_ticks / hz / max(n, 1) * 1e6,
           "vegeta_cores": (float(vt[1]) + float(vt[2])) / float(vt[0]), "bad": chk["bad"]}
    gets = hit = "-"
    if name.startswith("replica"):
        m = [list(map(float, l.split())) for l in open(f"{out}/{name}.metrics")]
        d = [b - a for a, b in zip(m[0], m[1])]
        row["gets_per_lookup"], row["get_bytes_per_lookup"] = d[0] / max(n, 1), d[1] / max(n, 1)
        row["cache_hit_ratio"] = d[2] / max(d[2] + d[3], 1)
        gets, hit = f"{row['gets_per_lookup']:.2f}", f"{row['cache_hit_ratio']:.3f}"
        if name.endswith("warm") and d[0] > 0:
            bad_runs.append(f"{name}: {d[0]:.0f} GETs in a warm run")
    if name.endswith("cold") and n > hashes:
        bad_runs.append(f"{name}: {n} lookups over {hashes} hashes (wrapped around; raise E2E_SAMPLE)")
    if chk["bad"] or r["success"] < 1:
        bad_runs.append(f"{name}: {chk['bad']} bad answers")
    rows[name] = row
    label = name if root else name + " (not root: page cache not dropped)"
    lines.append(f"| {label} | {n:,} | {row['lookups_per_s']:.0f} | {row['p50_ms']:.2f} | {row['p99_ms']:.2f} | "
                 f"{row['daemon_cpu_us']:.0f} | {row['daemon_cores']:.2f} | {row['versitygw_cpu_us']:.0f} | "
                 f"{row['vegeta_cores']:.2f} | {gets} | {hit} | {chk['bad']} |")
(whwm, wanon), (rhwm, ranon) = rss("writer"), rss("replica")
lines += ["", f"Daemons' peak RSS (VmHWM, incl. mapped files) / anonymous RSS at the end: writer {whwm / MB:.0f} / {wanon / MB:.0f} MB, "
          f"replica {rhwm / MB:.0f} / {ranon / MB:.0f} MB. Sampled hashes: {hashes:,}."]
if cache_failed:
    bad_runs.append(f"the replica failed to cache {cache_failed} pieces")
if bad_runs:
    lines += ["", f"FAILED: {bad_runs}"]
open(f"{out}/summary.md", "w").write("\n".join(lines) + "\n")
json.dump({"command": cmd, "ledgers": ledgers, "published_ledgers": published, "lake_bytes": lake, "dir_bytes": dirb,
           "bucket_bytes": bucket, "replica_cache_bytes": cache,
           "ingest": {"wall_s": iwall, "cpu_s": icpu, "peak_rss": irss},
           "publish": {"wall_s": pwall, "cpu_s": pcpu, "peak_rss": prss},
           "writer_rss": {"hwm": whwm, "anon": wanon}, "replica_rss": {"hwm": rhwm, "anon": ranon},
           "runs": rows, "failed": bad_runs, "ranges": ranges, "stats": stats},
          open(f"{out}/summary.json", "w"), indent=1)
print("\n".join(lines))
sys.exit(1 if bad_runs else 0)
EOF
