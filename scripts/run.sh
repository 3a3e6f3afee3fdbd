#!/usr/bin/env bash
# The run command: setup, build (release), then run `ledgerstore ARGS...`.
# With no arguments it runs the daemon on the embedded default config: data in
# ./ledgerstore-data, gRPC on 127.0.0.1:50051, metrics on 127.0.0.1:9464.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bash "$here/scripts/setup.sh"
. "$here/scripts/env.sh"
cargo build --release --locked --manifest-path "$here/Cargo.toml" -p ledgerstore
bin="${CARGO_TARGET_DIR:-$here/target}/release/ledgerstore"
[ $# -eq 0 ] && set -- serve
exec "$bin" "$@"
