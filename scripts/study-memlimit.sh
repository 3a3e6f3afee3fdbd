#!/usr/bin/env bash
# The degradation study with the page cache capped, as in the field study
# (32 GB of RAM for 240 GB of data): the study runs inside a memory cgroup
# limited to LIMIT, which counts page cache as well as heap, so once the
# stores outgrow LIMIT their reads and compactions go to the disk.
#
#   scripts/study-memlimit.sh LIMIT [KEY=VALUE...]
#   scripts/study-memlimit.sh 3G STUDY_BATCHES=30 STUDY_LEDGERS=100
#
# The limit covers the study's own memory too: one batch raw and compressed
# (~2.7 MB raw per default ledger), memtables, the block cache and MDBX's
# dirty pages. At STUDY_LEDGERS=200 that passed 2 GB and a 2G limit
# OOM-killed the run; use STUDY_LEDGERS=100 with LIMIT >= 3G. The report's
# header prints the limit in force. Needs root (or a delegated cgroup). Without
# cgroupfs access, the systemd equivalent is:
#   systemd-run --scope -p MemoryMax=3G cargo bench --workspace -- study
#
# Per layout the report also gives the process's RssAnon/VmRSS every
# STUDY_MEM_EVERY_TXS txs (default 10M) and after the drain, a timed
# `Ledgerstore::open` on a dropped page cache (root; STUDY_DROP_CACHES=0 or
# no root: reported "warm"), index probes per lookup (`indexed`), and the
# disk bytes read per hit and per miss. scripts/study-scale.sh wraps this
# script for the 50M-tx scale run.
#
# STUDY_CARGO_PROFILE (environment; default `bench`, the release build):
# the cargo profile of the study, e.g. `dev` to try the plumbing without the
# release build of RocksDB.
set -euo pipefail
limit=${1:?usage: $0 LIMIT (e.g. 3G) [KEY=VALUE...]}
shift
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
profile=${STUDY_CARGO_PROFILE:-bench}
# Build outside the limit: the compiler needs more memory than the study.
cargo bench --workspace --locked --profile "$profile" --no-run
bytes=$(numfmt --from=iec "$limit")
name="ledgerstore-study-$$"
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  # cgroup v2: enable the memory controller for children of the root.
  echo +memory > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
  cg="/sys/fs/cgroup/$name"
  mkdir "$cg"
  echo "$bytes" > "$cg/memory.max"
  echo 0 > "$cg/memory.swap.max" 2>/dev/null || true
elif [ -d /sys/fs/cgroup/memory ]; then
  # cgroup v1.
  cg="/sys/fs/cgroup/memory/$name"
  mkdir "$cg"
  echo "$bytes" > "$cg/memory.limit_in_bytes"
else
  echo "study-memlimit: no memory cgroup here; use systemd-run --scope -p MemoryMax=$limit cargo bench --workspace -- study" >&2
  exit 1
fi
trap 'rmdir "$cg" 2>/dev/null || true' EXIT
echo "study-memlimit: running in $cg with $limit ($bytes bytes), profile $profile"
env "$@" bash -c 'echo $$ > "$1/cgroup.procs" && exec cargo bench --workspace --locked --profile "$2" -- study' _ "$cg" "$profile"
