#!/usr/bin/env python3
"""Where the tail of W2 and W6 comes from, per task: for every task at or above the p99
and p99.9 lateness, what every pool thread was doing at the task's deadline, and what
the thread that ran it spent the lateness on.

    python3 benches/compare/tail.py                      # schedpool and stp, W2 and W6
    TAIL_SYSTEMS=schedpool TAIL_WORKLOADS=w2 python3 benches/compare/tail.py
    python3 benches/compare/tail.py --report results/tail-*.json   # tables again
    python3 benches/compare/tail.py --side-by-side before=A.json after=B.json
                                             # the causes, a column per file and system

Two views are joined on CLOCK_MONOTONIC:

- the kernel's: `perf record -a -k CLOCK_MONOTONIC` of the scheduler's switch and wake-up
  events, from which every thread's state follows: running, runnable (woken and not yet
  on a CPU, or preempted), or sleeping;
- the pool's: the comparison binary's per-task trace (`COMPARE_TRACE`, `rust/src/trace.rs`:
  deadline, start, end, thread), and for schedpool, built with `--cfg schedpool_probe`,
  the crate's log of each pool thread's state (`src/probe.rs`: running a task, taking,
  waiting for a shard or coordinator lock, sleeping or spinning as leader, sleeping or
  spinning as follower). For scheduled-thread-pool, which has no such log, a thread is
  "running a task" between a task's start and end and "in the pool" otherwise.

Needs `perf` with access to the sched tracepoints (root, or perf_event_paranoid <= -1 and
a mounted tracefs). Writes results/tail-<timestamp>.json and prints Markdown tables.

Environment: TAIL_SYSTEMS (schedpool,stp), TAIL_WORKLOADS (w2,w6), TAIL_REPEATS (3),
TAIL_PROBE (1: schedpool from the probe build; 0: the plain build, kernel view only),
TAIL_ENV (extra environment for the binary, e.g. "SCHEDPOOL_SPIN=never"),
TAIL_NEIGHBOUR (1: a CPU-bound process beside the run, as run.py's w2n).
"""

import bisect
import collections
import datetime
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median

HERE = Path(__file__).resolve().parent
RUST_DIR = HERE / "rust"
RESULTS = HERE / "results"

# What each state of the pool's log is called in the tables.
CRATE_NAMES = {
    "Run": "running a task",
    "Take": "taking (on its own work)",
    "ShardLock": "waiting for a shard lock",
    "CoordLock": "waiting for the coordinator lock",
    "LeaderSleep": "sleeping as leader",
    "LeaderSpin": "spinning as leader",
    "FollowerSleep": "sleeping as follower",
    "IdleSpin": "spinning idle",
    "BackupSleep": "sleeping as backup",
    "Pool": "in the pool",
}
KERNEL_NAMES = {
    "run": "on a CPU",
    "woken": "woken, waiting for a CPU",
    "preempted": "preempted, waiting for a CPU",
    "sleep": "asleep",
}

LINE = re.compile(
    r"^\s*(?P<comm>.+?)\s+(?P<tid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<t>\d+\.\d+):\s+"
    r"sched:(?P<ev>\w+):\s+(?P<rest>.*)$"
)
FIELD = re.compile(r"(\w+)=(\S+)")


def build(probe):
    env = dict(os.environ)
    args = ["cargo", "build", "--release", "--quiet", "--manifest-path",
            str(RUST_DIR / "Cargo.toml")]
    if probe:
        env["RUSTFLAGS"] = (env.get("RUSTFLAGS", "") + " --cfg schedpool_probe").strip()
        args += ["--target-dir", str(RUST_DIR / "target" / "probe")]
        binary = RUST_DIR / "target" / "probe" / "release" / "compare"
    else:
        binary = RUST_DIR / "target" / "release" / "compare"
    subprocess.run(args, check=True, env=env)
    return binary


def kernel_timeline(data):
    """Per thread id: sorted transition times and the state from each on."""
    out = subprocess.run(["perf", "script", "--ns", "-i", str(data)], check=True,
                         capture_output=True, text=True).stdout
    events = collections.defaultdict(list)  # tid -> [(ns, state)]
    cpus = collections.defaultdict(list)  # cpu -> [(ns, (tid, comm))] of who runs there
    for line in out.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        t = round(float(m["t"]) * 1e9)
        f = dict(FIELD.findall(m["rest"]))
        ev = m["ev"]
        if ev == "sched_switch":
            prev, nxt = int(f["prev_pid"]), int(f["next_pid"])
            state = f.get("prev_state", "S")
            if prev:
                events[prev].append((t, "preempted" if state.startswith("R") else "sleep"))
            if nxt:
                events[nxt].append((t, "run"))
            cpus[int(m["cpu"])].append((t, (nxt, f.get("next_comm", ""))))
        elif ev in ("sched_waking", "sched_wakeup"):
            pid = int(f["pid"])
            events[pid].append((t, "woken"))
    timeline = {}
    for tid, evs in events.items():
        evs.sort(key=lambda e: e[0])
        times, states, cur = [], [], None
        for t, s in evs:
            # A wake-up of a thread that is running or already runnable changes nothing.
            if s == "woken" and cur in ("run", "woken", "preempted"):
                continue
            if s != cur:
                times.append(t)
                states.append(s)
                cur = s
        timeline[tid] = (times, states)
    on_cpu = {}
    for cpu, evs in cpus.items():
        evs.sort(key=lambda e: e[0])
        on_cpu[cpu] = ([e[0] for e in evs], [e[1] for e in evs])
    return timeline, on_cpu


def read_trace(path):
    meta, tasks, names, probe = {}, [], {}, collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            p = line.split()
            if not p:
                continue
            if p[0] == "M":
                meta[p[1]] = p[2]
            elif p[0] == "T":
                tasks.append(tuple(int(x) for x in p[1:5]))
            elif p[0] == "N":
                names[int(p[1])] = p[2] if len(p) > 2 else ""
            elif p[0] == "P":
                probe[int(p[1])].append((int(p[2]), p[3]))
    return meta, tasks, names, probe


def at(times, states, t, before=None):
    i = bisect.bisect_right(times, t) - 1
    return states[i] if i >= 0 else before


def crate_timeline(tid, probe, tasks):
    """(times, states) of the pool's view of thread `tid`."""
    if probe.get(tid):
        evs = sorted(probe[tid])
        return [e[0] for e in evs], [e[1] for e in evs]
    times, states = [], []
    for d, s, e, t in sorted((x for x in tasks if x[3] == tid), key=lambda x: x[1]):
        times += [s, e]
        states += ["Run", "Pool"]
    return times, states


def split(interval, tl_a, tl_b, default_a, default_b):
    """Time in [lo, hi) per (state of a, state of b)."""
    lo, hi = interval
    cuts = {lo, hi}
    for times, _ in (tl_a, tl_b):
        i = bisect.bisect_right(times, lo)
        j = bisect.bisect_left(times, hi)
        cuts.update(times[i:j])
    cuts = sorted(cuts)
    out = collections.Counter()
    for a, b in zip(cuts, cuts[1:]):
        sa = at(*tl_a, a, default_a)
        sb = at(*tl_b, a, default_b)
        out[(sa, sb)] += b - a
    return out


def classify(states, cpu_idle):
    """One cause for a task from every pool thread's (crate, kernel) state at its deadline
    and whether some CPU was idle then."""
    idle = [(c, k) for c, k in states if c != "Run"]
    if not idle:
        return "every worker running a task"
    if any(k in ("woken", "preempted") for _, k in idle):
        if cpu_idle:
            return "an idle worker runnable while a CPU idles (the vCPU's wake-up)"
        return "an idle worker runnable, every CPU busy"
    if any(c in ("ShardLock", "CoordLock") for c, _ in idle):
        return "an idle worker waiting for a lock"
    if any(k == "run" for _, k in idle):
        return "an idle worker on a CPU (spinning or taking)"
    if any(c in ("LeaderSleep", "BackupSleep") for c, _ in idle):
        return "idle workers asleep, one as leader"
    if all(c == "FollowerSleep" for c, _ in idle):
        return "idle workers asleep as followers, no leader"
    return "idle workers asleep (in the pool)"


def analyse(trace, data, system):
    meta, tasks, names, probe = read_trace(trace)
    ktl, on_cpu = kernel_timeline(data)
    pool = sorted({t[3] for t in tasks if t[3]})
    producer = int(meta.get("producer_tid", 0))
    lat = sorted(t[1] - t[0] for t in tasks)
    n = len(lat)
    q = lambda p: lat[min(n - 1, int(p * n))]  # noqa: E731
    res = {"system": system, "workload": meta.get("workload"), "n": n,
           "p50_us": q(0.5) / 1e3, "p99_us": q(0.99) / 1e3, "p999_us": q(0.999) / 1e3,
           "max_us": lat[-1] / 1e3, "probe": bool(probe), "tails": {}}
    ctl = {tid: crate_timeline(tid, probe, tasks) for tid in pool}
    empty = ([], [])
    for label, p in (("p99", 0.99), ("p999", 0.999)):
        thr = q(p)
        tail = [t for t in tasks if t[1] - t[0] >= thr]
        classes = collections.Counter()
        combos = collections.Counter()
        spent = collections.Counter()
        producer_states = collections.Counter()
        cpu_use = collections.Counter()
        total = 0
        for d, s, e, tid in tail:
            states = []
            for w in pool:
                c = at(*ctl[w], d, "Take" if probe else "Pool")
                k = at(*ktl.get(w, empty), d, "sleep")
                states.append((c, k))
            idle_cpu = any(at(*on_cpu[c], d, (0, ""))[0] == 0 for c in on_cpu)
            classes[classify(states, idle_cpu)] += 1
            combos[" + ".join(sorted(f"{c}/{k}" for c, k in states))] += 1
            producer_states[at(*ktl.get(producer, empty), d, "sleep")] += 1
            # Who had the CPUs at the deadline: pool threads, the producer, idle, others.
            use = []
            for cpu in sorted(on_cpu):
                who, comm = at(*on_cpu[cpu], d, (0, ""))
                if who == 0:
                    use.append("idle")
                elif who in ctl:
                    use.append("worker")
                elif who == producer:
                    use.append("producer")
                else:
                    use.append(f"other ({re.sub(r'[0-9/:-]+$', '', comm) or '?'})")
            cpu_use[" + ".join(sorted(use))] += 1
            if tid in ctl:
                part = split((d, s), ctl[tid], ktl.get(tid, empty),
                             "Take" if probe else "Pool", "sleep")
                spent.update(part)
                total += s - d
        res["tails"][label] = {
            "threshold_us": thr / 1e3,
            "tasks": len(tail),
            "classes": {k: v / len(tail) for k, v in classes.most_common()},
            "combos": {k: v / len(tail) for k, v in combos.most_common(8)},
            "producer": {k: v / len(tail) for k, v in producer_states.most_common()},
            "cpus": {k: v / len(tail) for k, v in cpu_use.most_common(8)},
            "spent": {f"{c}/{k}": v / max(total, 1) for (c, k), v in spent.most_common(10)},
        }
    return res


def neighbour():
    """A CPU-bound process: a busy loop until killed (run.py's w2n uses the same)."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def cpu_ticks():
    """(steal, total) jiffies of all CPUs so far (/proc/stat)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[7], sum(v[:8])


def run_one(binary, system, workload, extra_env, with_neighbour):
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.txt"
        data = Path(tmp) / "perf.data"
        env = dict(os.environ, COMPARE_TRACE=str(trace))
        env.update(extra_env)
        nb = neighbour() if with_neighbour else None
        steal0 = cpu_ticks()
        try:
            proc = subprocess.run(
                ["perf", "record", "-q", "-a", "-k", "CLOCK_MONOTONIC",
                 "-e", "sched:sched_switch", "-e", "sched:sched_wakeup",
                 "-e", "sched:sched_waking", "-o", str(data), "--",
                 str(binary), system, workload],
                env=env, capture_output=True, text=True, timeout=300)
        finally:
            if nb:
                nb.kill()
                nb.wait()
        steal1 = cpu_ticks()
        if proc.returncode != 0 or not trace.exists():
            raise RuntimeError(f"{system} {workload}: {proc.stderr[-2000:]}")
        res = analyse(trace, data, system)
        res["steal_pct"] = 100 * (steal1[0] - steal0[0]) / max(1, steal1[1] - steal0[1])
        return res


def pct(x):
    return f"{100 * x:.0f} %"


def tables(results):
    lines = []
    by = collections.defaultdict(list)
    for r in results:
        by[(r["workload"], r["system"])].append(r)
    for (workload, system), rs in sorted(by.items()):
        lines.append(f"\n#### {workload}, {system} ({len(rs)} runs, probe: "
                     f"{'yes' if rs[0]['probe'] else 'no'})\n")
        lines.append("p50 / p99 / p99.9 / max (µs), and the CPU time the hypervisor took "
                     "(steal), per run: " + "; ".join(
                         f"{r['p50_us']:.0f} / {r['p99_us']:.0f} / {r['p999_us']:.0f} / "
                         f"{r['max_us']:.0f} ({r.get('steal_pct', 0):.1f} %)" for r in rs))
        for label in ("p99", "p999"):
            name = {"p99": "p99", "p999": "p99.9"}[label]
            lines.append(f"\nTasks at or above the {name} (all runs together; share of those "
                         "tasks, by what every pool thread was doing at the deadline):\n")
            classes = collections.Counter()
            spent = collections.Counter()
            combos = collections.Counter()
            producer = collections.Counter()
            cpus = collections.Counter()
            for r in rs:
                t = r["tails"][label]
                for k, v in t["classes"].items():
                    classes[k] += v / len(rs)
                for k, v in t["spent"].items():
                    spent[k] += v / len(rs)
                for k, v in t["combos"].items():
                    combos[k] += v / len(rs)
                for k, v in t["producer"].items():
                    producer[k] += v / len(rs)
                for k, v in t.get("cpus", {}).items():
                    cpus[k] += v / len(rs)
            lines.append("| cause at the deadline | share |\n|---|---:|")
            for k, v in classes.most_common():
                lines.append(f"| {k} | {pct(v)} |")
            lines.append("\n| the pool threads' states at the deadline (pool / kernel) | share |"
                         "\n|---|---:|")
            for k, v in combos.most_common(6):
                lines.append(f"| {k} | {pct(v)} |")
            lines.append("\n| what the thread that ran it spent the lateness on | share of "
                         "the lateness |\n|---|---:|")
            for k, v in spent.most_common(6):
                c, kk = k.split("/")
                lines.append(f"| {CRATE_NAMES.get(c, c)}, {KERNEL_NAMES.get(kk, kk)} | "
                             f"{pct(v)} |")
            lines.append("\n| who had the CPUs at the deadline | share |\n|---|---:|")
            for k, v in cpus.most_common(5):
                lines.append(f"| {k} | {pct(v)} |")
            lines.append("\nThe producer at the deadline: " + ", ".join(
                f"{KERNEL_NAMES.get(k, k)} {pct(v)}" for k, v in producer.most_common()))
    return "\n".join(lines)


def side_by_side(columns):
    """One table per workload and tail: the cause classes' shares, a column per
    (name, system) of `columns` [(name, results)]."""
    lines = []
    keys = []
    for name, results in columns:
        for sysname in sorted({r["system"] for r in results}):
            keys.append((name, sysname, [r for r in results if r["system"] == sysname]))
    for workload in ("w2", "w6"):
        for label, shown in (("p99", "p99"), ("p999", "p99.9")):
            cols = [(n, s, [r for r in rs if r["workload"] == workload]) for n, s, rs in keys]
            cols = [c for c in cols if c[2]]
            if not cols:
                continue
            lines.append(f"\n{workload}, tasks at or above the {shown}:\n")
            lines.append("| cause at the deadline | " + " | ".join(
                f"{s} ({n})" for n, s, _ in cols) + " |")
            lines.append("|---|" + "---:|" * len(cols))
            lines.append("| the threshold, per run (µs) | " + " | ".join(
                ", ".join(f"{r['tails'][label]['threshold_us']:,.0f}" for r in rs)
                for _, _, rs in cols) + " |")
            lines.append("| steal, per run | " + " | ".join(
                ", ".join(f"{r.get('steal_pct', 0):.1f} %" for r in rs)
                for _, _, rs in cols) + " |")
            classes = collections.OrderedDict()
            for _, _, rs in cols:
                for r in rs:
                    for k in r["tails"][label]["classes"]:
                        classes.setdefault(k, None)
            for k in classes:
                cells = []
                for _, _, rs in cols:
                    v = sum(r["tails"][label]["classes"].get(k, 0) for r in rs) / len(rs)
                    cells.append(pct(v))
                lines.append(f"| {k} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--side-by-side":
        columns = []
        for arg in sys.argv[2:]:
            name, path = arg.split("=", 1)
            columns.append((name, json.load(open(path))))
        print(side_by_side(columns))
        return
    if len(sys.argv) > 2 and sys.argv[1] == "--report":
        results = []
        for p in sys.argv[2:]:
            results += json.load(open(p))
        print(tables(results))
        return
    systems = os.environ.get("TAIL_SYSTEMS", "schedpool,stp").split(",")
    workloads = os.environ.get("TAIL_WORKLOADS", "w2,w6").split(",")
    repeats = int(os.environ.get("TAIL_REPEATS", "3"))
    probe = os.environ.get("TAIL_PROBE", "1") == "1"
    with_neighbour = os.environ.get("TAIL_NEIGHBOUR", "0") == "1"
    extra = dict(kv.split("=", 1) for kv in shlex.split(os.environ.get("TAIL_ENV", "")))
    plain = build(False)
    probed = build(True) if probe else plain
    results = []
    for r in range(repeats):
        for workload in workloads:
            for system in systems:
                binary = probed if system == "schedpool" else plain
                res = run_one(binary, system, workload, extra, with_neighbour)
                res["env"] = extra
                res["neighbour"] = with_neighbour
                print(f"{system} {workload} run {r + 1}: p99 {res['p99_us']:.0f} µs, "
                      f"p99.9 {res['p999_us']:.0f} µs, steal {res['steal_pct']:.1f} %",
                      file=sys.stderr)
                results.append(res)
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = RESULTS / f"tail-{stamp}.json"
    json.dump(results, open(out, "w"), indent=1)
    print(f"saved {out}", file=sys.stderr)
    print(tables(results))


if __name__ == "__main__":
    main()
