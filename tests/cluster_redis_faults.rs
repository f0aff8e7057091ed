//! `RedisLock` against bad input and a faulty server (`tests/common/redis.rs` starts a
//! server per test): odd bytes in names and prefixes, a wrong password or ACL, a wrong
//! database index, a server that is down, slow (`DEBUG SLEEP`), stopped, full
//! (`maxmemory` with `noeviction`) or restarted, a connection killed mid-run, and TLS
//! (`rediss://`, feature `redis-tls`). Each fault is a `LockError` that names its cause,
//! and an exclusive job meanwhile skips its runs (counted in `lock_failed`): nothing
//! runs twice, nothing runs without the lock. Needs the cargo feature `redis` and
//! `redis-server`.
#![cfg(feature = "redis")]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::redis::{Options, RedisServer};
use common::{ms, sec, wait_until};
use schedpool::cluster::{ClusterLock, Exclusive, LockError, RedisLock};
use schedpool::{LastRun, Periodic, ScheduledFuture, ScheduledThreadPoolExecutor};

fn conn(url: &str) -> redis::Connection {
    redis::Client::open(url)
        .and_then(|c| c.get_connection_with_timeout(sec(5)))
        .expect("connect to the test server")
}

/// A lock with a 1 s bound on each call.
fn lock_at(url: &str) -> Arc<RedisLock> {
    Arc::new(RedisLock::builder(url).timeout(sec(1)).build().unwrap())
}

/// A store error's whole text (its causes included).
fn store_error(r: Result<impl std::fmt::Debug, LockError>) -> String {
    match r {
        Err(e @ LockError::Store(_)) => e.to_string(),
        other => panic!("expected a store error, got {other:?}"),
    }
}

/// A pool running an exclusive job every 100 ms on `lock`: the pool, the job and its
/// count of runs.
fn job_on(
    lock: Arc<RedisLock>,
) -> (
    ScheduledThreadPoolExecutor,
    ScheduledFuture<()>,
    Arc<AtomicU64>,
) {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let runs = Arc::new(AtomicU64::new(0));
    let r = runs.clone();
    let spec = Periodic::at_fixed_rate(ms(100))
        .name("guarded")
        .exclusive(Exclusive::new(lock, "guarded", sec(10)));
    let fut = pool
        .schedule_periodic(spec, move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    (pool, fut, runs)
}

/// While the store fails, the job's runs are skipped as `LockFailed` and counted, never
/// run; the schedule is kept.
fn runs_fail_cleanly(
    pool: &ScheduledThreadPoolExecutor,
    fut: &ScheduledFuture<()>,
    runs: &AtomicU64,
) {
    let failed = pool.stats().lock_failed;
    let ran = runs.load(Ordering::SeqCst);
    assert!(
        wait_until(|| pool.stats().lock_failed >= failed + 2),
        "runs fail"
    );
    assert_eq!(runs.load(Ordering::SeqCst), ran, "no run without the lock");
    let last = pool
        .scheduled_tasks()
        .into_iter()
        .find(|t| t.name.as_deref() == Some("guarded"));
    assert!(
        matches!(last.map(|t| t.last_run), Some(Some(LastRun::LockFailed))),
        "the task list says the store failed"
    );
    assert!(!fut.is_done(), "the schedule is kept");
}

#[test]
fn odd_bytes_in_names_and_prefixes_are_keys_like_any_other() {
    let server = RedisServer::start();
    let url = server.url();
    let mut c = conn(&url);
    let prefixes: [&[u8]; 5] = [b"", b"\xff\x00 \n", b"{tag}:", "ünï:".as_bytes(), b"*?[]"];
    let locks: Vec<_> = prefixes
        .iter()
        .map(|p| RedisLock::builder(&url).prefix(p).build().unwrap())
        .collect();
    for (prefix, lock) in prefixes.iter().zip(&locks) {
        for name in ["", "a b", "\0", "é\n", "*"] {
            lock.try_acquire(name, sec(30)).unwrap().expect("free");
            let mut key = prefix.to_vec();
            key.extend_from_slice(b"lock:");
            key.extend_from_slice(name.as_bytes());
            let exists: bool = redis::cmd("EXISTS").arg(&key).query(&mut c).unwrap();
            assert!(exists, "the key is the prefix, lock: and the name: {key:?}");
            assert!(lock.try_acquire(name, sec(30)).unwrap().is_none());
        }
    }
    // Each prefix is a store of its own: every lock above was free under each.
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(&mut c).unwrap();
    assert_eq!(keys.len(), prefixes.len() * 5, "{keys:?}");
    // A key of another kind under the prefix (another program's) is an error that says so.
    redis::cmd("SET")
        .arg("schedpool:lock:taken")
        .arg("x")
        .query::<()>(&mut c)
        .unwrap();
    let err = store_error(lock_at(&url).try_acquire("taken", sec(1)));
    assert!(err.contains("another kind of value"), "{err}");
}

#[test]
fn a_wrong_password_or_acl_is_an_error_that_says_so() {
    let server = RedisServer::start();
    let url = server.url();
    let mut c = conn(&url);
    redis::cmd("ACL")
        .arg("SETUSER")
        .arg("app")
        .arg("on")
        .arg(">right")
        .arg("~schedpool:*")
        .arg("+evalsha")
        .arg("+script|load")
        .arg("+ping")
        .arg("+client|setname")
        .arg("+time")
        .arg("+hget")
        .arg("+hmget")
        .arg("+hset")
        .arg("+del")
        .query::<()>(&mut c)
        .unwrap();
    redis::cmd("ACL")
        .arg("SETUSER")
        .arg("other")
        .arg("on")
        .arg(">right")
        .arg("~other:*")
        .arg("+@all")
        .query::<()>(&mut c)
        .unwrap();
    let port = server.port();
    let app = |user: &str, pass: &str| {
        Arc::new(
            RedisLock::builder(&format!("redis://127.0.0.1:{port}/0"))
                .username(user)
                .password(pass)
                .timeout(sec(1))
                .build()
                .unwrap(),
        )
    };
    let right = app("app", "right");
    let lease = right
        .try_acquire("job", sec(30))
        .unwrap()
        .expect("the ACL allows it");
    assert!(right.release(lease, Duration::ZERO).unwrap());

    let err = store_error(app("app", "wrong").try_acquire("job", sec(1)));
    assert!(
        err.contains("authentication failed") && err.contains("\"app\""),
        "{err}"
    );
    let err = store_error(app("other", "right").try_acquire("job", sec(1)));
    assert!(err.contains("may not") && err.contains("prefix"), "{err}");

    // A password for the default user: none given is "requires a password".
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg("pw")
        .query::<()>(&mut c)
        .unwrap();
    let err = store_error(lock_at(&url).try_acquire("job", sec(1)));
    assert!(err.contains("requires a password"), "{err}");
    let (pool, fut, runs) = job_on(app("default", "nope"));
    runs_fail_cleanly(&pool, &fut, &runs);
    fut.cancel();
    pool.close();
    let with = Arc::new(
        RedisLock::builder(&format!("redis://:pw@127.0.0.1:{port}/0"))
            .build()
            .unwrap(),
    );
    assert!(with.try_acquire("job", sec(1)).unwrap().is_some());
}

#[test]
fn a_wrong_database_index_is_an_error_that_says_so() {
    let server = RedisServer::start();
    let lock = Arc::new(
        RedisLock::builder(&server.url())
            .database(99)
            .timeout(sec(1))
            .build()
            .unwrap(),
    );
    let err = store_error(lock.check());
    assert!(
        err.contains("no database of that index") && err.contains("database 99"),
        "{err}"
    );
    let other = RedisLock::builder(&server.url())
        .database(3)
        .build()
        .unwrap();
    let lease = other
        .try_acquire("job", sec(30))
        .unwrap()
        .expect("free in database 3");
    assert!(
        lock_at(&server.url())
            .try_acquire("job", sec(30))
            .unwrap()
            .is_some(),
        "database 0 is another store"
    );
    assert!(other.release(lease, Duration::ZERO).unwrap());
}

#[test]
fn a_server_that_is_down_skips_runs_until_it_is_up() {
    let server = RedisServer::start();
    let url = server.url();
    server.kill();
    let lock = lock_at(&url);
    let t0 = Instant::now();
    let err = store_error(lock.try_acquire("job", sec(1)));
    assert!(t0.elapsed() < sec(1), "refused at once");
    assert!(
        err.contains("connection refused") && err.contains(&server.port().to_string()),
        "{err}"
    );
    let (pool, fut, runs) = job_on(lock);
    runs_fail_cleanly(&pool, &fut, &runs);
    server.start_again();
    assert!(
        wait_until(|| runs.load(Ordering::SeqCst) >= 3),
        "runs resume"
    );
    // Killed and started again under the running job: the runs between fail, and the
    // connections made before are replaced.
    server.kill();
    runs_fail_cleanly(&pool, &fut, &runs);
    server.start_again();
    let ran = runs.load(Ordering::SeqCst);
    assert!(
        wait_until(|| runs.load(Ordering::SeqCst) >= ran + 3),
        "runs resume again"
    );
    fut.cancel();
    pool.close();
}

/// A slow server (`DEBUG SLEEP`): the call times out within its bound, and a late reply
/// is never read as another call's answer (RS1).
#[test]
fn a_slow_server_times_out_within_the_bound_and_its_late_reply_is_never_read() {
    let server = RedisServer::start();
    let url = server.url();
    let lock = lock_at(&url);
    lock.check().unwrap(); // a connection in the idle list
    let sleeper = std::thread::spawn({
        let url = url.clone();
        move || {
            redis::cmd("DEBUG")
                .arg("SLEEP")
                .arg(2)
                .query::<()>(&mut conn(&url))
        }
    });
    std::thread::sleep(ms(200));
    let t0 = Instant::now();
    let err = lock.try_acquire("job", sec(60)).unwrap_err();
    assert!(matches!(err, LockError::Timeout(d) if d == sec(1)), "{err}");
    assert!(
        t0.elapsed() < sec(1) + ms(300),
        "bounded: {:?}",
        t0.elapsed()
    );
    sleeper.join().unwrap().unwrap();
    // The server may have run the acquisition after the sleep (a lease nobody uses) or
    // dropped it with the closed connection; either way the next calls read answers of
    // their own.
    let holder = lock
        .holder("job")
        .expect("an answer of its own, not a late one");
    assert!(
        holder.as_deref().is_none_or(|h| h == lock.node_name()),
        "a late reply read as the holder: {holder:?}"
    );
    let again = lock.try_acquire("job", sec(60)).unwrap();
    assert_eq!(
        holder.is_some(),
        again.is_none(),
        "held iff the late acquisition ran"
    );
    assert!(lock.check().is_ok());
}

/// A stopped server (`SIGSTOP`: a hung host): each call fails at its bound; continued,
/// the next call answers.
#[test]
fn a_stopped_server_costs_each_call_its_bound() {
    let server = RedisServer::start();
    let lock = lock_at(&server.url());
    lock.check().unwrap();
    server.signal("-STOP");
    for _ in 0..2 {
        let t0 = Instant::now();
        let err = lock.try_acquire("job", sec(60)).unwrap_err();
        assert!(matches!(err, LockError::Timeout(_)), "{err}");
        assert!(t0.elapsed() < sec(1) + ms(300), "{:?}", t0.elapsed());
    }
    server.signal("-CONT");
    assert!(lock.try_acquire("job", sec(60)).unwrap().is_some());
}

/// A full server (`maxmemory` with `noeviction`) refuses every write: an acquisition of
/// a free lock is an error that says so, a held lock is still seen as held, and the job
/// skips its runs until memory is freed.
#[test]
fn a_full_server_refuses_acquisitions_and_the_job_skips_them() {
    let server = RedisServer::start_with(Options {
        maxmemory: Some(4 << 20),
        ..Options::default()
    });
    let url = server.url();
    let mut c = conn(&url);
    let lock = lock_at(&url);
    let held = lock.try_acquire("held", sec(60)).unwrap().expect("free");
    redis::cmd("DEBUG")
        .arg("POPULATE")
        .arg(100_000)
        .arg("filler")
        .arg(100)
        .query::<()>(&mut c)
        .unwrap();
    let err = store_error(lock.try_acquire("free", sec(1)));
    assert!(err.contains("out of memory"), "{err}");
    assert!(
        lock.try_acquire("held", sec(1)).unwrap().is_none(),
        "read-only paths still answer"
    );
    let (pool, fut, runs) = job_on(lock.clone());
    runs_fail_cleanly(&pool, &fut, &runs);
    redis::cmd("FLUSHDB").query::<()>(&mut c).unwrap();
    assert!(
        wait_until(|| runs.load(Ordering::SeqCst) >= 2),
        "runs resume once memory is free"
    );
    fut.cancel();
    pool.close();
    drop(held);
}

/// The lock's connection is killed (`CLIENT KILL`) while a run holds the lease: the
/// release goes on a new connection and succeeds (RS2).
#[test]
fn a_connection_killed_mid_run_still_releases_the_lease() {
    let server = RedisServer::start();
    let url = server.url();
    let lock = Arc::new(
        RedisLock::builder(&url)
            .node_name("dropped")
            .timeout(sec(2))
            .build()
            .unwrap(),
    );
    let pool = ScheduledThreadPoolExecutor::new(1);
    let killed = Arc::new(AtomicU64::new(0));
    let k = killed.clone();
    let mut admin = conn(&url);
    let spec = Exclusive::new(lock.clone(), "drop-job", sec(60));
    let ran = pool.run_exclusive(&spec, move |_| {
        let n: u64 = redis::cmd("CLIENT")
            .arg("KILL")
            .arg("USER")
            .arg("default")
            .arg("SKIPME")
            .arg("yes")
            .query(&mut admin)
            .unwrap();
        k.store(n, Ordering::SeqCst);
    });
    assert!(ran.unwrap().is_some());
    assert!(
        killed.load(Ordering::SeqCst) >= 1,
        "the lock's connection was killed"
    );
    let s = pool.stats();
    assert_eq!((s.lock_acquired, s.lock_failed, s.lock_overruns), (1, 0, 0));
    assert_eq!(
        lock.holder("drop-job").unwrap(),
        None,
        "released on a new connection"
    );
    pool.close();
}

/// A TCP proxy on loopback to the local port `target` that forwards both ways until it
/// sees a client's command that holds `marker`: it forwards that one, drops the server's
/// reply and closes the client's connection (a connection lost after the command ran).
/// It does so once; later connections pass untouched. Its port, and how many it cut.
fn reply_cutting_proxy(target: u16, marker: &'static [u8]) -> (u16, Arc<AtomicU64>) {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::sync::atomic::AtomicBool;
    let cuts = Arc::new(AtomicU64::new(0));
    let armed = Arc::new(AtomicBool::new(true));
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let port = listener.local_addr().unwrap().port();
    let counted = cuts.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { break };
            let Ok(mut server) = TcpStream::connect(("127.0.0.1", target)) else {
                continue;
            };
            let (Ok(mut from_client), Ok(mut to_client)) = (client.try_clone(), client.try_clone())
            else {
                continue;
            };
            let Ok(mut from_server) = server.try_clone() else {
                continue;
            };
            let cut = Arc::new(AtomicBool::new(false));
            let (cut_up, armed, counted) = (cut.clone(), armed.clone(), counted.clone());
            std::thread::spawn(move || {
                let mut buf = vec![0; 64 * 1024];
                while let Ok(n @ 1..) = from_client.read(&mut buf) {
                    let hit = buf[..n].windows(marker.len()).any(|w| w == marker);
                    // Set before the command reaches the server: its reply is never forwarded.
                    if hit && armed.swap(false, Ordering::SeqCst) {
                        cut_up.store(true, Ordering::SeqCst);
                        counted.fetch_add(1, Ordering::SeqCst);
                    }
                    if server.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = server.shutdown(Shutdown::Write);
            });
            std::thread::spawn(move || {
                let mut buf = vec![0; 64 * 1024];
                while let Ok(n @ 1..) = from_server.read(&mut buf) {
                    if cut.load(Ordering::SeqCst) {
                        let _ = client.shutdown(Shutdown::Both); // the reply is dropped
                        break;
                    }
                    if to_client.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    (port, cuts)
}

/// A release that ran but whose reply was lost with its connection is retried on a new
/// one, which finds the lease ended with the token still the lock's: nobody took the lock
/// meanwhile, so the run is no overrun (`PgLock`'s rule). The record is as the first try
/// left it: the lease's token, the lock free.
#[test]
fn a_release_whose_reply_is_lost_with_its_connection_is_no_overrun() {
    let server = RedisServer::start();
    // The release's `at_least_for` (7 µs, so that its first try ends the lease) is the
    // marker: its argument "7", the command's last.
    let (port, cuts) = reply_cutting_proxy(server.port(), b"$1\r\n7\r\n");
    let lock = Arc::new(
        RedisLock::builder(&format!("redis://127.0.0.1:{port}/0"))
            .timeout(sec(2))
            .build()
            .unwrap(),
    );
    // The scripts are loaded, so the release's first try runs its script.
    let warm = lock.try_acquire("warm-up", sec(60)).unwrap().unwrap();
    assert!(lock.release(warm, Duration::ZERO).unwrap());
    let pool = ScheduledThreadPoolExecutor::new(1);
    let spec =
        Exclusive::new(lock.clone(), "lost-reply", sec(60)).at_least_for(Duration::from_micros(7));
    let ran = pool.run_exclusive(&spec, |lease| lease.token()).unwrap();
    let token = ran.expect("ran");
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
    let mut c = conn(&server.url());
    let kept: String = redis::cmd("HGET")
        .arg("schedpool:lock:lost-reply")
        .arg("token")
        .query(&mut c)
        .unwrap();
    assert_eq!(kept, token.to_string(), "nobody else acquired");
    let next = lock_at(&server.url())
        .try_acquire("lost-reply", sec(60))
        .unwrap();
    let next = next.expect("the first try released the lock");
    assert!(next.token() > token);
}

#[cfg(feature = "redis-tls")]
#[test]
fn tls_checks_the_servers_certificate_and_presents_the_clients() {
    let server = RedisServer::start_with(Options {
        tls: true,
        client_certs: true,
        ..Options::default()
    });
    let url = server.url(); // rediss://localhost:port
    let tls = |ca: &str, client: bool, url: &str| {
        let mut b = RedisLock::builder(url)
            .timeout(sec(2))
            .tls_root_certificate(server.file(ca));
        if client {
            b = b.tls_client_certificate(server.file("client.crt"), server.file("client.key"));
        }
        b.build().unwrap()
    };
    let good = tls("ca.crt", true, &url);
    let lease = good.try_acquire("job", sec(30)).unwrap().expect("over TLS");
    assert!(good.release(lease, Duration::ZERO).unwrap());

    let err = store_error(tls("other.crt", true, &url).check());
    assert!(
        err.to_lowercase().contains("certificate"),
        "a CA that signed nothing: {err}"
    );
    let by_ip = url.replace("localhost", "127.0.0.1");
    let err = store_error(tls("ca.crt", true, &by_ip).check());
    assert!(
        err.to_lowercase().contains("certificate"),
        "a name the certificate lacks: {err}"
    );
    assert!(
        tls("ca.crt", false, &url).check().is_err(),
        "no client certificate"
    );
    let plain = url.replace("rediss://", "redis://");
    assert!(lock_at(&plain).check().is_err(), "plain text to a TLS port");
    // A key that is not the certificate's is refused when the lock is built.
    let err = RedisLock::builder(&url)
        .tls_client_certificate(server.file("client.crt"), server.file("client-ec.key"))
        .build()
        .unwrap_err();
    assert!(matches!(err, LockError::Config(_)), "{err}");
}
