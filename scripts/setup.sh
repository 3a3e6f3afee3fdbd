#!/usr/bin/env bash
# Installs what the build needs on a fresh Debian 12 machine: a C/C++
# toolchain, and libclang with its headers (bindgen, run by librocksdb-sys and
# mdbx-sys), a TrueType font for the study's PNG plot (fonts-dejavu-core), and
# Prometheus (prometheus: the monitoring test scrapes a live daemon with it and
# validates the deploy configs with promtool; installed without its service
# being enabled), and openssl and curl (the hostile-input test makes a TLS
# certificate and sends raw HTTP/2).
# protoc is vendored (protoc-bin-vendored), so it needs no install.
# Safe to run repeatedly: it does nothing when everything is there.
set -euo pipefail

need=()
if command -v dpkg >/dev/null 2>&1; then
  for pkg in build-essential libclang-dev clang fonts-dejavu-core prometheus openssl curl; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
  done
else
  command -v cc >/dev/null 2>&1 && command -v c++ >/dev/null 2>&1 || {
    echo "setup: install a C/C++ compiler and libclang (not a Debian system)" >&2; exit 1; }
fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  echo "setup: installing ${need[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  # Debian starts the prometheus service on install where it can; the tests
  # run their own instance.
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
    $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
  fi
fi
command -v cargo >/dev/null 2>&1 || {
  echo "setup: cargo not found; install Rust with rustup (https://rustup.rs)" >&2
  exit 1
}
