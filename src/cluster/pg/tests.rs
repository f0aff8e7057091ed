//! Unit tests of `cluster/pg/mod.rs` (the server itself: `tests/cluster_pg.rs`).

use super::*;

#[test]
fn table_names_are_checked_before_they_reach_sql() {
    for ok in ["schedpool_locks", "app.locks", "_x1", "L"] {
        assert!(valid_table(ok), "{ok}");
    }
    for bad in [
        "",
        "1abc",
        "a-b",
        "a.b.c",
        "locks; DROP TABLE x",
        "a.",
        ".a",
        "ä",
    ] {
        assert!(!valid_table(bad), "{bad}");
    }
    let long = "a".repeat(64);
    assert!(!valid_table(&long));
}

#[test]
fn bad_configuration_is_an_error_not_a_panic() {
    assert!(matches!(
        PgLock::builder("host=localhost").table("x;y").build(),
        Err(LockError::Config(_))
    ));
    assert!(matches!(
        PgLock::new("postgresql://[::1"),
        Err(LockError::Config(_))
    ));
}

#[test]
fn dropping_the_lock_ends_its_connection_thread() {
    let lock = PgLock::builder("host=127.0.0.1 port=1 user=x dbname=x")
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    assert!(lock.check().is_err()); // started the thread, which holds the state
    let state = std::sync::Arc::downgrade(&lock.shared);
    drop(lock);
    let give_up = Instant::now() + Duration::from_secs(10);
    while state.upgrade().is_some() {
        assert!(
            Instant::now() < give_up,
            "the connection thread outlived its lock"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn an_unreachable_server_fails_within_the_timeout() {
    // Port 1 on loopback: nothing listens there, so the connection is refused.
    let lock = PgLock::builder("host=127.0.0.1 port=1 user=x dbname=x")
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let t0 = Instant::now();
    assert!(lock.try_acquire("job", Duration::from_secs(1)).is_err());
    assert!(lock.check().is_err());
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "each call is bounded by the timeout"
    );
}

/// libpq's rule: a Unix-domain socket carries no TLS, so none is asked of the crate and
/// no file is read; over TCP the same string reads its files.
#[cfg(all(unix, feature = "postgres-tls"))]
#[test]
fn a_unix_socket_never_uses_tls() {
    let missing = "sslmode=verify-full sslrootcert=/no/such/root.pem sslcert=/no/such/c.pem";
    let lock = PgLock::new(&format!("host=/var/run/postgresql {missing}")).unwrap();
    assert_eq!(
        lock.shared.config.get_ssl_mode(),
        postgres::config::SslMode::Disable
    );
    assert!(
        lock.shared.tls.is_none(),
        "no connector: rustls refuses a socket's empty name"
    );
    match PgLock::new(&format!("host=db {missing}")) {
        Err(LockError::Config(msg)) => assert!(msg.contains("/no/such/root.pem"), "{msg}"),
        other => panic!("{other:?}"),
    }
    let lock = PgLock::new("host=db sslmode=verify-ca sslrootcert=system").err();
    assert!(
        matches!(lock, Some(LockError::Config(_))),
        "system is verify-full only"
    );
}
