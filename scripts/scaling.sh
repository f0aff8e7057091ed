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
#   sizes) on schedpool and scheduled-thread-pool with K workers: wake-ups sent
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

echo "## Per due task (quick sizes: W2 10,000 tasks, W4 500 that fire of 50,000 scheduled, W6 200)"
echo
echo "| workload | system | workers = shards | wake-ups sent | context switches | futex calls |"
echo "|---|---|---:|---:|---:|---:|"
for w in w2 w4 w6; do
    due="$(due_tasks "$w")"
    for sys in schedpool stp; do
        for k in $counts; do
            envs=(COMPARE_WORKERS="$k")
            [ "$shards_mode" = auto ] || envs+=(SCHEDPOOL_SHARDS="$k")
            env "${envs[@]}" perf stat -x, -o "$tmp/stat" -e sched:sched_waking,context-switches \
                "$bin" "$sys" "$w" --quick >/dev/null 2>&1 || die "perf stat failed on $sys $w"
            wakeups="$(awk -F, '$3 ~ /sched_waking/ {print $1}' "$tmp/stat")"
            switches="$(awk -F, '$3 ~ /context-switches/ {print $1}' "$tmp/stat")"
            env "${envs[@]}" strace -f -c -e trace=futex -o "$tmp/strace" \
                "$bin" "$sys" "$w" --quick >/dev/null 2>&1 || die "strace failed on $sys $w"
            futex="$(awk '$NF == "futex" {print $4}' "$tmp/strace")"
            awk -v w="$w" -v s="$sys" -v k="$k" -v d="$due" -v a="$wakeups" -v b="$switches" -v c="${futex:-0}" \
                'BEGIN {printf "| %s | %s | %d | %.1f | %.1f | %.1f |\n", w, s, k, a / d, b / d, c / d}'
        done
    done
done
