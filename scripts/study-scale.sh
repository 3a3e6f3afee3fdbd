#!/usr/bin/env bash
# The scale benchmark of issue 14: 50M transactions into `rocksdb-tuned` and
# `indexed`, one after the other in one run, inside a memory cgroup that
# holds a fifth of the stored data. A thin wrapper over
# scripts/study-memlimit.sh (which builds, creates the cgroup and runs
# `cargo bench --workspace -- study` in it).
#
#   scripts/study-scale.sh [KEY=VALUE...]
#   STUDY_SCALE_LIMIT=5G scripts/study-scale.sh STUDY_BATCHES=600
#
# Every STUDY_* knob below can be overridden from the environment or as
# KEY=VALUE (later wins); STUDY_SCALE_LIMIT and STUDY_CARGO_PROFILE only from
# the environment. Defaults:
#   STUDY_SCALE_LIMIT=4G        memory cgroup limit (heap + page cache)
#   STUDY_BATCHES=500           batches per layout
#   STUDY_LEDGERS=400           ledgers per batch (100K txs, ~62 MB raw per batch)
#   STUDY_TX=250                txs per ledger (pubnet's order)
#     -> 200,000 ledgers and 50,000,000 txs per layout
#   STUDY_TX_BYTES=300          raw bytes per tx (pubnet: ~2.2 KB; shrunk for disk)
#   STUDY_LEDGER_BYTES=80000    raw bytes per ledger (its 250 tx bodies are
#                               75 KB of it; pubnet: ~1.4 MB)
#   STUDY_LAYOUTS=rocksdb-tuned,indexed
#   STUDY_SEGMENT_LEDGERS=2000 indexed: ledgers per base range (500K txs in
#                               the hot index at most)
#   STUDY_MERGE_FANOUT=10       indexed: windows of 2K, 20K and 200K ledgers,
#   STUDY_MERGE_LEVELS=2        production's shape (100K, 1M, 10M) scaled
#                               down 50x: a lookup probes at most one
#                               segment per closed 200K window plus 2
#   STUDY_LOOKUPS=20000         hits and as many misses, after the cold reopen
#   STUDY_MEM_EVERY_TXS=10000000  RssAnon/VmRSS after the batch reaching each 10M
#   STUDY_OUT, STUDY_DIR        $CARGO_TARGET_DIR/tmp/study-scale{,-data}, so the
#                               regular study's results are not overwritten
#   STUDY_CARGO_PROFILE=bench   (study-memlimit.sh) the release build benchmarks
#                               use; `dev` only to try the plumbing quickly
#
# Expected stored bytes per layout. Small records compress little: a
# 500K-tx run of this shape (2026-11-23, dev build) stored 0.21 GB in
# rocksdb-tuned, ~420 B per tx:
#   tx_data   ~280 B/tx x 50M = 14 GB   (300 B raw; the hash, signature and
#                                       account bytes are incompressible)
#   ledgers   ~25 KB/ledger x 200K = 5 GB (80 KB raw each)
#   tx_index  ~40 B/tx x 50M = 2 GB (rocksdb-tuned); indexed instead keeps
#             ~5.5 B/tx of segments (0.3 GB), 32 B/tx of hash lists (1.6 GB)
#             and its hot MDBX index of one open range
#   total     ~21 GB per layout, ~4.9x the 4 GiB limit (>= 4x as long as
#             it stays above 17.2 GB). Data dirs are removed after each
#             layout (STUDY_KEEP=1 keeps them), so the disk needs ~25 GB free
#             (one layout plus compaction headroom) on top of the build.
# The limit also holds the study's own memory: tuned RocksDB's memtables
# (256 MiB each, up to 4 per table) and block caches (256 MiB per table), a
# base build (~50 B per tx of its range: ~25 MB at 2,000 ledgers) and
# the batch in hand (~62 MB raw); a segment build or merge holds one
# partition (at most 2^22 keys, ~340 MB). The report prints RssAnon/VmRSS every
# STUDY_MEM_EVERY_TXS txs; raise the limit if the run is OOM-killed, and
# keep stored >= 4x the limit (more STUDY_BATCHES or STUDY_TX_BYTES).
#
# The report adds to the study's usual tables, per layout: memory at each
# checkpoint and after the drain, the generator's time and share of the
# batch wall time, a cold `Ledgerstore::open` (page cache dropped; "warm" if
# that failed), index probes per lookup (`indexed`), and hit/miss rates,
# p50/p99 and disk bytes read per lookup. Files: study.csv (per batch and
# store), study-layouts.csv (per layout), summary.md, results.json,
# study.png. Expect hours on the 2-core reference machine.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
tmp="${CARGO_TARGET_DIR:-$PWD/target}/tmp"
exec scripts/study-memlimit.sh "${STUDY_SCALE_LIMIT:-4G}" \
  STUDY_BATCHES="${STUDY_BATCHES:-500}" \
  STUDY_LEDGERS="${STUDY_LEDGERS:-400}" \
  STUDY_TX="${STUDY_TX:-250}" \
  STUDY_TX_BYTES="${STUDY_TX_BYTES:-300}" \
  STUDY_LEDGER_BYTES="${STUDY_LEDGER_BYTES:-80000}" \
  STUDY_LAYOUTS="${STUDY_LAYOUTS:-rocksdb-tuned,indexed}" \
  STUDY_SEGMENT_LEDGERS="${STUDY_SEGMENT_LEDGERS:-2000}" \
  STUDY_MERGE_FANOUT="${STUDY_MERGE_FANOUT:-10}" \
  STUDY_MERGE_LEVELS="${STUDY_MERGE_LEVELS:-2}" \
  STUDY_LOOKUPS="${STUDY_LOOKUPS:-20000}" \
  STUDY_MEM_EVERY_TXS="${STUDY_MEM_EVERY_TXS:-10000000}" \
  STUDY_OUT="${STUDY_OUT:-$tmp/study-scale}" \
  STUDY_DIR="${STUDY_DIR:-$tmp/study-scale-data}" \
  "$@"
