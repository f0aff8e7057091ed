//! `examples/cluster_job.rs` on Redis: one periodic job on several nodes, run by one node
//! per tick, "every second, send the messages that are due", made exclusive across the
//! nodes with a lock in Redis (`RedisLock`), so that no message goes out twice. The
//! messages are in Redis too: a sorted set by due time, which a run reads and then
//! empties of what it sent, in two steps that only the lock keeps from interleaving.
//!
//! ```text
//! cargo run --example cluster_job_redis --features redis -- redis://127.0.0.1:6379/0
//! cargo run --example cluster_job_redis --features redis -- redis://127.0.0.1:6379/0 node-a
//! ```
//!
//! With only the URL it starts three nodes in this process for six seconds and prints
//! what each did, tick by tick. With a node name too, it runs that one node for thirty
//! seconds: start it in several terminals (or on several machines sharing the server)
//! to see the nodes share the ticks.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schedpool::cluster::{Exclusive, RedisLock};
use schedpool::{MissedTicks, Periodic, PoolStats, ScheduledThreadPoolExecutor, TaskContext};

const TICK: Duration = Duration::from_secs(1);

/// The demo's keys (the lock's are under `schedpool:`).
const MESSAGES: &str = "demo:messages";
const SENDS: &str = "demo:sends";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let Some(url) = args.next() else {
        eprintln!("usage: cluster_job_redis <redis URL> [node name]");
        std::process::exit(2);
    };
    let node = args.next();
    let mut db = redis::Client::open(url.as_str())?.get_connection()?;
    if node.is_none() {
        redis::cmd("DEL")
            .arg(MESSAGES)
            .arg(SENDS)
            .query::<()>(&mut db)?; // a fresh demo
    }
    // Twenty messages, due over the next few seconds (scored by due time in ms, on the
    // server's clock).
    let now = server_ms(&mut db)?;
    for i in 0..20u64 {
        let due = now + i * 250;
        redis::cmd("ZADD")
            .arg(MESSAGES)
            .arg(due)
            .arg(format!("message {i} ({due})"))
            .query::<()>(&mut db)?;
    }
    let (names, run_for) = match &node {
        Some(n) => (vec![n.clone()], Duration::from_secs(30)),
        None => (
            (1..=3).map(|i| format!("node-{i}")).collect(),
            Duration::from_secs(6),
        ),
    };
    let start = Instant::now();
    let nodes: Vec<_> = names
        .iter()
        .map(|name| start_node(&url, name, start))
        .collect::<Result<_, _>>()?;
    std::thread::sleep(run_for);
    println!();
    for (name, pool) in names.iter().zip(&nodes) {
        pool.close();
        let s: PoolStats = pool.stats();
        println!(
            "{name}: ran {} ticks, skipped {} (another node held the lock), {} store failures",
            s.lock_acquired, s.lock_skipped, s.lock_failed
        );
    }
    let sends: Vec<String> = redis::cmd("LRANGE")
        .arg(SENDS)
        .arg(0)
        .arg(-1)
        .query(&mut db)?;
    let mut distinct: Vec<&str> = sends
        .iter()
        .map(|s| s.split(" by ").next().unwrap_or(s))
        .collect();
    distinct.sort_unstable();
    distinct.dedup();
    println!(
        "{} sends of {} distinct messages: {}",
        sends.len(),
        distinct.len(),
        if sends.len() == distinct.len() {
            "none sent twice"
        } else {
            "SOME SENT TWICE"
        }
    );
    if sends.len() != distinct.len() {
        std::process::exit(1);
    }
    Ok(())
}

/// The server's time in milliseconds since the epoch.
fn server_ms(db: &mut redis::Connection) -> redis::RedisResult<u64> {
    let (s, us): (u64, u64) = redis::cmd("TIME").query(db)?;
    Ok(s * 1000 + us / 1000)
}

/// A node: its own executor, its own lock and its own connection for the job.
fn start_node(
    url: &str,
    name: &str,
    start: Instant,
) -> Result<ScheduledThreadPoolExecutor, Box<dyn std::error::Error>> {
    let lock = Arc::new(RedisLock::builder(url).node_name(name).build()?);
    lock.check()?; // connect now, to fail early
    let db = Mutex::new(redis::Client::open(url)?.get_connection()?);
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .name(name)
        .build();
    // Every node ticks on the wall clock's whole seconds (`aligned`); the lock is kept for
    // at least half a tick, so a node whose tick comes a little later skips it.
    let spec = Periodic::at_fixed_rate(TICK)
        .aligned(Duration::ZERO)
        .missed_ticks(MissedTicks::Skip)
        .max_lateness(TICK * 4 / 10)
        .name("send-due-messages")
        .exclusive(
            // A run that takes longer than usual keeps its lease alive; a node that
            // crashes mid-run blocks the others for at most 5 s after its last extension.
            Exclusive::new(lock, "send-due-messages", Duration::from_secs(5))
                .keep_alive(Duration::from_secs(1))
                .at_least_for(TICK / 2),
        );
    let me = name.to_owned();
    pool.schedule_periodic_with_context(spec, move |_ctx: &TaskContext<'_>| {
        // Read what is due, "send" it (an entry in demo:sends stands for the e-mail), then
        // take it off the set: two nodes doing this at once would send the same twice.
        let mut db = db.lock().unwrap();
        let sent = (|| -> redis::RedisResult<usize> {
            let now = server_ms(&mut db)?;
            let due: Vec<String> = redis::cmd("ZRANGEBYSCORE")
                .arg(MESSAGES)
                .arg(0)
                .arg(now)
                .query(&mut *db)?;
            for message in &due {
                redis::cmd("RPUSH")
                    .arg(SENDS)
                    .arg(format!("{message} by {me}"))
                    .query::<()>(&mut *db)?;
                redis::cmd("ZREM")
                    .arg(MESSAGES)
                    .arg(message)
                    .query::<()>(&mut *db)?;
            }
            Ok(due.len())
        })();
        match sent {
            Ok(n) => println!(
                "[{:>5} ms] {me} holds the lock: sent {n} due messages",
                start.elapsed().as_millis()
            ),
            Err(e) => eprintln!("{me}: sending failed: {e}"),
        }
        schedpool::Next::Continue
    })?;
    Ok(pool)
}
