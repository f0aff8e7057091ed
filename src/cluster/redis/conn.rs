//! The connections of a [`RedisLock`](super::RedisLock): a short list of idle ones, a
//! call bounded by the lock's timeout on a connection of its own, the one retry on a
//! new connection, and the errors told apart by cause.
//!
//! # Design
//! The `redis` crate's synchronous connection takes socket read and write timeouts, so a
//! call is bounded on the caller's own thread: it takes an idle connection (or makes
//! one, within the connect timeout), sets both timeouts to what is left of its bound,
//! runs its one script and gives the connection back. Calls from several workers run at
//! once on connections of their own; the list keeps at most [`MAX_IDLE`] of them between
//! calls. (`PgLock` needs a thread per connection instead: the `postgres` crate's client
//! has no timeout of its own on a call.)
//!
//! # Invariants
//! - RS1: a connection goes back to the idle list only after a call read its whole
//!   reply. One whose call timed out or failed on the socket is dropped (closed), so a
//!   late reply can never be read as the answer to a later call. (The `redis` crate
//!   counts the replies a timed-out connection still owes and skips them itself; RS1
//!   does not rely on it: a connection that timed out is most likely on a server in
//!   trouble, and a new one checks the server again with its handshake.)
//! - RS2: a call is tried at most twice, the second time only on a new connection, only
//!   if the first ran on a connection made before the call and lost it, and only within
//!   the call's bound.

use std::error::Error;
use std::fmt;
use std::time::{Duration, Instant};

use redis::{Client, Connection, ConnectionAddr, ErrorKind, RedisError, RedisResult};

use crate::cluster::LockError;
use crate::sync::Mutex;

/// Idle connections kept between calls at most; more are closed when their call ends.
const MAX_IDLE: usize = 4;

/// The connections of one lock.
pub(super) struct Connections {
    /// Makes the TCP (and TLS) connection; its handshake is empty (`Setup`).
    client: Client,
    /// What a new connection sends before its first call.
    setup: Setup,
    /// Where the lock connects, for messages (`target`).
    target: String,
    /// Connections that finished their last call cleanly (RS1), the latest last.
    idle: Mutex<Vec<Connection>>,
    /// The bound on every call, connecting included.
    timeout: Duration,
    /// The bound on making a connection (at most `timeout`).
    connect_timeout: Duration,
    /// `CLIENT SETNAME` of each new connection (`CLIENT LIST` shows it).
    client_name: String,
}

/// What a new connection sends before its first call: `AUTH` (if a password is given)
/// and `SELECT` (if the database is not 0).
#[derive(Clone, Debug, Default)]
pub(super) struct Setup {
    pub(super) db: i64,
    pub(super) username: Option<String>,
    pub(super) password: Option<String>,
}

/// What a call's script answered, and whether it ran on a second connection (RS2): the
/// first one's reply may have been lost after the script ran.
pub(super) struct Reply<T> {
    pub(super) value: T,
    pub(super) retried: bool,
}

impl Connections {
    pub(super) fn new(
        client: Client,
        setup: Setup,
        timeout: Duration,
        connect_timeout: Duration,
        client_name: String,
    ) -> Self {
        let target = target(&client, &setup);
        Connections {
            client,
            setup,
            target,
            idle: Mutex::new(Vec::new()),
            timeout,
            connect_timeout: connect_timeout.min(timeout),
            client_name,
        }
    }

    /// Runs `op` (one script, one round trip) within the lock's timeout; `what` says what
    /// it does (to the lock or job `name`), for the error.
    ///
    /// # Errors
    /// [`LockError::Timeout`] if the server did not answer in time, else
    /// [`LockError::Store`] naming the cause.
    pub(super) fn run<T>(
        &self,
        what: &'static str,
        name: Option<&str>,
        op: impl Fn(&mut Connection) -> RedisResult<T>,
    ) -> Result<Reply<T>, LockError> {
        let what = What { what, name };
        let give_up = Instant::now() + self.timeout;
        let (mut conn, reused) = match self.take() {
            Some(conn) => (conn, true),
            None => (self.connect(give_up)?, false),
        };
        match self.attempt(&mut conn, give_up, &op) {
            Ok(value) => {
                self.give_back(conn); // RS1: a whole reply was read
                return Ok(Reply {
                    value,
                    retried: false,
                });
            }
            // RS2: a connection made before this call and lost meanwhile (a restart, a
            // server that closed it while idle): once more, on a new one.
            Err(e) if reused && lost(&e) && Instant::now() < give_up => drop(conn),
            Err(e) => return Err(self.fail(what, conn, &e)),
        }
        let mut conn = self.connect(give_up)?;
        match self.attempt(&mut conn, give_up, &op) {
            Ok(value) => {
                self.give_back(conn);
                Ok(Reply {
                    value,
                    retried: true,
                })
            }
            Err(e) => Err(self.fail(what, conn, &e)),
        }
    }

    /// One try of `op` on `conn`, its socket timeouts set to what is left until `give_up`.
    fn attempt<T>(
        &self,
        conn: &mut Connection,
        give_up: Instant,
        op: &impl Fn(&mut Connection) -> RedisResult<T>,
    ) -> RedisResult<T> {
        let left = left_until(give_up).ok_or_else(|| {
            RedisError::from(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "no time left for the call",
            ))
        })?;
        conn.set_read_timeout(Some(left))?;
        conn.set_write_timeout(Some(left))?;
        op(conn)
    }

    /// The error of a failed call; its connection is kept only if the server answered
    /// (an error reply leaves the connection in step), else closed (RS1).
    fn fail(&self, what: What<'_>, conn: Connection, e: &RedisError) -> LockError {
        if answered(e) {
            self.give_back(conn);
        } else {
            drop(conn);
        }
        if e.is_timeout() {
            return LockError::Timeout(self.timeout);
        }
        store_error(format!("{what} on {}: {}", self.target, cause(e)), e)
    }

    /// A new connection, authenticated and on its database, within the connect timeout
    /// and what is left until `give_up`. The client makes the TCP connection (and TLS)
    /// only; `AUTH`, `SELECT` and `CLIENT SETNAME` follow one at a time, each with what
    /// is left of the bound (the `redis` crate's own handshake reads each reply of its
    /// pipeline with the whole timeout, so a hung server would cost it several).
    fn connect(&self, give_up: Instant) -> Result<Connection, LockError> {
        let Some(left) = left_until(give_up) else {
            return Err(LockError::Timeout(self.timeout));
        };
        // The connect timeout, or the call's bound, whichever runs out first.
        let (limit, bound) = if left > self.connect_timeout {
            (self.connect_timeout, Instant::now() + self.connect_timeout)
        } else {
            (self.timeout, give_up)
        };
        let failed = |e: &RedisError| {
            if e.is_timeout() {
                LockError::Timeout(limit)
            } else {
                store_error(format!("connecting to {}: {}", self.target, cause(e)), e)
            }
        };
        let mut conn = self
            .client
            .get_connection_with_timeout(left.min(self.connect_timeout))
            .map_err(|e| failed(&e))?;
        let setup = &self.setup;
        if let Some(password) = &setup.password {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = &setup.username {
                auth.arg(user);
            }
            auth.arg(password);
            step(&mut conn, bound, &auth).map_err(|e| failed(&e))?;
        }
        if setup.db != 0 {
            step(&mut conn, bound, redis::cmd("SELECT").arg(setup.db)).map_err(|e| failed(&e))?;
        }
        // A name for `CLIENT LIST`; a server or an ACL that refuses it costs nothing else.
        let name = redis::cmd("CLIENT")
            .arg("SETNAME")
            .arg(&self.client_name)
            .clone();
        match step(&mut conn, bound, &name) {
            Err(e) if !answered(&e) => Err(failed(&e)),
            _ => Ok(conn),
        }
    }

    fn take(&self) -> Option<Connection> {
        self.idle.lock().pop()
    }

    fn give_back(&self, conn: Connection) {
        let extra = {
            let mut idle = self.idle.lock();
            if idle.len() < MAX_IDLE {
                idle.push(conn);
                None
            } else {
                Some(conn)
            }
        };
        drop(extra); // closed outside the lock
    }
}

impl fmt::Debug for Connections {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connections")
            .field("target", &self.target)
            .field("timeout", &self.timeout)
            .field("idle", &self.idle.lock().len())
            .finish_non_exhaustive()
    }
}

/// What a call does, for its error: "acquiring the lock \"report\"".
#[derive(Clone, Copy)]
struct What<'a> {
    what: &'static str,
    name: Option<&'a str>,
}

impl fmt::Display for What<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name {
            Some(name) => write!(f, "{} {name:?}", self.what),
            None => f.write_str(self.what),
        }
    }
}

/// What is left until `give_up`, if anything.
fn left_until(give_up: Instant) -> Option<Duration> {
    let left = give_up.saturating_duration_since(Instant::now());
    (!left.is_zero()).then_some(left)
}

/// Runs `cmd` on `conn` with what is left until `give_up` as its socket timeouts.
fn step(conn: &mut Connection, give_up: Instant, cmd: &redis::Cmd) -> RedisResult<()> {
    let left = left_until(give_up).ok_or_else(|| {
        RedisError::from(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "no time left to connect",
        ))
    })?;
    conn.set_read_timeout(Some(left))?;
    conn.set_write_timeout(Some(left))?;
    cmd.query::<redis::Value>(conn).and_then(|v| match v {
        redis::Value::ServerError(e) => Err(e.into()),
        _ => Ok(()),
    })
}

/// Whether `e` is the server's own answer (an error reply), after which the connection
/// is still in step with it.
fn answered(e: &RedisError) -> bool {
    matches!(e.kind(), ErrorKind::Server(_) | ErrorKind::Extension) && !e.is_io_error()
}

/// Whether `e` says the connection was lost (closed, reset, ended) rather than slow.
fn lost(e: &RedisError) -> bool {
    !e.is_timeout() && (e.is_connection_dropped() || e.is_io_error())
}

/// Where the lock connects, for messages: `redis at host:port` (with `(TLS)`), or the
/// socket's path, the database and the user; never the password.
fn target(client: &Client, setup: &Setup) -> String {
    let user = setup
        .username
        .as_ref()
        .map(|u| format!(" as user {u:?}"))
        .unwrap_or_default();
    let at = match client.get_connection_info().addr() {
        ConnectionAddr::Tcp(host, port) => format!("redis at {host}:{port}"),
        ConnectionAddr::TcpTls { host, port, .. } => format!("redis at {host}:{port} (TLS)"),
        ConnectionAddr::Unix(path) => format!("redis at {}", path.display()),
        other => format!("redis at {other}"),
    };
    format!("{at}, database {}{user}", setup.db)
}

/// The cause of `e` in a few words, with what to check where the server's answer is
/// terse (its own text follows as the error's source).
fn cause(e: &RedisError) -> &'static str {
    if e.is_connection_refusal() {
        return "connection refused (is the server running, on this port?)";
    }
    if e.kind() == ErrorKind::AuthenticationFailed {
        return "authentication failed (check the user and password)";
    }
    match e.code() {
        Some("WRONGPASS") => "authentication failed (check the user and password)",
        Some("NOAUTH") => "the server requires a password",
        Some("NOPERM") => NOPERM,
        Some("OOM") => {
            "the server is out of memory (maxmemory with noeviction): it \
                        refuses every write"
        }
        Some("READONLY") => "the server is a read-only replica; connect to the primary",
        Some("MOVED" | "ASK" | "CLUSTERDOWN" | "CROSSSLOT") => {
            "the server is a Redis Cluster node, which RedisLock does not support"
        }
        Some("LOADING") => "the server is loading its data after a restart",
        Some("BUSY") => "the server is busy running a script",
        Some("WRONGTYPE") => {
            "a key of the lock holds another kind of value (another \
                              program's key under the lock's prefix?)"
        }
        Some("NOSCRIPT") => "the server lost the lock's scripts",
        _ if is_db_out_of_range(e) => "the server has no database of that index",
        _ if says(e, "can't run this command") || says(e, "No permissions") => NOPERM,
        _ if e.is_io_error() => "the connection failed",
        _ => "the server refused",
    }
}

/// What an ACL user needs (`RedisLock`'s docs).
const NOPERM: &str = "the user may not do this (ACL): it needs EVALSHA, SCRIPT LOAD, PING, \
                      TIME, HGET, HMGET, HSET and DEL, and the keys under the lock's prefix";

fn is_db_out_of_range(e: &RedisError) -> bool {
    says(e, "DB index is out of range")
}

/// Whether the server's message in `e` says `what`.
fn says(e: &RedisError, what: &str) -> bool {
    e.detail().is_some_and(|d| d.contains(what)) || e.to_string().contains(what)
}

/// A [`LockError::Store`] saying `what`, with `e` as its source.
fn store_error(what: String, e: &RedisError) -> LockError {
    LockError::Store(Box::new(StoreError {
        what,
        source: Cause(e.clone()),
    }))
}

/// A failed call: what it was and why (the server's or the socket's error as source).
#[derive(Debug)]
struct StoreError {
    what: String,
    source: Cause,
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }
}

impl Error for StoreError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.source)
    }
}

/// The `redis` crate's error, as the end of the chain: its text already holds its own
/// source's, which `LockError`'s `Display` would print a second time.
#[derive(Debug)]
struct Cause(RedisError);

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Error for Cause {}
