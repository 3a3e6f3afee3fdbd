#!/usr/bin/env bash
# Installs, when missing, the real object-storage servers the data-lake
# tests (crates/ledgerstore/tests/lake.rs) start on 127.0.0.1, from the Go
# module proxy, pinned:
#   versitygw        S3-compatible gateway that checks SigV4 signatures
#                    (Apache-2.0), serving a directory (its posix backend)
#   fake-gcs-server  the GCS JSON and download APIs, in memory
# They go to $(go env GOPATH)/bin. A binary of another version is
# reinstalled. Prints `versitygw=PATH` and `fake-gcs-server=PATH`.
set -euo pipefail

VERSITYGW=github.com/versity/versitygw/cmd/versitygw@v1.8.0
FAKE_GCS=github.com/fsouza/fake-gcs-server@v1.56.1

command -v go >/dev/null 2>&1 || {
  echo "lake-servers: go is needed to install versitygw and fake-gcs-server" >&2
  exit 1
}
gobin="$(go env GOPATH)/bin"

# install NAME MODULE@VERSION: unless $gobin/NAME was built from that version.
install() {
  local name="$1" pkg="$2" version="${2##*@}" path="${2%@*}"
  local module="${path%/cmd/*}"
  if [ -x "$gobin/$name" ] &&
    go version -m "$gobin/$name" 2>/dev/null | grep -qE "^\s+mod\s+$module\s+$version(\s|$)"; then
    return
  fi
  echo "lake-servers: installing $name $version (go install; about a minute)" >&2
  CGO_ENABLED=0 go install "$pkg" >&2
}

install versitygw "$VERSITYGW"
install fake-gcs-server "$FAKE_GCS"
echo "versitygw=$gobin/versitygw"
echo "fake-gcs-server=$gobin/fake-gcs-server"
