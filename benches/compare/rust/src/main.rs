//! `compare <system> <workload> [--quick]`: runs one workload on one scheduler and prints
//! one JSON line of results. See `../README.md` for the workloads and `../run.py` for the
//! driver that runs every combination and writes `docs/BENCHMARKS.md`.
//!
//! Systems: `schedpool`, `stp` (the `scheduled-thread-pool` crate), `tokio`; and `os`
//! with workload `w6`: the machine's own timed-wait latency, without any pool.
//! Workloads: `w1`/`burst`, `w2`/`delayed`, `w3`/`cancel`, `w4`/`timeouts`,
//! `w5`/`periodic`, `w6`/`wake`, `w7`/`producers`, `w8`/`rearm`, `w9`/`idle`, `scaling`.
//!
//! Workload `a1`/`async` (async jobs, `async_jobs.rs`) has its own systems: `schedpool`, `schedpool-send`,
//! `tokio` and `tcs` (tokio-cron-scheduler), and its size: `--jobs N` (or `COMPARE_JOBS`;
//! default 10,000, 1,000 with `--quick`).

mod async_jobs;
mod async_systems;
mod systems;
mod trace;
mod util;
mod workloads;

use async_systems::{SchedpoolJobs, Submit, TcsJobs, TokioJobs};
use systems::{Schedpool, Stp, System, Tokio};
use util::Json;
use workloads::Params;

#[global_allocator]
static ALLOC: util::CountingAlloc = util::CountingAlloc;

const USAGE: &str = "usage: compare <schedpool|stp|tokio> \
<w1|burst|w2|delayed|w3|cancel|w4|timeouts|w5|periodic|w6|wake|w7|producers|w8|rearm|w9|idle|scaling> \
[--quick]
       compare <schedpool|schedpool-send|tokio|tcs> <a1|async> [--jobs N] [--quick]
       compare os w6 [--quick]   (timed-wait latency of a bare thread)";

fn run<S: System>(workload: &str, p: &Params) -> Option<(&'static str, Json)> {
    Some(match workload {
        "w1" | "burst" => ("w1", workloads::burst::<S>(p)),
        "w2" | "delayed" => ("w2", workloads::delayed::<S>(p)),
        "w3" | "cancel" => ("w3", workloads::cancel::<S>(p)),
        "w4" | "timeouts" => ("w4", workloads::timeouts::<S>(p)),
        "w5" | "periodic" => ("w5", workloads::periodic::<S>(p)),
        "w6" | "wake" => ("w6", workloads::wake::<S>(p)),
        "w7" | "producers" => ("w7", workloads::producers::<S>(p)),
        "w8" | "rearm" => ("w8", workloads::rearm::<S>(p)),
        "w9" | "idle" => ("w9", workloads::idle::<S>(p)),
        "scaling" => ("scaling", workloads::scaling::<S>(p)),
        _ => return None,
    })
}

/// Workload A1 on `system` with `jobs` jobs (`None`: not one of its systems).
fn run_async(system: &str, jobs: usize) -> Option<Json> {
    if let Some(submit) = Submit::for_system(system) {
        return Some(async_jobs::async_jobs(jobs, |n| {
            SchedpoolJobs::start(submit, n)
        }));
    }
    match system {
        "tokio" => Some(async_jobs::async_jobs(jobs, TokioJobs::start)),
        "tcs" => Some(async_jobs::async_jobs(jobs, TcsJobs::start)),
        _ => None,
    }
}

fn usage() -> ! {
    eprintln!("{USAGE}");
    std::process::exit(2);
}

fn main() {
    let mut quick = false;
    let mut jobs: Option<usize> = None;
    let mut pos: Vec<String> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let value = match a.as_str() {
            "--quick" => {
                quick = true;
                continue;
            }
            "--jobs" => args.next(),
            _ => match a.strip_prefix("--jobs=") {
                Some(v) => Some(v.to_string()),
                None if a.starts_with("--") => usage(),
                None => {
                    pos.push(a);
                    continue;
                }
            },
        };
        jobs = Some(
            value
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| usage()),
        );
    }
    let jobs = jobs
        .or_else(|| std::env::var("COMPARE_JOBS").ok()?.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(if quick { 1_000 } else { 10_000 });
    let [system, workload] = [pos.first(), pos.get(1)].map(|a| a.map(String::as_str));
    let (Some(system), Some(workload), 2) = (system, workload, pos.len()) else {
        usage()
    };
    let p = Params::new(quick);
    trace::init();
    let result = match (system, workload) {
        (_, "a1" | "async") => run_async(system, jobs).map(|json| ("a1", json)),
        ("schedpool", _) => run::<Schedpool>(workload, &p),
        ("stp", _) => run::<Stp>(workload, &p),
        ("tokio", _) => run::<Tokio>(workload, &p),
        ("os", "w6" | "wake") => Some(("w6", workloads::timer_floor(&p))),
        _ => None,
    };
    let Some((name, json)) = result else { usage() };
    let line = Json::default()
        .str("system", system)
        .str("workload", name)
        .bool("quick", p.quick)
        .finish();
    // Merge the header and the workload's fields into one object.
    let body = json.finish();
    let fields = &body[1..body.len() - 1];
    if fields.is_empty() {
        println!("{line}");
    } else {
        println!("{},{}}}", &line[..line.len() - 1], fields);
    }
    // Exit without tearing down whatever the disposed pools left behind (detached
    // threads of scheduled-thread-pool, tasks due in hours).
    std::process::exit(0);
}
