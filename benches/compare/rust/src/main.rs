//! `compare <system> <workload> [--quick]`: runs one workload on one scheduler and prints
//! one JSON line of results. See `../README.md` for the workloads and `../run.py` for the
//! driver that runs every combination and writes `docs/BENCHMARKS.md`.
//!
//! Systems: `schedpool`, `stp` (the `scheduled-thread-pool` crate), `tokio`; and `os`
//! with workload `w6`: the machine's own timed-wait latency, without any pool.
//! Workloads: `w1`/`burst`, `w2`/`delayed`, `w3`/`cancel`, `w4`/`timeouts`,
//! `w5`/`periodic`, `w6`/`wake`, `w7`/`producers`, `w8`/`rearm`, `w9`/`idle`, `scaling`.

mod systems;
mod trace;
mod util;
mod workloads;

use systems::{Schedpool, Stp, System, Tokio};
use util::Json;
use workloads::Params;

#[global_allocator]
static ALLOC: util::CountingAlloc = util::CountingAlloc;

const USAGE: &str = "usage: compare <schedpool|stp|tokio> \
<w1|burst|w2|delayed|w3|cancel|w4|timeouts|w5|periodic|w6|wake|w7|producers|w8|rearm|w9|idle|scaling> \
[--quick]
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

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let pos: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with("--"))
        .map(String::as_str)
        .collect();
    let [system, workload] = pos[..] else {
        eprintln!("{USAGE}");
        std::process::exit(2);
    };
    let p = Params::new(quick);
    trace::init();
    let result = match system {
        "schedpool" => run::<Schedpool>(workload, &p),
        "stp" => run::<Stp>(workload, &p),
        "tokio" => run::<Tokio>(workload, &p),
        "os" if matches!(workload, "w6" | "wake") => Some(("w6", workloads::timer_floor(&p))),
        _ => None,
    };
    let Some((name, json)) = result else {
        eprintln!("{USAGE}");
        std::process::exit(2);
    };
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
