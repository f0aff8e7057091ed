#!/usr/bin/env python3
"""Alternated runs of several builds of the comparison binary, for a design choice.

    python3 benches/compare/ab.py NAME=BINARY [NAME=BINARY ...]

Each round runs every (build, workload) pair once, in order, so background load that
comes and goes lands on every build alike; the report gives, per build and metric, the
median and the range over the rounds, and the CPU time the hypervisor took meanwhile
(steal; a run above AB_MAX_STEAL percent is reported and left out of the medians).

A build's name may carry settings after a colon (`never:SCHEDPOOL_SPIN=never`), and a
name `stp` (or `tokio`) runs that system from the first binary instead of schedpool.

Environment: AB_ROUNDS (5), AB_WORKLOADS (w2,w6), AB_NEIGHBOUR (0; 1: a CPU-bound process
beside every run, as run.py's w2n), AB_MAX_STEAL (5).
Standard library only.
"""

import json
import os
import subprocess
import sys
from statistics import median

METRICS = {
    "w1": ["tasks_per_s"],
    "w2": ["late_p50_us", "late_p99_us", "late_p999_us", "late_max_us"],
    "w4": ["iterations_per_s"],
    "w5": ["rate_cpu_ms", "delay_cpu_ms"],
    "w6": ["late_p50_us", "late_p99_us", "late_max_us"],
    "w7": ["iterations_per_s"],
    "w8": ["iterations_per_s"],
    "w9": ["ns_per_rearm"],
}


def cpu_ticks():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[7], sum(v[:8])


def run(binary, system, workload, env, neighbour):
    nb = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if neighbour else None
    s0 = cpu_ticks()
    try:
        out = subprocess.run([binary, system, workload], capture_output=True, text=True,
                             env=dict(os.environ, **env), timeout=600)
    finally:
        if nb:
            nb.kill()
            nb.wait()
    s1 = cpu_ticks()
    d = json.loads(out.stdout.strip().splitlines()[-1])
    d["steal_pct"] = 100 * (s1[0] - s0[0]) / max(1, s1[1] - s0[1])
    return d


def main():
    builds = []
    for arg in sys.argv[1:]:
        name, binary = arg.rsplit("=", 1)  # settings may hold "=" too
        label, _, settings = name.partition(":")
        env = dict(kv.split("=", 1) for kv in settings.split(",") if kv)
        builds.append((label, binary, env))
    if not builds:
        sys.exit(__doc__)
    rounds = int(os.environ.get("AB_ROUNDS", "5"))
    workloads = os.environ.get("AB_WORKLOADS", "w2,w6").split(",")
    neighbour = os.environ.get("AB_NEIGHBOUR", "0") == "1"
    max_steal = float(os.environ.get("AB_MAX_STEAL", "5"))
    results = {}
    first = builds[0][1]
    for r in range(rounds):
        for w in workloads:
            for label, binary, env in builds:
                system = label if label in ("stp", "tokio") else "schedpool"
                d = run(first if system != "schedpool" else binary, system, w, env, neighbour)
                results.setdefault((label, w), []).append(d)
                shown = " ".join(f"{m}={d.get(m, float('nan')):.1f}" for m in METRICS.get(w, []))
                print(f"round {r + 1} {w} {label}: {shown} steal={d['steal_pct']:.1f}",
                      file=sys.stderr, flush=True)
    print(f"\n{rounds} rounds, neighbour: {'yes' if neighbour else 'no'}; runs with steal "
          f"above {max_steal} % left out (count in brackets)\n")
    for w in workloads:
        ms = METRICS.get(w, [])
        print(f"| {w} | " + " | ".join(ms) + " |")
        print("|---|" + "---:|" * len(ms))
        for label, _, _ in builds:
            rs = results[(label, w)]
            kept = [d for d in rs if d["steal_pct"] <= max_steal] or rs
            cells = []
            for m in ms:
                v = sorted(d[m] for d in kept if m in d)
                cells.append(f"{median(v):,.1f} ({v[0]:,.0f}–{v[-1]:,.0f})" if v else "–")
            left = len(rs) - len(kept)
            print(f"| {label}{f' [{left}]' if left else ''} | " + " | ".join(cells) + " |")
        print()


if __name__ == "__main__":
    main()
