#!/usr/bin/env bash
# Memcheck: runs the crate's test binaries (the unit tests and every tests/*.rs) under
# valgrind memcheck and prints, per binary, the test result, the memory errors and the
# leaked bytes, then a total. Exits non-zero if any binary has a test failure, a memory
# error (invalid read or write, use of uninitialised memory, bad free) or a definite leak.
#
# Why valgrind: LeakSanitizer and AddressSanitizer need a nightly toolchain
# (`-Zsanitizer`); valgrind checks the stable debug build as it is.
#
# What counts: `--leak-check=full --errors-for-leak-kinds=definite`. Only blocks that are
# definitely lost (no pointer to them anywhere) are errors. "Still reachable" blocks are
# std's backtrace symbolisation cache, the test harness's buffers and the stacks and
# thread-locals of threads still alive at exit (workers of pools that a test dropped
# without waiting, which exit on their own); "possibly lost" blocks are the same, seen
# through interior pointers (std's `Thread` handle of the harness's main thread). Both
# are printed for the record but do not fail the run. No suppressions are needed for the
# harness or std with these settings; to add some, put valgrind suppression entries in
# the file named by MEMCHECK_SUPPRESSIONS.
#
# Usage:   scripts/memcheck.sh [binary-name ...]    (default: every test binary)
#          e.g. scripts/memcheck.sh memory faults
# Env:     MEMCHECK_TIMEOUT (seconds per binary, default 1200)
#          MEMCHECK_SUPPRESSIONS (a valgrind suppressions file, optional)
# valgrind runs one thread at a time; --fair-sched=yes hands its lock round-robin, so a
# thread that busy-waits (a consumer polling an empty queue) cannot starve the thread it
# waits for (the default lock lets a releasing thread take it straight back).
# The tests run one at a time (--test-threads=1) with small scale settings: valgrind runs
# them 20 to 50 times slower, and every real-time wait in them is bounded by seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never

command -v valgrind >/dev/null || { echo "memcheck: valgrind is not installed" >&2; exit 2; }
command -v jq >/dev/null || { echo "memcheck: jq is not installed" >&2; exit 2; }

timeout_s="${MEMCHECK_TIMEOUT:-1200}"
supp=()
if [ -n "${MEMCHECK_SUPPRESSIONS:-}" ]; then
    supp=(--suppressions="$MEMCHECK_SUPPRESSIONS")
fi

echo "== building the test binaries (debug)"
mapfile -t binaries < <(
    cargo test --no-run --message-format=json 2>/dev/null |
        jq -r 'select(.reason == "compiler-artifact" and .profile.test == true and .executable != null)
               | .executable' |
        sort -u
)
if [ "$#" -gt 0 ]; then
    wanted=("$@")
    selected=()
    for bin in "${binaries[@]}"; do
        name="$(basename "$bin")"
        name="${name%-*}"
        for w in "${wanted[@]}"; do
            [ "$name" = "$w" ] && selected+=("$bin")
        done
    done
    binaries=("${selected[@]}")
fi
[ "${#binaries[@]}" -gt 0 ] || { echo "memcheck: no test binary selected" >&2; exit 2; }

logdir="$(mktemp -d)"
trap 'rm -rf "$logdir"' EXIT
failed=0
total_definite=0
total_errors=0
printf '\n%-22s %-8s %-34s %8s %14s %14s\n' binary status tests errors definite possibly
for bin in "${binaries[@]}"; do
    name="$(basename "$bin")"
    name="${name%-*}"
    vlog="$logdir/$name.valgrind"
    tlog="$logdir/$name.out"
    start=$(date +%s)
    rc=0
    RUST_BACKTRACE=0 PROPTEST_CASES=16 SCHEDPOOL_STRESS_SECS=2 \
        timeout "$timeout_s" valgrind --fair-sched=yes --leak-check=full \
        --errors-for-leak-kinds=definite --show-leak-kinds=definite,possible \
        --error-exitcode=99 --log-file="$vlog" "${supp[@]}" \
        "$bin" --test-threads=1 >"$tlog" 2>&1 || rc=$?
    secs=$(( $(date +%s) - start ))
    result="$(grep -E '^test result:' "$tlog" | tail -1 | sed -E 's/test result: //; s/; 0 measured.*//' || true)"
    errors="$(grep -Eo 'ERROR SUMMARY: [0-9,]+' "$vlog" | tail -1 | grep -Eo '[0-9,]+' | tr -d , || true)"
    definite="$(grep -Eo 'definitely lost: [0-9,]+ bytes' "$vlog" | tail -1 | grep -Eo '[0-9,]+' | tr -d , || true)"
    possibly="$(grep -Eo 'possibly lost: [0-9,]+ bytes' "$vlog" | tail -1 | grep -Eo '[0-9,]+' | tr -d , || true)"
    # No summary line means valgrind found nothing of that kind.
    errors="${errors:-0}"
    definite="${definite:-0}"
    possibly="${possibly:-0}"
    status=ok
    case "$rc" in
        0) ;;
        99) status=MEMERR ;;
        124) status=TIMEOUT ;;
        *) status="FAIL($rc)" ;;
    esac
    printf '%-22s %-8s %-34s %8s %14s %14s  (%ss)\n' "$name" "$status" "${result:-?}" \
        "$errors" "$definite" "$possibly" "$secs"
    if [ "$status" != ok ]; then
        failed=1
        echo "---- $name: last lines of the test output"
        tail -20 "$tlog"
        echo "---- $name: valgrind report"
        head -120 "$vlog"
    fi
    total_definite=$((total_definite + definite))
    total_errors=$((total_errors + errors))
done
echo
echo "memcheck: ${#binaries[@]} binaries, $total_errors memory errors, $total_definite bytes definitely lost"
if [ "$failed" -ne 0 ]; then
    echo "memcheck: FAILED"
    exit 1
fi
echo "memcheck: clean"
