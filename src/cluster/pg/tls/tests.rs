//! Unit tests of `cluster/pg/tls/`: the string's keys, the environment (a map, never the
//! process's), and libpq's defaults under a home directory made for each test. The
//! handshakes themselves: `tests/cluster_pg_tls.rs`.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::conninfo::{take_tls_keys, Given};
use super::*;

/// An environment of `pairs` alone.
fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let map: HashMap<String, OsString> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
        .collect();
    move |name| map.get(name).cloned()
}

fn settings(conn: &str, pairs: &[(&str, &str)]) -> Settings {
    read(conn, &env(pairs))
        .unwrap_or_else(|e| panic!("{conn}: {e}"))
        .1
}

fn spec(conn: &str, pairs: &[(&str, &str)]) -> TlsSpec {
    settings(conn, pairs)
        .locate()
        .unwrap_or_else(|e| panic!("{conn}: {e}"))
}

/// The configuration error that reading and locating `conn` must give.
fn config_error(conn: &str, pairs: &[(&str, &str)]) -> String {
    match read(conn, &env(pairs)).and_then(|(_, s)| s.locate()) {
        Err(LockError::Config(msg)) => msg,
        other => panic!("{conn} {pairs:?}: expected a configuration error, got {other:?}"),
    }
}

/// A home directory of its own, with `.postgresql/` holding the named files; removed when
/// dropped.
struct Home(PathBuf);

impl Home {
    fn with(files: &[&str]) -> Home {
        static N: AtomicUsize = AtomicUsize::new(0);
        let home = std::env::temp_dir().join(format!(
            "schedpool-tls-home-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let dir = home.join(".postgresql");
        std::fs::create_dir_all(&dir).unwrap();
        for f in files {
            std::fs::write(dir.join(f), "not read by these tests").unwrap();
        }
        Home(home)
    }

    fn var(&self) -> &str {
        self.0.to_str().unwrap()
    }

    fn file(&self, name: &str) -> PathBuf {
        self.0.join(".postgresql").join(name)
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// The home variable of this platform.
const HOME: &str = if cfg!(windows) { "APPDATA" } else { "HOME" };

#[test]
fn key_value_strings_lose_their_tls_keys() {
    let (rest, given) = take_tls_keys(
        "host=db user=app sslmode=verify-full sslrootcert='/etc/ca dir/root.pem' \
         sslcert=/c.pem sslkey = /k.pem password='it\\'s'",
    )
    .unwrap();
    assert_eq!(rest, "host='db' user='app' password='it\\'s'");
    assert_eq!(
        given,
        Given {
            sslmode: Some("verify-full".into()),
            sslrootcert: Some("/etc/ca dir/root.pem".into()),
            sslcert: Some("/c.pem".into()),
            sslkey: Some("/k.pem".into()),
        }
    );
    // A key given twice: the last one, as libpq.
    let (_, given) = take_tls_keys("sslmode=require host=db sslmode=disable").unwrap();
    assert_eq!(given.sslmode.as_deref(), Some("disable"));
    assert_eq!(take_tls_keys("host=db").unwrap().0, "host='db'");
}

#[test]
fn urls_lose_them_from_the_query() {
    let (rest, given) = take_tls_keys(
        "postgresql://app@db:5432/app?sslmode=verify-ca&sslrootcert=%2Fetc%2Froot.pem\
         &application_name=x&sslcert=%2Fc.pem&sslkey=%2Fk.pem",
    )
    .unwrap();
    assert_eq!(rest, "postgresql://app@db:5432/app?application_name=x");
    assert_eq!(given.sslmode.as_deref(), Some("verify-ca"));
    assert_eq!(given.sslrootcert.as_deref(), Some("/etc/root.pem"));
    assert_eq!(given.sslcert.as_deref(), Some("/c.pem"));
    assert_eq!(given.sslkey.as_deref(), Some("/k.pem"));
    let (rest, given) = take_tls_keys("postgres://db/app?sslrootcert=/r.pem").unwrap();
    assert_eq!(rest, "postgres://db/app");
    assert_eq!(given.sslrootcert.as_deref(), Some("/r.pem"));
    assert_eq!(
        take_tls_keys("postgres://db/app").unwrap().0,
        "postgres://db/app"
    );
}

#[test]
fn bad_strings_and_modes_are_config_errors() {
    for bad in [
        "host=db sslmode=maybe",
        "host=db sslmode=",
        "host='db",
        "host",
        "host=db\\",
        "postgres://db?sslmode=nope",
    ] {
        assert!(
            matches!(read(bad, &env(&[])), Err(LockError::Config(_))),
            "{bad}"
        );
    }
    let e = config_error("host=db", &[("PGSSLMODE", "verify_full")]);
    assert!(e.contains("PGSSLMODE") && e.contains("verify_full"), "{e}");
}

#[test]
fn the_environment_fills_what_the_string_leaves_out() {
    let s = settings(
        "host=db",
        &[
            ("PGSSLMODE", "verify-ca"),
            ("PGSSLROOTCERT", "/r.pem"),
            ("PGSSLCERT", "/c.pem"),
            ("PGSSLKEY", "/k.pem"),
        ],
    );
    assert_eq!((s.mode, s.mode_from), (Mode::VerifyCa, "PGSSLMODE"));
    assert_eq!(s.root, RootSetting::File("/r.pem".into()));
    assert_eq!(s.root_from, "PGSSLROOTCERT");
    assert_eq!(s.cert, Some((PathBuf::from("/c.pem"), "PGSSLCERT")));
    assert_eq!(s.key, Some((PathBuf::from("/k.pem"), "PGSSLKEY")));
    assert_eq!(s.crate_mode(), SslMode::Require);
}

#[test]
fn the_string_wins_over_the_environment() {
    let all = [
        ("PGSSLMODE", "verify-full"),
        ("PGSSLROOTCERT", "/env-root.pem"),
        ("PGSSLCERT", "/env-c.pem"),
        ("PGSSLKEY", "/env-k.pem"),
    ];
    let s = settings(
        "host=db sslmode=require sslrootcert=/r.pem sslcert=/c.pem sslkey=/k.pem",
        &all,
    );
    assert_eq!((s.mode, s.mode_from), (Mode::Require, "sslmode"));
    assert_eq!(s.root, RootSetting::File("/r.pem".into()));
    assert_eq!(s.cert, Some((PathBuf::from("/c.pem"), "sslcert")));
    assert_eq!(s.key, Some((PathBuf::from("/k.pem"), "sslkey")));
    // Each key on its own: the others still come from the environment.
    let s = settings("host=db sslmode=disable", &all);
    assert_eq!(s.mode, Mode::Disable);
    assert_eq!(s.root, RootSetting::File("/env-root.pem".into()));
    assert_eq!(s.crate_mode(), SslMode::Disable);
}

#[test]
fn an_empty_value_means_the_default() {
    // Empty in the string: the default, and the variable is not asked (libpq).
    let s = settings(
        "host=db sslrootcert='' sslcert=''",
        &[("PGSSLROOTCERT", "/r.pem"), ("PGSSLCERT", "/c.pem")],
    );
    assert_eq!(s.root, RootSetting::Default);
    assert_eq!(s.cert, None);
    // Empty in the environment: the default.
    let s = settings("host=db", &[("PGSSLROOTCERT", ""), ("PGSSLKEY", "")]);
    assert_eq!((&s.root, &s.key), (&RootSetting::Default, &None));
    assert_eq!(s.mode, Mode::Prefer);
    assert_eq!(s.crate_mode(), SslMode::Prefer);
}

#[test]
fn system_roots_make_verify_full_the_default_and_the_only_mode() {
    for (conn, pairs) in [
        ("host=db sslrootcert=system", &[][..]),
        ("host=db", &[("PGSSLROOTCERT", "system")][..]),
        ("host=db sslrootcert=system sslmode=verify-full", &[][..]),
    ] {
        let s = settings(conn, pairs);
        assert_eq!(s.mode, Mode::VerifyFull, "{conn} {pairs:?}");
        assert_eq!(s.crate_mode(), SslMode::Require);
        let spec = s.locate().unwrap();
        assert_eq!(spec.verify, Verify::Full(Roots::System));
    }
    for (conn, pairs, named) in [
        (
            "host=db sslrootcert=system sslmode=verify-ca",
            &[][..],
            "sslmode=verify-ca",
        ),
        (
            "host=db sslrootcert=system sslmode=require",
            &[][..],
            "sslmode=require",
        ),
        (
            "host=db sslrootcert=system sslmode=disable",
            &[][..],
            "sslmode=disable",
        ),
        (
            "host=db sslrootcert=system",
            &[("PGSSLMODE", "prefer")][..],
            "PGSSLMODE=prefer",
        ),
        (
            "host=db sslmode=require",
            &[("PGSSLROOTCERT", "system")][..],
            "PGSSLROOTCERT=system",
        ),
    ] {
        let e = config_error(conn, pairs);
        assert!(
            e.contains(named) && e.contains("verify-full"),
            "{conn} {pairs:?}: {e}"
        );
    }
}

#[test]
fn the_default_root_file_is_used_when_it_exists() {
    let home = Home::with(&["root.crt"]);
    let root = Roots::File(home.file("root.crt"));
    let at = [(HOME, home.var())];
    // libpq's rule: with a root file, require checks the chain as verify-ca does.
    assert_eq!(
        spec("host=db sslmode=require", &at).verify,
        Verify::Chain(root.clone())
    );
    assert_eq!(
        spec("host=db sslmode=verify-ca", &at).verify,
        Verify::Chain(root.clone())
    );
    assert_eq!(
        spec("host=db sslmode=verify-full", &at).verify,
        Verify::Full(root)
    );
    assert_eq!(spec("host=db", &at).verify, Verify::Nothing);
    assert_eq!(spec("host=db sslmode=disable", &at), TlsSpec::plain());

    let empty = Home::with(&[]);
    let at = [(HOME, empty.var())];
    assert_eq!(spec("host=db sslmode=require", &at).verify, Verify::Nothing);
    let e = config_error("host=db sslmode=verify-ca", &at);
    let missing = empty.file("root.crt");
    assert!(
        e.contains(&missing.display().to_string()) && e.contains("sslrootcert=system"),
        "{e}"
    );
    let e = config_error("host=db", &[("PGSSLMODE", "verify-full")]);
    assert!(
        e.contains("PGSSLMODE=verify-full") && e.contains("home"),
        "{e}"
    );
}

#[test]
fn named_files_must_exist() {
    let home = Home::with(&["postgresql.crt", "postgresql.key"]);
    let nowhere = home.0.join("no-such.pem");
    let nowhere = nowhere.to_str().unwrap();
    for (conn, pairs, named) in [
        (
            format!("host=db sslmode=require sslrootcert={nowhere}"),
            vec![],
            "sslrootcert",
        ),
        (
            format!("host=db sslrootcert={nowhere}"),
            vec![],
            "sslrootcert",
        ),
        (
            "host=db sslmode=require".into(),
            vec![("PGSSLROOTCERT", nowhere)],
            "PGSSLROOTCERT",
        ),
        (format!("host=db sslcert={nowhere}"), vec![], "sslcert"),
        ("host=db".into(), vec![("PGSSLCERT", nowhere)], "PGSSLCERT"),
        (
            format!("host=db sslkey={nowhere}"),
            vec![(HOME, home.var())],
            "sslkey",
        ),
        (
            "host=db".into(),
            vec![("PGSSLKEY", nowhere), (HOME, home.var())],
            "PGSSLKEY",
        ),
    ] {
        let e = config_error(&conn, &pairs);
        assert!(e.starts_with(named) && e.contains(nowhere), "{conn}: {e}");
    }
    // sslmode=disable looks at no file.
    let conn = format!("host=db sslmode=disable sslrootcert={nowhere} sslcert={nowhere}");
    assert_eq!(spec(&conn, &[]), TlsSpec::plain());
}

#[test]
fn a_client_certificate_comes_with_its_key() {
    let home = Home::with(&["postgresql.crt", "postgresql.key"]);
    let at = [(HOME, home.var())];
    let defaults = Some((home.file("postgresql.crt"), home.file("postgresql.key")));
    assert_eq!(spec("host=db", &at).client, defaults);
    assert_eq!(
        spec("host=db sslmode=verify-full sslrootcert=system", &at).client,
        defaults
    );
    // A named certificate takes the default key; a named key, the default certificate.
    let crt = home.file("postgresql.crt");
    let key = home.file("postgresql.key");
    let named = format!("host=db sslcert={}", crt.display());
    assert_eq!(spec(&named, &at).client, Some((crt.clone(), key.clone())));
    let named = format!("host=db sslkey={}", key.display());
    assert_eq!(spec(&named, &at).client, Some((crt.clone(), key.clone())));

    // No certificate: none presented; a certificate without its key, an error.
    let empty = Home::with(&[]);
    assert_eq!(spec("host=db", &[(HOME, empty.var())]).client, None);
    assert_eq!(spec("host=db", &[]).client, None);
    let only_crt = Home::with(&["postgresql.crt"]);
    let e = config_error("host=db", &[(HOME, only_crt.var())]);
    assert!(
        e.contains("no private key") && e.contains("postgresql.key"),
        "{e}"
    );
    let e = config_error(&format!("host=db sslcert={}", crt.display()), &[]);
    assert!(e.contains("no private key") && e.contains("sslkey"), "{e}");
    // A key named without any certificate.
    let e = config_error(
        &format!("host=db sslkey={}", key.display()),
        &[(HOME, empty.var())],
    );
    assert!(e.contains("no client certificate"), "{e}");
}

#[test]
fn what_asks_for_tls() {
    let home = Home::with(&["root.crt", "postgresql.crt", "postgresql.key"]);
    // The default files alone ask for nothing: without the feature, prefer is plain.
    assert_eq!(
        settings("host=db", &[(HOME, home.var())]).asks_for_tls(),
        None
    );
    assert_eq!(
        settings("host=db sslmode=disable sslcert=/c", &[]).asks_for_tls(),
        None
    );
    for (conn, pairs, why) in [
        ("host=db sslmode=require", &[][..], "sslmode=require"),
        (
            "host=db",
            &[("PGSSLMODE", "verify-ca")][..],
            "PGSSLMODE=verify-ca",
        ),
        ("host=db sslrootcert=system", &[][..], "sslrootcert=system"),
        ("host=db sslrootcert=/r.pem", &[][..], "sslrootcert"),
        ("host=db", &[("PGSSLCERT", "/c.pem")][..], "PGSSLCERT"),
        ("host=db sslkey=/k.pem", &[][..], "sslkey"),
    ] {
        let asked = settings(conn, pairs).asks_for_tls();
        assert!(
            asked.as_deref().is_some_and(|a| a.contains(why)),
            "{conn} {pairs:?}: {asked:?}"
        );
    }
}

#[test]
fn a_postgresql_entry_that_is_a_file_means_no_defaults() {
    // Looking inside it says "not a directory", which libpq (and this crate) take as
    // absence, not as an error.
    let home = Home::with(&[]);
    std::fs::remove_dir(home.0.join(".postgresql")).unwrap();
    std::fs::write(home.0.join(".postgresql"), "").unwrap();
    let s = spec("host=db sslmode=require", &[(HOME, home.var())]);
    assert_eq!((s.verify, s.client), (Verify::Nothing, None));
}

#[cfg(not(feature = "postgres-tls"))]
mod without_the_feature {
    use crate::cluster::{LockError, PgLock};

    #[test]
    fn asking_for_tls_is_a_config_error_that_names_the_feature() {
        for conn in [
            "host=db sslmode=require",
            "host=db sslmode=verify-full sslrootcert=/ca.pem",
            "host=db sslrootcert=system",
            "host=db sslcert=/c.pem sslkey=/k.pem",
            "postgres://db/app?sslrootcert=/ca.pem",
        ] {
            match PgLock::new(conn) {
                Err(LockError::Config(msg)) => assert!(msg.contains("postgres-tls"), "{msg}"),
                other => panic!("{conn}: {other:?}"),
            }
        }
        assert!(
            PgLock::new("host=db sslmode=prefer").is_ok(),
            "plain text, as libpq without TLS"
        );
    }
}

/// Input nobody writes by hand (issue "the parsers no fuzzer has seen"): connection
/// strings of TLS keys and odd values, with `PGSSL*` variables and a home of random
/// names (none of which exist), read and located: a configuration or an error, never a
/// panic. `tests/fuzz.rs` has the strings through `PgLock::builder`.
mod fuzz {
    use super::*;
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = String> + Clone {
        prop_oneof![
            prop::sample::select(vec![
                "disable",
                "allow",
                "prefer",
                "require",
                "verify-ca",
                "verify-full",
                "system",
                "",
                "/nowhere/ca.pem",
                "~/x",
                "'a b'",
                "'it\\'s'",
                "\\",
                "'open",
                "%2Fx",
                "%",
                "%zz",
                "=",
                "sslmode=require",
            ])
            .prop_map(str::to_owned),
            "[ -~]{0,10}",
        ]
    }

    fn conn() -> impl Strategy<Value = String> {
        let key = prop::sample::select(vec![
            "host",
            "sslmode",
            "sslrootcert",
            "sslcert",
            "sslkey",
            "sslnegotiation",
            "user",
            "dbname",
            "",
            "SSLMODE",
        ]);
        let pair = (key, value()).prop_map(|(k, v)| format!("{k}={v}"));
        prop_oneof![
            prop::collection::vec(pair.clone(), 0..5).prop_map(|p| p.join(" ")),
            prop::collection::vec(pair, 0..4)
                .prop_map(|p| format!("postgresql://u@db:5432/app?{}", p.join("&"))),
            "\\PC{0,30}",
        ]
    }

    fn environment() -> impl Strategy<Value = Vec<(&'static str, String)>> {
        let name = prop::sample::select(vec![
            "PGSSLMODE",
            "PGSSLROOTCERT",
            "PGSSLCERT",
            "PGSSLKEY",
            HOME,
            "PGHOST",
        ]);
        prop::collection::vec((name, value()), 0..5)
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: std::env::var("FUZZ_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256),
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn tls_settings_are_a_configuration_or_an_error(conn in conn(), env in environment()) {
            let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
            if let Ok((_, settings)) = read(&conn, &super::env(&pairs)) {
                let _ = settings.crate_mode();
                let _ = settings.asks_for_tls();
                let _ = settings.locate();
            }
        }
    }
}
