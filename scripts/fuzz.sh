#!/usr/bin/env bash
# Coverage-guided fuzzing of every parser of untrusted bytes with AFL++, on
# stable Rust: cargo-afl from crates.io builds AFL++ from source, then
# instruments the `fuzz/` harness (crates/fuzz's targets). Each target starts
# from its seed corpus (real fixtures; crates/fuzz/src/seeds.rs).
#
#   scripts/fuzz.sh                         # the long form: 10M executions per target
#   scripts/fuzz.sh --execs 200000 xdr      # some targets, a set number of executions
#   scripts/fuzz.sh --seconds 20            # a set time per target (CI's short form)
#
# Targets run two at a time (one per core). Per target it prints executions,
# time, executions/s, corpus size, edges covered, crashes and hangs, and
# writes the same to $FUZZ_OUT/summary.md. Exits 1 if any target saved a
# crash or a hang: the inputs are in $FUZZ_OUT/<target>/default/crashes/
# (replay one with `fuzz/target/.../ledgerstore-fuzz-afl <target> < FILE`,
# then save it under crates/fuzz/regressions/<target>/ with the fix).
#
# Environment: FUZZ_OUT (default $CARGO_TARGET_DIR/tmp/fuzz), FUZZ_JOBS
# (parallel targets, default 2), FUZZ_TIMEOUT_MS (per input, default 2000).
set -euo pipefail
cd "$(dirname "$0")/.."

AFL_VERSION=0.18.2
mode=execs
amount=10000000
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --execs) mode=execs; amount=${2:?--execs needs a number}; shift 2 ;;
    --seconds) mode=seconds; amount=${2:?--seconds needs a number}; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    -*) echo "fuzz: unknown option $1 (expected --execs N or --seconds S)" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(xdr codec segment pack batch events event_index)
case "$amount" in ''|*[!0-9]*|0) echo "fuzz: --$mode must be a positive integer, got '$amount'" >&2; exit 2 ;; esac

bash scripts/setup.sh
. scripts/env.sh
# The instrumented build gets a target dir of its own: cargo-afl's flags
# would otherwise invalidate the workspace build.
base=${CARGO_TARGET_DIR:-$PWD/target}
export CARGO_TARGET_DIR="$base/../fuzz-target"
out=${FUZZ_OUT:-$base/tmp/fuzz}
jobs=${FUZZ_JOBS:-2}
timeout_ms=${FUZZ_TIMEOUT_MS:-2000}

if ! cargo afl --version 2>/dev/null | grep -q "$AFL_VERSION"; then
  echo "fuzz: installing cargo-afl $AFL_VERSION from crates.io" >&2
  cargo install --locked --quiet cargo-afl --version "$AFL_VERSION"
fi
# AFL++ is built from the source cargo-afl carries, once per rustc version
# (the install usually does it; a second build is refused as "already built").
if ! msg=$(cargo afl config --build 2>&1); then
  echo "$msg" | grep -q "already built" || { echo "$msg" >&2; exit 1; }
fi
(cd fuzz && cargo afl build --release --locked --quiet)
bin="$CARGO_TARGET_DIR/release/ledgerstore-fuzz-afl"

# No UI; no CPU-governor or core-pattern checks (containers cannot change
# them; a crash is still caught, as the harness aborts on panic).
export AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1
export AFL_NO_AFFINITY=1 AFL_QUIET=1

rm -rf "$out"
mkdir -p "$out"
run_one() {
  local t=$1
  "$bin" seeds "$t" "$out/$t/in" >/dev/null
  local limit
  if [ "$mode" = execs ]; then limit=(-E "$amount"); else limit=(-V "$amount"); fi
  cargo afl fuzz -i "$out/$t/in" -o "$out/$t" -t "$timeout_ms" -m none "${limit[@]}" \
    -- "$bin" "$t" >"$out/$t.log" 2>&1 || {
    echo "fuzz: afl-fuzz for $t exited $? (log: $out/$t.log)" >&2
    tail -20 "$out/$t.log" >&2
    return 1
  }
}

failed=0
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
  run_one "$t" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done

field() { sed -n "s/^$2 *: *//p" "$out/$1/default/fuzzer_stats"; }
summary="$out/summary.md"
{
  echo "| target | executions | seconds | execs/s | corpus | map coverage | crashes | hangs |"
  echo "|---|---|---|---|---|---|---|---|"
} >"$summary"
for t in "${targets[@]}"; do
  if [ ! -f "$out/$t/default/fuzzer_stats" ]; then
    echo "| $t | (no stats) | | | | | | |" >>"$summary"
    failed=1
    continue
  fi
  echo "| $t | $(field "$t" execs_done) | $(field "$t" run_time) | $(field "$t" execs_per_sec) | $(field "$t" corpus_count) | $(field "$t" bitmap_cvg) | $(field "$t" saved_crashes) | $(field "$t" saved_hangs) |" >>"$summary"
  if [ "$(field "$t" saved_crashes)" != 0 ] || [ "$(field "$t" saved_hangs)" != 0 ]; then
    echo "fuzz: $t saved crashes or hangs in $out/$t/default/" >&2
    failed=1
  fi
  if [ "$mode" = execs ] && [ "$(field "$t" execs_done)" -lt "$amount" ]; then
    echo "fuzz: $t stopped at $(field "$t" execs_done) of $amount executions" >&2
    failed=1
  fi
done
cat "$summary"
exit "$failed"
