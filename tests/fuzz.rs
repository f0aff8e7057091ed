//! Input nobody writes by hand, through every public parser: cron expressions built from
//! cron's own tokens (and from garbage), time-zone names, `PgLock` connection strings,
//! `RedisLock` URLs and prefixes, and `Duration` extremes through every public constructor
//! that takes one.
//!
//! Each property holds for every input: no panic, no hang, and for an accepted cron
//! expression a first deadline and the ones after it (an expression that can match no
//! date is refused at parse). `cargo test` runs a short pass (`FUZZ_CASES`, 256 cases a
//! property by default); the long run, minutes of fresh inputs with a time bound per input
//! asserted, is `fuzz_for_a_while` (ignored here; `docs/RELIABILITY.md`, "Fuzzing"):
//!
//! ```sh
//! FUZZ_SECS=300 cargo test --release --features postgres-tls --test fuzz -- --ignored
//! ```
//!
//! Built with the `cron` feature (the default): most properties and the long run are cron's.

#![cfg(feature = "cron")]

use std::time::{Duration, Instant, SystemTime};

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use schedpool::{Trigger, TriggerContext};

/// Cases per property in the short pass.
fn cases() -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(256)
}

fn config() -> Config {
    Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    }
}

// ---- cron ----

/// One element of a cron field: cron's tokens, numbers in and out of range, names,
/// ranges, steps, and now and then something that is not cron at all.
fn cron_element() -> impl Strategy<Value = String> {
    let number = prop_oneof![12 => 0u32..32, 4 => 0u32..62, 1 => 0u32..100_000];
    let name = prop::sample::select(vec![
        "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC", "MON",
        "TUE", "WED", "THU", "FRI", "SAT", "SUN", "jan", "Mon",
    ]);
    let special = prop::sample::select(vec![
        "*", "?", "L", "W", "LW", "L-2", "1L", "5L", "15W", "1W", "31W", "5#2", "1#5", "MON#3", "",
        ",", "-", "/", "#", "*/", "-5", "5-", "**", "L#1", "+",
    ]);
    prop_oneof![
        8 => number.clone().prop_map(|n| n.to_string()),
        6 => Just("*".to_owned()),
        2 => special.prop_map(str::to_owned),
        2 => name.prop_map(str::to_owned),
        3 => (number.clone(), number.clone()).prop_map(|(a, b)| format!("{a}-{b}")),
        3 => (prop_oneof![Just("*".to_owned()), number.clone().prop_map(|n| n.to_string())], number.clone())
            .prop_map(|(a, s)| format!("{a}/{s}")),
        1 => (number.clone(), number.clone(), number).prop_map(|(a, b, s)| format!("{a}-{b}/{s}")),
        1 => "[ -~]{0,4}", // any printable ASCII
    ]
}

/// A field: a list of one to three elements, joined as cron joins them (and now and
/// then with an empty element, which must be refused).
fn cron_field() -> impl Strategy<Value = String> {
    prop::collection::vec(cron_element(), 1..4).prop_map(|e| e.join(","))
}

/// The year field: future years only, so that an accepted expression always has a next
/// date (past-only years are `ScheduleError::NeverDue`'s, tested elsewhere).
fn year_field() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("*".to_owned()),
        (2030u32..2200).prop_map(|y| y.to_string()),
        (2030u32..2200, 1u32..80).prop_map(|(y, n)| format!("{y}-{}", y + n)),
        (2030u32..2200, 1u32..10).prop_map(|(y, s)| format!("{y}/{s}")),
    ]
}

/// An expression of five, six or seven fields (or a nickname), with random spacing.
fn cron_expression() -> impl Strategy<Value = String> {
    let fields = prop_oneof![
        prop::collection::vec(cron_field(), 5..=5),
        prop::collection::vec(cron_field(), 6..=6),
        (prop::collection::vec(cron_field(), 6..=6), year_field()).prop_map(|(mut f, y)| {
            f.push(y);
            f
        }),
    ];
    let spacing = prop::sample::select(vec![" ", "  ", "\t", " \t "]);
    prop_oneof![
        10 => (fields, spacing).prop_map(|(f, s)| f.join(s)),
        1 => prop::sample::select(vec![
            "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@hourly", "@reboot", "@",
        ])
        .prop_map(str::to_owned),
    ]
}

/// Zone names: real ones (with daylight saving, without, odd offsets), and names that
/// are not zones.
fn zone_name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata",
            "Pacific/Chatham", "America/St_Johns", "Africa/Casablanca", "Etc/GMT+12",
            "Pacific/Kiritimati", "Antarctica/Troll", "Europe/London",
        ])
        .prop_map(str::to_owned),
        1 => "[A-Za-z/_+0-9-]{0,24}",
        1 => prop::sample::select(vec!["", "/", "..", "../etc/passwd", "Europe/", "utc", "EST5EDT"])
            .prop_map(str::to_owned),
    ]
}

/// Parses `expr`, reads it in `zone`, and asks for a first deadline and five more: an
/// accepted expression must have them (an expression that matches no date is refused
/// at parse). Returns whether the expression was accepted.
fn run_cron(expr: &str, zone: &str) -> bool {
    let Ok(trigger) = schedpool::CronTrigger::parse(expr) else {
        return false;
    };
    let mut trigger = match trigger.in_time_zone(zone) {
        Ok(t) => t,
        Err(_) => return false, // not a zone: a clear error is all that is asked
    };
    let now = Instant::now();
    let first = trigger.first_deadline(now);
    let Some(mut at) = first else {
        panic!("{expr:?} in {zone}: accepted, yet no first deadline");
    };
    assert!(at >= now, "{expr:?}: a first deadline before now (CR1)");
    for runs in 1..=5 {
        let ctx = TriggerContext {
            scheduled: at,
            started: at,
            finished: at,
            runs,
            panicked: false,
        };
        match trigger.next_deadline(&ctx) {
            Some(next) => {
                assert!(
                    next > at,
                    "{expr:?} in {zone}: a next deadline not after the last (CR2)"
                );
                at = next;
            }
            None => break, // a year field that ends
        }
    }
    true
}

proptest! {
    #![proptest_config(config())]

    /// CR3 and the parse-time refusal: no panic, and an accepted expression has its
    /// deadlines (issue: 816 of 74 million accepted expressions matched nothing).
    #[test]
    fn cron_expressions_from_tokens(expr in cron_expression(), zone in zone_name()) {
        run_cron(&expr, &zone);
    }

    /// Bytes that are not cron at all.
    #[test]
    fn cron_expressions_from_noise(expr in "\\PC{0,40}") {
        run_cron(&expr, "UTC");
    }

    /// A zone name is a zone or a clear error.
    #[test]
    fn zone_names(zone in zone_name()) {
        let cron = schedpool::CronTrigger::parse("0 0 * * * *").unwrap();
        if let Ok(mut t) = cron.in_time_zone(&zone) {
            prop_assert!(t.first_deadline(Instant::now()).is_some());
        }
    }
}

// ---- connection strings ----

#[cfg(feature = "postgres")]
fn conninfo() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec![
        "host",
        "hostaddr",
        "port",
        "user",
        "password",
        "dbname",
        "sslmode",
        "sslrootcert",
        "sslcert",
        "sslkey",
        "application_name",
        "connect_timeout",
        "options",
        "target",
        "sslnegotiation",
        "",
        "=",
    ]);
    let value = prop_oneof![
        prop::sample::select(vec![
            "disable",
            "allow",
            "prefer",
            "require",
            "verify-ca",
            "verify-full",
            "system",
            "localhost",
            "/tmp",
            "5432",
            "99999",
            "-1",
            "",
            "'a b'",
            "'it\\'s'",
            "\\\\",
            "'unterminated",
            "%2Ftmp",
            "%zz",
            "%",
            "db?x=1",
        ])
        .prop_map(str::to_owned),
        "[ -~]{0,12}",
    ];
    let pair = (key, value).prop_map(|(k, v)| format!("{k}={v}"));
    let kv = prop::collection::vec(pair.clone(), 0..6).prop_map(|p| p.join(" "));
    let url = (
        prop::sample::select(vec![
            "postgres://",
            "postgresql://",
            "postgresql:/",
            "pg://",
        ]),
        "[a-z%@:./0-9-]{0,20}",
        prop::collection::vec(pair, 0..4),
    )
        .prop_map(|(scheme, rest, params)| format!("{scheme}{rest}?{}", params.join("&")));
    prop_oneof![3 => kv, 2 => url, 1 => "\\PC{0,40}"]
}

#[cfg(feature = "postgres")]
proptest! {
    #![proptest_config(config())]

    /// `PgLock::builder(..).build()`: a lock or a configuration error, never a panic. (No
    /// connection is made before the first call.)
    #[test]
    fn pg_connection_strings(conn in conninfo()) {
        let _ = schedpool::cluster::PgLock::builder(&conn)
            .timeout(Duration::from_millis(1))
            .build();
    }
}

#[cfg(feature = "redis")]
fn redis_url() -> impl Strategy<Value = String> {
    let scheme = prop::sample::select(vec![
        "redis://",
        "rediss://",
        "valkey://",
        "redis+unix://",
        "unix://",
        "REDIS://",
        "redis:/",
        "",
    ]);
    let part = prop_oneof![
        prop::sample::select(vec![
            "user:pw@",
            ":pw@",
            "u@",
            "@",
            "%zz@",
            "127.0.0.1",
            "localhost",
            "[::1]",
            "0.0.0.0",
            ":6379",
            ":0",
            ":99999",
            ":-1",
            "/0",
            "/15",
            "/-1",
            "/x",
            "?protocol=resp3",
            "?protocol=9",
            "#insecure",
            "#x",
            "/tmp/redis.sock",
            "?db=2",
        ])
        .prop_map(str::to_owned),
        "[ -~]{0,8}",
    ];
    let url = (scheme, prop::collection::vec(part, 0..5))
        .prop_map(|(scheme, parts)| format!("{scheme}{}", parts.concat()));
    prop_oneof![4 => url, 1 => "\\PC{0,40}"]
}

#[cfg(feature = "redis")]
proptest! {
    #![proptest_config(config())]

    /// `RedisLock::builder(..).build()` with URLs, prefixes of any bytes and database
    /// indices: a lock or a configuration error, never a panic. (No connection is made
    /// before the first call.)
    #[test]
    fn redis_urls_and_prefixes(
        url in redis_url(),
        prefix in prop::collection::vec(any::<u8>(), 0..12),
        db in prop::option::of(any::<i64>()),
    ) {
        let mut b = schedpool::cluster::RedisLock::builder(&url)
            .prefix(prefix)
            .timeout(Duration::from_millis(1));
        if let Some(db) = db {
            b = b.database(db);
        }
        if let Err(e) = b.build() {
            let config = matches!(e, schedpool::cluster::LockError::Config(_));
            prop_assert!(config, "{e}");
        }
    }
}

// ---- durations ----

fn extreme() -> impl Strategy<Value = Duration> {
    prop_oneof![
        Just(Duration::ZERO),
        Just(Duration::from_nanos(1)),
        Just(Duration::MAX),
        Just(Duration::MAX - Duration::from_nanos(1)),
        Just(Duration::from_secs(u64::MAX)),
        Just(Duration::from_secs(i64::MAX as u64)),
        Just(Duration::from_secs(500 * 365 * 24 * 3600)),
        (0u64..u64::MAX).prop_map(Duration::from_nanos),
    ]
}

proptest! {
    #![proptest_config(config())]

    /// Every public constructor and call that takes a `Duration`, with extremes: defined
    /// behaviour or a clear error, never a panic or an overflow.
    #[test]
    fn durations_through_every_constructor(d in extreme(), e in extreme()) {
        use schedpool::{Backoff, DelayQueue, ManualClock, Periodic, PriorityBlockingQueue};
        let clock = ManualClock::new();
        let pool = schedpool::ScheduledThreadPoolExecutor::builder()
            .clock(clock.clone())
            .core_pool_size(1)
            .keep_alive(d)
            .late_threshold(e)
            .timer_precision(d)
            .build();
        let once = pool.schedule(d, || ()).unwrap();
        let _ = once.reschedule_after(e);
        let _ = once.delay();
        let _ = pool.schedule_at_fixed_rate(d, e, || ());
        let _ = pool.schedule_with_fixed_delay(e, d, || ());
        let spec = Periodic::at_fixed_rate(d)
            .initial_delay(e)
            .max_lateness(d)
            .backoff(Backoff::new(d, e).jitter(0.5));
        let b = Backoff::new(d, e);
        let _ = (b.delay_after(1), b.delay_after(u32::MAX));
        let _ = pool.schedule_periodic(spec, || ());
        clock.advance(d);
        clock.advance(e);
        let _ = pool.wait_idle(Duration::from_millis(1));
        let _ = pool.await_termination(Duration::ZERO);
        drop(pool.shutdown_now());
        let _ = pool.close_timeout(Duration::from_millis(50));

        let q = DelayQueue::with_clock(clock.clone());
        let key = q.offer(1, d);
        let _ = q.reset(key, e);
        let _ = q.poll();
        let _ = q.poll_timeout(Duration::from_nanos(1));
        let p = PriorityBlockingQueue::<u8>::new();
        let _ = p.poll_timeout(Duration::from_nanos(1));
        let _ = SystemTime::UNIX_EPOCH.checked_add(d);
    }
}

// ---- the long run ----

/// Fresh inputs for `FUZZ_SECS` seconds (default 60), each property in turn, with a
/// bound on the time of each input (`FUZZ_BOUND_MS`, default 20 ms, for a release
/// build): a parse and seven searches of an expression nobody wrote cost microseconds,
/// and the 160 ms searches the issue found would fail it. Run by hand (see the module
/// notes); not under `cargo test`, whose debug build and shared machine make times
/// meaningless.
#[test]
#[ignore = "the long fuzz run, by hand: FUZZ_SECS=300 cargo test --release --test fuzz -- --ignored"]
fn fuzz_for_a_while() {
    let secs = std::env::var("FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let bound = Duration::from_millis(
        std::env::var("FUZZ_BOUND_MS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(20),
    );
    let until = Instant::now() + Duration::from_secs(secs);
    let mut runner = TestRunner::new(Config {
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (cron_expression(), zone_name());
    let (mut inputs, mut accepted) = (0u64, 0u64);
    let mut slowest = (Duration::ZERO, String::new());
    while Instant::now() < until {
        for _ in 0..1000 {
            let (expr, zone) = strategy.new_tree(&mut runner).unwrap().current();
            let started = Instant::now();
            accepted += u64::from(run_cron(&expr, &zone));
            let took = started.elapsed();
            assert!(
                took <= bound,
                "{expr:?} in {zone}: {took:?} (bound {bound:?})"
            );
            if took > slowest.0 {
                slowest = (took, format!("{expr:?} in {zone}"));
            }
            inputs += 1;
        }
    }
    println!(
        "fuzz: {inputs} cron inputs ({accepted} accepted), slowest {:?}: {}",
        slowest.0, slowest.1
    );
}
