//! What uniquely named tasks cost a service that exports its metrics to Prometheus: the
//! process's memory growth and the size of the `/metrics` page. Not a criterion bench:
//! what it measures is memory and a page, once per process.
//!
//! The workload (`docs/METRICS.md` set up as a new user would): Prometheus's recorder
//! (`metrics-exporter-prometheus`) installed first, one pool, then `SERIES_TASKS`
//! (100,000) one-shots due at once, each submitted through a `Named` of its own
//! (`format!("email-{i}")`, a name that carries an id), all run to completion; then the
//! page is rendered. Modes (the first argument):
//!
//! - `named`: `pool.named(format!("email-{i}"))`, as the docs show for the logs;
//! - `metered`: the same, `.metered()` (each name asks for a run-time series of its own:
//!   the pool's `max_task_series` bounds them);
//! - `unnamed`: `pool.schedule`, for the pool's own growth.
//!
//! `SERIES_SCRAPE_EVERY=N` renders the page after every N tasks (once they ran), as a
//! scraper would, so that the exporter's buffer of samples not yet rendered stays
//! small; by default the page is rendered once, at the end.
//!
//! It prints one line: the mode, the tasks, the growth of the resident set (`VmRSS` of
//! `/proc/self/status`, before the pool and after the tasks ran and the page was rendered),
//! the page's bytes and lines, and its `schedpool_task_run_duration_seconds` series.
//!
//! Usage: `cargo bench --features metrics --bench metrics_series -- MODE`.
//! Results: `docs/BENCHMARKS.md`, "Metrics".

use std::time::Duration;

use metrics_exporter_prometheus::PrometheusBuilder;
use schedpool::{ScheduledFuture, ScheduledThreadPoolExecutor};

/// The resident set in KiB, from `/proc/self/status` (0 where there is none).
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let mode = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_else(|| "metered".to_owned());
    let tasks: u64 = std::env::var("SERIES_TASKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let prometheus = PrometheusBuilder::new()
        .install_recorder()
        .expect("the only recorder");
    let before = rss_kib();
    let pool = ScheduledThreadPoolExecutor::builder()
        .name("jobs")
        .core_pool_size(2)
        .build();
    let scrape_every: u64 = std::env::var("SERIES_SCRAPE_EVERY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut futures = Vec::with_capacity(tasks as usize);
    for i in 0..tasks {
        if scrape_every > 0 && i % scrape_every == scrape_every - 1 {
            for f in futures.drain(..) {
                ScheduledFuture::get(f).expect("ran");
            }
            drop(prometheus.render());
        }
        let name = format!("email-{i}");
        let fut = match mode.as_str() {
            "named" => pool.named(name).schedule(Duration::ZERO, || ()),
            "metered" => pool.named(name).metered().schedule(Duration::ZERO, || ()),
            "unnamed" => pool.schedule(Duration::ZERO, || ()),
            other => panic!("unknown mode {other}: named, metered or unnamed"),
        };
        futures.push(fut.expect("accepted"));
    }
    for f in futures {
        f.get().expect("ran");
    }
    pool.publish_metrics();
    let page = prometheus.render();
    let after = rss_kib();
    let series = page
        .lines()
        .filter(|l| l.starts_with("schedpool_task_run_duration_seconds") && l.contains("task=\""))
        .filter_map(|l| l.split("task=\"").nth(1)?.split('"').next())
        .collect::<std::collections::HashSet<_>>()
        .len();
    println!(
        "{mode}: {tasks} tasks, RSS +{:.1} MiB, page {:.2} MiB in {} lines, {series} task series",
        after.saturating_sub(before) as f64 / 1024.0,
        page.len() as f64 / (1024.0 * 1024.0),
        page.lines().count(),
    );
    pool.close();
}
