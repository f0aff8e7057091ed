//! Unit tests of `cluster/redis/mod.rs` (the server itself: `tests/cluster_redis*.rs`).

use super::*;

#[test]
fn keys_are_the_prefix_the_kind_and_the_name_as_bytes() {
    let lock = RedisLock::builder("redis://127.0.0.1:1")
        .prefix("app:{locks}:")
        .build()
        .unwrap();
    assert_eq!(lock.key(LOCK, "job"), b"app:{locks}:lock:job");
    assert_eq!(lock.key(PAUSE, "job"), b"app:{locks}:pause:job");
    assert_eq!(lock.key(LOCK, ""), b"app:{locks}:lock:");
    assert_eq!(
        lock.key(LOCK, "é\n\0*"),
        "app:{locks}:lock:é\n\0*".as_bytes()
    );
    // A lock's and a pause's keys never meet, whatever the names.
    assert_ne!(lock.key(LOCK, "pause:x"), lock.key(PAUSE, "x"));
    let odd = RedisLock::builder("redis://127.0.0.1:1")
        .prefix([0xff, 0x00, b' '])
        .build()
        .unwrap();
    assert_eq!(odd.key(LOCK, "j"), b"\xff\x00 lock:j");
}

#[test]
fn bad_configuration_is_an_error_that_says_what_is_wrong() {
    let config = |r: Result<RedisLock, LockError>| match r {
        Err(LockError::Config(msg)) => msg,
        other => panic!("expected a configuration error, got {other:?}"),
    };
    let msg = config(RedisLock::new("postgres://127.0.0.1"));
    assert!(msg.contains("Redis URL"), "{msg}");
    let msg = config(RedisLock::new("redis://127.0.0.1/not-a-number"));
    assert!(msg.contains("database"), "{msg}");
    let msg = config(RedisLock::builder("redis://127.0.0.1").database(-1).build());
    assert!(msg.contains("negative"), "{msg}");
    #[cfg(not(feature = "redis-tls"))]
    {
        let msg = config(RedisLock::new("rediss://127.0.0.1"));
        assert!(msg.contains("redis-tls"), "{msg}");
    }
    #[cfg(feature = "redis-tls")]
    {
        let msg = config(RedisLock::new("rediss://127.0.0.1/#insecure"));
        assert!(msg.contains("insecure"), "{msg}");
        let msg = config(
            RedisLock::builder("rediss://127.0.0.1")
                .tls_root_certificate("/nonexistent/ca.pem")
                .build(),
        );
        assert!(msg.contains("/nonexistent/ca.pem"), "{msg}");
    }
}

#[test]
fn the_builder_overrides_the_url_and_hides_the_password() {
    let lock = RedisLock::builder("redis://u:secret@127.0.0.1:7/2")
        .database(5)
        .username("ops")
        .node_name("node a\n")
        .build()
        .unwrap();
    let shown = format!("{lock:?}");
    assert!(shown.contains("database 5"), "{shown}");
    assert!(shown.contains("as user"), "{shown}");
    assert!(!shown.contains("secret"), "{shown}");
    assert_eq!(lock.node_name(), "node a\n");
    assert_eq!(client_name(lock.node_name()), "schedpool:node_a_");
    let builder = RedisLock::builder("redis://u:secret@127.0.0.1:7/2").password("hunter2");
    let shown = format!("{builder:?}");
    assert!(
        !shown.contains("secret") && !shown.contains("hunter2"),
        "{shown}"
    );
}

#[test]
fn a_server_that_is_down_is_a_clear_error_within_the_bound() {
    // Port 1 on loopback: nothing listens there.
    let lock = RedisLock::builder("redis://127.0.0.1:1")
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let t0 = std::time::Instant::now();
    let err = lock.try_acquire("job", Duration::from_secs(1)).unwrap_err();
    assert!(t0.elapsed() < Duration::from_secs(2));
    let msg = err.to_string();
    assert!(msg.contains("connection refused"), "{msg}");
    assert!(msg.contains("127.0.0.1:1"), "{msg}");
}
