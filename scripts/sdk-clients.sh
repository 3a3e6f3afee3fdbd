#!/usr/bin/env bash
# Installs, when missing, the real Stellar client SDKs the JSON-RPC tests
# (crates/ledgerstore/tests/sdk/rpc_python.py and rpc_js.mjs) drive against
# the daemon's stellar-rpc compatible endpoint, from the registries, pinned:
#   stellar-sdk           PyPI, py-stellar-base (SorobanServer), in a venv
#                         at $CACHE/venv
#   @stellar/stellar-sdk  npm, js-stellar-sdk (rpc.Server), in $CACHE/node;
#                         15.1.0 is the newest release that runs on Node 20
#                         (16 and later need Node 22)
# where CACHE is ${XDG_CACHE_HOME:-$HOME/.cache}/ledgerstore/sdk. A package of
# another version is reinstalled. On Debian without python3-venv it installs
# that package first (needs root or sudo). Prints `python=PATH` (the venv's
# interpreter) and `node_modules=PATH`; logs go to stderr.
set -euo pipefail

PY_SDK=16.1.1
JS_SDK=15.1.0

cache="${XDG_CACHE_HOME:-$HOME/.cache}/ledgerstore/sdk"
venv="$cache/venv"
nodedir="$cache/node"
log() { echo "sdk-clients: $*" >&2; }

for tool in python3 node npm; do
  command -v "$tool" >/dev/null 2>&1 || { log "$tool is needed"; exit 1; }
done

# python3 -m venv needs ensurepip, which Debian ships apart in python3-venv.
venv_works() {
  local probe
  probe="$(mktemp -d)"
  if python3 -m venv "$probe/v" >/dev/null 2>&1; then rm -rf "$probe"; return 0; fi
  rm -rf "$probe"
  return 1
}

# Python: a venv whose stellar-sdk is exactly $PY_SDK.
py_version() {
  "$venv/bin/python" -c \
    'import importlib.metadata as m; print(m.version("stellar-sdk"))' 2>/dev/null || true
}
if [ "$(py_version)" != "$PY_SDK" ]; then
  if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
    if ! venv_works; then
      command -v dpkg >/dev/null 2>&1 || { log "python3 -m venv fails; install venv support"; exit 1; }
      if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
      log "installing python3-venv (apt-get)"
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null 2>&1 || {
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null
      }
    fi
    log "creating venv $venv"
    rm -rf "$venv"
    mkdir -p "$cache"
    python3 -m venv "$venv" >&2
  fi
  log "installing stellar-sdk==$PY_SDK (pip)"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "stellar-sdk==$PY_SDK" >&2
  [ "$(py_version)" = "$PY_SDK" ] || { log "stellar-sdk $PY_SDK did not install"; exit 1; }
fi

# Node: $nodedir/node_modules with @stellar/stellar-sdk exactly $JS_SDK.
js_version() {
  node -e 'process.stdout.write(require(process.argv[1]).version)' \
    "$nodedir/node_modules/@stellar/stellar-sdk/package.json" 2>/dev/null || true
}
if [ "$(js_version)" != "$JS_SDK" ]; then
  log "installing @stellar/stellar-sdk@$JS_SDK (npm)"
  mkdir -p "$nodedir"
  # Its own package.json keeps npm from climbing to a parent project.
  cat >"$nodedir/package.json" <<EOF
{
  "name": "ledgerstore-sdk-clients",
  "private": true,
  "dependencies": { "@stellar/stellar-sdk": "$JS_SDK" }
}
EOF
  rm -f "$nodedir/package-lock.json"
  (cd "$nodedir" && npm install --no-audit --no-fund --loglevel=error >&2)
  [ "$(js_version)" = "$JS_SDK" ] || { log "@stellar/stellar-sdk $JS_SDK did not install"; exit 1; }
fi

echo "python=$venv/bin/python"
echo "node_modules=$nodedir/node_modules"
