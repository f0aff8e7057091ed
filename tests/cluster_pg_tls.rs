//! `PgLock` over TLS (cargo feature `postgres-tls`) against a real server that accepts TLS
//! connections only, with a certificate for `localhost` signed by a test CA, and a
//! database that demands client certificates (`tests/common/pg.rs` makes them all with
//! the `openssl` command): each `sslmode`, a right and a wrong CA, a right and a wrong host
//! name, a plain connection refused, client certificates with each key form, and the
//! `PGSSL*` variables, `~/.postgresql` and `sslrootcert=system` as libpq reads them.
//!
//! The tests that name everything in the string run in this process. The environment is
//! the process's, shared by tests that run in parallel, so no test here changes it: the
//! one that tests it runs this binary again as a child with an environment of its own
//! (`child_connects_as_told`).
#![cfg(feature = "postgres-tls")]

mod common;

use std::path::Path;
use std::process::Command;
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

/// The database `certs` demands a client certificate for `postgres` from the client CA.
#[test]
fn client_certificates_against_a_server_that_demands_them() {
    let server = PgServer::start_tls();
    let port = server.port();
    let f = |name: &str| server.file(name);
    let base = format!(
        "host=localhost port={port} user=postgres dbname=certs sslmode=verify-full \
         sslrootcert={}",
        server.ca_file()
    );
    let with = |cert: &str, key: &str| format!("{base} sslcert={} sslkey={}", f(cert), f(key));

    // Each key form the crate reads, presented in the handshake and accepted.
    for (cert, key, pem) in [
        ("client.crt", "client.key", "BEGIN PRIVATE KEY"),
        ("client.crt", "client-rsa.key", "BEGIN RSA PRIVATE KEY"),
        ("client-ec.crt", "client-ec.key", "BEGIN EC PRIVATE KEY"),
    ] {
        let text = std::fs::read_to_string(f(key)).unwrap();
        assert!(text.contains(pem), "{key} is not the form this case tests");
        works(&with(cert, key));
    }
    // The URL form, percent-encoded paths included.
    let enc = |p: String| p.replace('/', "%2F");
    works(&format!(
        "postgresql://postgres@localhost:{port}/certs?sslmode=verify-full&sslrootcert={}\
         &sslcert={}&sslkey={}",
        enc(server.ca_file()),
        enc(f("client.crt")),
        enc(f("client.key"))
    ));

    // The server refuses a lock without a certificate, and one its client CA did not sign.
    let e = fails(&base);
    assert!(e.contains("requires a valid client certificate"), "{e}");
    let e = fails(&with("other.crt", "other.key"));
    assert!(e.contains("UnknownCA"), "{e}");
    // The other databases take no client certificate: the same server, without one.
    works(&base.replace("dbname=certs", "dbname=postgres"));

    // Files that cannot serve are configuration errors when the lock is built.
    let config_error = |conn: String, says: &str| match lock(&conn) {
        Err(LockError::Config(msg)) => assert!(msg.contains(says), "{conn}: {msg}"),
        other => panic!("{conn}: expected a configuration error, got {other:?}"),
    };
    config_error(with("client.crt", "client-ec.key"), "does not match");
    config_error(with("client.crt", "client-enc.key"), "encrypted");
    config_error(with("client.crt", "client.crt"), "no PEM private key");
    config_error(with("client.key", "client.key"), "no PEM certificate");
    config_error(with("no-such.crt", "client.key"), "no-such.crt");
    config_error(with("client.crt", "no-such.key"), "no-such.key");
}

/// A Unix-domain socket carries no TLS (libpq's rule): `require` connects in plain text
/// on the server's socket, and the root file it names is not read.
#[test]
fn a_unix_socket_connects_without_tls_whatever_the_mode() {
    let server = PgServer::start_tls();
    let dir = Path::new(&server.ca_file()).parent().unwrap().to_owned();
    works(&format!(
        "host={} port={} user=postgres dbname=postgres sslmode=verify-full \
         sslrootcert=/no/such/root.crt",
        dir.display(),
        server.port()
    ));
}

/// Runs this test binary's `child_connects_as_told` with `vars` as its whole environment:
/// it builds a lock on `conn` and checks `expect` (`works`, `config:TEXT`: a configuration
/// error at build that says TEXT, `fails:TEXT`: a connection error that says TEXT).
fn in_child(conn: &str, expect: &str, vars: &[(&str, &str)]) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_connects_as_told",
            "--exact",
            "--ignored",
            "--test-threads=1",
        ])
        .env_clear()
        .env("SCHEDPOOL_TLS_CHILD_CONN", conn)
        .env("SCHEDPOOL_TLS_CHILD_EXPECT", expect)
        .envs(vars.iter().copied())
        .output()
        .expect("run this test binary again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{conn} with {vars:?}, expecting {expect}:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Run by [`environment_and_home_as_libpq_reads_them`] in a child process (alone, with an
/// environment of its own); not a test on its own.
#[test]
#[ignore = "run in a child process by environment_and_home_as_libpq_reads_them"]
fn child_connects_as_told() {
    let var =
        |name| std::env::var(name).unwrap_or_else(|_| panic!("{name} unset: run by the parent"));
    let conn = var("SCHEDPOOL_TLS_CHILD_CONN");
    let expect = var("SCHEDPOOL_TLS_CHILD_EXPECT");
    match expect.split_once(':') {
        None if expect == "works" => drop(works(&conn)),
        Some(("config", says)) => match lock(&conn) {
            Err(LockError::Config(msg)) => assert!(msg.contains(says), "{msg}"),
            other => panic!("expected a configuration error, got {other:?}"),
        },
        Some(("fails", says)) => {
            let e = fails(&conn);
            assert!(e.contains(says), "{e}");
        }
        _ => panic!("unknown expectation {expect:?}"),
    }
}

/// The `PGSSL*` variables, libpq's files under `~/.postgresql`, and `sslrootcert=system`
/// with `SSL_CERT_FILE`, each in a child process (the environment is process-wide).
#[test]
fn environment_and_home_as_libpq_reads_them() {
    let server = PgServer::start_tls();
    let port = server.port();
    let f = |name: &str| server.file(name);
    let (ca, other) = (server.ca_file(), server.other_ca_file());
    let at = |host: &str, db: &str, extra: &str| {
        format!("host={host} port={port} user=postgres dbname={db} {extra}")
    };
    // Home directories: libpq's default files, right and wrong, and none.
    let homes = std::env::temp_dir().join(format!("schedpool-tls-homes-{}", std::process::id()));
    let home = |name: &str, files: &[(&str, &str)]| {
        let dir = homes.join(name);
        std::fs::create_dir_all(dir.join(".postgresql")).unwrap();
        for (to, from) in files {
            std::fs::copy(from, dir.join(".postgresql").join(to)).unwrap();
        }
        dir.to_str().unwrap().to_owned()
    };
    let right = home(
        "right",
        &[
            ("root.crt", &ca),
            ("postgresql.crt", &f("client.crt")),
            ("postgresql.key", &f("client.key")),
        ],
    );
    let wrong = home("wrong", &[("root.crt", &other)]);
    let empty = home("empty", &[]);

    // PGSSLMODE with libpq's defaults: root.crt, and the client certificate for `certs`;
    // the mode is the variable's (verify-full: an address the certificate does not name
    // fails).
    in_child(
        &at("localhost", "certs", ""),
        "works",
        &[("PGSSLMODE", "verify-full"), ("HOME", &right)],
    );
    in_child(
        &at("127.0.0.1", "certs", ""),
        "fails:Name",
        &[("PGSSLMODE", "verify-full"), ("HOME", &right)],
    );
    // Each file from its variable.
    let (cert, key) = (f("client.crt"), f("client.key"));
    in_child(
        &at("127.0.0.1", "certs", ""),
        "works",
        &[
            ("PGSSLMODE", "verify-ca"),
            ("PGSSLROOTCERT", &ca),
            ("PGSSLCERT", &cert),
            ("PGSSLKEY", &key),
            ("HOME", &empty),
        ],
    );
    // The string wins: with the variables' disable, or their wrong root, it would fail.
    in_child(
        &at(
            "localhost",
            "postgres",
            &format!("sslmode=verify-full sslrootcert={ca}"),
        ),
        "works",
        &[
            ("PGSSLMODE", "disable"),
            ("PGSSLROOTCERT", &other),
            ("HOME", &wrong),
        ],
    );
    // A verifying mode without a root file names the default path.
    in_child(
        &at("localhost", "postgres", ""),
        "config:root.crt",
        &[("PGSSLMODE", "verify-full"), ("HOME", &empty)],
    );
    // libpq's rule: a root file makes require verify-ca, so the wrong one fails.
    in_child(
        &at("127.0.0.1", "postgres", ""),
        "fails:UnknownIssuer",
        &[("PGSSLMODE", "require"), ("HOME", &wrong)],
    );
    // sslrootcert=system: the store SSL_CERT_FILE names, verify-full by default.
    in_child(
        &at("localhost", "postgres", "sslrootcert=system"),
        "works",
        &[("SSL_CERT_FILE", &ca)],
    );
    in_child(
        &at("127.0.0.1", "postgres", "sslrootcert=system"),
        "fails:Name",
        &[("SSL_CERT_FILE", &ca)],
    );
    in_child(
        &at("localhost", "postgres", ""),
        "fails:UnknownIssuer",
        &[("PGSSLROOTCERT", "system"), ("SSL_CERT_FILE", &other)],
    );
    in_child(
        &at("localhost", "postgres", "sslrootcert=system"),
        "config:verify-full",
        &[("PGSSLMODE", "require"), ("SSL_CERT_FILE", &ca)],
    );
    let _ = std::fs::remove_dir_all(&homes);
}
