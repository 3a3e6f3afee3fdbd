#!/usr/bin/env bash
# The test command: setup, then every test of the workspace (unit tests next
# to the code, integration tests of the real binary, the SIGKILL crash test,
# data lakes on real S3, GCS and HTTP servers on loopback, the Stellar RPC
# endpoint driven by the official Python and JS SDKs),
# on real RocksDB and real MDBX in temp dirs, then a short coverage-guided
# fuzz run of every parser of untrusted bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The object-storage servers the data-lake tests start (versitygw,
# fake-gcs-server), installed once here rather than by parallel tests.
bash scripts/lake-servers.sh >/dev/null
# The official Stellar SDKs (Python stellar-sdk in a venv, JS
# @stellar/stellar-sdk from npm) the Stellar RPC tests drive, pinned.
bash scripts/sdk-clients.sh >/dev/null
. scripts/env.sh
cargo test --workspace --locked "$@"
# The fuzz targets' short form under AFL++ (20 s each; the long form is
# `scripts/fuzz.sh` with no arguments). Skipped when tests are filtered.
if [ $# -eq 0 ]; then
  bash scripts/fuzz.sh --seconds 20
fi
