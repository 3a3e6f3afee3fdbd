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
set -euo pipefail
limit=${1:?usage: $0 LIMIT (e.g. 3G) [KEY=VALUE...]}
shift
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
# Build outside the limit: the compiler needs more memory than the study.
cargo bench --workspace --locked --no-run
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
echo "study-memlimit: running in $cg with $limit ($bytes bytes)"
env "$@" bash -c 'echo $$ > "$1/cgroup.procs" && exec cargo bench --workspace --locked -- study' _ "$cg"
