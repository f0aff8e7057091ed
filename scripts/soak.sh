#!/usr/bin/env bash
# Soak: runs the stress test (tests/stress.rs) in release mode for ten minutes and prints
# its totals: rounds, closures created, one-shot runs, one-shots cancelled, periodic runs,
# refusals, tasks handed back by shutdown_now, and lost tasks (must be 0).
#
# Usage:  scripts/soak.sh            (600 s)
#         SOAK_SECS=60 scripts/soak.sh
# The stress test checks its exact accounting after every round and fails on the first
# round with a violation; a round that hangs ends the process (see tests/stress.rs).
# Exit status: that of the test run.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never

secs="${SOAK_SECS:-600}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT

echo "soak: building the stress test (release)"
cargo test --release --test stress --no-run >/dev/null 2>&1 || cargo test --release --test stress --no-run
echo "soak: stress test for ${secs} s on $(nproc) cores, $(rustc --version)"
start=$(date +%s)
status=0
SCHEDPOOL_STRESS_SECS="$secs" SCHEDPOOL_STRESS_REPORT=1 \
    cargo test --release --test stress -- --nocapture >"$log" 2>&1 || status=$?
wall=$(( $(date +%s) - start ))

totals="$(grep -E '^stress totals:' "$log" | tail -1 || true)"
if [ -z "$totals" ]; then
    echo "soak: the stress test printed no totals (exit status $status); its output:"
    tail -60 "$log"
    exit "$((status == 0 ? 1 : status))"
fi
field() { sed -nE "s/.* $1=([0-9]+).*/\1/p" <<<"$totals"; }
echo "$totals"
echo
printf '%-40s %s\n' \
    "wall time (s)" "$wall" \
    "rounds" "$(field rounds)" \
    "closures created" "$(field tasks)" \
    "one-shot tasks run (exactly once each)" "$(field one_shot_run)" \
    "one-shot tasks cancelled (never run)" "$(field one_shot_cancelled)" \
    "periodic tasks" "$(field periodic_tasks)" \
    "periodic runs" "$(field periodic_runs)" \
    "refused submissions" "$(field rejected)" \
    "  of which run by caller or discarded" "$(field caller_ran_or_discarded)" \
    "shutdown_now tasks run by the caller" "$(field pending_run)" \
    "shutdown_now tasks dropped" "$(field pending_dropped)" \
    "lost (never ran, never cancelled)" "$(field lost)" \
    "one-shots interrupted while running" "$(field interrupted_running)" \
    "accounting violations" "$(field violations)"
if [ "$status" -ne 0 ]; then
    echo
    echo "soak: FAILED (exit status $status); the violations:"
    grep -E '^\s+"|panicked|stuck' "$log" | head -40
    exit "$status"
fi
echo
echo "soak: passed"
