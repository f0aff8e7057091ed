//! [`PgLock`]: the lease protocol (LK1–LK5, `cluster/mod.rs`) in a PostgreSQL table.
//!
//! # Design
//! Each call is one SQL statement, atomic in the database, with the database's `now()`
//! for every time (LK4):
//! - acquire: `INSERT ... ON CONFLICT (name) DO UPDATE ... WHERE lock_until <= now()
//!   RETURNING token`: a new row, or the expired row taken over with `token + 1`; a valid
//!   lease makes the `WHERE` false and no row comes back (LK1, LK2);
//! - release: `UPDATE ... SET lock_until = GREATEST(locked_at + at_least_for, now())
//!   WHERE name = $1 AND token = $2 AND lock_until > now()` (LK2, LK3);
//! - extend: `UPDATE ... SET lock_until = now() + at_most_for WHERE name = $1 AND token =
//!   $2 AND lock_until > now()` (LK5).
//!
//! The session runs at READ COMMITTED whatever the database's default (a role or database
//! set to SERIALIZABLE would otherwise fail a statement that meets a concurrent update
//! with 40001 instead of answering "held").
//!
//! The connection is owned by one thread of the lock's own, which runs the statements
//! that callers send it; a caller waits for the answer at most `timeout` (the bound on
//! every call, so no worker of the pool waits longer), and the connection's
//! `statement_timeout` is the same bound inside the database. A statement that timed out
//! on the caller's side may still complete in the database: a lease acquired that way is
//! never used and runs out at `at_most_for`; a release that way only frees the lock
//! sooner. A request whose caller has given up is dropped unrun.
//!
//! Faults: after an error on a closed connection, the thread drops it and connects again
//! at the next call (a restarted or unreachable server costs the calls made meanwhile,
//! each failing within the bound). A call that loses a connection opened before it is
//! retried once on a new one, within its bound; its first try may have committed with
//! the reply lost. An acquisition that did makes the retry find the lock held (LK1): the
//! run is skipped and that lease runs out unused. An extension that did is extended
//! again. A release that did makes the retry find the lease over; it then reads the
//! row's token: still the lease's, no node has acquired the lock since the lease began
//! (LK2), so the lease ended by this release (or ran out with nobody after it) and the
//! release answers valid; a changed token keeps the answer "no longer valid" (an
//! overrun). If a call times out because the thread is stuck (a server that stopped
//! answering without closing the socket), the thread is abandoned: it ends after its
//! current statement, and the next call starts a fresh one, at most [`MAX_ABANDONED`] of
//! them at a time.

use std::fmt;
use std::str::FromStr;
// `mpsc` is `std`'s: this module is not loom-modelled (it needs a server), and its
// channel only carries requests to the connection thread.
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use crate::sync::{Arc, AtomicUsize, Mutex, Ordering};

use super::{ClusterLock, Lease, LockError, Pause};

mod session;
mod tls;

use session::serve;

/// The default bound on each call (`PgLockBuilder::timeout`).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// Stuck connection threads left to finish by themselves at most; beyond that, calls time
/// out without starting another.
const MAX_ABANDONED: usize = 4;

/// The default table.
const DEFAULT_TABLE: &str = "schedpool_locks";

/// A [`ClusterLock`] in a PostgreSQL table, shared by every node that connects to the
/// same database (ShedLock's `JdbcTemplateLockProvider` with `usingDbTime()`). Needs the
/// cargo feature `postgres`.
///
/// It owns its connection (connected at the first call, connected again after the
/// server went away), creates its table if missing (unless told not to), takes every
/// time from the database's clock, and bounds every call by its
/// [`timeout`](PgLockBuilder::timeout).
///
/// **Connections.** Each `PgLock` holds one connection, on a thread of its own; share
/// one `PgLock` (in an `Arc`) among the jobs of a process rather than making one per job.
/// While a server hangs without closing sockets, a lock may also leave up to four
/// abandoned connections behind, each ending by itself once its statement returns or the
/// server drops it: budget up to five connections per `PgLock` against the server's
/// `max_connections` in that case, one otherwise.
///
/// **TLS.** With the cargo feature `postgres-tls`, TLS is configured as for libpq (on
/// rustls). The keys `sslmode`, `sslrootcert`, `sslcert` and `sslkey` are read from the
/// connection string, else from `PGSSLMODE`, `PGSSLROOTCERT`, `PGSSLCERT` and
/// `PGSSLKEY`, else from libpq's defaults: `~/.postgresql/root.crt` (if it exists) for
/// the roots, `~/.postgresql/postgresql.crt` and `postgresql.key` (if they exist) for the
/// client certificate, `prefer` for the mode.
/// - `verify-full` checks the server's certificate against the roots and the host name;
///   `verify-ca` the roots only; `require` encrypts without checking, unless there is a
///   root file (then as `verify-ca`); `prefer` encrypts if the server offers it.
/// - `sslrootcert=system` trusts the operating system's store (`SSL_CERT_FILE` and
///   `SSL_CERT_DIR` replace it when set) and makes `verify-full` the default and the
///   only mode allowed.
/// - A client certificate (PEM; its key PKCS#8, PKCS#1 or SEC1, unencrypted) is
///   presented when the server asks for one (`cert` authentication, `clientcert=`).
/// - A Unix-domain socket carries no TLS, whatever the mode.
///
/// Every file is read by [`build`](PgLockBuilder::build), so a missing or unreadable
/// file, a key that does not match its certificate, an unknown `sslmode` or a mode
/// weaker than `verify-full` with `sslrootcert=system` is a [`LockError::Config`] there.
/// A file named in the string or a variable must exist (libpq goes on without some).
/// Without the feature, a connection that asks for TLS is refused by `build` with an
/// error that names the feature, and `prefer` (the default) connects in plain text.
///
/// ```no_run
/// # use schedpool::cluster::PgLock;
/// // A managed database with a public certificate: encrypted, the certificate and the
/// // host name checked against the system's roots (verify-full is implied).
/// let _lock = PgLock::new("host=db.example.com user=app dbname=app sslrootcert=system")?;
/// // A private CA, and a client certificate for `cert` authentication.
/// let _lock = PgLock::new(
///     "host=db.internal user=app dbname=app sslmode=verify-full \
///      sslrootcert=/etc/db/ca.pem sslcert=/etc/db/app.crt sslkey=/etc/db/app.key",
/// )?;
/// # Ok::<(), schedpool::cluster::LockError>(())
/// ```
///
/// **Isolation.** Its session runs at READ COMMITTED, whatever the database's or the
/// role's default (a SERIALIZABLE default would otherwise fail a statement that meets a
/// concurrent update of the lock's row).
///
/// ```no_run
/// use schedpool::cluster::{Exclusive, PgLock};
/// use schedpool::{Periodic, ScheduledThreadPoolExecutor};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let lock = Arc::new(PgLock::new("host=127.0.0.1 user=app dbname=app")?);
/// lock.check()?; // connect now and create the table, to fail early
/// let pool = ScheduledThreadPoolExecutor::new(2);
/// let send_due = Periodic::at_fixed_rate(Duration::from_secs(1))
///     .exclusive(Exclusive::new(lock, "send-due-messages", Duration::from_secs(60))
///         .at_least_for(Duration::from_millis(500)));
/// pool.schedule_periodic(send_due, || { /* one node sends the messages due now */ })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// The table, for those who manage their schema themselves
/// ([`create_table(false)`](PgLockBuilder::create_table); [`PgLock::schema`] gives it for
/// another table name):
///
/// ```sql
/// CREATE TABLE IF NOT EXISTS schedpool_locks (
///     name       TEXT PRIMARY KEY,
///     lock_until TIMESTAMPTZ NOT NULL,
///     locked_at  TIMESTAMPTZ NOT NULL,
///     locked_by  TEXT NOT NULL,
///     token      BIGINT NOT NULL
/// );
/// ```
pub struct PgLock {
    shared: Arc<Shared>,
}

/// What a [`PgLock`] and its connection threads share.
struct Shared {
    config: postgres::Config,
    /// The TLS connector for what the connection asked (`pg/tls/`); `None` for one that
    /// never uses TLS (`sslmode=disable`, or Unix sockets only: rustls refuses their empty
    /// host name even though no handshake follows).
    #[cfg(feature = "postgres-tls")]
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    table: String,
    node: String,
    timeout: Duration,
    create_table: bool,
    /// The current connection thread: its sender and generation, read and replaced only
    /// under this lock (never held across a request).
    conn: Mutex<Conn>,
    /// Abandoned connection threads still running (each takes one off when it ends).
    /// `Relaxed`: a cap on a count, publishing nothing; its updates are under `conn`'s
    /// lock or follow a generation read under it.
    abandoned: AtomicUsize,
}

/// The current connection thread: where to send requests, and its generation.
struct Conn {
    tx: Option<mpsc::Sender<Request>>,
    generation: u64,
}

/// One call, as its caller hands it to the connection thread.
struct Request {
    op: Op,
    /// The caller waits until then; later, the request is dropped unrun.
    give_up: Instant,
    reply: mpsc::SyncSender<Result<Answer, LockError>>,
}

enum Op {
    Acquire {
        name: String,
        at_most_for: Duration,
    },
    Release {
        name: String,
        token: u64,
        at_least_for: Duration,
    },
    Holder {
        name: String,
    },
    Extend {
        name: String,
        token: u64,
        at_most_for: Duration,
    },
    LastAcquired {
        name: String,
    },
    Pause {
        name: String,
        by: String,
        until: Option<SystemTime>,
    },
    Resume {
        name: String,
    },
    Paused {
        name: String,
    },
    Check,
}

enum Answer {
    Age(Option<Duration>),
    Token(Option<u64>),
    Released(bool),
    Holder(Option<String>),
    Pause(Option<Pause>),
    Ready,
}

/// Configures a [`PgLock`]: from [`PgLock::builder`].
#[derive(Clone, Debug)]
pub struct PgLockBuilder {
    url: String,
    table: String,
    node: Option<String>,
    timeout: Duration,
    create_table: bool,
}

impl PgLockBuilder {
    /// The table of locks (default `schedpool_locks`); a plain or schema-qualified SQL
    /// identifier (`[A-Za-z_][A-Za-z0-9_]*`, at most 63 bytes each part).
    #[must_use]
    pub fn table(mut self, table: impl Into<String>) -> Self {
        self.table = table.into();
        self
    }

    /// This node's name in the `locked_by` column (default: the host name and the
    /// process id, `host:pid`).
    #[must_use]
    pub fn node_name(mut self, node: impl Into<String>) -> Self {
        self.node = Some(node.into());
        self
    }

    /// The bound on every call, connecting included. Inside the database, the
    /// connection's `statement_timeout` is three quarters of it, so that a slow
    /// statement is cancelled there first. Default 5 s; at least 1 ms.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// Whether to create the table if it is missing, at each new connection (default
    /// `true`). Without it the table must exist ([`PgLock::schema`]). Creating it needs
    /// CREATE on its schema, which ordinary roles lack on `public` since PostgreSQL 15: a
    /// role without it uses the table if it exists (made once by its owner, with SELECT,
    /// INSERT and UPDATE granted), and otherwise fails with an error that says so.
    #[must_use]
    pub fn create_table(mut self, create: bool) -> Self {
        self.create_table = create;
        self
    }

    /// The lock. It does not connect yet ([`PgLock::check`] does).
    ///
    /// # Errors
    /// [`LockError::Config`] for a URL or connection string that does not parse, an
    /// invalid table name, or TLS settings that cannot serve (see [`PgLock`]'s TLS notes:
    /// an unknown `sslmode`, a certificate or key file missing or unreadable, a key that
    /// does not match its certificate, a verifying mode without roots; TLS asked for
    /// without the feature `postgres-tls`).
    pub fn build(self) -> Result<PgLock, LockError> {
        // The TLS settings as libpq reads them: the string, the PGSSL* variables, the
        // files under ~/.postgresql (`pg/tls/`).
        let (url, tls) = tls::read(&self.url, &tls::process_env)?;
        let mut config = postgres::Config::from_str(&url)
            .map_err(|e| LockError::Config(format!("database URL: {e}")))?;
        #[cfg(not(feature = "postgres-tls"))]
        if let Some(why) = tls.asks_for_tls() {
            return Err(LockError::Config(format!(
                "the connection asks for TLS ({why}): build schedpool with the cargo feature \
                 `postgres-tls`"
            )));
        }
        // libpq's rule: no TLS over a Unix-domain socket, so no file is read for one.
        let hosts = config.get_hosts();
        let sockets_only = !hosts.is_empty()
            && hosts
                .iter()
                .all(|h| !matches!(h, postgres::config::Host::Tcp(_)));
        let mode = if sockets_only {
            postgres::config::SslMode::Disable
        } else {
            tls.crate_mode()
        };
        config.ssl_mode(mode);
        #[cfg(feature = "postgres-tls")]
        let tls = if mode == postgres::config::SslMode::Disable {
            None
        } else {
            Some(tls::connector(&tls.locate()?)?)
        };
        if !valid_table(&self.table) {
            return Err(LockError::Config(format!(
                "table name {:?} is not a plain or schema-qualified SQL identifier",
                self.table
            )));
        }
        if config.get_application_name().is_none() {
            config.application_name("schedpool");
        }
        // Like the statement timeout: answer with the error before the caller gives up.
        config.connect_timeout((self.timeout * 3 / 4).max(Duration::from_millis(1)));
        config.keepalives(true);
        Ok(PgLock {
            shared: Arc::new(Shared {
                config,
                #[cfg(feature = "postgres-tls")]
                tls,
                table: self.table,
                node: self.node.unwrap_or_else(super::default_node_name),
                timeout: self.timeout,
                create_table: self.create_table,
                conn: Mutex::new(Conn {
                    tx: None,
                    generation: 0,
                }),
                abandoned: AtomicUsize::new(0),
            }),
        })
    }
}

impl PgLock {
    /// A lock with the default settings on the database at `url` (a `postgresql://`
    /// URL or a `key=value` connection string, as the `postgres` crate takes).
    ///
    /// # Errors
    /// As [`PgLockBuilder::build`].
    pub fn new(url: &str) -> Result<Self, LockError> {
        Self::builder(url).build()
    }

    /// A builder for a lock on the database at `url`.
    pub fn builder(url: &str) -> PgLockBuilder {
        PgLockBuilder {
            url: url.to_owned(),
            table: DEFAULT_TABLE.to_owned(),
            node: None,
            timeout: DEFAULT_TIMEOUT,
            create_table: true,
        }
    }

    /// Connects now if not connected (creating the table if configured) and checks that
    /// the database answers.
    ///
    /// # Errors
    /// [`LockError`] if it cannot, within the timeout.
    pub fn check(&self) -> Result<(), LockError> {
        self.call(Op::Check).map(|_| ())
    }

    /// The node holding a valid lease of `name` now (its `locked_by`), if any.
    ///
    /// # Errors
    /// [`LockError`] if the database could not be asked within the timeout.
    pub fn holder(&self, name: &str) -> Result<Option<String>, LockError> {
        match self.call(Op::Holder {
            name: name.to_owned(),
        })? {
            Answer::Holder(h) => Ok(h),
            _ => unreachable!("a holder query answers with a holder"),
        }
    }

    /// This node's name in the `locked_by` column.
    pub fn node_name(&self) -> &str {
        &self.shared.node
    }

    /// The `CREATE TABLE` statement of a lock table named `table` (the schema
    /// [`create_table`](PgLockBuilder::create_table) creates).
    pub fn schema(table: &str) -> String {
        format!(
            "CREATE TABLE IF NOT EXISTS {table} (\n    \
             name       TEXT PRIMARY KEY,\n    \
             lock_until TIMESTAMPTZ NOT NULL,\n    \
             locked_at  TIMESTAMPTZ NOT NULL,\n    \
             locked_by  TEXT NOT NULL,\n    \
             token      BIGINT NOT NULL\n)"
        )
    }

    /// The `CREATE TABLE` statement of the table of paused jobs that goes with a lock table
    /// named `table`: `{table}_pauses` ([`ClusterLock::pause`]). Created beside the lock
    /// table where the lock creates its table. A role that may not create tables needs it
    /// created once by one that may, and SELECT, INSERT, UPDATE and DELETE on it, to pause
    /// jobs; without those, it sees no pause (its jobs run as before) and its `pause`
    /// fails with the reason.
    pub fn pause_schema(table: &str) -> String {
        format!(
            "CREATE TABLE IF NOT EXISTS {table}_pauses (\n    \
             name         TEXT PRIMARY KEY,\n    \
             paused_by    TEXT NOT NULL,\n    \
             paused_at    TIMESTAMPTZ NOT NULL,\n    \
             paused_until TIMESTAMPTZ\n)"
        )
    }

    /// Sends `op` to the connection thread and waits for its answer, at most the timeout.
    fn call(&self, op: Op) -> Result<Answer, LockError> {
        let timeout = self.shared.timeout;
        let (tx, generation) = self.sender()?;
        let (reply, answer) = mpsc::sync_channel(1);
        let give_up = Instant::now() + timeout;
        if tx.send(Request { op, give_up, reply }).is_err() {
            self.forget(generation);
            return Err(LockError::Store(
                "the lock's connection thread ended".into(),
            ));
        }
        match answer.recv_timeout(timeout) {
            Ok(result) => result,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                self.abandon(generation);
                Err(LockError::Timeout(timeout))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                self.forget(generation);
                Err(LockError::Store(
                    "the lock's connection thread ended".into(),
                ))
            }
        }
    }

    /// The current connection thread's sender, starting the thread if there is none.
    fn sender(&self) -> Result<(mpsc::Sender<Request>, u64), LockError> {
        let mut conn = self.shared.conn.lock();
        if let Some(tx) = &conn.tx {
            return Ok((tx.clone(), conn.generation));
        }
        let (tx, rx) = mpsc::channel();
        let shared = Arc::clone(&self.shared);
        let generation = conn.generation;
        std::thread::Builder::new()
            .name("schedpool-pglock".into())
            .spawn(move || serve(&shared, generation, &rx))
            .map_err(|e| LockError::Store(Box::new(e)))?;
        conn.tx = Some(tx.clone());
        Ok((tx, conn.generation))
    }

    /// The thread of `generation` timed out: leave it to finish by itself and start a
    /// fresh one at the next call, unless too many are already stuck.
    fn abandon(&self, generation: u64) {
        let abandoned = {
            let mut conn = self.shared.conn.lock();
            let abandon = conn.generation == generation
                && conn.tx.is_some()
                && self.shared.abandoned.load(Ordering::Relaxed) < MAX_ABANDONED;
            if abandon {
                self.shared.abandoned.fetch_add(1, Ordering::Relaxed);
                conn.tx = None; // the thread ends when it next looks for a request
                conn.generation += 1;
            }
            abandon
        };
        // U1 (`user.rs`): the subscriber is called with the connection's lock released.
        if abandoned {
            crate::user::traced(
                || tracing::warn!(target: "schedpool", node = %self.shared.node, "the lock's database connection stopped answering; starting a new one"),
            );
        }
    }

    /// The thread of `generation` ended: start a fresh one at the next call.
    fn forget(&self, generation: u64) {
        let mut conn = self.shared.conn.lock();
        if conn.generation == generation {
            conn.tx = None;
            conn.generation += 1;
        }
    }
}

impl ClusterLock for PgLock {
    fn try_acquire(&self, name: &str, at_most_for: Duration) -> Result<Option<Lease>, LockError> {
        match self.call(Op::Acquire {
            name: name.to_owned(),
            at_most_for,
        })? {
            Answer::Token(token) => Ok(token.map(|t| Lease::new(name, t, at_most_for))),
            _ => unreachable!("an acquisition answers with a token"),
        }
    }

    fn release(&self, lease: Lease, at_least_for: Duration) -> Result<bool, LockError> {
        match self.call(Op::Release {
            name: lease.name().to_owned(),
            token: lease.token(),
            at_least_for: at_least_for.min(lease.at_most_for()), // capped (the trait's docs)
        })? {
            Answer::Released(valid) => Ok(valid),
            _ => unreachable!("a release answers whether the lease was valid"),
        }
    }

    fn extend(&self, lease: &Lease, at_most_for: Duration) -> Result<bool, LockError> {
        match self.call(Op::Extend {
            name: lease.name().to_owned(),
            token: lease.token(),
            at_most_for,
        })? {
            Answer::Released(valid) => Ok(valid),
            _ => unreachable!("an extension answers whether the lease was valid"),
        }
    }

    fn last_acquired(&self, name: &str) -> Result<Option<Duration>, LockError> {
        match self.call(Op::LastAcquired {
            name: name.to_owned(),
        })? {
            Answer::Age(age) => Ok(age),
            _ => unreachable!("the question answers with an age"),
        }
    }

    /// A row of `{table}_pauses` ([`pause_schema`](PgLock::pause_schema)); `since` is the
    /// database's `now()`, and a pause past `until` by the database's clock is over.
    fn pause(&self, name: &str, by: &str, until: Option<SystemTime>) -> Result<(), LockError> {
        self.call(Op::Pause {
            name: name.to_owned(),
            by: by.to_owned(),
            until,
        })
        .map(drop)
    }

    fn resume(&self, name: &str) -> Result<bool, LockError> {
        match self.call(Op::Resume {
            name: name.to_owned(),
        })? {
            Answer::Released(was) => Ok(was),
            _ => unreachable!("a resume answers whether the job was paused"),
        }
    }

    fn paused(&self, name: &str) -> Result<Option<Pause>, LockError> {
        match self.call(Op::Paused {
            name: name.to_owned(),
        })? {
            Answer::Pause(pause) => Ok(pause),
            _ => unreachable!("the question answers with a pause"),
        }
    }
}

impl Drop for PgLock {
    /// Drops the lock's sender, so its connection thread (which holds the shared state,
    /// and so the sender, only through this field) ends after its current request and
    /// closes the connection.
    fn drop(&mut self) {
        self.shared.conn.lock().tx = None;
    }
}

impl fmt::Debug for PgLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgLock")
            .field("table", &self.shared.table)
            .field("node", &self.shared.node)
            .field("timeout", &self.shared.timeout)
            .finish_non_exhaustive()
    }
}

/// A plain or schema-qualified SQL identifier, safe to put into a statement.
fn valid_table(table: &str) -> bool {
    let part = |p: &str| {
        let mut chars = p.chars();
        p.len() <= 63
            && chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let mut parts = table.split('.');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(a), None, _) => part(a),
        (Some(a), Some(b), None) => part(a) && part(b),
        _ => false,
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
