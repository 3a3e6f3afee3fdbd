#!/usr/bin/env bash
# A session with a stock third-party gRPC client (grpcurl) against a running
# daemon, using server reflection (no .proto files):
#   scripts/grpcurl-session.sh [HOST:PORT] [TX_HASH_HEX]
# Installs grpcurl from the Go module proxy when it is missing.
set -euo pipefail
addr="${1:-127.0.0.1:50051}"
hash_hex="${2:-}"
GRPCURL_VERSION=v1.9.4
grpcurl="$(command -v grpcurl || true)"
if [ -z "$grpcurl" ]; then
  gobin="$(go env GOPATH 2>/dev/null)/bin"
  if [ ! -x "$gobin/grpcurl" ]; then
    command -v go >/dev/null || { echo "grpcurl-session: needs grpcurl or go" >&2; exit 1; }
    echo "grpcurl-session: installing grpcurl $GRPCURL_VERSION" >&2
    go install "github.com/fullstorydev/grpcurl/cmd/grpcurl@$GRPCURL_VERSION"
  fi
  grpcurl="$gobin/grpcurl"
fi
set -x
"$grpcurl" -plaintext "$addr" list
"$grpcurl" -plaintext "$addr" describe ledgerstore.v1.Query.GetTransaction
"$grpcurl" -plaintext -d '{"service":""}' "$addr" grpc.health.v1.Health/Check
"$grpcurl" -plaintext "$addr" ledgerstore.v1.Ingest/GetIngestState
"$grpcurl" -plaintext "$addr" ledgerstore.v1.Query/GetStatus
if [ -n "$hash_hex" ]; then
  # bytes fields are base64 in grpcurl's JSON.
  b64="$(printf "$(printf '%s' "$hash_hex" | sed 's/../\\x&/g')" | base64 -w0)"
  "$grpcurl" -plaintext -d "{\"hash\":\"$b64\"}" "$addr" ledgerstore.v1.Query/GetTransaction
fi
