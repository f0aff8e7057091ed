#!/usr/bin/env python3
"""Where a task's cost goes, per system: CPU time, context switches and futex calls per
task of workloads W1, W4, W7 and W5, for every system of the side-by-side comparison.

    python3 benches/compare/budget.py            # about 6 minutes on 2 cores
    BUDGET_SYSTEMS=schedpool,fjp25 BUDGET_WORKLOADS=w4 python3 benches/compare/budget.py

Each (system, workload) pair runs twice, as its own process: once plain, for the
process's CPU time (user + system, every thread) and its context switches (voluntary and
involuntary, from the kernel's accounting of the child: `getrusage`), and once under
`strace -f -c` for its `futex` and `sched_yield` calls. Every figure is divided by the
workload's tasks (W1: tasks submitted; W4, W7: schedule + cancel iterations; W5: runs of
both phases). A Java program runs its workload twice in one JVM (the first run warms the
JIT), so its figures are divided by twice the tasks: they include the JIT's and the
garbage collector's threads, which is what a Java service pays too.

The instruction and atomic counts of schedpool's operations come from
`scripts/opcount.sh` (callgrind); this machine's virtual CPUs expose no hardware counters
to `perf stat`, so the JVMs' are not available. The table goes to standard output, in the
markdown of `docs/BENCHMARKS.md` ("A task's budget, per system"). Standard library only,
with `strace` on the PATH.
"""

import os
import re
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run  # noqa: E402  (sibling module: the builds and command lines)

# Tasks per workload at full size (`rust/src/workloads.rs`, `Params::new(false)`).
TASKS = {"w1": 1_000_000, "w4": 1_000_000, "w7": 1_600_000, "w5": 600_000}
WHAT = {
    "w1": "per task (1 producer, zero delay)",
    "w4": "per schedule + cancel (2 producers)",
    "w7": "per schedule + cancel (8 producers)",
    "w5": "per periodic run (fixed rate, then fixed delay)",
}


def env_list(name, default):
    v = os.environ.get(name)
    return [x.strip() for x in v.split(",") if x.strip()] if v else default


def rusage_delta(cmd):
    """Runs `cmd`; returns (cpu seconds, voluntary, involuntary switches, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return (cpu, after.ru_nvcsw - before.ru_nvcsw, after.ru_nivcsw - before.ru_nivcsw,
            out.stdout)


def syscalls(cmd):
    """Runs `cmd` under `strace -f -c`; returns {syscall: calls}."""
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as f:
        subprocess.run(["strace", "-f", "-c", "-e", "trace=futex,sched_yield", "-o", f.name]
                       + cmd, capture_output=True, text=True, timeout=1800)
        calls = {}
        for line in f.read().splitlines():
            m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$", line)
            if m and m.group(2) != "total":
                calls[m.group(2)] = int(m.group(1))
        return calls


def main():
    systems = env_list("BUDGET_SYSTEMS", ["schedpool", "stp", "tokio", "stpe25", "fjp25"])
    workloads = env_list("BUDGET_WORKLOADS", ["w1", "w4", "w7", "w5"])
    binary = run.build_rust()
    jdks, classes = {}, {}
    for major, env_var in ((17, "JAVA17_HOME"), (25, "JAVA25_HOME")):
        home = run.find_jdk(major, env_var)
        if home is not None:
            jdks[major] = home
            classes[major] = run.build_java(home, major)
    rows = []
    for w in workloads:
        for s in systems:
            cmd = run.system_command(s, w, binary, jdks, classes)
            if cmd is None:
                run.log(f"{s}: no JDK, skipped")
                continue
            run.log(f"{w} {s}...")
            cpu, vol, invol, _ = rusage_delta(cmd)
            calls = syscalls(cmd)
            runs = TASKS[w] * (2 if cmd[0].endswith("java") else 1)
            rows.append((w, s, 1e9 * cpu / runs, vol / runs, invol / runs,
                         calls.get("futex", 0) / runs, calls.get("sched_yield", 0) / runs))
    print("| workload | system | CPU ns | voluntary switches | involuntary switches "
          "| futex calls | sched_yield calls |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for w, s, cpu, vol, invol, futex, yields in rows:
        print(f"| {w.upper()} {WHAT[w]} | {run.LABEL[s]} | {cpu:,.0f} | {vol:.4f} | "
              f"{invol:.4f} | {futex:.4f} | {yields:.4f} |")


if __name__ == "__main__":
    main()
