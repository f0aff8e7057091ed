#!/usr/bin/env python3
"""Runs the side-by-side benchmark and regenerates its section of docs/BENCHMARKS.md.

    python3 benches/compare/run.py                 # full run
    COMPARE_QUICK=1 python3 benches/compare/run.py # smoke test, sizes scaled down

Steps: build the Rust binary (release), compile Compare.java with JDK 17 and JDK 25, run
every (system, workload) pair as a separate process, REPEATS times, with the repeats
interleaved (round-robin over all pairs, so a burst of background load does not land on
the three runs of one system), save the raw JSON lines under results/, then write the
tables between `<!-- compare:begin -->` and `<!-- compare:end -->` in docs/BENCHMARKS.md
and the plot docs/scaling.svg (plot.py). A quick run writes to results/ instead (see
COMPARE_DOC). Standard library only.

Environment:
  COMPARE_QUICK=1          sizes scaled down 10-20x (and 1 repeat unless COMPARE_REPEATS)
  COMPARE_REPEATS=N        processes per (system, workload); default 3 (1 when quick)
  COMPARE_REPEATS_W5=N     per-workload override (W1..W9, A1, SCALING)
  COMPARE_SYSTEMS=a,b      subset of: schedpool,stp,tokio,stpe17,stpe25,fjp25,tcs,schedpool-send
                           (tcs: tokio-cron-scheduler, workload a1 only)
  COMPARE_WORKLOADS=a,b    subset of: w1,w2,w2n,w3,w4,w5,w6,w7,w8,w9,a1,scaling
                           (w2n: W2 beside a CPU-bound neighbour process; a1: async
                           jobs, on schedpool, tokio and tcs only)
  COMPARE_A1_JOBS=a,b      A1's sizes, one process each (default 1000,10000,100000;
                           quick: 1000,10000)
  COMPARE_DOC=path         document to update (default docs/BENCHMARKS.md; for a quick
                           run results/BENCHMARKS.quick.md, so a smoke test never
                           overwrites the published figures)
  COMPARE_NOTE=text        a sentence added to the generated section (e.g. why repeats
                           were reduced)
  COMPARE_JAVA_OPTS=...    JVM options (default "-Xms1g -Xmx4g")
  JAVA17_HOME, JAVA25_HOME JDKs to use; otherwise found on PATH and in the usual JVM
                           folders (/usr/lib/jvm, /usr/java, /opt, macOS, SDKMAN)

Options:
  --report FILE.jsonl      only regenerate the document and plot from saved results
"""

import datetime
import glob
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from statistics import median

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RUST_DIR = HERE / "rust"
JAVA_SRC = HERE / "java" / "Compare.java"
JAVA_BUILD = HERE / "java" / "build"
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))
import plot  # noqa: E402  (sibling module)

BEGIN, END = "<!-- compare:begin -->", "<!-- compare:end -->"

# (id, label, runtime, name passed to the program)
SYSTEMS = [
    ("schedpool", "schedpool", "rust", "schedpool"),
    ("stp", "scheduled-thread-pool", "rust", "stp"),
    ("tokio", "tokio", "rust", "tokio"),
    ("stpe17", "Java 17 STPE", "java17", "stpe"),
    ("stpe25", "Java 25 STPE", "java25", "stpe"),
    ("fjp25", "Java 25 FJP", "java25", "fjp"),
    ("tcs", "tokio-cron-scheduler", "rust", "tcs"),
    ("schedpool-send", "schedpool (`*_send`)", "rust", "schedpool-send"),
]
LABEL = {s[0]: s[1] for s in SYSTEMS}
# Workloads run by some systems only, and systems that run only those workloads.
ONLY_SYSTEMS = {"a1": ["schedpool", "schedpool-send", "tokio", "tcs"]}
ONLY_WORKLOADS = {"tcs": ["a1"], "schedpool-send": ["a1"]}
# schedpool's peers in the W workloads (tcs runs A1 only).
PEERS = [s[0] for s in SYSTEMS if s[0] != "schedpool" and s[0] not in ONLY_WORKLOADS]

WORKLOADS = ["w1", "w2", "w2n", "w3", "w4", "w5", "w6", "w7", "w8", "w9", "a1", "scaling"]
# A1's sizes (jobs), each run as its own process.
A1_JOBS = [1_000, 10_000, 100_000]
A1_JOBS_QUICK = [1_000, 10_000]
# Workloads that run another's program beside a CPU-bound neighbour process (`neighbour`).
NEIGHBOURED = {"w2n": "w2"}
TITLES = {
    "w1": "W1 burst — 1,000,000 zero-delay tasks from one producer",
    "w2": "W2 delayed — 200,000 tasks, delays uniform in [0, 1 s)",
    "w2n": "W2 beside a neighbour — W2 with one CPU-bound process on the machine",
    "w3": "W3 cancel — 1,000,000 tasks due in 1–2 h, all cancelled in shuffled order",
    "w4": "W4 timeouts — 2 producers × 500,000 schedule(50 ms) + cancel, every 100th fires",
    "w5": "W5 periodic — 1,000 tasks every 10 ms for 3 s",
    "w6": "W6 wake latency — 2,000 × one task 2 ms ahead on an idle pool",
    "w7": "W7 many producers — 8 producers × 200,000 schedule(50 ms) + cancel, every 100th "
          "fires",
    "w8": "W8 re-arm — 2 producers × 500,000 moves of a pending timeout 50 ms ahead",
    "w9": "W9 idle timeouts — one thread, 1,000,000 re-arms of a random one of 100,000 "
          "timeouts 60 s ahead",
    "a1": "A1 async jobs — N periodic jobs, each run awaiting 100 ms, all due at the same "
          "instants",
    "scaling": "Scaling — schedule and cancel cost against tasks pending",
}
QUICK_TITLES = {
    "w1": "W1 burst — 50,000 zero-delay tasks from one producer",
    "w2": "W2 delayed — 10,000 tasks, delays uniform in [0, 1 s)",
    "w2n": "W2 beside a neighbour — W2 (10,000 tasks) with one CPU-bound process on the machine",
    "w3": "W3 cancel — 50,000 tasks due in 1–2 h, all cancelled in shuffled order",
    "w4": "W4 timeouts — 2 producers × 25,000 schedule(50 ms) + cancel, every 100th fires",
    "w5": "W5 periodic — 1,000 tasks every 10 ms for 1 s",
    "w6": "W6 wake latency — 200 × one task 2 ms ahead on an idle pool",
    "w7": "W7 many producers — 8 producers × 20,000 schedule(50 ms) + cancel, every 100th fires",
    "w8": "W8 re-arm — 2 producers × 50,000 moves of a pending timeout 50 ms ahead",
    "w9": "W9 idle timeouts — one thread, 100,000 re-arms of a random one of 10,000 "
          "timeouts 60 s ahead",
}

# Metrics shown per workload: (key, label, scale, better) where better is "high", "low"
# or None (no ratio), and scale divides the raw value for display.
METRICS = {
    "w1": [
        ("tasks_per_s", "throughput (M tasks/s)", 1e6, "high"),
        ("submit_ns_per_op", "producer: ns per submit", 1, "low"),
        ("ran", "tasks run", 1, None),
    ],
    "w2": [
        ("schedule_ns_per_op", "schedule (ns/op)", 1, "low"),
        ("late_p50_us", "lateness p50 (µs)", 1, "low"),
        ("late_p99_us", "lateness p99 (µs)", 1, "low"),
        ("late_p999_us", "lateness p99.9 (µs)", 1, "low"),
        ("late_max_us", "lateness max (µs)", 1, "low"),
        ("late_min_us", "lateness min (µs; < 0 = ran early)", 1, None),
    ],
    "w3": [
        ("schedule_ns_per_op", "schedule (ns/op)", 1, "low"),
        ("cancel_ns_per_op", "cancel (ns/op)", 1, "low"),
        ("queue_after_cancel", "queue length right after cancelling", 1, None),
        ("mem_bytes_per_task",
         "memory per pending task (B): RSS Δ (Rust), heap Δ after GC (Java)", 1, "low"),
        ("heap_bytes_per_task", "memory per pending task (B): counted heap bytes (Rust), "
         "heap Δ after GC (Java)", 1, "low"),
        ("mem_retained_bytes_per_task", "retained after cancel + drop (B/task): RSS (Rust), "
         "heap after GC (Java)", 1, "low"),
        ("heap_retained_bytes_per_task", "retained after cancel + drop (B/task): counted heap "
         "(Rust), heap after GC (Java)", 1, "low"),
    ],
    "w4": [
        ("iterations_per_s", "throughput (M iterations/s)", 1e6, "high"),
        ("fired", "tasks fired", 1, None),
        ("exact", "fired exactly as expected (runs)", 1, None),
        ("cancel_false", "cancel() returned false (task already started)", 1, None),
    ],
    "w5": [
        ("rate_runs_min", "fixed rate: runs per task, min", 1, None),
        ("rate_runs_max", "fixed rate: runs per task, max", 1, None),
        ("rate_exact", "fixed rate: every task within expected ± 1 (runs)", 1, None),
        ("rate_tasks_off", "fixed rate: tasks whose count contradicts the actual cancel time",
         1, None),
        ("rate_cancel_late_ms", "fixed rate: driver began cancelling late by (ms)", 1, None),
        ("rate_cpu_ms", "fixed rate: process CPU (ms)", 1, "low"),
        ("delay_runs_min", "fixed delay: runs per task, min", 1, None),
        ("delay_runs_max", "fixed delay: runs per task, max", 1, None),
        ("delay_cpu_ms", "fixed delay: process CPU (ms)", 1, "low"),
    ],
    "w6": [
        ("late_p50_us", "lateness p50 (µs)", 1, "low"),
        ("late_p99_us", "lateness p99 (µs)", 1, "low"),
        ("late_max_us", "lateness max (µs)", 1, "low"),
        ("late_min_us", "lateness min (µs)", 1, None),
    ],
    "w7": [
        ("iterations_per_s", "throughput (M iterations/s)", 1e6, "high"),
        ("lat_p50_ns", "schedule + cancel latency p50 (ns)", 1, "low"),
        ("lat_p99_ns", "schedule + cancel latency p99 (ns)", 1, "low"),
        ("lat_max_ns", "schedule + cancel latency max (ns)", 1, "low"),
        ("fired", "tasks fired", 1, None),
        ("exact", "fired exactly as expected (runs)", 1, None),
        ("cancel_false", "cancel() returned false (task already started)", 1, None),
    ],
    "w8": [
        ("iterations_per_s", "throughput (M re-arms/s)", 1e6, "high"),
        ("method", "method", 1, None),
        ("fired", "tasks fired (0 expected)", 1, None),
        ("none_fired", "no task fired (runs)", 1, None),
        ("max_gap_ms", "longest producer gap (ms; ≥ 50 lets a task fire)", 1, None),
    ],
    "w9": [
        ("rearms_per_s", "throughput (M re-arms/s)", 1e6, "high"),
        ("ns_per_rearm", "ns per re-arm", 1, "low"),
        ("method", "method", 1, None),
        ("fired", "tasks fired (0 expected)", 1, None),
    ],
}

METRICS["w2n"] = [m for m in METRICS["w2"] if m[0] != "schedule_ns_per_op"]

NOTES = {
    "w1": "Throughput = N / (time the N-th task ran − first submit). Every system is called "
          "through its delayed-schedule API with delay 0 (tokio: `spawn` + `sleep_until(now)`).",
    "w2": "Lateness = clock read at the start of the task − (clock read just before `schedule` "
          "+ delay), same clock (CLOCK_MONOTONIC) on both sides. tokio's timer has 1 ms "
          "resolution and rounds deadlines up.",
    "w2n": "W2's program, run while a second process spins on one CPU (a busy loop the "
           "harness starts before the run and kills after it), as a service that shares its "
           "cores with other work. With 2 workers and the producer, four threads want the 2 "
           "CPUs while tasks fall due during submission, and three afterwards.",
    "w3": "Memory deltas exclude the caller's slot holding the handle (allocated beforehand on "
          "both sides). Rust RSS is read after `malloc_trim(0)`; \"counted heap\" is the net "
          "bytes requested from the allocator (no malloc headers or caching), the closer "
          "analogue of Java's heap after GC. Retained is read 0.5 s after dropping every "
          "handle. `scheduled-thread-pool`'s cancel only sets a flag: its tasks stay queued "
          "(and in memory) until their deadline, and it exposes no queue length. tokio's "
          "queue length is `num_alive_tasks` (aborted tasks count until a worker drops them); "
          "FJP's is `getDelayedTaskCount` (its scheduler thread removes cancelled tasks "
          "asynchronously).",
    "w4": "Throughput over the two producers' loops; the fired count is read after the "
          "survivors' deadlines plus 200 ms. A cancel that returns false (the producer was "
          "off the CPU for over 50 ms, so the task had started) adds one fired task; such a "
          "run is listed as disturbed, not wrong.",
    "w5": "Task i starts i/1000 of a period late, so runs are spread over the period; all tasks "
          "are cancelled when the window ends, fixed rate must then show window/period runs "
          "per task ± 1 (the run racing the cancel); the counts are also checked against the "
          "moments the driver actually scheduled and cancelled each task, so a driver thread "
          "that was descheduled or woke late is not blamed on the scheduler. CPU = process CPU time over the window "
          "(all threads, JIT/GC included for Java; Java's reading has 10 ms resolution). "
          "Fixed-delay counts drift with each run's lateness, so they have no exact "
          "expectation.",
    "w6": "Lateness measured inside the task; the driver waits for each task before scheduling "
          "the next, so the pool is idle (workers parked) every time. For the machine's own "
          "floor see *Timed-wait floor* above.",
    "w7": "W4's pattern with 8 producer threads on the 2 CPUs (plus the 2 workers), so the "
          "producers contend for the scheduler and are preempted mid-call. Throughput over "
          "all producers' loops; the fired count is checked as in W4 (exactly 16,000 at full "
          "size). Latency: every 16th iteration (never a firing one) times its schedule + "
          "cancel pair with the monotonic clock; a producer descheduled inside a timed pair "
          "shows in the p99 and max.",
    "w8": "Each producer keeps one task due 50 ms ahead and moves it 50 ms ahead again on "
          "every iteration. schedpool moves the queued task with "
          "`ScheduledFuture::reschedule`; every other system has no such call and cancels "
          "the task and schedules a new one (tokio: `abort` + `spawn`). No task may fire; "
          "each producer's longest gap between clock reads (every 1,024 iterations) tells a "
          "producer that was off the CPU past the deadline from a scheduler that fired early.",
    "w9": "A server's idle timeouts: one thread keeps one timeout per connection pending "
          "60 s ahead and pushes a random one (fixed-seed xorshift, the same sequence on "
          "both sides) back to 60 s from now, as a packet on that connection would. "
          "schedpool moves the queued task with `reschedule`; every other system cancels "
          "it and schedules a new one (scheduled-thread-pool's cancel only flags the task, "
          "so its queue grows by one per re-arm). No task may fire.",
}

NOTES["a1"] = (
    "Each job runs every 1 s at fixed rate, every job's first run due at the same instant "
    "T0 (a whole second of the wall clock, chosen 300 ms + 10 µs per job or more ahead: "
    "before registering for schedpool and tokio, after adding the jobs for "
    "tokio-cron-scheduler), and each run awaits "
    "`tokio::time::sleep(100 ms)`; the window is [T0, T0 + 5 s), so 5 runs per job are due "
    "in it. Every system uses a tokio multi-thread runtime with default settings (one worker "
    "per CPU); schedpool is its default pool (one worker per CPU) with "
    "`schedule_periodic_async` and the runtime's `Handle`, tokio is one task per job with "
    "`interval_at`, tokio-cron-scheduler one `Job::new_repeated_async` per job. *Done*: "
    "started and ended inside the window. *Start lateness* = clock read at the first poll "
    "of the run's future − its due instant (the job's k-th run is due at T0 + k s), over "
    "the runs due in the window that started in it (*started*); a run not started by the "
    "window's end is not in the percentiles. *CPU*: process CPU time, all threads, over "
    "the window. *Memory per job*: RSS growth over the RSS before the jobs were registered, "
    "divided by N, right after registering and at the peak of samples taken every 50 ms "
    "through the window (when all N runs of a tick are awaiting, for the systems that keep "
    "up). tokio-cron-scheduler's figures include its channels, sized for N "
    "(`new_with_channel_size`; with the default 200 it drops activations).")

TARGETS_NOTE = ("Targets are the performance issue's goals for schedpool, checked "
                "mechanically against the medians above.")


# ------------------------------------------------------------------------------------------
# Discovery and builds
# ------------------------------------------------------------------------------------------

def log(msg):
    print(msg, file=sys.stderr, flush=True)


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def jdk_major(home):
    """Feature version of the JDK at `home`, or None if it is not a JDK."""
    home = Path(home)
    if not (home / "bin" / "javac").exists() or not (home / "bin" / "java").exists():
        return None
    release = home / "release"
    if release.exists():
        m = re.search(r'JAVA_VERSION="(\d+)', release.read_text(errors="replace"))
        if m:
            return int(m.group(1))
    out = sh([str(home / "bin" / "java"), "-version"]).stderr
    m = re.search(r'version "(\d+)', out)
    return int(m.group(1)) if m else None


def find_jdk(major, env_var):
    """A JDK home of the given major version: $env_var, then javac on PATH, then
    $JAVA_HOME, then the usual install folders."""
    if os.environ.get(env_var):
        home = Path(os.environ[env_var])
        if jdk_major(home) != major:
            sys.exit(f"{env_var}={home} is not a JDK {major}")
        return home
    candidates = []
    javac = shutil.which("javac")
    if javac:
        candidates.append(Path(javac).resolve().parent.parent)
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]))
    patterns = ["/usr/lib/jvm/*", "/usr/java/*", "/opt/java/*", "/opt/*jdk*",
                "/Library/Java/JavaVirtualMachines/*/Contents/Home",
                os.path.expanduser("~/.sdkman/candidates/java/*")]
    for pattern in patterns:
        candidates.extend(Path(p) for p in sorted(glob.glob(pattern)))
    for home in candidates:
        if jdk_major(home) == major:
            return home.resolve()
    return None


def java_version_text(home):
    out = sh([str(home / "bin" / "java"), "-version"]).stderr.strip().splitlines()
    return " / ".join(line.strip() for line in out[:2])


def build_rust():
    log("building benches/compare/rust (release)...")
    r = subprocess.run(["cargo", "build", "--release", "--quiet",
                        "--manifest-path", str(RUST_DIR / "Cargo.toml")])
    if r.returncode != 0:
        sys.exit("cargo build failed")
    return RUST_DIR / "target" / "release" / "compare"


def build_java(home, major):
    out = JAVA_BUILD / str(major)
    out.mkdir(parents=True, exist_ok=True)
    log(f"compiling Compare.java with JDK {major}...")
    r = sh([str(home / "bin" / "javac"), "-d", str(out), str(JAVA_SRC)])
    if r.returncode != 0:
        sys.exit(f"javac {major} failed:\n{r.stderr}")
    return out


def cargo_lock_versions():
    versions = {}
    lock = RUST_DIR / "Cargo.lock"
    if lock.exists():
        for m in re.finditer(r'name = "([^"]+)"\nversion = "([^"]+)"', lock.read_text()):
            versions[m.group(1)] = m.group(2)
    return versions


def machine_info(jdks):
    info = {"date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")}
    info["nproc"] = os.cpu_count()
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info["cpu"] = cpu
    try:
        for line in open("/proc/meminfo", encoding="utf-8"):
            if line.startswith("MemTotal"):
                info["mem_gib"] = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    info["os"] = f"{platform.system()} {platform.release()}"
    info["rustc"] = sh(["rustc", "--version"]).stdout.strip()
    info["java"] = {str(major): java_version_text(home) for major, home in jdks.items()}
    versions = cargo_lock_versions()
    info["crates"] = {k: versions.get(k, "?") for k in
                      ("schedpool", "tokio", "scheduled-thread-pool", "tokio-cron-scheduler")}
    rev = sh(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]).stdout.strip()
    dirty = sh(["git", "-C", str(ROOT), "status", "--porcelain", "--", "src", "Cargo.toml"])
    info["commit"] = (rev or "unknown") + (
        " + uncommitted changes in src/" if rev and dirty.stdout.strip() else "")
    try:
        info["timerslack_us"] = int(open("/proc/self/timerslack_ns").read()) / 1000
    except (OSError, ValueError):
        pass
    info["java_opts"] = java_opts()
    return info


def java_opts():
    return os.environ.get("COMPARE_JAVA_OPTS", "-Xms1g -Xmx4g")


def loadavg():
    try:
        return open("/proc/loadavg", encoding="utf-8").read().split()[:3]
    except OSError:
        return ["?"] * 3


# ------------------------------------------------------------------------------------------
# Running
# ------------------------------------------------------------------------------------------

def run_process(cmd, timeout):
    """Runs one benchmark process; returns its JSON result, or {"error": ...}."""
    try:
        r = sh(cmd, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"process timed out after {timeout} s (killed)"}
    lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
    if r.returncode != 0 or not lines:
        tail = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"error": f"exit {r.returncode}: {tail[:300]}"}
    try:
        return json.loads(lines[-1])
    except json.JSONDecodeError as e:
        return {"error": f"bad JSON: {e}"}


def applies(workload, system):
    """Whether `system` runs `workload` (A1 has its own systems; tcs runs A1 only)."""
    return (system in ONLY_SYSTEMS.get(workload, [system])
            and workload in ONLY_WORKLOADS.get(system, [workload]))


def a1_sizes(quick):
    raw = os.environ.get("COMPARE_A1_JOBS")
    if not raw:
        return A1_JOBS_QUICK if quick else A1_JOBS
    return [int(x) for x in raw.split(",") if x.strip()]


def system_command(system, workload, binary, jdks, classes, quick=False, args=()):
    """The command line that runs `workload` on `system` (None: its JDK is missing), with
    the program's extra `args` (A1: `--jobs N`)."""
    runtime, name = next((r, n) for s, _, r, n in SYSTEMS if s == system)
    tail = ([name, NEIGHBOURED.get(workload, workload)] + (["--quick"] if quick else [])
            + list(args))
    if runtime == "rust":
        return [str(binary)] + tail
    major = int(runtime[4:])
    if major not in jdks:
        return None
    return ([str(jdks[major] / "bin" / "java")] + shlex.split(java_opts())
            + ["-cp", str(classes[major]), "Compare"] + tail)


def run_all(quick):
    systems = env_list("COMPARE_SYSTEMS", [s[0] for s in SYSTEMS])
    workloads = env_list("COMPARE_WORKLOADS", WORKLOADS)
    default_repeats = int(os.environ.get("COMPARE_REPEATS", "1" if quick else "3"))
    repeats = {w: int(os.environ.get(f"COMPARE_REPEATS_{w.upper()}", default_repeats))
               for w in workloads}

    jdks = {}
    for major, env_var in ((17, "JAVA17_HOME"), (25, "JAVA25_HOME")):
        if any(r == f"java{major}" for s, _, r, _ in SYSTEMS
               if s in systems and any(applies(w, s) for w in workloads)):
            home = find_jdk(major, env_var)
            if home is None:
                log(f"no JDK {major} found (set {env_var}); its systems are skipped")
            else:
                jdks[major] = home
    binary = build_rust()
    classes = {major: build_java(home, major) for major, home in jdks.items()}

    def command(system, workload, args=()):
        return system_command(system, workload, binary, jdks, classes, quick, args)

    meta = machine_info(jdks)
    # The machine's own timed-wait latency (no pool), the floor under W2 and W6 lateness.
    floor = run_process([str(binary), "os", "w6"] + (["--quick"] if quick else []), 120)
    meta["timer_floor"] = {k: floor.get(k) for k in ("late_p50_us", "late_p99_us", "late_max_us")}
    meta.update(quick=quick, repeats=repeats, load_start=loadavg(),
                note=os.environ.get("COMPARE_NOTE", ""))
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    RESULTS.mkdir(exist_ok=True)
    out_path = RESULTS / f"{'quick' if quick else 'full'}-{stamp}.jsonl"

    def variants(workload):
        if workload == "a1":
            return [("--jobs", str(n)) for n in a1_sizes(quick)]
        return [()]

    plan = [(r, w, s, args) for r in range(max(repeats.values()))
            for w in workloads for args in variants(w) for s in systems
            if r < repeats[w] and applies(w, s)]
    timeout = 300 if quick else 900
    started = time.monotonic()
    with open(out_path, "w", encoding="utf-8") as out:
        out.write(json.dumps({"meta": meta}) + "\n")
        run_plan(plan, command, out, timeout)
        meta_end = {"meta_end": {"load_end": loadavg(),
                                 "minutes": round((time.monotonic() - started) / 60, 1)}}
        out.write(json.dumps(meta_end) + "\n")
    log(f"raw results: {out_path.relative_to(ROOT)}")
    return out_path


def run_plan(plan, command, out, timeout):
    """Runs each (repeat, workload, system) of `plan` as its own process (`command` gives
    its command line, or None to skip it), writes a JSON line per run to `out`, and
    returns the rows. An item may carry a fourth element, extra arguments for the
    program (A1's `--jobs N`), passed to `command` as a third."""
    rows = []
    for i, (rep, workload, system, *rest) in enumerate(plan, 1):
        args = tuple(rest[0]) if rest else ()
        cmd = command(system, workload, args) if args else command(system, workload)
        if cmd is None:
            continue
        t0 = time.monotonic()
        with neighbour(workload in NEIGHBOURED):
            result = run_process(cmd, timeout)
        wall = time.monotonic() - t0
        row = {"system": system, "workload": workload, "repeat": rep,
               "wall_s": round(wall, 1), "result": result}
        if args:
            row["args"] = list(args)
        rows.append(row)
        out.write(json.dumps(row) + "\n")
        out.flush()
        status = result.get("error", "ok")
        size = f" {args[-1]}" if args else ""
        log(f"[{i}/{len(plan)}] {workload + size:8} {system:10} #{rep + 1}  {wall:6.1f} s  "
            f"{status}")
    return rows


class neighbour:
    """A CPU-bound process beside a run (`with neighbour(on):`): a busy loop in another
    Python interpreter, started before the run and killed after it."""

    def __init__(self, on):
        self.on, self.proc = on, None

    def __enter__(self):
        if self.on:
            self.proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
            time.sleep(0.2)  # running before the measured program starts
        return self

    def __exit__(self, *exc):
        if self.proc:
            self.proc.kill()
            self.proc.wait()
        return False


def env_list(var, default):
    raw = os.environ.get(var)
    if not raw:
        return list(default)
    items = [x.strip() for x in raw.split(",") if x.strip()]
    unknown = [x for x in items if x not in default]
    if unknown:
        sys.exit(f"{var}: unknown {unknown}; choose from {default}")
    return items


# ------------------------------------------------------------------------------------------
# Report
# ------------------------------------------------------------------------------------------

def load(path):
    meta, rows = {}, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            obj = json.loads(line)
            if "meta" in obj:
                meta.update(obj["meta"])
            elif "meta_end" in obj:
                meta.update(obj["meta_end"])
            else:
                rows.append(obj)
    return meta, rows


def fmt_num(v):
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if float(v).is_integer():
        return f"{v:,.0f}"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def summarize(values):
    """(median, min, max) of the numeric values, or None."""
    vals = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not vals:
        return None
    return median(vals), min(vals), max(vals)


def cell(values, scale):
    if values and all(isinstance(v, bool) for v in values):
        return f"{sum(values)}/{len(values)}"
    if values and all(isinstance(v, str) for v in values):
        return " / ".join(sorted(set(values)))
    s = summarize(values)
    if s is None:
        return "–"
    med, lo, hi = (x / scale for x in s)
    if len(values) == 1 or lo == hi:
        return fmt_num(med)
    return f"{fmt_num(med)}<br><sub>{fmt_num(lo)}–{fmt_num(hi)}</sub>"


def ratio(sp, peer, better):
    """How many times better schedpool is than the peer (> 1 = schedpool better)."""
    if sp is None or peer is None or better is None:
        return "–"
    if sp <= 0 or peer <= 0:
        return "–"
    r = sp / peer if better == "high" else peer / sp
    return f"{r:.2f}×"


def collect(rows):
    """{workload: {system: [result dicts of successful runs]}} and a list of failures."""
    ok, failures = {}, []
    for row in rows:
        res = row["result"]
        if "error" in res or "note" in res:
            failures.append(row)
        # A run that reports an error may still carry measurements (e.g. counts): keep it.
        ok.setdefault(row["workload"], {}).setdefault(row["system"], []).append(res)
    return ok, failures


def systems_present(data):
    present = {s for w in data.values() for s in w}
    return [s for s, *_ in SYSTEMS if s in present]


def workload_table(workload, by_system, systems):
    peers = [s for s in systems if s != "schedpool"]
    has_sp = "schedpool" in systems
    head = ["metric"] + [LABEL[s] for s in systems]
    if has_sp:
        head += [f"vs {LABEL[p]}" for p in peers]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, label, scale, better in METRICS[workload]:
        values = {s: [r[key] for r in by_system.get(s, []) if r.get(key) is not None]
                  for s in systems}
        if not any(values.values()):
            continue
        row = [label] + [cell(values[s], scale) for s in systems]
        if has_sp:
            sp = summarize(values["schedpool"])
            for p in peers:
                pv = summarize(values[p])
                row.append(ratio(sp and sp[0], pv and pv[0], better))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def a1_table(by_system, systems):
    """A1: one row per (system, jobs), medians over the repeats (min–max below)."""
    groups = {}
    for s in systems:
        for res in by_system.get(s, []):
            if "jobs" in res:
                groups.setdefault((res["jobs"], s), []).append(res)
    head = ["5 s, each job every 1 s, 100 ms awaited per run", "runs done / due",
            "runs started", "start lateness p50 (ms)", "p99 (ms)", "max (ms)",
            "process CPU (ms)", "memory per job (B): registered / peak"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for jobs, s in sorted(groups, key=lambda g: (g[0], systems.index(g[1]))):
        res = groups[(jobs, s)]

        def values(key):
            return [r[key] for r in res if r.get(key) is not None]
        due = summarize(values("runs_due"))
        row = [f"{LABEL[s]}, {fmt_num(jobs)} jobs",
               f"{cell(values('runs_done'), 1)} / {fmt_num(due[0]) if due else '–'}",
               cell(values("runs_started"), 1),
               cell(values("late_p50_ms"), 1), cell(values("late_p99_ms"), 1),
               cell(values("late_max_ms"), 1), cell(values("cpu_ms"), 1),
               f"{cell(values('mem_registered_bytes_per_job'), 1)} / "
               f"{cell(values('mem_peak_bytes_per_job'), 1)}"]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def scaling_table(by_system, systems):
    peers = [s for s in systems if s != "schedpool"]
    has_sp = "schedpool" in systems
    series = {s: {} for s in systems}
    sizes = set()
    for s in systems:
        for res in by_system.get(s, []):
            if "sizes" not in res:
                continue
            for i, size in enumerate(res["sizes"]):
                sizes.add(size)
                for metric in ("schedule_ns_per_op", "cancel_ns_per_op", "pending_at_end"):
                    series[s].setdefault((metric, size), []).append(res[metric][i])
    head = ["operation", "pending"] + [LABEL[s] for s in systems]
    if has_sp:
        head += [f"vs {LABEL[p]}" for p in peers]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for metric, name in (("schedule_ns_per_op", "schedule ns/op"),
                         ("cancel_ns_per_op", "cancel ns/op")):
        for size in sorted(sizes):
            vals = {s: series[s].get((metric, size), []) for s in systems}
            row = [name, f"10^{len(str(size)) - 1}"] + [cell(vals[s], 1) for s in systems]
            if has_sp:
                sp = summarize(vals["schedpool"])
                for p in peers:
                    pv = summarize(vals[p])
                    row.append(ratio(sp and sp[0], pv and pv[0], "low"))
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines), series, sorted(sizes)


def med(data, workload, system, key):
    s = summarize([r.get(key) for r in data.get(workload, {}).get(system, [])])
    return s and s[0]


def targets(data, scaling_series, sizes):
    """Rows (target, measured, verdict) for the issue's goals; skipped without data."""
    rows = []

    def verdict(ok):
        return "met" if ok else "**not met**"

    def best_peer(workload, key, lowest=False):
        vals = [(med(data, workload, p, key), p) for p in PEERS]
        vals = [(v, p) for v, p in vals if v]
        if not vals:
            return None, None
        return min(vals) if lowest else max(vals)

    sp = med(data, "w1", "schedpool", "tasks_per_s")
    bp, who = best_peer("w1", "tasks_per_s")
    if sp and bp:
        rows.append(("W1 throughput ≥ 2× best peer",
                     f"{sp / 1e6:.2f} M/s = {sp / bp:.2f}× {LABEL[who]}", verdict(sp >= 2 * bp)))
    for key, limit in (("late_p50_us", 15), ("late_p99_us", 60)):
        v = med(data, "w2", "schedpool", key)
        if v is not None:
            rows.append((f"W2 lateness {key[5:8]} ≤ {limit} µs", f"{fmt_num(v)} µs",
                         verdict(v <= limit)))
    # The tail against the one-lock peer, in the same run (issue "On time under load").
    for workload, name in (("w2", "W2"), ("w2n", "W2 beside a neighbour")):
        for key, label, factor in (("late_p50_us", "p50", 1), ("late_p99_us", "p99", 1),
                                   ("late_p999_us", "p99.9", 2), ("late_max_us", "max", 3)):
            v = med(data, workload, "schedpool", key)
            p = med(data, workload, "stp", key)
            if v is not None and p:
                bound = "scheduled-thread-pool's" if factor == 1 else f"{factor}× scheduled-thread-pool's"
                rows.append((f"{name} lateness {label} ≤ {bound}",
                             f"{fmt_num(v)} vs {fmt_num(p)} µs", verdict(v <= factor * p)))
    v = med(data, "w6", "schedpool", "late_p99_us")
    bp, who = best_peer("w6", "late_p99_us", lowest=True)
    if v is not None and bp:
        rows.append(("W6 lateness p99 ≤ the best peer's", f"{fmt_num(v)} vs {fmt_num(bp)} µs "
                     f"({LABEL[who]})", verdict(v <= bp)))
    sp = med(data, "w3", "schedpool", "cancel_ns_per_op")
    j17 = med(data, "w3", "stpe17", "cancel_ns_per_op")
    if sp and j17:
        rows.append(("W3 cancel ≤ ½ Java 17's ns/op",
                     f"{fmt_num(round(sp))} vs {fmt_num(round(j17))} ns/op",
                     verdict(sp <= j17 / 2)))
    for key, limit, name in (
            ("mem_bytes_per_task", 64, "memory per pending task (RSS)"),
            ("heap_bytes_per_task", 64, "memory per pending task (counted heap)"),
            ("mem_retained_bytes_per_task", 8, "retained per task (RSS)"),
            ("heap_retained_bytes_per_task", 8, "retained per task (counted heap)")):
        v = med(data, "w3", "schedpool", key)
        if v is not None:
            rows.append((f"W3 {name} ≤ {limit} B", f"{fmt_num(v)} B", verdict(v <= limit)))
    sp = med(data, "w4", "schedpool", "iterations_per_s")
    bp, who = best_peer("w4", "iterations_per_s")
    if sp and bp:
        rows.append(("W4 throughput ≥ 3× best peer",
                     f"{sp / 1e6:.2f} M/s = {sp / bp:.2f}× {LABEL[who]}", verdict(sp >= 3 * bp)))
    runs = data.get("w5", {}).get("schedpool", [])
    if runs:
        exact = [r.get("rate_exact") for r in runs]
        rows.append(("W5 fixed-rate counts exact (± 1)",
                     f"{sum(map(bool, exact))}/{len(exact)} runs", verdict(all(exact))))
        for variant in ("rate", "delay"):
            v = med(data, "w5", "schedpool", f"{variant}_cpu_ms")
            j = med(data, "w5", "stpe17", f"{variant}_cpu_ms")
            if v is not None and j:
                rows.append((f"W5 fixed-{variant} CPU ≤ ⅓ Java 17's",
                             f"{fmt_num(round(v))} vs {fmt_num(round(j))} ms",
                             verdict(v <= j / 3)))
    v = med(data, "w6", "schedpool", "late_p50_us")
    if v is not None:
        rows.append(("W6 lateness p50 ≤ 20 µs", f"{fmt_num(v)} µs", verdict(v <= 20)))
    sp = med(data, "w7", "schedpool", "iterations_per_s")
    bp, who = best_peer("w7", "iterations_per_s")
    if sp and bp:
        rows.append(("W7 throughput ≥ 2.5× best peer",
                     f"{sp / 1e6:.2f} M/s = {sp / bp:.2f}× {LABEL[who]}", verdict(sp >= 2.5 * bp)))
    sp = med(data, "w7", "schedpool", "lat_p99_ns")
    bp, who = best_peer("w7", "lat_p99_ns", lowest=True)
    if sp and bp:
        rows.append(("W7 schedule + cancel p99 ≤ best peer's p99",
                     f"{fmt_num(round(sp))} ns vs {fmt_num(round(bp))} ns ({LABEL[who]})",
                     verdict(sp <= bp)))
    sp = med(data, "w8", "schedpool", "iterations_per_s")
    bp, who = best_peer("w8", "iterations_per_s")
    if sp and bp:
        rows.append(("W8 re-arm throughput ≥ 2× best peer",
                     f"{sp / 1e6:.2f} M/s = {sp / bp:.2f}× {LABEL[who]}", verdict(sp >= 2 * bp)))
    sp = med(data, "w9", "schedpool", "rearms_per_s")
    bp, who = best_peer("w9", "rearms_per_s")
    if sp and bp:
        rows.append(("W9 idle-timeout re-arms ≥ 2× best peer",
                     f"{sp / 1e6:.2f} M/s = {sp / bp:.2f}× {LABEL[who]}", verdict(sp >= 2 * bp)))
    if scaling_series.get("schedpool"):
        losses, pairs = [], 0
        for p in PEERS:
            lost = []
            for metric in ("schedule_ns_per_op", "cancel_ns_per_op"):
                at = []
                for size in sizes:
                    s = summarize(scaling_series["schedpool"].get((metric, size), []))
                    pv = summarize(scaling_series.get(p, {}).get((metric, size), []))
                    if s and pv:
                        pairs += 1
                        if s[0] >= pv[0]:
                            at.append(f"10^{len(str(size)) - 1}")
                if at:
                    lost.append(f"{metric.split('_')[0]} at {', '.join(at)}")
            if lost:
                losses.append(f"vs {LABEL[p]}: {'; '.join(lost)}")
        count = sum(x.count("10^") for x in losses)
        measured = (f"slower in {count} of {pairs} comparisons — " + " · ".join(losses)
                    if losses else f"faster in all {pairs} comparisons")
        rows.append(("Scaling: schedpool faster than every peer at every size", measured,
                     verdict(not losses)))
    return rows


def render(meta, rows, svg_name):
    data, failures = collect(rows)
    systems = systems_present(data)
    quick = meta.get("quick")
    out = [BEGIN, "",
           "## Side by side: schedpool, Rust peers and Java",
           "",
           "_Generated by `benches/compare/run.py`; do not edit by hand. "
           "See `benches/compare/README.md` for what each workload does._",
           ""]
    if quick:
        out += ["> **QUICK run** (COMPARE_QUICK=1): sizes scaled down 10–20×, for checking "
                "the harness only. These numbers are not representative.", ""]
    repeats = meta.get("repeats", {})
    rep_text = ", ".join(f"{w}: {n}" for w, n in repeats.items())
    java = meta.get("java", {})
    crates = meta.get("crates", {})
    out += [
        f"- **Machine**: {meta.get('nproc')} CPUs ({meta.get('cpu')}), "
        f"{meta.get('mem_gib')} GiB memory, {meta.get('os')}; load average "
        f"{' '.join(meta.get('load_start', []))} at the start, "
        f"{' '.join(meta.get('load_end', []))} at the end. The run took "
        f"{meta.get('minutes')} min on {meta.get('date')}.",
        f"- **Rust**: {meta.get('rustc')}; schedpool {crates.get('schedpool')} "
        f"(commit {meta.get('commit')}), tokio {crates.get('tokio')}, "
        f"scheduled-thread-pool {crates.get('scheduled-thread-pool')}, "
        f"tokio-cron-scheduler {crates.get('tokio-cron-scheduler')}; release profile.",
    ]
    for major in sorted(java, key=int):
        out.append(f"- **JDK {major}**: {java[major]}; JVM options `{meta.get('java_opts')}`.")
    floor = meta.get("timer_floor") or {}
    slack = f"{meta['timerslack_us']:g}" if "timerslack_us" in meta else "?"
    if floor.get("late_p50_us") is not None:
        out.append(
            f"- **Timed-wait floor**: a bare thread (no pool) parking with a 2 ms timeout wakes "
            f"{fmt_num(round(floor['late_p50_us']))} µs late at p50, "
            f"{fmt_num(round(floor['late_p99_us']))} µs at p99, "
            f"{fmt_num(round(floor['late_max_us']))} µs at worst (`compare os w6`); timer slack "
            f"{slack} µs{' (the Linux default)' if slack == '50' else ''}. That is what a "
            "pool whose worker sleeps until the deadline pays on this machine; a pool that "
            "spins through the last microseconds instead can do better, at a CPU cost (W5).")
    out += [
        "- **Method**: every system has 2 worker threads (Java 25 FJP: parallelism 2, plus "
        "its own delay-scheduler thread; A1: each system's default, one per CPU). Each "
        "(system, workload) ran as a separate process "
        f"this many times ({rep_text}), the repeats interleaved across systems. Java runs "
        "each workload twice in one JVM and reports the second (warmed) run. Cells: median, "
        "and min–max below it when there are several runs. The `vs` columns give how many "
        "times better schedpool's median is than the peer's (> 1: schedpool better; for "
        "throughput the ratio of throughputs, otherwise of costs).",
        "- **Noise**: a shared 2-CPU virtual machine with 3+ busy threads per run (2 workers "
        "and the producer), so latencies include scheduling by the host; compare within one "
        "run rather than across runs.",
    ]
    note = os.environ.get("COMPARE_NOTE") or meta.get("note")
    if note:
        out.append(f"- **Note**: {note}")
    out.append("")
    titles = QUICK_TITLES if quick else TITLES
    scaling_series, sizes = {}, []
    for workload in WORKLOADS:
        if workload not in data:
            continue
        out += [f"### {titles.get(workload, TITLES[workload])}", ""]
        # Only the systems that ran this workload get a column (tcs runs A1 only).
        here = [s for s in systems if s in data[workload]]
        if workload == "a1":
            out += [a1_table(data[workload], here), ""]
            if workload in NOTES:
                out += [NOTES[workload], ""]
        elif workload == "scaling":
            table, scaling_series, sizes = scaling_table(data[workload], here)
            out += [table, "",
                    "A pool is filled with the given number of tasks due in 1–2 h; then, in "
                    "rounds, a batch of min(1000, pending/10) more is scheduled at random "
                    "deadlines in the same range and cancelled in a shuffled order, both timed "
                    "(one untimed warm-up round). `scheduled-thread-pool`'s cancel only sets a "
                    "flag, so its cancelled tasks pile up in its heap instead of leaving; "
                    "tokio and FJP free cancelled tasks asynchronously on their own threads.",
                    ""]
            if svg_name:
                out += [f"![schedule and cancel ns/op against tasks pending]({svg_name})", ""]
        else:
            out += [workload_table(workload, data[workload], here), ""]
            if workload in NOTES:
                out += [NOTES[workload], ""]
    if failures:
        out += ["### Failed, incorrect or disturbed runs", "",
                "Errors are wrong results from the system under test (or a crash or hang); "
                "notes are runs the machine disturbed in a way the checks could tell apart.",
                ""]
        for row in failures:
            res = row["result"]
            kind = "error" if "error" in res else "note"
            args = row.get("args", [])
            jobs = res.get("jobs") or (args[-1] if args else None)
            size = f" ({fmt_num(int(jobs))} jobs)" if jobs else ""
            out.append(f"- {kind}: {row['workload']}{size} "
                       f"{LABEL.get(row['system'], row['system'])} "
                       f"run {row['repeat'] + 1}: {res[kind]}")
        out.append("")
    target_rows = targets(data, scaling_series, sizes)
    if target_rows:
        out += ["### schedpool against the issue's targets", "", TARGETS_NOTE, "",
                "| target | schedpool | verdict |", "|---|---|---|"]
        out += [f"| {t} | {m} | {v} |" for t, m, v in target_rows]
        out.append("")
    out.append(END)
    return "\n".join(out)


def update_doc(section, doc):
    doc.parent.mkdir(parents=True, exist_ok=True)
    text = doc.read_text(encoding="utf-8") if doc.exists() else "# Benchmarks\n"
    if BEGIN in text and END in text:
        start = text.index(BEGIN)
        end = text.index(END) + len(END)
        text = text[:start] + section + text[end:]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    doc.write_text(text, encoding="utf-8")


def report(path):
    meta, rows = load(path)
    if meta.get("quick"):
        default = RESULTS / "BENCHMARKS.quick.md"
    else:
        default = ROOT / "docs" / "BENCHMARKS.md"
    doc = Path(os.environ.get("COMPARE_DOC", default))
    if not doc.is_absolute():
        doc = ROOT / doc
    svg = doc.parent / "scaling.svg"  # beside the document, linked relatively
    subtitle = "schedule and cancel cost vs tasks pending (median, min–max bars)"
    if meta.get("quick"):
        subtitle += " — QUICK run, not representative"
    have_svg = plot.write_scaling_svg(rows, svg, subtitle)
    update_doc(render(meta, rows, svg.name if have_svg else None), doc)
    log(f"updated {doc.relative_to(ROOT) if doc.is_relative_to(ROOT) else doc}"
        + (f" and {svg.name}" if have_svg else ""))


def main():
    args = sys.argv[1:]
    if args[:1] == ["--report"] and len(args) == 2:
        report(Path(args[1]))
        return
    if args:
        sys.exit(__doc__)
    quick = os.environ.get("COMPARE_QUICK", "") not in ("", "0")
    path = run_all(quick)
    report(path)


if __name__ == "__main__":
    main()
