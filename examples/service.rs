//! A service's scheduled jobs in production: async jobs on tokio, metrics in Prometheus's
//! text format, JSON logs whose lines carry the job's context, and a task list, the way
//! Spring Boot Actuator gives them (`docs/METRICS.md` compares the two line by line).
//! The lines marked `// glue` are all the code the metrics, the logs and the task list
//! take: nine, as rustfmt lays them out (five statements).
//!
//! The service answers `GET /metrics` and `GET /tasks` on 127.0.0.1, runs for about two
//! seconds while a client in the same process asks both, prints the answers, and stops.
//!
//! `cargo run --example service --features tokio,metrics`

use std::net::SocketAddr;
use std::time::Duration;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use schedpool::{CronTrigger, Next, Periodic, ScheduledThreadPoolExecutor};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt().json().init(); // glue: JSON logs, with the current span
    let prometheus = PrometheusBuilder::new().install_recorder()?; // glue: metrics
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
    pool.schedule_fallible_async(health, rt.clone(), move |_| async move {
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
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    for path in ["/tasks", "/metrics"] {
        let body = http_get(addr, path).await?;
        // The task list whole; of the metrics, the series without their buckets.
        let shown: Vec<&str> = body
            .lines()
            .filter(|l| !l.starts_with('#') && !l.contains("_bucket"))
            .collect();
        println!("GET {path}\n{}\n", shown.join("\n"));
    }
    pool.shutdown();
    pool.terminated().await;
    Ok(())
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
            let body = match request.split_whitespace().nth(1) {
                Some("/metrics") => prometheus.render(), // glue: the metrics endpoint
                Some("/tasks") => pool // glue: the task list, one task a line
                    .scheduled_tasks() // glue
                    .iter() // glue
                    .map(|t| format!("{t}\n")) // glue
                    .collect(), // glue
                _ => String::from("not found\n"),
            };
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            let _ = conn.write_all(reply.as_bytes()).await;
        }
    });
    Ok(addr)
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
    let mut conn = TcpStream::connect(to).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: service\r\nConnection: close\r\n\r\n");
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
