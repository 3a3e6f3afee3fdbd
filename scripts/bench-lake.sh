#!/usr/bin/env bash
# Data-lake ingest, side by side: the same SEP-54 lake of real pubnet
# ledgers ingested from local files and from a local S3 server (versitygw,
# checking signatures, on 127.0.0.1), at several read-ahead settings, runs
# alternating between the two sources. Reports ledgers/s, MB/s (compressed
# lake bytes), the process's CPU (user+sys, /usr/bin/time) and where the
# time went: fetch and decode (summed over the read-ahead workers, from the
# run's closing `source:` line) and store (the batch reports' total minus
# their source wait).
#
#   scripts/bench-lake.sh                 # 50 copies of the 20 ledgers: 1,000 ledgers, 259K txs
#   BL_COPIES=10 BL_AHEAD="1 4" BL_RUNS=1 scripts/bench-lake.sh
#
# Env: BL_OUT (default ./bench-lake-out), BL_BIN (a built ledgerstore; else a
# release build), BL_COPIES, BL_AHEAD (read-ahead values), BL_RUNS (runs per
# source and setting), BL_BATCH (--batch-ledgers, default 200), BL_LEVEL
# (the fixture's zstd level; default the fixture's own, 19 like the public
# lake, ~0.26 s a ledger to write: 3 writes 10,000 ledgers in ~40 s).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh

OUT="${BL_OUT:-$PWD/bench-lake-out}"
COPIES="${BL_COPIES:-50}"
AHEAD="${BL_AHEAD:-1 2 4 8 16}"
RUNS="${BL_RUNS:-2}"
BATCH="${BL_BATCH:-200}"
BIN="${BL_BIN:-}"
if [ -z "$BIN" ]; then
  cargo build --release --workspace --locked >&2
  BIN="$CARGO_TARGET_DIR/release/ledgerstore"
fi
FIXTURE="$(dirname "$BIN")/lake-fixture"
[ -x "$FIXTURE" ] || { echo "bench-lake: $FIXTURE is missing (build the workspace)" >&2; exit 1; }
VERSITYGW="$(bash scripts/lake-servers.sh | sed -n 's/^versitygw=//p')"

rm -rf "$OUT"
mkdir -p "$OUT/s3/lake" "$OUT/vgw-sidecar"
LAKE="$OUT/s3/lake/pubnet"
if [ -n "${BL_LEVEL:-}" ]; then
  "$FIXTURE" "$LAKE" "$COPIES" 1 64000 "$BL_LEVEL" >&2
else
  "$FIXTURE" "$LAKE" "$COPIES" >&2
fi
LAKE_MB=$(du -sm --apparent-size "$LAKE" | cut -f1)

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
KEY=bench SECRET=bench-secret
"$VERSITYGW" --access "$KEY" --secret "$SECRET" --port "127.0.0.1:$PORT" posix \
  --sidecar "$OUT/vgw-sidecar" --default-etag bench "$OUT/s3" >/dev/null 2>&1 &
VGW=$!
trap 'kill $VGW 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break
  sleep 0.1
done

# run SOURCE AHEAD: one ingest into a fresh data dir; prints a result row.
run() {
  local src="$1" ahead="$2" dir="$OUT/data" log="$OUT/run.log"
  rm -rf "$dir"
  local url=("$LAKE") env=()
  if [ "$src" = s3 ]; then
    url=(s3://lake/pubnet --lake.endpoint "http://127.0.0.1:$PORT" --lake.allow-http)
    env=(AWS_ACCESS_KEY_ID="$KEY" AWS_SECRET_ACCESS_KEY="$SECRET")
  fi
  env "${env[@]}" /usr/bin/time -f "TIME %e %U %S" "$BIN" ingest --no-progress \
    --data-dir "$dir" --stellar-datalake "${url[@]}" --lake.read-ahead "$ahead" \
    --batch-ledgers "$BATCH" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
  python3 - "$src" "$ahead" "$log" "$dir/batch-reports.jsonl" "$LAKE_MB" <<'PY'
import json, re, sys
src, ahead, log, reports, mb = sys.argv[1:]
text = open(log).read()
wall, user, sys_ = map(float, re.search(r"TIME (\S+) (\S+) (\S+)", text).groups())
ledgers = int(re.search(r"done: (\d+) ledgers", text).group(1))
m = re.search(r"fetch ([\d.]+)s and decode ([\d.]+)s on workers", text)
fetch, decode = float(m.group(1)), float(m.group(2))
req = re.search(r"(\d+) HTTP requests, (\d+) failed", text)
store = 0.0
for line in open(reports):
    r = json.loads(line)
    store += r["total_s"] - r["source_s"]
print(json.dumps({
    "source": src, "read_ahead": int(ahead), "ledgers": ledgers, "wall_s": wall,
    "ledgers_per_s": ledgers / wall, "mb_per_s": float(mb) / wall,
    "cpu_s": user + sys_, "cores": (user + sys_) / wall,
    "fetch_s": fetch, "decode_s": decode, "store_s": store,
    "http_requests": int(req.group(1)) if req else 0,
}))
PY
}

: >"$OUT/results.jsonl"
for ahead in $AHEAD; do
  for _ in $(seq "$RUNS"); do
    for src in local s3; do
      run "$src" "$ahead" | tee -a "$OUT/results.jsonl" >&2
    done
  done
done

python3 - "$OUT/results.jsonl" "$LAKE_MB" "$COPIES" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"lake: {int(sys.argv[3]) * 20} real pubnet ledgers ({int(sys.argv[3]) * 5188} txs), {sys.argv[2]} MB compressed; median of runs")
print(f"{'source':6} {'ahead':>5} {'ledgers/s':>9} {'MB/s':>6} {'cores':>5} {'fetch s':>8} {'decode s':>8} {'store s':>7} {'requests':>8}  s3/local")
key = lambda r: (r["read_ahead"], r["source"])
groups = {}
for r in rows:
    groups.setdefault(key(r), []).append(r)
med = {k: {f: statistics.median(x[f] for x in v) for f in v[0] if f not in ("source",)} for k, v in groups.items()}
for (ahead, src), m in sorted(med.items()):
    local = med.get((ahead, "local"))
    ratio = f"{m['ledgers_per_s'] / local['ledgers_per_s']:.2f}" if src == "s3" and local else ""
    print(f"{src:6} {ahead:>5} {m['ledgers_per_s']:>9.1f} {m['mb_per_s']:>6.1f} {m['cores']:>5.2f} "
          f"{m['fetch_s']:>8.2f} {m['decode_s']:>8.2f} {m['store_s']:>7.2f} {int(m['http_requests']):>8}  {ratio}")
PY
