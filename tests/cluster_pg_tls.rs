//! `PgLock` over TLS (cargo feature `postgres-tls`) against a real server that accepts TLS
//! connections only, with a certificate for `localhost` signed by a test CA
//! (`tests/common/pg.rs` makes both with the `openssl` command): each `sslmode`, a right
//! and a wrong CA, a right and a wrong host name, and a plain connection refused.
#![cfg(feature = "postgres-tls")]

mod common;

use std::time::Duration;

use common::pg::PgServer;
use schedpool::cluster::{ClusterLock, LockError, PgLock};

fn lock(conn: &str) -> Result<PgLock, LockError> {
    PgLock::builder(conn)
        .timeout(Duration::from_secs(5))
        .build()
}

/// Connects, takes and gives back a lock (the whole protocol over the connection), and
/// returns the lock, still connected.
fn works(conn: &str) -> PgLock {
    let l = lock(conn).unwrap_or_else(|e| panic!("{conn}: {e}"));
    l.check().unwrap_or_else(|e| panic!("{conn}: {e}"));
    let lease = l
        .try_acquire("tls-job", Duration::from_secs(30))
        .unwrap()
        .expect("free");
    assert!(l.release(lease, Duration::ZERO).unwrap());
    l
}

/// The error of a connection that must fail.
fn fails(conn: &str) -> String {
    let l = lock(conn).unwrap_or_else(|e| panic!("{conn}: {e}"));
    l.check().expect_err(conn).to_string()
}

#[test]
fn each_sslmode_against_a_server_that_demands_tls() {
    let server = PgServer::start_tls();
    let port = server.port();
    let at = |host: &str, extra: &str| {
        format!("host={host} port={port} user=postgres dbname=postgres {extra}")
    };
    let (ca, other) = (server.ca_file(), server.other_ca_file());

    // require: encrypted, the certificate not checked.
    let connected = works(&at(
        "127.0.0.1",
        "sslmode=require application_name=tls-require",
    ));
    let mut admin = server.socket_client();
    let encrypted: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) \
             WHERE application_name = 'tls-require' AND ssl",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(encrypted, 1, "the lock's session is encrypted");
    drop(connected);

    // verify-full: the right CA and the host name the certificate names.
    works(&at(
        "localhost",
        &format!("sslmode=verify-full sslrootcert={ca}"),
    ));
    // The URL form too.
    works(&format!(
        "postgresql://postgres@localhost:{port}/postgres?sslmode=verify-full&sslrootcert={ca}"
    ));
    // verify-ca: the chain only, so an address the certificate does not name is fine.
    works(&at(
        "127.0.0.1",
        &format!("sslmode=verify-ca sslrootcert={ca}"),
    ));

    // verify-full with a host name the certificate does not name.
    let e = fails(&at(
        "127.0.0.1",
        &format!("sslmode=verify-full sslrootcert={ca}"),
    ));
    assert!(e.contains("certificate") && e.contains("Name"), "{e}");
    // verify-full with a CA that did not sign the server's certificate.
    let e = fails(&at(
        "localhost",
        &format!("sslmode=verify-full sslrootcert={other}"),
    ));
    assert!(e.contains("UnknownIssuer"), "{e}");
    // require with a root file is verify-ca (libpq's rule): the wrong CA fails.
    let e = fails(&at(
        "127.0.0.1",
        &format!("sslmode=require sslrootcert={other}"),
    ));
    assert!(e.contains("UnknownIssuer"), "{e}");
    // A plain connection to a server that demands TLS.
    let e = fails(&at("127.0.0.1", "sslmode=disable"));
    assert!(e.contains("no encryption"), "{e}");

    // Verifying without a root file is a configuration error at build, not at a call.
    let e = lock(&at("localhost", "sslmode=verify-full")).expect_err("no sslrootcert");
    assert!(matches!(e, LockError::Config(_)), "{e}");
    assert!(e.to_string().contains("sslrootcert"), "{e}");
}
