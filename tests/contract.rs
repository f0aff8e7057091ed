//! The store contract kit (`cluster::contract`) against the crate's three stores:
//! `LocalLock` in the process, `PgLock` on a PostgreSQL server and `RedisLock` on a Redis
//! server, each started by the test (`tests/common/`). Every case passes, none is
//! unsupported. Needs the cargo feature `contract` (and `postgres`, `redis` for theirs).
#![cfg(feature = "contract")]

mod common;

use std::sync::Arc;
use std::time::Duration;

use schedpool::cluster::contract::{Contract, Report};
use schedpool::cluster::LocalLock;

/// Every case passed and none was unsupported.
fn assert_kept(store: &str, report: &Report) {
    println!("{store}: {report}");
    report.assert_passed();
    assert_eq!(report.unsupported().count(), 0, "{store}: {report}");
}

#[test]
fn local_lock_keeps_the_contract() {
    let store = Arc::new(LocalLock::new());
    let report = Contract::new(move || Arc::clone(&store))
        .unit(Duration::from_millis(100))
        .run();
    assert_kept("LocalLock", &report);
}

#[cfg(feature = "postgres")]
#[test]
fn pg_lock_keeps_the_contract() {
    let server = common::pg::PgServer::start();
    let url = server.url();
    // Each handle a lock of its own: its own connection, as a node's.
    let report = Contract::new(move || {
        schedpool::cluster::PgLock::builder(&url)
            .timeout(Duration::from_secs(2))
            .build()
            .expect("a valid configuration")
    })
    .run();
    assert_kept("PgLock", &report);
}

#[cfg(feature = "redis")]
#[test]
fn redis_lock_keeps_the_contract() {
    let server = common::redis::RedisServer::start();
    let url = server.url();
    let report = Contract::new(move || {
        schedpool::cluster::RedisLock::builder(&url)
            .timeout(Duration::from_secs(2))
            .build()
            .expect("a valid configuration")
    })
    .run();
    assert_kept("RedisLock", &report);
}
