#!/usr/bin/env bash
# The core-scaling table: what each operation and each due task costs as the worker and
# shard count grows, so that every cost that grows with it is visible. Prints markdown.
#
# For each count K (workers = shards = K, default 2 8 16 64):
# - per operation, from `scripts/opcount.sh` with OPCOUNT_SHARDS=K OPCOUNT_WORKERS=K:
#   instructions and atomic RMWs of `schedule`, `pair` (schedule + cancel + drop: W4's
#   iteration), `take_run` (a worker's take and run, one shard holding entries) and
#   `take_run_spread` (the same with every shard holding entries: the head scan's worst
#   case);
# - per due task, for W2, W4 and W6 of the comparison binary (`benches/compare`, quick
#   sizes) on schedpool and scheduled-thread-pool with K workers, and per 1,000 pairs of
#   W7 with K producers as well (`COMPARE_PRODUCERS`): wake-ups sent
#   (`sched:sched_waking`, counted in the waker) and context switches (`perf stat`), and futex calls
#   (`strace -f -c`, a separate run: strace slows every call).
#
# On a machine with fewer CPUs than K this is a simulation: the threads exist and every
# shard is scanned, but they take turns on the CPUs, so only counts are read, never
# times. On a machine with K or more CPUs, SCALING_SHARDS=auto leaves the shard count at
# its default (one per CPU) and the same table shows the real thing.
#
# Env:   SCALING_COUNTS (default "2 8 16 64"), SCALING_SHARDS (K, the default, or auto),
#        SCALING_OPS (default "schedule pair take_run take_run_spread"),
#        OPCOUNT_N (passed on; default here 20000)
# Needs: valgrind, perf (with the sched tracepoints: root, or perf_event_paranoid <= -1),
#        strace.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never

die() { echo "scaling: $*" >&2; exit 2; }
for tool in valgrind perf strace awk; do
    command -v "$tool" >/dev/null || die "$tool is not installed"
done

counts="${SCALING_COUNTS:-2 8 16 64}"
ops="${SCALING_OPS:-schedule pair take_run take_run_spread}"
shards_mode="${SCALING_SHARDS:-K}"
export OPCOUNT_N="${OPCOUNT_N:-20000}"

# The comparison binary, built so that the shard count can be set (recording off).
echo "== building benches/compare/rust with --cfg schedpool_probe" >&2
RUSTFLAGS="${RUSTFLAGS:-} --cfg schedpool_probe" cargo build --release --quiet \
    --manifest-path benches/compare/rust/Cargo.toml --target-dir target/scaling-compare ||
    die "build failed"
bin=target/scaling-compare/release/compare
export SCHEDPOOL_PROBE=0

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "## Per operation (instructions / atomic RMWs per op, callgrind; N = $OPCOUNT_N)"
echo
header="| workers = shards |"
rule="|---:|"
for op in $ops; do header+=" \`$op\` |"; rule+="---:|"; done
echo "$header"
echo "$rule"
for k in $counts; do
    if [ "$shards_mode" = auto ]; then
        table="$(OPCOUNT_WORKERS="$k" OPCOUNT_OPS="$ops" bash scripts/opcount.sh 2>"$tmp/opcount.log")" ||
            { cat "$tmp/opcount.log" >&2; die "opcount failed"; }
    else
        table="$(OPCOUNT_SHARDS="$k" OPCOUNT_WORKERS="$k" OPCOUNT_OPS="$ops" bash scripts/opcount.sh 2>"$tmp/opcount.log")" ||
            { cat "$tmp/opcount.log" >&2; die "opcount failed"; }
    fi
    row="| $k |"
    for op in $ops; do
        # opcount's columns: | op | base | instructions/op | atomic RMW/op | ...
        cell="$(awk -F'|' -v op="\`$op\`" '{gsub(/ /, "", $2)} $2 == op {gsub(/ /, "", $4); gsub(/ /, "", $5); print $4 " / " $5}' <<<"$table")"
        row+=" ${cell:-–} |"
    done
    echo "$row"
done
echo

# tasks W: the number of due tasks a quick run of workload W has.
due_tasks() {
    case "$1" in
        w2) echo 10000 ;;  # every task
        w4) echo 500 ;;    # every 100th of 2 x 25,000 fires
        w6) echo 200 ;;
    esac
}

# counts ROW_LABEL DIVISOR SCALE SYSTEM WORKLOAD ENV...: one table row of wake-ups sent,
# context switches and futex calls of a quick run, times SCALE, divided by DIVISOR.
counts() {
    local label="$1" div="$2" scale="$3" sys="$4" w="$5"
    shift 5
    env "$@" perf stat -x, -o "$tmp/stat" -e sched:sched_waking,context-switches \
        "$bin" "$sys" "$w" --quick >/dev/null 2>&1 || die "perf stat failed on $sys $w"
    wakeups="$(awk -F, '$3 ~ /sched_waking/ {print $1}' "$tmp/stat")"
    switches="$(awk -F, '$3 ~ /context-switches/ {print $1}' "$tmp/stat")"
    env "$@" strace -f -c -e trace=futex -o "$tmp/strace" \
        "$bin" "$sys" "$w" --quick >/dev/null 2>&1 || die "strace failed on $sys $w"
    futex="$(awk '$NF == "futex" {print $4}' "$tmp/strace")"
    awk -v l="$label" -v d="$div" -v m="$scale" -v a="$wakeups" -v b="$switches" -v c="${futex:-0}" \
        'BEGIN {printf "%s %.1f | %.1f | %.1f |\n", l, m * a / d, m * b / d, m * c / d}'
}

# pool_env K: the environment of a run with K workers (and K shards unless auto).
pool_env() {
    echo "COMPARE_WORKERS=$1"
    [ "$shards_mode" = auto ] || echo "SCHEDPOOL_SHARDS=$1"
}

echo "## Per due task (quick sizes: W2 10,000 tasks, W4 500 that fire of 50,000 scheduled, W6 200)"
echo
echo "| workload | system | workers = shards | wake-ups sent | context switches | futex calls |"
echo "|---|---|---:|---:|---:|---:|"
for w in w2 w4 w6; do
    due="$(due_tasks "$w")"
    for sys in schedpool stp; do
        for k in $counts; do
            mapfile -t envs < <(pool_env "$k")
            counts "| $w | $sys | $k |" "$due" 1 "$sys" "$w" "${envs[@]}"
        done
    done
done
echo

# W7 with K producers as well as K workers: what a schedule + cancel pair costs the
# machine as both sides grow (quick: K x 20,000 iterations).
echo "## W7 with K producers, per 1,000 iterations (quick: K × 20,000 schedule + cancel pairs)"
echo
echo "| system | producers = workers = shards | wake-ups sent | context switches | futex calls |"
echo "|---|---:|---:|---:|---:|"
for sys in schedpool stp; do
    for k in $counts; do
        mapfile -t envs < <(pool_env "$k")
        counts "| $sys | $k |" "$((k * 20000))" 1000 "$sys" w7 "${envs[@]}" COMPARE_PRODUCERS="$k"
    done
done
