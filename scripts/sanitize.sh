#!/usr/bin/env bash
# Sanitize: runs the tests of the crate's one `unsafe` module (`src/task/raw/`: the thin
# task pointer and a one-shot's slot) and of the code around it under AddressSanitizer
# and under Miri, where the nightly toolchain has them; prints a notice and skips
# otherwise (both need nightly: `-Zsanitizer`, the `miri` component). valgrind memcheck
# (`scripts/memcheck.sh`) covers the stable build in every case.
#
# - AddressSanitizer: the library's unit tests and the integration tests that drive
#   one-shots through the pool's futures and free them (futures, memory), in a debug
#   build of the crate instrumented with `-Zsanitizer=address` (std itself is not
#   rebuilt). Catches use-after-free, double free and out-of-bounds accesses; leaks are
#   left to memcheck (LeakSanitizer would also flag the threads tests leave running).
# - Miri: the unit tests of `task::raw`, `task::once` and `task::state`: undefined
#   behaviour in the pointer casts, the union, the reference count and the task's waker
#   (a `TaskRef` behind a `RawWaker`, cloned, woken and dropped on several threads); and the slot's
#   races (`task::once::races`: a run, a cancel or an interrupt, a blocking, timed or
#   polled get and every reference's drop, each on its own thread) under
#   `-Zmiri-many-seeds` (MIRI_SEEDS, default 32 schedules each), whose data-race
#   detector sees an access to the slot, or the free of the task, that nothing orders.
#   The component is installed if the toolchain lacks it. Not with `-Zmiri-strict-provenance`:
#   `parking_lot_core`'s contended lock path (the waiter table's mutexes) casts integers
#   to pointers, which that mode refuses; the crate's own code casts none.
#
# Usage:   scripts/sanitize.sh
# Env:     SANITIZE_TOOLCHAIN (default nightly), MIRI_SEEDS (default 32),
#          SANITIZE_ASAN (default 1; 0 runs Miri only, as CI does)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never

tc="${SANITIZE_TOOLCHAIN:-nightly}"
target="$(rustc -vV | sed -n 's/^host: //p')"

if ! cargo "+$tc" --version >/dev/null 2>&1; then
    echo "sanitize: no '$tc' toolchain: AddressSanitizer and Miri skipped (memcheck covers the stable build)"
    exit 0
fi

echo "== AddressSanitizer ($tc, $target)"
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
if [ "${SANITIZE_ASAN:-1}" = 0 ]; then
    echo "sanitize: SANITIZE_ASAN=0: AddressSanitizer skipped"
elif echo 'fn main() {}' | rustc "+$tc" -Zsanitizer=address --target "$target" \
    -o "$probe/probe" - >/dev/null 2>&1; then
    RUSTFLAGS="-Zsanitizer=address" RUSTDOCFLAGS="-Zsanitizer=address" \
        ASAN_OPTIONS="detect_leaks=0" CARGO_TARGET_DIR=target/asan \
        cargo "+$tc" test --target "$target" --lib --test futures --test memory
else
    echo "sanitize: '$tc' cannot build with -Zsanitizer=address here: skipped"
fi

echo "== Miri ($tc), at ${SECONDS}s"
if ! cargo "+$tc" miri --version >/dev/null 2>&1; then
    echo "sanitize: '$tc' has no miri component: installing it (rustup component add miri rust-src)"
    rustup component add miri rust-src --toolchain "$tc" >/dev/null 2>&1 || true
fi
if cargo "+$tc" miri --version >/dev/null 2>&1; then
    # Every unit test of the unsafe module and the state word once, then the slot's
    # multi-threaded races (`task::once::races`) under many seeds: each seed is another
    # thread schedule, so an access the flags or the count do not order is seen.
    CARGO_TARGET_DIR=target/miri cargo "+$tc" miri test --lib -- \
        task::raw:: task::once::tests:: task::state::
    CARGO_TARGET_DIR=target/miri MIRIFLAGS="-Zmiri-many-seeds=0..${MIRI_SEEDS:-32}" \
        cargo "+$tc" miri test --lib -- task::once::races::
else
    echo "sanitize: '$tc' has no miri component and it could not be installed: Miri skipped"
fi
echo "== sanitize: done in ${SECONDS}s"
