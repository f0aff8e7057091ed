#!/usr/bin/env bash
# Sanitize: runs the tests of the crate's one `unsafe` module (`src/task/raw.rs`: the thin
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
# - Miri: the unit tests of `task::raw`, `task::once` and `task::state`, with their
#   threads: undefined behaviour in the pointer casts, the union and the reference
#   count, and data races on the slot. Not with `-Zmiri-strict-provenance`:
#   `parking_lot_core`'s contended lock path (the waiter table's mutexes) casts integers
#   to pointers, which that mode refuses; the crate's own code casts none.
#
# Usage:   scripts/sanitize.sh
# Env:     SANITIZE_TOOLCHAIN (default nightly)
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
if echo 'fn main() {}' | rustc "+$tc" -Zsanitizer=address --target "$target" \
    -o "$probe/probe" - >/dev/null 2>&1; then
    RUSTFLAGS="-Zsanitizer=address" RUSTDOCFLAGS="-Zsanitizer=address" \
        ASAN_OPTIONS="detect_leaks=0" CARGO_TARGET_DIR=target/asan \
        cargo "+$tc" test --target "$target" --lib --test futures --test memory
else
    echo "sanitize: '$tc' cannot build with -Zsanitizer=address here: skipped"
fi

echo "== Miri ($tc)"
if cargo "+$tc" miri --version >/dev/null 2>&1; then
    CARGO_TARGET_DIR=target/miri cargo "+$tc" miri test --lib -- \
        task::raw:: task::once:: task::state::
else
    echo "sanitize: '$tc' has no miri component: Miri skipped (rustup component add miri --toolchain $tc)"
fi
echo "== sanitize: done"
