//! A service's scheduled jobs in production: async jobs on tokio, metrics in Prometheus's
//! text format (histograms with buckets), JSON logs whose lines carry the job's context,
//! a task list in JSON, an operator's pause, resume and run-now, and a graceful stop on
//! SIGTERM, the way Spring Boot Actuator gives them (`docs/METRICS.md` compares the two
//! line by line). The lines marked `// glue`, with the two lines of the `match` that
//! holds the three controls, are all the code the metrics, the logs, the task list, the
//! controls and the stop take: eighteen, as rustfmt lays them out.
//!
//! The service answers `GET /metrics`, `GET /tasks` and `POST /tasks/{id}/pause`
//! (`resume`, `run`) on 127.0.0.1. A client in the same process asks for the task list,
//! pauses the cache sweep, runs the nightly report now, asks again, reads the metrics,
//! and then sends the process SIGTERM, as a container runtime does: the service stops
//! its jobs gracefully and exits.
//!
//! `cargo run --example service --features tokio,metrics,serde`

use std::net::SocketAddr;
use std::time::Duration;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use schedpool::{CronTrigger, Next, Periodic, ScheduledThreadPoolExecutor};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::signal::unix::{signal, SignalKind};

/// Histogram buckets, in seconds: Prometheus histograms (`_bucket` series), which add up
/// across replicas, rather than the exporter's default summaries.
const BUCKETS: &[f64] = &[0.000_1, 0.001, 0.01, 0.1, 1.0, 10.0, 60.0]; // glue

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt().json().init(); // glue: JSON logs, with the current span
    let mut sigterm = signal(SignalKind::terminate())?; // glue: stop on SIGTERM
    let prometheus = PrometheusBuilder::new() // glue: metrics, as Prometheus histograms
        .set_buckets(BUCKETS)? // glue
        .install_recorder()?; // glue
    let pool = ScheduledThreadPoolExecutor::builder()
        .name("jobs")
        .core_pool_size(2)
        .task_span_level(tracing::Level::INFO) // glue: a job's info lines carry its task
        .metrics_interval(Duration::from_millis(100)) // (default: every second)
        .build();
    let upstream = upstream().await?;
    let rt = tokio::runtime::Handle::current();

    // An async job: poll an upstream over HTTP every 300 ms, counting failures.
    let health = Periodic::at_fixed_rate(Duration::from_millis(300)).name("health check");
    pool.schedule_fallible_async_send(health, rt.clone(), move |_| async move {
        let status = http_get(upstream, "/health").await?;
        tracing::info!(%status, "upstream answered");
        Ok::<_, std::io::Error>(Next::Continue)
    })?;
    // A blocking job with a fixed delay, and a nightly cron job in Berlin time.
    let sweep = Periodic::with_fixed_delay(Duration::from_millis(500)).name("cache sweep");
    pool.schedule_periodic(sweep, || std::thread::sleep(Duration::from_millis(20)))?;
    let nightly = CronTrigger::parse("0 30 2 * * *")?.in_time_zone("Europe/Berlin")?;
    pool.schedule_periodic(
        Periodic::with_trigger(nightly).name("nightly report"),
        || tracing::info!("report sent"),
    )?;

    let addr = serve(pool.clone(), prometheus).await?;
    tokio::spawn(operator(addr)); // what an operator (or a dashboard) does
    sigterm.recv().await; // glue: on SIGTERM, no new runs; the running ones finish
    pool.shutdown_graceful(); // glue
    pool.terminated().await; // glue
    println!("stopped gracefully");
    Ok(())
}

/// The operator's side: the task list, a pause and an extra run, the metrics, and then
/// SIGTERM, as `kubectl delete pod` would send it.
async fn operator(addr: SocketAddr) -> std::io::Result<()> {
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let tasks = http(addr, "GET", "/tasks").await?;
    println!("GET /tasks\n{tasks}\n");
    let id_of = |name: &str| {
        let rows: serde_json::Value = serde_json::from_str(&tasks).expect("JSON");
        let row = rows
            .as_array()
            .and_then(|r| r.iter().find(|t| t["name"] == name));
        row.map(|t| t["id"].clone()).expect("listed")
    };
    for (name, action) in [("cache sweep", "pause"), ("nightly report", "run")] {
        let path = format!("/tasks/{}/{action}", id_of(name));
        println!("POST {path}: {}", http(addr, "POST", &path).await?);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    println!("\nGET /tasks\n{}\n", http(addr, "GET", "/tasks").await?);
    // Of the metrics, the runs and the per-task histograms.
    let metrics = http(addr, "GET", "/metrics").await?;
    let shown: Vec<&str> = metrics
        .lines()
        .filter(|l| {
            l.starts_with("schedpool_runs_total") || l.contains("task_run_duration_seconds_bucket{")
        })
        .collect();
    println!(
        "GET /metrics (the runs, and a named task's histogram)\n{}\n",
        shown.join("\n")
    );
    let me = rustix::process::getpid();
    rustix::process::kill_process(me, rustix::process::Signal::TERM).map_err(std::io::Error::from)
}

/// The service's own HTTP endpoints (any web framework does this; here a few lines of
/// tokio so that the example needs no more dependencies).
async fn serve(
    pool: ScheduledThreadPoolExecutor,
    prometheus: PrometheusHandle,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let request = read_request(&mut conn).await;
            let mut words = request.split_whitespace();
            let body = route(&pool, &prometheus, words.next(), words.next());
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            let _ = conn.write_all(reply.as_bytes()).await;
        }
    });
    Ok(addr)
}

/// The service's answer to `method` `path`.
fn route(
    pool: &ScheduledThreadPoolExecutor,
    prometheus: &PrometheusHandle,
    method: Option<&str>,
    path: Option<&str>,
) -> String {
    let path = path.unwrap_or_default();
    if let Some(control) = path
        .strip_prefix("/tasks/")
        .filter(|_| method == Some("POST"))
    {
        let (id, action) = control.split_once('/').unwrap_or((control, ""));
        return format!("{:?}\n", control_task(pool, id, action));
    }
    match path {
        "/metrics" => prometheus.render(), // glue: the metrics endpoint
        "/tasks" => serde_json::to_string(&pool.scheduled_tasks()).unwrap_or_default(), // glue
        _ => String::from("not found\n"),
    }
}

/// An operator's control of task `id`: `POST /tasks/{id}/pause` (`resume`, `run`).
fn control_task(pool: &ScheduledThreadPoolExecutor, id: &str, action: &str) -> Option<bool> {
    let task = pool.task(id.parse().ok()?)?; // glue: the task by the id the list shows
    Some(match action {
        "pause" => task.pause(),   // glue
        "resume" => task.resume(), // glue
        _ => task.run_now(),       // glue
    })
}

/// The first line of a request (its method and path).
async fn read_request(conn: &mut TcpStream) -> String {
    let mut buf = [0u8; 1024];
    let n = conn.read(&mut buf).await.unwrap_or(0);
    let request = String::from_utf8_lossy(&buf[..n]);
    request.lines().next().unwrap_or_default().to_owned()
}

/// GET `path`; the response's body.
async fn http_get(to: SocketAddr, path: &str) -> std::io::Result<String> {
    http(to, "GET", path).await
}

/// `method` `path`; the response's body.
async fn http(to: SocketAddr, method: &str, path: &str) -> std::io::Result<String> {
    let mut conn = TcpStream::connect(to).await?;
    let request = format!("{method} {path} HTTP/1.1\r\nHost: service\r\nConnection: close\r\n\r\n");
    conn.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    conn.read_to_string(&mut response).await?;
    let body = response.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    Ok(body.to_owned())
}

/// The upstream the health check polls: answers every request with a small JSON body.
async fn upstream() -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let _ = read_request(&mut conn).await;
            let body = "{\"status\":\"ok\"}";
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            let _ = conn.write_all(reply.as_bytes()).await;
        }
    });
    Ok(addr)
}
