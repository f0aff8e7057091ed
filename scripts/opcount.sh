#!/usr/bin/env bash
# Opcount: per-operation instruction and cache-miss counts of the public API, from
# `benches/ops.rs` run under valgrind. Prints a markdown table.
#
# Each op of the ops bench runs at two sizes, N and 2N, as its own process, under
#   valgrind --tool=callgrind --collect-bus=yes     Ir (instructions), Ge (atomic RMWs)
#   valgrind --tool=cachegrind --cache-sim=yes      D1mr+D1mw, DLmr+DLmw (data misses)
# and a figure per op is (count(2N) - count(N)) / N: process start, pool construction and
# everything else that does not grow with N cancels out. Where an op needs setup that
# grows with N (cancel needs N scheduled tasks), the same figure of its base op, which
# does exactly that setup and nothing more, is subtracted; the table names the base.
#
# Valgrind runs one thread at a time (it serialises the program's threads), and the
# probes never race: the caller either works alone or waits while the worker works. So
# multi-threaded ops (take_run: the worker takes and runs) still give counts that repeat
# from run to run. Cachegrind simulates one D1 and one LL (the host's L1d and last-level
# sizes) shared by all threads: no coherence traffic between cores is modelled.
#
# The bytes column comes from one native run of `ops bytes 2N` (a counting allocator);
# the wall-time column is the median of five native runs of each op at 2N (noisy:
# indicative only).
#
# Usage:   scripts/opcount.sh
# Env:     OPCOUNT_N (default 50000; the runs use N and 2N)
#          OPCOUNT_OPS (space-separated subset of the table's ops, default all)
#          OPCOUNT_KEEP (a directory: the valgrind outputs are copied there, e.g. for
#                        `callgrind_annotate --inclusive=no DIR/cancel.100000.cg`)
#          OPCOUNT_SHARDS (the queue's shard count instead of one per CPU: builds with
#                        `--cfg schedpool_probe`, recording off, into target/opcount-shards)
#          OPCOUNT_WORKERS (the pools' worker count, default 1)
#          OPCOUNT_FEATURES (cargo features for the build, e.g. `tokio` for the
#                        `*_async_tokio` ops; `metrics` counts the runs with a Prometheus
#                        recorder installed)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never

die() { echo "opcount: $*" >&2; exit 2; }
command -v valgrind >/dev/null || die "valgrind is not installed (apt-get install valgrind)"
command -v cargo >/dev/null || die "cargo is not on PATH"
command -v awk >/dev/null || die "awk is not installed"

n1="${OPCOUNT_N:-50000}"
[[ "$n1" =~ ^[1-9][0-9]*$ ]] || die "OPCOUNT_N must be a positive integer, got '$n1'"
n2=$((2 * n1))

# op:base ("-": no base). Order is the table's order.
table=(
    schedule:-
    execute:-
    cancel:schedule
    pair:-
    cancel_shuffled:schedule_perm
    rearm:schedule_perm
    rearm_after:schedule_perm
    schedule_manual:-
    take_run:schedule_manual
    schedule_named_manual:-
    take_run_named:schedule_named_manual
    schedule_spread:-
    take_run_spread:schedule_spread
    submit_due:-
    take_run_due:submit_due
    get:take_run
    schedule_async:-
    take_run_async:schedule_async
    schedule_async_yield:-
    take_run_async_yield:schedule_async_yield
    schedule_async_send:-
    take_run_async_send:schedule_async_send
    schedule_async_send_yield:-
    take_run_async_send_yield:schedule_async_send_yield
    schedule_async_tokio:-
    take_run_async_tokio:schedule_async_tokio
    lock:-
    now:-
)
# The `*_tokio` ops exist only in a build with the `tokio` feature.
if [[ " ${OPCOUNT_FEATURES:-} " != *tokio* ]]; then
    kept=()
    for row in "${table[@]}"; do
        [[ "${row%%:*}" == *_tokio ]] || kept+=("$row")
    done
    table=("${kept[@]}")
fi
if [ -n "${OPCOUNT_OPS:-}" ]; then
    selected=()
    for want in $OPCOUNT_OPS; do
        found=""
        for row in "${table[@]}"; do
            [ "${row%%:*}" = "$want" ] && selected+=("$row") && found=1
        done
        [ -n "$found" ] || die "unknown op '$want'"
    done
    table=("${selected[@]}")
fi

if [ -n "${OPCOUNT_SHARDS:-}" ]; then
    [[ "$OPCOUNT_SHARDS" =~ ^[1-9][0-9]*$ ]] || die "OPCOUNT_SHARDS must be a positive integer"
    export SCHEDPOOL_SHARDS="$OPCOUNT_SHARDS" SCHEDPOOL_PROBE=0
    export RUSTFLAGS="${RUSTFLAGS:-} --cfg schedpool_probe" CARGO_TARGET_DIR=target/opcount-shards
fi
if [ -n "${OPCOUNT_WORKERS:-}" ]; then
    [[ "$OPCOUNT_WORKERS" =~ ^[1-9][0-9]*$ ]] || die "OPCOUNT_WORKERS must be a positive integer"
    export OPS_WORKERS="$OPCOUNT_WORKERS"
fi

echo "== building benches/ops.rs (release)" >&2
features=()
[ -n "${OPCOUNT_FEATURES:-}" ] && features=(--features "$OPCOUNT_FEATURES")
build_log="$(cargo bench --no-run --bench ops "${features[@]}" 2>&1)" || { echo "$build_log" >&2; die "build failed"; }
bin="$(sed -n 's/.*Executable benches\/ops\.rs (\(.*\))$/\1/p' <<<"$build_log" | tail -1)"
[ -n "$bin" ] && [ -x "$bin" ] || { echo "$build_log" >&2; die "could not find the ops binary"; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
keep="${OPCOUNT_KEEP:-}"
if [ -n "$keep" ]; then
    mkdir -p "$keep" || die "cannot create OPCOUNT_KEEP directory '$keep'"
fi

declare -A ir ge d1 ll
measured=()

# measure OP: callgrind and cachegrind at both sizes, once per op.
measure() {
    local op="$1" n out
    for m in "${measured[@]}"; do [ "$m" = "$op" ] && return 0; done
    for n in "$n1" "$n2"; do
        echo "== $op $n" >&2
        out="$work/$op.$n"
        valgrind --tool=callgrind --collect-bus=yes --callgrind-out-file="$out.cg" \
            --log-file="$out.cg.log" "$bin" "$op" "$n" >/dev/null ||
            { cat "$out.cg.log" >&2; die "callgrind failed on '$op $n'"; }
        valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file="$out.cache" \
            --log-file="$out.cache.log" "$bin" "$op" "$n" >/dev/null ||
            { cat "$out.cache.log" >&2; die "cachegrind failed on '$op $n'"; }
        # callgrind: "events: Ir Ge" then "summary: <Ir> <Ge>"
        read -r ir["$op.$n"] ge["$op.$n"] < <(awk '/^summary:/ {print $2, $3}' "$out.cg")
        # cachegrind: "events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw"
        read -r d1["$op.$n"] ll["$op.$n"] < <(awk '/^summary:/ {print $6 + $9, $7 + $10}' "$out.cache")
        [ -n "${ir[$op.$n]}" ] && [ -n "${d1[$op.$n]}" ] || die "no summary for '$op $n'"
    done
    measured+=("$op")
    if [ -n "$keep" ]; then
        cp "$work/$op".* "$keep"/
    fi
}

# raw OP ARRAY: (v(2N) - v(N)) / N, the whole process's growth per op.
raw() {
    local -n a="$2"
    awk -v x="${a[$1.$n1]}" -v y="${a[$1.$n2]}" -v n="$n1" 'BEGIN {printf "%.4f", (y - x) / n}'
}

# per OP BASE ARRAY: the op's growth minus its base's (the base does the same setup).
per() {
    if [ "$2" = - ]; then
        raw "$1" "$3"
    else
        awk -v v="$(raw "$1" "$3")" -v b="$(raw "$2" "$3")" 'BEGIN {printf "%.4f", v - b}'
    fi
}

for row in "${table[@]}"; do
    measure "${row%%:*}"
    [ "${row#*:}" = - ] || measure "${row#*:}"
done

echo "== native runs (bytes, wall time)" >&2
"$bin" bytes "$n2" >"$work/bytes.txt"
declare -A wall bytes
for row in "${table[@]}"; do
    op="${row%%:*}"
    wall[$op]="$(for _ in 1 2 3 4 5; do "$bin" "$op" "$n2"; done |
        sed -n 's/.*ns_per_op=\([0-9.]*\).*/\1/p' | sort -n | sed -n 3p)"
done
while read -r line; do
    op="$(sed -n 's/^op=\([a-z_]*\) .*/\1/p' <<<"$line")"
    live="$(sed -n 's/.*live_per_op=\([0-9.]*\).*/\1/p' <<<"$line")"
    allocs="$(sed -n 's/.*allocs_per_op=\([0-9.]*\).*/\1/p' <<<"$line")"
    sizes="$(sed -n 's/.*sizes=\([0-9x,]*\).*/\1/p' <<<"$line" | sed 's/x[0-9]*//g')"
    bytes[$op]="$(printf '%.0f live, %.2f allocs (%s B)' "$live" "$allocs" "$sizes")"
done <"$work/bytes.txt"

# fmt VALUE DECIMALS (no "-0.00" for a tiny negative difference)
fmt() { awk -v v="$1" -v d="$2" 'BEGIN {s = sprintf("%.*f", d, v); if (s + 0 == 0) s = sprintf("%.*f", d, 0); printf "%s", s}'; }

echo
echo "Per-operation cost, N = $n1 and $n2 (figure = (count(2N) - count(N)) / N - base)."
echo "$(rustc --version); $(valgrind --version); commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
echo "Cache model (cachegrind): $(sed -n 's/^desc: D1 cache: *//p' "$work/${measured[0]}.$n1.cache" | tr -s ' '), LL $(sed -n 's/^desc: LL cache: *//p' "$work/${measured[0]}.$n1.cache" | tr -s ' ')."
echo
echo "| op | base | instructions/op | atomic RMW/op | D1 misses/op | LL misses/op | bytes/op | wall ns/op (native, median of 5) |"
echo "|---|---|---:|---:|---:|---:|---|---:|"
for row in "${table[@]}"; do
    op="${row%%:*}"
    base="${row#*:}"
    printf '| `%s` | %s | %s | %s | %s | %s | %s | %s |\n' "$op" \
        "$([ "$base" = - ] && echo — || echo "\`$base\`")" \
        "$(fmt "$(per "$op" "$base" ir)" 0)" \
        "$(fmt "$(per "$op" "$base" ge)" 1)" \
        "$(fmt "$(per "$op" "$base" d1)" 2)" \
        "$(fmt "$(per "$op" "$base" ll)" 2)" \
        "${bytes[$op]:-—}" \
        "$(fmt "${wall[$op]:-0}" 0)"
done
echo
echo "Atomic RMW = callgrind's Ge (global bus events: locked instructions)."
echo "Valgrind serialises threads; counts include the worker thread's work where the op"
echo "makes the worker run (take_run). bytes/op: live bytes per pending task at the end"
echo "(task allocations plus the queue's own storage), allocations per op, request sizes."
