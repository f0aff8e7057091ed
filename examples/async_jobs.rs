//! Async jobs in a tokio service, through the `*_send` forms (a run awaiting I/O holds no
//! worker): a periodic health poll that awaits an HTTP call, and a request handler that
//! schedules a one-shot job and awaits its `ScheduledFuture` with a timeout, interrupting
//! the job (which drops its future: the connection closes) when the timeout wins. The "upstream" is a tiny HTTP server on 127.0.0.1 in the same
//! process. Runs in about a second.
//!
//! `cargo run --example async_jobs --features tokio`

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use schedpool::{Next, Periodic, ScheduledThreadPoolExecutor};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// GET `path` from the upstream; the response's body.
async fn http_get(upstream: SocketAddr, path: &str) -> std::io::Result<String> {
    let mut conn = TcpStream::connect(upstream).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: upstream\r\nConnection: close\r\n\r\n");
    conn.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    conn.read_to_string(&mut response).await?;
    let body = response.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    Ok(body.to_owned())
}

/// The upstream: answers `/health` and `/report` at once, `/slow` after two seconds.
async fn upstream() -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let n = conn.read(&mut buf).await.unwrap_or(0);
                let request = String::from_utf8_lossy(&buf[..n]);
                let body = if request.starts_with("GET /slow") {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    "{\"report\":\"late\"}"
                } else if request.starts_with("GET /report") {
                    "{\"report\":\"ready\"}"
                } else {
                    "{\"status\":\"ok\"}"
                };
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = conn.write_all(reply.as_bytes()).await;
            });
        }
    });
    Ok(addr)
}

/// A request handler: the work runs as a job on the pool; the handler awaits its
/// `ScheduledFuture` for at most `limit`, and interrupts the job if the limit wins.
async fn handle(
    pool: &ScheduledThreadPoolExecutor,
    upstream: SocketAddr,
    path: &'static str,
    limit: Duration,
) -> String {
    let rt = tokio::runtime::Handle::current();
    let mut job = pool
        .schedule_async_send(Duration::ZERO, rt, move || http_get(upstream, path))
        .expect("the pool is running");
    tokio::select! {
        out = &mut job => match out {
            Ok(Ok(body)) => format!("200 {body}"),
            Ok(Err(e)) => format!("502 upstream failed: {e}"),
            Err(e) => format!("500 job failed: {e}"),
        },
        _ = tokio::time::sleep(limit) => {
            job.interrupt(); // drops the job's future at its await: the connection closes
            format!("504 no answer within {limit:?} (job cancelled: {})", job.is_cancelled())
        }
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let start = Instant::now();
    let upstream = upstream().await?;
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .name("jobs")
        .build();

    // A periodic async poll: a new future per run, the next run 200 ms after it completes.
    let spec = Periodic::with_fixed_delay(Duration::from_millis(200))
        .name("health poll")
        .max_runs(4);
    let poller = pool
        .schedule_fallible_async_send(spec, tokio::runtime::Handle::current(), move |ctx| {
            let run = ctx.runs();
            async move {
                let status = http_get(upstream, "/health").await?;
                println!(
                    "[{:>4} ms] health poll #{run}: {status}",
                    start.elapsed().as_millis()
                );
                Ok::<_, std::io::Error>(Next::Continue)
            }
        })
        .expect("the pool is running");

    // Requests awaiting one-shot jobs: one answered in time, one that times out.
    let limit = Duration::from_millis(300);
    let fast = handle(&pool, upstream, "/report", limit).await;
    println!(
        "[{:>4} ms] GET /report -> {fast}",
        start.elapsed().as_millis()
    );
    let slow = handle(&pool, upstream, "/slow", limit).await;
    println!(
        "[{:>4} ms] GET /slow   -> {slow}",
        start.elapsed().as_millis()
    );

    // The poll ends after its fourth run; then the pool stops, awaited without blocking.
    let polled = poller.await;
    println!(
        "[{:>4} ms] health poll ended: {polled:?}",
        start.elapsed().as_millis()
    );
    pool.shutdown();
    pool.terminated().await;
    let stats = pool.stats();
    println!(
        "[{:>4} ms] terminated: {} runs completed, {} failed",
        start.elapsed().as_millis(),
        stats.completed_task_count,
        stats.failed_runs
    );
    Ok(())
}
