//! One periodic job on several nodes, run by one node per tick: "every second, send the
//! messages that are due" (the scheduler's classic job), made exclusive across the nodes
//! with a lock in PostgreSQL (`PgLock`), so that no message goes out twice.
//!
//! ```text
//! cargo run --example cluster_job --features postgres -- "host=127.0.0.1 user=postgres"
//! cargo run --example cluster_job --features postgres -- "host=127.0.0.1 user=postgres" node-a
//! ```
//!
//! With only the database URL it starts three nodes in this process for six seconds and
//! prints what each did, tick by tick. With a node name too, it runs that one node for
//! thirty seconds: start it in several terminals (or on several machines sharing the
//! database) to see the nodes share the ticks.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schedpool::cluster::{Exclusive, PgLock};
use schedpool::{MissedTicks, Periodic, PoolStats, ScheduledThreadPoolExecutor, TaskContext};

const TICK: Duration = Duration::from_secs(1);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let Some(url) = args.next() else {
        eprintln!("usage: cluster_job <database URL> [node name]");
        std::process::exit(2);
    };
    let node = args.next();
    let mut db = postgres::Client::connect(&url, postgres::NoTls)?;
    if node.is_none() {
        db.batch_execute("DROP TABLE IF EXISTS demo_messages, demo_sends")?; // a fresh demo
    }
    db.batch_execute(
        "CREATE TABLE IF NOT EXISTS demo_messages (
             id   BIGSERIAL PRIMARY KEY,
             due  TIMESTAMPTZ NOT NULL,
             body TEXT NOT NULL,
             sent BOOLEAN NOT NULL DEFAULT false
         );
         CREATE TABLE IF NOT EXISTS demo_sends (message BIGINT NOT NULL, node TEXT NOT NULL)",
    )?;
    // Twenty messages, due over the next few seconds.
    for i in 0..20 {
        db.execute(
            "INSERT INTO demo_messages (due, body) VALUES (now() + $1::float8 * interval '1 ms', $2)",
            &[&(f64::from(i) * 250.0), &format!("message {i}")],
        )?;
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
    let row = db.query_one(
        "SELECT count(*), count(DISTINCT message) FROM demo_sends",
        &[],
    )?;
    let (sends, distinct): (i64, i64) = (row.get(0), row.get(1));
    println!("{sends} sends of {distinct} distinct messages: none sent twice");
    Ok(())
}

/// A node: its own executor, its own connection for the lock and one for the job.
fn start_node(
    url: &str,
    name: &str,
    start: Instant,
) -> Result<ScheduledThreadPoolExecutor, Box<dyn std::error::Error>> {
    let lock = Arc::new(PgLock::builder(url).node_name(name).build()?);
    lock.check()?; // connect now (and create the lock table) to fail early
    let db = Mutex::new(postgres::Client::connect(url, postgres::NoTls)?);
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
        // Read what is due, "send" it (a row in demo_sends stands for the e-mail), then
        // mark it sent: two nodes doing this at once would send the same messages twice.
        let mut db = db.lock().unwrap();
        let sent = (|| -> Result<usize, postgres::Error> {
            let due = db.query(
                "SELECT id FROM demo_messages WHERE NOT sent AND due <= now() ORDER BY id",
                &[],
            )?;
            for row in &due {
                let id: i64 = row.get(0);
                db.execute(
                    "INSERT INTO demo_sends (message, node) VALUES ($1, $2)",
                    &[&id, &me],
                )?;
                db.execute("UPDATE demo_messages SET sent = true WHERE id = $1", &[&id])?;
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
