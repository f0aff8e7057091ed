//! `PgLock` against a real PostgreSQL server (`tests/common/pg.rs` starts one per test:
//! its own data directory, loopback only): the lease protocol with the database's clock,
//! one holder under contention, each tick once across executors and processes, takeover
//! after a holder is killed, a restart, a dropped connection, a release whose reply is
//! lost and a database that stops answering. Needs the cargo feature `postgres` and the
//! PostgreSQL server binaries.
#![cfg(feature = "postgres")]

mod common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::pg::PgServer;
use common::{ms, sec, wait_until, BOUND};
use schedpool::cluster::{ClusterLock, Exclusive, LockError, PgLock};
use schedpool::{
    ManualClock, MissedTicks, Next, Periodic, PoolStats, ScheduledFuture,
    ScheduledThreadPoolExecutor, TaskContext,
};

/// A lock on `url` whose connection is named `node` (in `pg_stat_activity` and
/// `locked_by`), with a 2 s bound on each call.
fn pg_lock(url: &str, node: &str) -> Arc<PgLock> {
    Arc::new(
        PgLock::builder(&format!("{url} application_name={node}"))
            .node_name(node)
            .timeout(sec(2))
            .build()
            .expect("a valid configuration"),
    )
}

/// Polls until `f` gives `Some`, at most `bound`.
fn wait_for<T>(bound: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let give_up = Instant::now() + bound;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= give_up {
            return None;
        }
        std::thread::sleep(ms(5));
    }
}

#[test]
fn the_lease_protocol_runs_on_the_database_clock() {
    let server = PgServer::start();
    let url = server.url();
    let (a, b) = (pg_lock(&url, "node-a"), pg_lock(&url, "node-b"));
    a.check().expect("connects and creates its table");

    let first = a.try_acquire("job", sec(60)).unwrap().expect("free");
    assert!(b.try_acquire("job", sec(60)).unwrap().is_none(), "LK1");
    assert_eq!(b.holder("job").unwrap().as_deref(), Some("node-a"));
    assert!(a.release(first.clone(), Duration::ZERO).unwrap());
    assert_eq!(
        b.holder("job").unwrap(),
        None,
        "released at once without at_least_for"
    );

    // A short lease runs out by the database's clock and is taken over.
    let short = b.try_acquire("job", ms(300)).unwrap().expect("free again");
    assert!(short.token() > first.token(), "LK2: tokens grow");
    let taken = wait_for(BOUND, || a.try_acquire("job", sec(60)).unwrap()).expect("expires");
    assert!(taken.token() > short.token());
    assert!(
        !b.release(short, Duration::ZERO).unwrap(),
        "the expired lease says so"
    );
    assert_eq!(
        b.holder("job").unwrap().as_deref(),
        Some("node-a"),
        "LK2: and the late release left the new holder alone"
    );

    // at_least_for keeps the lock after an early release (LK3) ...
    assert!(a.release(taken, sec(60)).unwrap());
    assert!(b.try_acquire("job", sec(60)).unwrap().is_none());

    // ... whatever the nodes' own clocks say (LK4): an executor whose clock is an hour
    // ahead still finds the lock held, and skips its run.
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .build();
    let runs = Arc::new(AtomicU64::new(0));
    let r = runs.clone();
    let spec = Periodic::at_fixed_rate(sec(60))
        .initial_delay(sec(3600))
        .exclusive(Exclusive::new(b.clone(), "job", sec(60)));
    let fut = pool
        .schedule_periodic(spec, move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    clock.advance(sec(3600));
    assert!(wait_until(|| pool.stats().lock_skipped == 1));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    fut.cancel();
    pool.close();

    // A table the user manages: missing, it is a clear error; created from the
    // documented schema, it works.
    let own = PgLock::builder(&url)
        .table("app_locks")
        .create_table(false)
        .timeout(sec(2))
        .build()
        .unwrap();
    let err = own.try_acquire("job", sec(1)).unwrap_err();
    assert!(matches!(err, LockError::Store(_)), "{err}");
    assert!(err.to_string().contains("app_locks"), "{err}");
    server
        .client()
        .batch_execute(&PgLock::schema("app_locks"))
        .unwrap();
    assert!(own.try_acquire("job", sec(1)).unwrap().is_some());
}

#[test]
fn contending_threads_and_connections_never_hold_one_lock_at_once() {
    let server = PgServer::start();
    let url = server.url();
    let holders = Arc::new(AtomicUsize::new(0));
    let tokens: Arc<Mutex<Vec<u64>>> = Arc::default();
    let threads: Vec<_> = (0..3)
        .flat_map(|n| {
            let lock = pg_lock(&url, &format!("contender-{n}"));
            (0..2).map(move |_| lock.clone())
        })
        .map(|lock| {
            let (holders, tokens) = (holders.clone(), tokens.clone());
            std::thread::spawn(move || {
                for _ in 0..150 {
                    let Some(lease) = lock.try_acquire("hot", sec(30)).unwrap() else {
                        continue;
                    };
                    assert_eq!(holders.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                    tokens.lock().unwrap().push(lease.token());
                    std::thread::yield_now();
                    holders.fetch_sub(1, Ordering::SeqCst);
                    assert!(lock.release(lease, Duration::ZERO).unwrap());
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("no contender failed");
    }
    let mut tokens = tokens.lock().unwrap().clone();
    let n = tokens.len();
    assert!(n > 10, "the lock changed hands: {n} acquisitions");
    tokens.sort_unstable();
    tokens.dedup();
    assert_eq!(tokens.len(), n, "LK2: every acquisition has its own token");
}

/// A database whose role defaults to SERIALIZABLE (ShedLock's serializable fuzz test):
/// 8 locks race for one name, and every answer is a lease or `None`, never a store error
/// (40001, "could not serialize access"), and every release of a held lease succeeds.
#[test]
fn a_serializable_default_isolation_never_turns_a_held_lock_into_an_error() {
    let server = PgServer::start();
    let mut admin = server.client();
    admin
        .batch_execute(
            "CREATE ROLE strict LOGIN SUPERUSER; \
             ALTER ROLE strict SET default_transaction_isolation = 'serializable';",
        )
        .unwrap();
    let url = server.url().replace("user=postgres", "user=strict");
    let mut probe = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let level: String = probe
        .query_one("SHOW default_transaction_isolation", &[])
        .unwrap()
        .get(0);
    assert_eq!(level, "serializable", "the role's default applies");
    pg_lock(&url, "setup").check().expect("creates the table");
    let errors = Arc::new(Mutex::new(Vec::new()));
    let acquired = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..8)
        .map(|n| {
            let lock = pg_lock(&url, &format!("strict-{n}"));
            let (errors, acquired) = (errors.clone(), acquired.clone());
            std::thread::spawn(move || {
                for _ in 0..100 {
                    match lock.try_acquire("contended", sec(30)) {
                        Ok(Some(lease)) => {
                            acquired.fetch_add(1, Ordering::SeqCst);
                            match lock.release(lease, Duration::ZERO) {
                                Ok(true) => {}
                                other => errors.lock().unwrap().push(format!("release: {other:?}")),
                            }
                        }
                        Ok(None) => {}
                        Err(e) => errors.lock().unwrap().push(format!("acquire: {e}")),
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("no contender panicked");
    }
    let errors = errors.lock().unwrap();
    assert!(
        errors.is_empty(),
        "{} errors, first: {:?}",
        errors.len(),
        errors.first()
    );
    assert!(
        acquired.load(Ordering::SeqCst) > 10,
        "the lock changed hands"
    );
}

/// The trait's edge inputs on the database, and a role without CREATE on the schema
/// (PostgreSQL 15 and later give ordinary roles none on `public`): with the table made by
/// its owner, `create_table(true)` still works, and without the table the error says why.
#[test]
fn edge_inputs_and_a_role_without_create_on_the_schema() {
    let server = PgServer::start();
    let url = server.url();
    let lock = pg_lock(&url, "edges");
    let empty = lock
        .try_acquire("", sec(30))
        .unwrap()
        .expect("a name like any other");
    assert!(lock.try_acquire("", sec(30)).unwrap().is_none());
    assert!(lock.release(empty, Duration::ZERO).unwrap());
    let zero = lock
        .try_acquire("zero", Duration::ZERO)
        .unwrap()
        .expect("granted");
    assert!(
        lock.holder("zero").unwrap().is_none(),
        "over as soon as granted"
    );
    assert!(!lock.release(zero, Duration::ZERO).unwrap(), "an overrun");
    let capped = lock.try_acquire("cap", ms(300)).unwrap().unwrap();
    assert!(lock.release(capped, sec(3600)).unwrap());
    assert!(
        wait_for(sec(5), || lock
            .holder("cap")
            .unwrap()
            .is_none()
            .then_some(()))
        .is_some(),
        "held for at_most_for (300 ms), not at_least_for (1 h)"
    );

    let mut admin = server.client();
    admin
        .batch_execute(
            "CREATE ROLE plain LOGIN; \
             REVOKE CREATE ON SCHEMA public FROM PUBLIC; \
             GRANT SELECT, INSERT, UPDATE ON schedpool_locks TO plain;",
        )
        .unwrap();
    let plain_url = url.replace("user=postgres", "user=plain");
    let plain = pg_lock(&plain_url, "plain");
    plain.check().expect("the table exists: no CREATE needed");
    let lease = plain.try_acquire("job", sec(30)).unwrap().expect("free");
    assert!(plain.release(lease, Duration::ZERO).unwrap());
    let other = Arc::new(
        PgLock::builder(&plain_url)
            .table("missing_locks")
            .timeout(sec(2))
            .build()
            .unwrap(),
    );
    let err = other
        .check()
        .expect_err("no table and no right to create it")
        .to_string();
    assert!(err.contains("permission denied"), "{err}");

    // The table of pauses, not granted to this role: its jobs run as before (no pause
    // can be seen), and a pause says what is missing; granted, it pauses.
    assert_eq!(plain.paused("job").unwrap(), None);
    let err = plain.pause("job", "ops", None).unwrap_err().to_string();
    assert!(err.contains("PgLock::pause_schema"), "{err}");
    admin
        .batch_execute("GRANT SELECT, INSERT, UPDATE, DELETE ON schedpool_locks_pauses TO plain")
        .unwrap();
    plain.pause("job", "ops", None).unwrap();
    assert_eq!(
        lock.paused("job").unwrap().expect("seen by every node").by,
        "ops"
    );
    assert!(plain.resume("job").unwrap());
}

#[test]
fn a_pause_is_kept_by_the_database_with_its_clock() {
    let server = PgServer::start();
    let url = server.url();
    let (a, b) = (pg_lock(&url, "node-a"), pg_lock(&url, "node-b"));
    assert_eq!(a.paused("report").unwrap(), None);
    assert!(!a.resume("report").unwrap(), "nothing to resume");
    a.pause("report", "ops", None).unwrap();
    let pause = b.paused("report").unwrap().expect("every node sees it");
    assert_eq!((pause.by.as_str(), pause.until), ("ops", None));
    let db_now: SystemTime = server
        .client()
        .query_one("SELECT now()", &[])
        .unwrap()
        .get(0);
    assert!(pause.since <= db_now, "the database's time");
    assert_eq!(b.paused("other").unwrap(), None, "by name");
    // A second pause replaces the first; one whose end has passed is none.
    let soon = db_now + ms(300);
    b.pause("report", "migration", Some(soon)).unwrap();
    let pause = a.paused("report").unwrap().unwrap();
    assert_eq!(pause.by, "migration");
    assert!(pause.until.is_some());
    assert!(
        wait_for(sec(5), || a
            .paused("report")
            .unwrap()
            .is_none()
            .then_some(()))
        .is_some(),
        "over at its end by the database's clock"
    );
    assert!(!a.resume("report").unwrap(), "an ended pause was no pause");
    a.pause("report", "ops", Some(db_now + sec(3600))).unwrap();
    assert!(b.resume("report").unwrap());
    assert_eq!(a.paused("report").unwrap(), None);
    // A new connection (a restarted node) sees a pause made before it.
    a.pause("report", "ops", None).unwrap();
    let restarted = pg_lock(&url, "node-c");
    assert!(restarted.paused("report").unwrap().is_some());
}

// ---- each tick once across executors and processes ----

const TICK: Duration = Duration::from_millis(1000);

fn epoch() -> Duration {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap()
}

/// The wall-clock tick a run's deadline belongs to (the deadline is in the past).
fn tick_of(deadline: Instant) -> i64 {
    let at = epoch().saturating_sub(Instant::now().saturating_duration_since(deadline));
    ((at.as_millis() + TICK.as_millis() / 2) / TICK.as_millis()) as i64
}

/// A node's ticking job: an executor whose job, exclusive by `lock` (`tick-job`), records
/// in the database each tick in `ticks` it runs.
fn start_ticking(
    url: &str,
    node: &str,
    ticks: std::ops::RangeInclusive<i64>,
) -> (ScheduledThreadPoolExecutor, ScheduledFuture<()>) {
    let lock = pg_lock(url, node);
    let db = Mutex::new(postgres::Client::connect(url, postgres::NoTls).unwrap());
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .name(node)
        .build();
    let to_next = TICK - Duration::from_nanos((epoch().as_nanos() % TICK.as_nanos()) as u64);
    // Any run of tick k starts in [k, k + 0.4 tick] (max_lateness) and holds the lock
    // until at least k + 0.5 tick (at_least_for), so no other run of tick k can get it;
    // and it is free again before k + 1.
    let spec = Periodic::at_fixed_rate(TICK)
        .initial_delay(to_next)
        .missed_ticks(MissedTicks::Skip)
        .max_lateness(TICK * 4 / 10)
        .exclusive(Exclusive::new(lock, "tick-job", sec(10)).at_least_for(TICK / 2));
    let name = node.to_owned();
    let fut = pool
        .schedule_periodic_with_context(spec, move |ctx: &TaskContext<'_>| {
            let tick = tick_of(ctx.deadline());
            if ticks.contains(&tick) {
                db.lock()
                    .unwrap()
                    .execute(
                        "INSERT INTO runs (tick, node) VALUES ($1, $2)",
                        &[&tick, &name],
                    )
                    .unwrap();
            }
            Next::Continue
        })
        .unwrap();
    (pool, fut)
}

/// The end of a ticking node: its job kept its schedule; the pool's statistics.
fn stop_ticking(
    node: &str,
    pool: ScheduledThreadPoolExecutor,
    fut: ScheduledFuture<()>,
) -> PoolStats {
    assert!(!fut.is_done(), "{node}: the job kept its schedule");
    fut.cancel();
    pool.close();
    pool.stats()
}

/// One node: the ticking job, recording the ticks from `first` to `last` it runs; it
/// returns when the database has seen `last`.
fn run_node(url: &str, node: &str, first: i64, last: i64) -> PoolStats {
    let (pool, fut) = start_ticking(url, node, first..=last);
    let mut probe = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let seen_last = wait_for(sec((last - first) as u64 + 20), || {
        let row = probe
            .query_one("SELECT coalesce(max(tick), 0) FROM runs", &[])
            .unwrap();
        (row.get::<_, i64>(0) >= last).then_some(())
    });
    assert!(
        seen_last.is_some(),
        "{node}: the last tick was run by some node"
    );
    stop_ticking(node, pool, fut)
}

/// One node of the pause test: the ticking job, recording every tick it runs, for `secs`
/// (the test pauses and resumes the job meanwhile); its statistics.
fn run_pausable(url: &str, node: &str, secs: Duration) -> PoolStats {
    let (pool, fut) = start_ticking(url, node, i64::MIN..=i64::MAX);
    std::thread::sleep(secs);
    stop_ticking(node, pool, fut)
}

/// A child node's report line, as `(field, value)` pairs.
fn report(c: std::process::Child) -> Vec<(String, u64)> {
    let mut c = c;
    let mut out = String::new();
    c.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    assert!(c.wait().unwrap().success(), "a child node failed: {out}");
    let line = out
        .lines()
        .find_map(|l| l.find("NODE ").map(|i| &l[i..]))
        .unwrap_or_else(|| panic!("its report, in {out:?}"))
        .to_owned();
    line.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.parse().unwrap()))
        .collect()
}

/// Pauses a job through the database while node processes run it: no node runs a tick
/// while it is paused, a node started during the pause (a restart) sees it at once, and
/// after the resume each tick runs once again.
#[test]
fn a_job_paused_in_the_database_is_skipped_by_every_node_process() {
    let server = PgServer::start();
    let url = server.url();
    server
        .client()
        .batch_execute("CREATE TABLE runs (tick BIGINT NOT NULL, node TEXT NOT NULL)")
        .unwrap();
    let ops = pg_lock(&url, "ops");
    ops.check().unwrap(); // the tables exist before the nodes start
    let first: Vec<_> = (0..2)
        .map(|i| child(format!("pausable|{url}|process-{i}|9")))
        .collect();
    let mut db = server.client();
    let runs = |db: &mut postgres::Client| -> Vec<i64> {
        db.query("SELECT tick FROM runs ORDER BY tick", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    assert!(
        wait_for(sec(15), || (runs(&mut db).len() >= 2).then_some(())).is_some(),
        "the job runs before the pause"
    );
    ops.pause("tick-job", "ops", None).unwrap();
    // A tick already past its pause check may still finish: the ticks from the next
    // one on are paused.
    let paused_from = (epoch().as_millis() / TICK.as_millis()) as i64 + 2;
    let late = child(format!("pausable|{url}|restarted|4")); // starts during the pause
    std::thread::sleep(sec(4));
    ops.resume("tick-job").unwrap();
    let resumed_at = (epoch().as_millis() / TICK.as_millis()) as i64;
    let late = report(late);
    let field = |r: &[(String, u64)], k: &str| r.iter().find(|(f, _)| f == k).unwrap().1;
    assert_eq!(
        field(&late, "acquired"),
        0,
        "the restarted node ran nothing: {late:?}"
    );
    assert!(
        field(&late, "paused") >= 2,
        "it skipped paused ticks: {late:?}"
    );
    let reports: Vec<_> = first.into_iter().map(report).collect();
    for r in &reports {
        assert_eq!(field(r, "failed"), 0, "{r:?}");
        assert!(
            field(r, "paused") >= 2,
            "every node skipped paused ticks: {r:?}"
        );
    }
    let ticks = runs(&mut db);
    let during: Vec<_> = ticks
        .iter()
        .filter(|&&t| t >= paused_from && t < resumed_at)
        .collect();
    assert!(
        during.is_empty(),
        "ticks run while paused: {during:?} in {ticks:?}"
    );
    assert!(
        ticks.iter().any(|&t| t > resumed_at),
        "the job runs again after the resume: {ticks:?}"
    );
    let mut dedup = ticks.clone();
    dedup.dedup();
    assert_eq!(dedup, ticks, "each tick at most once");
}

/// The child-process side of the cluster tests (run by them, with `SCHEDPOOL_TEST_NODE`
/// set; alone it does nothing).
#[test]
#[ignore = "a child process of the cluster tests"]
fn node_process() {
    let Ok(spec) = std::env::var("SCHEDPOOL_TEST_NODE") else {
        return;
    };
    let parts: Vec<&str> = spec.split('|').collect();
    match parts.as_slice() {
        ["ticks", url, node, first, last] => {
            let s = run_node(url, node, first.parse().unwrap(), last.parse().unwrap());
            println!(
                "NODE {node} acquired={} skipped={} failed={}",
                s.lock_acquired, s.lock_skipped, s.lock_failed
            );
        }
        ["hold", url, node] => {
            // Takes the lock and keeps it, running, until killed.
            let lock = pg_lock(url, node);
            let pool = ScheduledThreadPoolExecutor::new(1);
            let spec = Periodic::at_fixed_rate(ms(500)).exclusive(Exclusive::new(
                lock,
                "held-job",
                sec(3),
            ));
            let mut db = postgres::Client::connect(url, postgres::NoTls).unwrap();
            pool.schedule_periodic(spec, move || {
                db.execute("INSERT INTO holding (node) VALUES ('child')", &[])
                    .unwrap();
                loop {
                    std::thread::park(); // held until the process is killed
                }
            })
            .unwrap();
            loop {
                std::thread::park();
            }
        }
        ["keep", url, node] => {
            // Takes the lock with a keep-alive and keeps it, running, until killed.
            let lock = pg_lock(url, node);
            let pool = ScheduledThreadPoolExecutor::new(1);
            let spec = Exclusive::new(lock, "kept-job", sec(1)).keep_alive(ms(250));
            let mut db = postgres::Client::connect(url, postgres::NoTls).unwrap();
            pool.schedule_exclusive(Duration::ZERO, spec, move |_| {
                db.execute("INSERT INTO holding (node) VALUES ('child')", &[])
                    .unwrap();
                loop {
                    std::thread::park(); // held until the process is killed
                }
            })
            .unwrap();
            loop {
                std::thread::park();
            }
        }
        ["pausable", url, node, secs] => {
            let s = run_pausable(url, node, sec(secs.parse().unwrap()));
            println!(
                "NODE {node} acquired={} skipped={} failed={} paused={}",
                s.lock_acquired, s.lock_skipped, s.lock_failed, s.paused_runs
            );
        }
        _ => panic!("unknown node spec {spec:?}"),
    }
}

/// Waits until a child node (`hold` or `keep`) took its lock and is running.
fn wait_for_the_child_to_hold(db: &mut postgres::Client) {
    let held = wait_for(BOUND, || {
        let n: i64 = db
            .query_one("SELECT count(*) FROM holding", &[])
            .unwrap()
            .get(0);
        (n > 0).then_some(())
    });
    assert!(held.is_some(), "the child took the lock and is running");
}

/// Starts this test binary as a child node.
fn child(spec: String) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "node_process",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SCHEDPOOL_TEST_NODE", spec)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start a child node")
}

#[test]
fn each_tick_runs_once_across_executors_and_processes() {
    let server = PgServer::start();
    let url = server.url();
    server
        .client()
        .batch_execute("CREATE TABLE runs (tick BIGINT NOT NULL, node TEXT NOT NULL)")
        .unwrap();
    const TICKS: i64 = 8;
    let now_tick = (epoch().as_millis() / TICK.as_millis()) as i64;
    let (first, last) = (now_tick + 3, now_tick + 3 + TICKS - 1);
    let children: Vec<_> = (0..2)
        .map(|i| child(format!("ticks|{url}|process-{i}|{first}|{last}")))
        .collect();
    let in_process: Vec<_> = (0..2)
        .map(|i| {
            let url = url.clone();
            std::thread::spawn(move || run_node(&url, &format!("executor-{i}"), first, last))
        })
        .collect();
    let mut acquired = 0;
    let mut skipped = 0;
    for t in in_process {
        let s = t.join().expect("an in-process node failed");
        assert_eq!(s.lock_failed, 0);
        acquired += s.lock_acquired;
        skipped += s.lock_skipped;
    }
    for mut c in children {
        let mut out = String::new();
        c.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        assert!(c.wait().unwrap().success(), "a child node failed: {out}");
        // The harness may have written "test node_process ... " before it on its line.
        let line = out
            .lines()
            .find_map(|l| l.find("NODE ").map(|i| &l[i..]))
            .unwrap_or_else(|| panic!("its report, in {out:?}"));
        let field = |k: &str| -> u64 {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(k))
                .and_then(|v| v.parse().ok())
                .unwrap()
        };
        assert_eq!(field("failed="), 0, "{line}");
        acquired += field("acquired=");
        skipped += field("skipped=");
    }
    let rows = server
        .client()
        .query(
            "SELECT tick, count(*), string_agg(node, ',') FROM runs GROUP BY tick ORDER BY tick",
            &[],
        )
        .unwrap();
    let ticks: Vec<(i64, i64, String)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let twice: Vec<_> = ticks.iter().filter(|t| t.1 != 1).collect();
    assert!(twice.is_empty(), "ticks run more than once: {twice:?}");
    let seen: Vec<i64> = ticks.iter().map(|t| t.0).collect();
    assert_eq!(
        seen,
        (first..=last).collect::<Vec<_>>(),
        "every tick ran: {ticks:?}"
    );
    assert!(
        skipped > 0,
        "the other nodes skipped what one ran ({acquired} acquired)"
    );
}

#[test]
fn a_killed_holder_is_taken_over_after_at_most_for() {
    let server = PgServer::start();
    let url = server.url();
    let mut db = server.client();
    db.batch_execute("CREATE TABLE holding (node TEXT NOT NULL)")
        .unwrap();
    let mut holder = child(format!("hold|{url}|doomed"));
    wait_for_the_child_to_hold(&mut db);
    let row = db
        .query_one(
            "SELECT token, extract(epoch FROM locked_at)::float8, extract(epoch FROM lock_until)::float8, locked_by \
             FROM schedpool_locks WHERE name = 'held-job'",
            &[],
        )
        .unwrap();
    let (old_token, old_at, old_until, by): (i64, f64, f64, String) =
        (row.get(0), row.get(1), row.get(2), row.get(3));
    assert_eq!(by, "doomed");
    holder.kill().expect("kill -9 the holder");
    holder.wait().unwrap();

    // This node runs the same job; it skips while the dead holder's lease lasts.
    let lock = pg_lock(&url, "survivor");
    let pool = ScheduledThreadPoolExecutor::new(1);
    const PERIOD: Duration = Duration::from_millis(500);
    let spec =
        Periodic::at_fixed_rate(PERIOD).exclusive(Exclusive::new(lock.clone(), "held-job", sec(3)));
    let ran = Arc::new(AtomicU64::new(0));
    let r = ran.clone();
    let fut = pool
        .schedule_periodic(spec, move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    assert!(
        wait_until(|| ran.load(Ordering::SeqCst) > 0),
        "the lock was taken over"
    );
    fut.cancel();
    pool.close();
    let row = db
        .query_one(
            "SELECT token, extract(epoch FROM locked_at)::float8, locked_by FROM schedpool_locks \
             WHERE name = 'held-job'",
            &[],
        )
        .unwrap();
    let (new_token, new_at, by): (i64, f64, String) = (row.get(0), row.get(1), row.get(2));
    assert_eq!(by, "survivor");
    assert!(new_token > old_token);
    assert!(
        new_at >= old_until,
        "never two holders: taken at {new_at}, old lease until {old_until}"
    );
    let after = new_at - old_at;
    assert!(
        after <= 3.0 + PERIOD.as_secs_f64() + 1.0,
        "taken over {after:.2} s after the dead holder's acquisition: within at_most_for + a period"
    );
    assert!(
        pool.stats().lock_skipped > 0,
        "it skipped while the lease lasted"
    );
}

/// `Exclusive::keep_alive` against the database: a run (in a child process) that lasts
/// three times its `at_most_for` keeps the lock all along; killed (`kill -9`), its lease
/// runs out at its last extension plus `at_most_for`, and another node takes over then,
/// not before.
#[test]
fn a_kept_alive_holder_keeps_the_lock_and_a_killed_one_loses_it_after_its_last_extension() {
    let server = PgServer::start();
    let url = server.url();
    let mut db = server.client();
    db.batch_execute("CREATE TABLE holding (node TEXT NOT NULL)")
        .unwrap();
    let mut holder = child(format!("keep|{url}|kept"));
    wait_for_the_child_to_hold(&mut db);
    let other = pg_lock(&url, "other");
    let until = |db: &mut postgres::Client| -> f64 {
        db.query_one(
            "SELECT extract(epoch FROM lock_until)::float8 FROM schedpool_locks WHERE name = 'kept-job'",
            &[],
        )
        .unwrap()
        .get(0)
    };
    let first_until = until(&mut db);
    let start = Instant::now();
    while start.elapsed() < sec(3) {
        assert!(
            other.try_acquire("kept-job", sec(1)).unwrap().is_none(),
            "the kept-alive lease is still valid after {:?}",
            start.elapsed()
        );
        std::thread::sleep(ms(100));
    }
    assert!(until(&mut db) > first_until + 2.0, "the lease was extended");
    holder.kill().expect("kill -9 the holder");
    holder.wait().unwrap();
    let last_until = until(&mut db); // no extension can come any more
    let lease = wait_for(sec(10), || other.try_acquire("kept-job", sec(1)).unwrap())
        .expect("taken over once the last extension ran out");
    let taken: f64 = db
        .query_one(
            "SELECT extract(epoch FROM locked_at)::float8 FROM schedpool_locks WHERE name = 'kept-job'",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(
        taken >= last_until,
        "never two holders: {taken} < {last_until}"
    );
    assert!(
        taken <= last_until + 1.0,
        "taken over {:.2} s after the lease ran out",
        taken - last_until
    );
    assert!(other.release(lease, Duration::ZERO).unwrap());
}

/// `Exclusive::catch_up` against the database: a node runs an aligned job and stops;
/// every node stays down over two ticks; the next node to start runs the job once at
/// once (the store's `locked_at` is the last run), then on its grid again.
#[test]
fn catch_up_after_two_missed_ticks_runs_once_at_once() {
    let server = PgServer::start();
    let url = server.url();
    let mut db = server.client();
    db.batch_execute("CREATE TABLE catchup_runs (node TEXT NOT NULL, at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp())")
        .unwrap();
    const P: Duration = Duration::from_millis(1000);
    let start = |node: &str| {
        let lock = pg_lock(&url, node);
        let pool = ScheduledThreadPoolExecutor::new(1);
        let mut conn = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        let me = node.to_owned();
        let spec = Periodic::at_fixed_rate(P)
            .aligned(Duration::ZERO)
            .exclusive(Exclusive::new(lock, "catchup-job", sec(30)).catch_up());
        let fut = pool
            .schedule_periodic(spec, move || {
                conn.execute("INSERT INTO catchup_runs (node) VALUES ($1)", &[&me])
                    .unwrap();
            })
            .unwrap();
        (pool, fut)
    };
    let runs_of = |db: &mut postgres::Client, node: &str| -> Vec<f64> {
        db.query(
            "SELECT extract(epoch FROM at)::float8 FROM catchup_runs WHERE node = $1 ORDER BY at",
            &[&node],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
    };
    let (a, fut_a) = start("a");
    assert!(wait_for(BOUND, || (!runs_of(&mut db, "a").is_empty()).then_some(())).is_some());
    fut_a.cancel();
    a.close();
    std::thread::sleep(P * 5 / 2); // every node down over two ticks

    let scheduled: f64 = db
        .query_one("SELECT extract(epoch FROM clock_timestamp())::float8", &[])
        .unwrap()
        .get(0);
    let (b, fut_b) = start("b");
    let runs = wait_for(BOUND, || {
        let r = runs_of(&mut db, "b");
        (r.len() >= 2).then_some(r)
    })
    .expect("the catch-up run and the next tick");
    fut_b.cancel();
    b.close();
    let next_tick = (scheduled / P.as_secs_f64()).ceil() * P.as_secs_f64();
    assert!(
        runs[0] - scheduled < 0.3,
        "caught up at once: {:.3} s after scheduling",
        runs[0] - scheduled
    );
    let before_tick = runs.iter().filter(|&&t| t < next_tick - 0.05).count();
    assert_eq!(
        before_tick, 1,
        "once, not once per missed tick: {runs:?}, tick {next_tick}"
    );
    let phase = runs[1] - runs[1].floor();
    assert!(!(0.2..=0.8).contains(&phase), "then on the grid: {runs:?}");
}

/// `Exclusive::catch_up` with `at_least_for` against the database: the catch-up's lease
/// leaves the grid's first tick its lock. The job last ran an hour ago; the catch-up runs
/// at once, and the first deadline, 500 ms later and so within `at_least_for` (1 s), runs
/// too, where it found the catch-up's own lease and skipped (`lock_skipped` 1).
#[test]
fn a_catch_up_lease_leaves_the_first_tick_its_lock() {
    let server = PgServer::start();
    let url = server.url();
    let lock = pg_lock(&url, "a");
    let last = lock.try_acquire("report", sec(30)).unwrap().unwrap();
    assert!(lock.release(last, Duration::ZERO).unwrap());
    let mut db = server.client();
    db.execute(
        "UPDATE schedpool_locks SET locked_at = now() - interval '1 hour' WHERE name = 'report'",
        &[],
    )
    .unwrap();
    let pool = ScheduledThreadPoolExecutor::new(1);
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let spec = Periodic::at_fixed_rate(sec(2))
        .initial_delay(ms(500))
        .exclusive(
            Exclusive::new(lock, "report", sec(30))
                .at_least_for(sec(1))
                .catch_up(),
        );
    let fut = pool
        .schedule_periodic(spec, move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    assert!(
        wait_for(BOUND, || (runs.load(Ordering::SeqCst) >= 2).then_some(())).is_some(),
        "the catch-up and the first tick ran: {:?}",
        pool.scheduled_tasks()
    );
    let stats = pool.stats();
    assert_eq!(stats.lock_skipped, 0, "the first tick found the lock free");
    fut.cancel();
    pool.close();
}

/// A one-shot under `schedule_exclusive` with `keep_alive` on the database: a run of
/// 2 s with `at_most_for` 600 ms, its lease extended every 150 ms, holds the lock all
/// along (another node polling never gets it) and is no overrun.
#[test]
fn a_kept_alive_exclusive_one_shot_holds_its_lock_and_is_no_overrun() {
    let server = PgServer::start();
    let url = server.url();
    let lock = pg_lock(&url, "a");
    let other = pg_lock(&url, "b");
    let pool = ScheduledThreadPoolExecutor::new(1);
    let spec = Exclusive::new(lock, "one-shot", ms(600)).keep_alive(ms(150));
    let polls = Arc::new(AtomicUsize::new(0));
    let p = polls.clone();
    let fut = pool
        .schedule_exclusive(Duration::ZERO, spec, move |_| {
            // The run itself: 2 s of work, during which another node keeps trying.
            let until = Instant::now() + sec(2);
            while Instant::now() < until {
                if let Some(stolen) = other.try_acquire("one-shot", sec(1)).unwrap() {
                    other.release(stolen, Duration::ZERO).unwrap();
                    return false;
                }
                p.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(ms(50));
            }
            true
        })
        .unwrap();
    assert!(fut.wait_timeout(BOUND));
    assert_eq!(
        fut.get().unwrap().unwrap(),
        Some(true),
        "the other node never got the lock"
    );
    assert!(polls.load(Ordering::SeqCst) >= 10);
    let stats = pool.stats();
    assert!(
        stats.lock_extended >= 9,
        "extended: {}",
        stats.lock_extended
    );
    assert_eq!(stats.lock_overruns, 0, "a kept-alive run is no overrun");
    pool.close();
}

/// A TCP proxy on loopback to the local port `target` that delays what it forwards by
/// `delay` each way (a link with a round trip of twice `delay`); its port. Each
/// connection gets a connection to `target` and, per direction, a reader that stamps
/// each chunk with when it is due and a writer that sends it then. Its threads end when
/// the connections close; the accepting one lasts as long as the test binary.
fn delaying_proxy(target: u16, delay: Duration) -> u16 {
    use std::io::Write;
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::sync::mpsc;
    fn pipe(mut from: TcpStream, mut to: TcpStream, delay: Duration) {
        let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
        std::thread::spawn(move || {
            let mut buf = vec![0; 64 * 1024];
            while let Ok(n @ 1..) = from.read(&mut buf) {
                if tx
                    .send((Instant::now() + delay, buf[..n].to_vec()))
                    .is_err()
                {
                    break;
                }
            }
        });
        std::thread::spawn(move || {
            while let Ok((due, bytes)) = rx.recv() {
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
                if to.write_all(&bytes).is_err() {
                    break;
                }
            }
            let _ = to.shutdown(Shutdown::Write);
        });
    }
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { break };
            let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                continue; // the client sees its connection closed
            };
            let _ = (client.set_nodelay(true), server.set_nodelay(true));
            let (Ok(c), Ok(s)) = (client.try_clone(), server.try_clone()) else {
                continue;
            };
            pipe(c, s, delay);
            pipe(server, client, delay);
        }
    });
    port
}

/// As above, with the holder 35 ms each way from the database (a 70 ms round trip, as
/// between hosts): each extension reaches the database about 220 ms after the previous
/// one, with some 400 ms of the lease left. Both paths keep the lock for the whole 2 s
/// run and are no overrun: the one-shot and `run_exclusive`.
#[test]
fn a_kept_alive_exclusive_run_over_a_slow_link_holds_its_lock_and_is_no_overrun() {
    let server = PgServer::start();
    let port = delaying_proxy(server.port(), ms(35));
    let lock = pg_lock(
        &format!("host=127.0.0.1 port={port} user=postgres dbname=postgres"),
        "a",
    );
    let other = pg_lock(&server.url(), "b");
    lock.check().expect("connects through the proxy");
    other.check().expect("connects");
    let pool = ScheduledThreadPoolExecutor::new(1);
    let spec = Exclusive::new(lock, "slow-link", ms(600)).keep_alive(ms(150));
    // The run: 2 s of work, during which the other node keeps trying.
    let run = move |other: Arc<PgLock>| {
        let mut polls = 0;
        let until = Instant::now() + sec(2);
        while Instant::now() < until {
            if let Some(stolen) = other.try_acquire("slow-link", sec(1)).unwrap() {
                other.release(stolen, Duration::ZERO).unwrap();
                return None;
            }
            polls += 1;
            std::thread::sleep(ms(50));
        }
        Some(polls)
    };
    let o = other.clone();
    let fut = pool
        .schedule_exclusive(Duration::ZERO, spec.clone(), move |_| run(o))
        .unwrap();
    assert!(fut.wait_timeout(BOUND));
    let polls = fut.get().unwrap().unwrap().expect("the one-shot ran");
    assert!(polls.expect("the other node never got the lock") >= 10);
    let stats = pool.stats();
    assert!(
        stats.lock_extended >= 5,
        "extended: {}",
        stats.lock_extended
    );
    assert_eq!(
        stats.lock_overruns, 0,
        "a kept-alive one-shot is no overrun"
    );

    let polls = pool.run_exclusive(&spec, |_| run(other)).unwrap();
    assert!(
        polls
            .expect("ran")
            .expect("the other node never got the lock")
            >= 10
    );
    let after = pool.stats();
    assert!(
        after.lock_extended >= stats.lock_extended + 5,
        "extended: {}",
        after.lock_extended - stats.lock_extended
    );
    assert_eq!(
        after.lock_overruns, 0,
        "a kept-alive run_exclusive is no overrun"
    );
    pool.close();
}

/// A TCP proxy on loopback to the local port `target` that forwards both ways until it
/// sees a client bind the release statement (the one prepared with `GREATEST(` in its
/// text): it forwards that request up to its `Sync`, lets the server run it to the end
/// and close, and closes the client's side without forwarding the reply (a connection
/// lost after the release committed). It does so once; later connections, and the rest
/// of the traffic, pass untouched. Its port, and how many releases it cut.
///
/// It reads the client's side as PostgreSQL's frontend protocol (an untyped startup
/// message, then typed ones), so the connection must not ask for TLS.
fn release_cutting_proxy(target: u16) -> (u16, Arc<AtomicUsize>) {
    use std::io::Write;
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::sync::atomic::AtomicBool;

    /// The client's messages, read as they pass: the release statement's name, and
    /// whether its bind (then the `Sync` after it) has gone by.
    #[derive(Default)]
    struct Frontend {
        buf: Vec<u8>,
        started: bool,
        release: Option<Vec<u8>>,
        bound: bool,
        synced: bool,
    }
    impl Frontend {
        fn feed(&mut self, bytes: &[u8]) {
            self.buf.extend_from_slice(bytes);
            loop {
                let head = usize::from(self.started);
                let Some(len) = self.buf.get(head..head + 4) else {
                    return;
                };
                let end = head + u32::from_be_bytes(len.try_into().unwrap()) as usize;
                if self.buf.len() < end {
                    return;
                }
                let msg: Vec<u8> = self.buf.drain(..end).collect();
                if !self.started {
                    // SSLRequest and GSSENCRequest come before the startup message.
                    let code = u32::from_be_bytes(msg[4..8].try_into().unwrap());
                    self.started = !matches!(code, 80_877_103 | 80_877_104);
                    continue;
                }
                let body = &msg[5..];
                let mut strings = body.split(|&b| b == 0);
                match msg[0] {
                    b'P' => {
                        let (name, query) = (strings.next().unwrap(), strings.next().unwrap());
                        if query.windows(9).any(|w| w == b"GREATEST(") {
                            self.release = Some(name.to_vec());
                        }
                    }
                    b'B' => {
                        let statement = strings.nth(1).unwrap();
                        self.bound |= self.release.as_deref() == Some(statement);
                    }
                    b'S' => self.synced |= self.bound,
                    _ => {}
                }
            }
        }
    }

    let cuts = Arc::new(AtomicUsize::new(0));
    let armed = Arc::new(AtomicBool::new(true));
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let port = listener.local_addr().unwrap().port();
    let counted = cuts.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { break };
            let Ok(mut server) = TcpStream::connect(("127.0.0.1", target)) else {
                continue; // the client sees its connection closed
            };
            let _ = (client.set_nodelay(true), server.set_nodelay(true));
            let (Ok(mut from_client), Ok(mut to_client)) = (client.try_clone(), client.try_clone())
            else {
                continue;
            };
            let Ok(mut from_server) = server.try_clone() else {
                continue;
            };
            // Set before the release reaches the server, so its reply is never forwarded.
            let cut = Arc::new(AtomicBool::new(false));
            let (cut_up, armed, counted) = (cut.clone(), armed.clone(), counted.clone());
            std::thread::spawn(move || {
                let mut frontend = Frontend::default();
                let mut buf = vec![0; 64 * 1024];
                while let Ok(n @ 1..) = from_client.read(&mut buf) {
                    frontend.feed(&buf[..n]);
                    let cutting = cut_up.load(Ordering::SeqCst)
                        || (frontend.bound && armed.swap(false, Ordering::SeqCst));
                    if cutting && !cut_up.swap(true, Ordering::SeqCst) {
                        counted.fetch_add(1, Ordering::SeqCst);
                    }
                    if server.write_all(&buf[..n]).is_err() {
                        break;
                    }
                    if cutting && frontend.synced {
                        break; // the server runs the release, reads the end, and closes
                    }
                }
                let _ = server.shutdown(Shutdown::Write);
            });
            std::thread::spawn(move || {
                let mut buf = vec![0; 64 * 1024];
                while let Ok(n @ 1..) = from_server.read(&mut buf) {
                    if !cut.load(Ordering::SeqCst) && to_client.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                // Read to the server's end: the release has committed, and its reply is
                // dropped here.
                let _ = client.shutdown(if cut.load(Ordering::SeqCst) {
                    Shutdown::Both
                } else {
                    Shutdown::Write
                });
            });
        }
    });
    (port, cuts)
}

/// A release that commits but whose reply is lost with its connection is retried on a
/// new one, which finds the lease already ended. With the row's token still the lease's,
/// nobody took the lock meanwhile: the run held it to its end and is no overrun. The
/// row is left as that first release made it: the lease's token, the lock free.
#[test]
fn a_release_whose_reply_is_lost_with_its_connection_is_no_overrun() {
    let server = PgServer::start();
    let (port, cuts) = release_cutting_proxy(server.port());
    let lock = pg_lock(
        &format!("host=127.0.0.1 port={port} user=postgres dbname=postgres sslmode=disable"),
        "a",
    );
    let other = pg_lock(&server.url(), "b");
    let pool = ScheduledThreadPoolExecutor::new(1);
    let spec = Exclusive::new(lock, "lost-reply", sec(10)).keep_alive(ms(100));
    let fut = pool
        .schedule_exclusive(Duration::ZERO, spec, |_| {
            std::thread::sleep(ms(250));
            true
        })
        .unwrap();
    assert!(fut.wait_timeout(BOUND));
    assert_eq!(fut.get().unwrap().unwrap(), Some(true));
    assert_eq!(
        cuts.load(Ordering::SeqCst),
        1,
        "the release's reply was lost"
    );
    let s = pool.stats();
    assert_eq!(
        (s.lock_acquired, s.lock_failed, s.lock_overruns),
        (1, 0, 0),
        "released once, no overrun"
    );
    pool.close();

    let row = server
        .client()
        .query_one(
            "SELECT token, locked_by FROM schedpool_locks WHERE name = 'lost-reply'",
            &[],
        )
        .unwrap();
    assert_eq!(
        (row.get::<_, i64>(0), row.get::<_, String>(1)),
        (1, "a".to_owned()),
        "nobody else acquired"
    );
    let lease = other
        .try_acquire("lost-reply", sec(10))
        .unwrap()
        .expect("the first release freed the lock");
    assert_eq!(lease.token(), 2);
    assert!(other.release(lease, Duration::ZERO).unwrap());
}

#[test]
fn a_database_restart_fails_runs_cleanly_and_they_resume() {
    let server = PgServer::start();
    let lock = pg_lock(&server.url(), "restart-node");
    let pool = ScheduledThreadPoolExecutor::new(2);
    let spec =
        Periodic::at_fixed_rate(ms(200)).exclusive(Exclusive::new(lock, "restart-job", sec(10)));
    let runs = Arc::new(AtomicU64::new(0));
    let r = runs.clone();
    let fut = pool
        .schedule_periodic(spec, move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let beats = Arc::new(AtomicU64::new(0));
    let b = beats.clone();
    let heartbeat = pool
        .schedule_at_fixed_rate(Duration::ZERO, ms(50), move || {
            b.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    assert!(wait_until(|| runs.load(Ordering::SeqCst) >= 3));

    server.stop();
    let failed_before = pool.stats().lock_failed;
    assert!(
        wait_until(|| pool.stats().lock_failed >= failed_before + 3),
        "runs fail while the database is down"
    );
    let (runs_down, beats_down) = (runs.load(Ordering::SeqCst), beats.load(Ordering::SeqCst));
    assert!(
        wait_until(|| beats.load(Ordering::SeqCst) > beats_down + 5),
        "the pool's other work goes on"
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        runs_down,
        "no run without the lock"
    );

    server.start_again();
    assert!(
        wait_until(|| runs.load(Ordering::SeqCst) >= runs_down + 3),
        "runs resume after the restart"
    );
    assert!(!fut.is_done(), "the schedule was kept");
    fut.cancel();
    heartbeat.cancel();
    pool.close();
}

#[test]
fn a_connection_dropped_mid_run_still_releases_the_lease() {
    let server = PgServer::start();
    let url = server.url();
    let lock = pg_lock(&url, "dropped-node");
    let pool = ScheduledThreadPoolExecutor::new(1);
    let spec = Periodic::at_fixed_rate(sec(60))
        .max_runs(1)
        .exclusive(Exclusive::new(lock.clone(), "drop-job", sec(60)));
    let mut admin = server.client();
    let killed = Arc::new(AtomicU64::new(0));
    let k = killed.clone();
    let fut = pool
        .schedule_periodic(spec, move || {
            // The lock's own connection is cut while the run holds the lease.
            let row = admin
                .query_one(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                     WHERE application_name = 'dropped-node'",
                    &[],
                )
                .unwrap();
            k.store(row.get::<_, i64>(0) as u64, Ordering::SeqCst);
        })
        .unwrap();
    assert!(fut.wait_timeout(BOUND));
    fut.get().unwrap();
    assert_eq!(killed.load(Ordering::SeqCst), 1, "the connection was cut");
    let s = pool.stats();
    assert_eq!((s.lock_acquired, s.lock_failed, s.lock_overruns), (1, 0, 0));
    assert_eq!(
        lock.holder("drop-job").unwrap(),
        None,
        "released on a new connection"
    );
    pool.close();
}

#[test]
fn a_database_that_stops_answering_costs_each_call_at_most_the_timeout() {
    let server = PgServer::start();
    let url = server.url();
    let lock = pg_lock(&url, "slow-node");
    let lease = lock.try_acquire("slow-job", sec(60)).unwrap().unwrap();
    assert!(lock.release(lease, Duration::ZERO).unwrap());

    // Slow: another session holds the lock's row; the statement waits for it until the
    // statement timeout.
    let mut blocker = server.client();
    blocker
        .batch_execute("BEGIN; SELECT * FROM schedpool_locks WHERE name = 'slow-job' FOR UPDATE")
        .unwrap();
    let t0 = Instant::now();
    assert!(lock.try_acquire("slow-job", sec(60)).is_err());
    let slow = t0.elapsed();
    assert!(slow < BOUND, "bounded: {slow:?}");
    blocker.batch_execute("ROLLBACK").unwrap();

    // Silent: the lock's server process is stopped (as a hung server), so not even the
    // statement timeout answers; the caller gives up at its own timeout and the next
    // call runs on a new connection.
    let pid: i32 = server
        .client()
        .query_one(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'slow-node'",
            &[],
        )
        .unwrap()
        .get(0);
    let signal = |sig: &str| {
        assert!(Command::new("kill")
            .args([sig, &pid.to_string()])
            .status()
            .unwrap()
            .success());
    };
    signal("-STOP");
    let t0 = Instant::now();
    let err = lock.try_acquire("slow-job", sec(60)).unwrap_err();
    assert!(matches!(err, LockError::Timeout(_)), "{err}");
    assert!(t0.elapsed() < BOUND);
    let lease = lock
        .try_acquire("slow-job", sec(60))
        .expect("a fresh connection answers")
        .expect("the lock is free");
    assert!(lock.release(lease, Duration::ZERO).unwrap());
    signal("-CONT");
}
