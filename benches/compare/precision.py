#!/usr/bin/env python3
"""The timer-precision trade-off, beside every peer in one run.

    python3 benches/compare/precision.py            # 3 repeats
    PRECISION_REPEATS=1 python3 benches/compare/precision.py

Runs W2 (lateness, with its breakdown by cause), W5 (CPU of 1,000 periodic tasks) and W6
(wake-up of an idle pool) for schedpool at timer precisions 0, 50 µs, 1 ms and 10 ms and
with `SpinPolicy::Never`, and for every peer of run.py, round-robin, each pair as its own
process. Writes the raw JSON lines under results/ and the tables between
`<!-- precision:begin -->` and `<!-- precision:end -->` in docs/BENCHMARKS.md. Uses
run.py's build and run helpers; standard library only.
"""

import datetime
import json
import os
import sys
import time
from pathlib import Path
from statistics import median

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run  # noqa: E402  (sibling module)

BEGIN, END = "<!-- precision:begin -->", "<!-- precision:end -->"
WORKLOADS = ["w2", "w5", "w6"]
# (id, label, precision in µs, spin policy)
SETTINGS = [
    ("sp-0", "schedpool, precision 0 (default)", 0, "adaptive"),
    ("sp-50us", "schedpool, precision 50 µs", 50, "adaptive"),
    ("sp-1ms", "schedpool, precision 1 ms", 1000, "adaptive"),
    ("sp-10ms", "schedpool, precision 10 ms", 10000, "adaptive"),
    ("sp-never", "schedpool, precision 0, SpinPolicy::Never", 0, "never"),
]
PEERS = run.PEERS


def main():
    repeats = int(os.environ.get("PRECISION_REPEATS", "3"))
    jdks = {}
    for major, env_var in ((17, "JAVA17_HOME"), (25, "JAVA25_HOME")):
        home = run.find_jdk(major, env_var)
        if home is None:
            run.log(f"no JDK {major} found (set {env_var}); its systems are skipped")
        else:
            jdks[major] = home
    binary = run.build_rust()
    classes = {major: run.build_java(home, major) for major, home in jdks.items()}

    def command(system, workload):
        for sid, _, us, spin in SETTINGS:
            if sid == system:
                return ["env", f"SCHEDPOOL_PRECISION_US={us}", f"SCHEDPOOL_SPIN={spin}",
                        str(binary), "schedpool", workload]
        return run.system_command(system, workload, binary, jdks, classes)

    systems = [s[0] for s in SETTINGS] + PEERS
    plan = [(r, w, s) for r in range(repeats) for w in WORKLOADS for s in systems]
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    run.RESULTS.mkdir(exist_ok=True)
    out_path = run.RESULTS / f"precision-{stamp}.jsonl"
    meta = {"load_start": run.loadavg(), "repeats": repeats}
    started = time.monotonic()
    with open(out_path, "w", encoding="utf-8") as out:
        out.write(json.dumps({"meta": meta}) + "\n")
        rows = run.run_plan(plan, command, out, 900)
    meta["load_end"] = run.loadavg()
    meta["minutes"] = round((time.monotonic() - started) / 60, 1)
    section = render(rows, meta)
    doc = run.ROOT / "docs" / "BENCHMARKS.md"
    text = doc.read_text(encoding="utf-8")
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        doc.write_text(head + BEGIN + "\n" + section + END + tail, encoding="utf-8")
        run.log(f"updated {doc.relative_to(run.ROOT)}; raw: {out_path.relative_to(run.ROOT)}")
    else:
        print(section)


def med(rows, system, workload, key):
    vals = [r["result"][key] for r in rows
            if r["system"] == system and r["workload"] == workload
            and isinstance(r["result"].get(key), (int, float))]
    return median(vals) if vals else None


def fmt(v, digits=0):
    if v is None:
        return "–"
    return f"{v:,.{digits}f}"


def render(rows, meta):
    labels = {s[0]: s[1] for s in SETTINGS}
    labels.update(run.LABEL)
    systems = [s[0] for s in SETTINGS] + [p for p in PEERS
                                           if any(r["system"] == p for r in rows)]
    out = [f"Run of {datetime.date.today().isoformat()}: medians of {meta['repeats']} "
           f"processes per cell, round-robin, load {' '.join(meta['load_start'])} → "
           f"{' '.join(meta['load_end'])}, {meta['minutes']} min "
           "(`python3 benches/compare/precision.py`).", "",
           "| system / setting | W2 p50 (µs) | W2 p99 (µs) | W2 p99.9 (µs) | "
           "W5 CPU, fixed rate (ms) | W5 CPU, fixed delay (ms) | W6 p50 (µs) | W6 p99 (µs) |",
           "|---|---|---|---|---|---|---|---|"]
    for s in systems:
        out.append("| " + " | ".join([
            labels[s],
            fmt(med(rows, s, "w2", "late_p50_us"), 1),
            fmt(med(rows, s, "w2", "late_p99_us")),
            fmt(med(rows, s, "w2", "late_p999_us")),
            fmt(med(rows, s, "w5", "rate_cpu_ms")),
            fmt(med(rows, s, "w5", "delay_cpu_ms")),
            fmt(med(rows, s, "w6", "late_p50_us"), 1),
            fmt(med(rows, s, "w6", "late_p99_us")),
        ]) + " |")
    out += ["", "For each peer, the finest schedpool setting that is at least as punctual "
            "on W2 (p50 and p99 no higher) and uses at most half the peer's W5 CPU "
            "(fixed rate):", "",
            "| peer | setting | schedpool W2 p50 / p99 (µs) | peer W2 p50 / p99 (µs) | "
            "schedpool / peer W5 CPU (ms) |", "|---|---|---|---|---|"]
    for p in systems[len(SETTINGS):]:
        pp50, pp99 = med(rows, p, "w2", "late_p50_us"), med(rows, p, "w2", "late_p99_us")
        pcpu = med(rows, p, "w5", "rate_cpu_ms")
        found = None
        for sid, _, _, _ in SETTINGS:
            s50, s99 = med(rows, sid, "w2", "late_p50_us"), med(rows, sid, "w2", "late_p99_us")
            scpu = med(rows, sid, "w5", "rate_cpu_ms")
            if None in (pp50, pp99, pcpu, s50, s99, scpu):
                continue
            if s50 <= pp50 and s99 <= pp99 and scpu <= pcpu / 2:
                found = (sid, s50, s99, scpu)
                break
        if found:
            sid, s50, s99, scpu = found
            out.append(f"| {labels[p]} | {labels[sid]} | {fmt(s50, 1)} / {fmt(s99)} | "
                       f"{fmt(pp50, 1)} / {fmt(pp99)} | {fmt(scpu)} / {fmt(pcpu)} |")
        else:
            out.append(f"| {labels[p]} | none in this run | – | {fmt(pp50, 1)} / "
                       f"{fmt(pp99)} | – / {fmt(pcpu)} |")
    out += ["", "W2's lateness by cause (`causes` in `benches/compare/rust/src/workloads.rs`"
            "; Rust systems only): the share of tasks in each class, the class's own p50 / "
            "p99, and its share of the tail (tasks at or above the overall p99).", "",
            "| system / setting | producer's burst: tasks, p50 / p99 (µs), tail | "
            "behind due work: tasks, p50 / p99, tail | wake-up: tasks, p50 / p99, tail | "
            "submission (ms) |", "|---|---|---|---|---|"]
    for s in systems:
        if med(rows, s, "w2", "cause_burst_pct") is None:
            continue
        cells = []
        for c in ("burst", "backlog", "wake"):
            cells.append(f"{fmt(med(rows, s, 'w2', f'cause_{c}_pct'), 1)} %, "
                         f"{fmt(med(rows, s, 'w2', f'cause_{c}_p50_us'))} / "
                         f"{fmt(med(rows, s, 'w2', f'cause_{c}_p99_us'))}, "
                         f"{fmt(med(rows, s, 'w2', f'cause_{c}_tail_pct'))} %")
        out.append(f"| {labels[s]} | " + " | ".join(cells)
                   + f" | {fmt(med(rows, s, 'w2', 'submit_ms'))} |")
    out.append("")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
