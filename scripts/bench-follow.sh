#!/usr/bin/env bash
# Follow-mode latency: how long after a new file lands in the lake it is
# durable in a daemon that follows the lake (`[follow]`) on a local S3
# server (versitygw on 127.0.0.1). The lake is real pubnet ledgers
# (lake-fixture); the last BF_NEW files are held back, then moved in one at
# a time every BF_GAP_MS plus a random part of the poll interval, and the daemon's ledgerstore_high_water_mark is
# read every 5 ms. With the default poll of 1 s the expected latency is
# about half the poll interval plus one fetch and one commit.
#
#   scripts/bench-follow.sh          # BF_NEW=20 files, follow.poll_ms BF_POLL_MS=1000
#
# Env: BF_OUT (default ./bench-follow-out), BF_BIN (a built ledgerstore; else
# a release build), BF_NEW, BF_GAP_MS (default 1500), BF_POLL_MS.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh

OUT="${BF_OUT:-$PWD/bench-follow-out}"
NEW="${BF_NEW:-20}"
GAP_MS="${BF_GAP_MS:-1500}"
POLL_MS="${BF_POLL_MS:-1000}"
BIN="${BF_BIN:-}"
if [ -z "$BIN" ]; then
  cargo build --release --workspace --locked >&2
  BIN="$CARGO_TARGET_DIR/release/ledgerstore"
fi
FIXTURE="$(dirname "$BIN")/lake-fixture"
VERSITYGW="$(bash scripts/lake-servers.sh | sed -n 's/^versitygw=//p')"

rm -rf "$OUT"
mkdir -p "$OUT/s3/lake" "$OUT/vgw-sidecar" "$OUT/held"
LAKE="$OUT/s3/lake/pubnet"
"$FIXTURE" "$LAKE" 2 >&2
# Hold back the newest NEW files (the key sorts newest first).
mapfile -t HELD < <(find "$LAKE" -name '*.xdr.zst' | sort | head -n "$NEW" | sort -r)
for f in "${HELD[@]}"; do mv "$f" "$OUT/held/$(basename "$f")"; done

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
S3_PORT=$(free_port)
METRICS_PORT=$(free_port)
"$VERSITYGW" --access bench --secret bench-secret --port "127.0.0.1:$S3_PORT" posix \
  --sidecar "$OUT/vgw-sidecar" --default-etag bench "$OUT/s3" >/dev/null 2>&1 &
VGW=$!
AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret "$BIN" serve \
  --data-dir "$OUT/data" --grpc.listen 127.0.0.1:0 --jsonrpc.listen 127.0.0.1:0 --metrics.listen "127.0.0.1:$METRICS_PORT" \
  --follow.lake s3://lake/pubnet --lake.endpoint "http://127.0.0.1:$S3_PORT" --lake.allow-http \
  --follow.from 63092982 --follow.poll-ms "$POLL_MS" >"$OUT/daemon.log" 2>&1 &
DAEMON=$!
trap 'kill $DAEMON $VGW 2>/dev/null || true' EXIT

python3 - "$METRICS_PORT" "$OUT/held" "$LAKE" "$GAP_MS" "$POLL_MS" "${HELD[@]}" <<'PY'
import os, random, re, statistics, sys, time, urllib.request
port, held, lake = sys.argv[1], sys.argv[2], sys.argv[3]
gap_ms, poll_ms, files = int(sys.argv[4]), int(sys.argv[5]), sys.argv[6:]
random.seed(7)
def mark():
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1).read().decode()
    except OSError:
        return None
    m = re.search(r"^ledgerstore_high_water_mark (\d+)", text, re.M)
    return int(m.group(1)) if m else None
seq = lambda p: int(os.path.basename(p).split("--")[1].split(".")[0])
first_new = seq(files[0])
t = time.time()
while mark() != first_new - 1:
    if time.time() - t > 120:
        sys.exit(f"the daemon did not catch up to {first_new - 1} within 120 s (mark {mark()})")
    time.sleep(0.05)
lat = []
for f in files:
    s = seq(f)
    src = os.path.join(held, os.path.basename(f))
    # A random phase against the daemon's polls.
    time.sleep((gap_ms + random.random() * poll_ms) / 1000)
    t0 = time.time()
    os.rename(src, f)
    while (mark() or 0) < s:
        if time.time() - t0 > 30:
            sys.exit(f"ledger {s} not durable within 30 s")
        time.sleep(0.005)
    lat.append((time.time() - t0) * 1000)
lat.sort()
print(f"follow latency, file landed -> durable, {len(lat)} files: "
      f"min {lat[0]:.0f} ms, median {statistics.median(lat):.0f} ms, "
      f"p90 {lat[int(0.9 * (len(lat) - 1))]:.0f} ms, max {lat[-1]:.0f} ms")
PY
