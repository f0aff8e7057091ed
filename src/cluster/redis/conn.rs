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
//!   late reply can never be read as the answer to a later call.
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
    client: Client,
    /// Connections that finished their last call cleanly (RS1), the latest last.
    idle: Mutex<Vec<Connection>>,
    /// The bound on every call, connecting included.
    timeout: Duration,
    /// The bound on making a connection (at most `timeout`).
    connect_timeout: Duration,
    /// `CLIENT SETNAME` of each new connection (`CLIENT LIST` shows it).
    client_name: String,
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
        timeout: Duration,
        connect_timeout: Duration,
        client_name: String,
    ) -> Self {
        Connections {
            client,
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
        let target = target(&self.client);
        store_error(format!("{what} on {target}: {}", cause(e)), e)
    }

    /// A new connection, authenticated and on its database, within the connect timeout
    /// and what is left until `give_up`.
    fn connect(&self, give_up: Instant) -> Result<Connection, LockError> {
        let Some(left) = left_until(give_up) else {
            return Err(LockError::Timeout(self.timeout));
        };
        let bound = left.min(self.connect_timeout);
        let mut conn = self
            .client
            .get_connection_with_timeout(bound)
            .map_err(|e| {
                if e.is_timeout() {
                    let target = target(&self.client);
                    store_error(
                        format!("connecting to {target}: no answer within {bound:?}"),
                        &e,
                    )
                } else {
                    store_error(
                        format!("connecting to {}: {}", target(&self.client), cause(&e)),
                        &e,
                    )
                }
            })?;
        // A name for `CLIENT LIST`; a server or an ACL that refuses it costs nothing else.
        if let Some(left) = left_until(give_up) {
            let _ = conn.set_read_timeout(Some(left));
            let set: RedisResult<()> = redis::cmd("CLIENT")
                .arg("SETNAME")
                .arg(&self.client_name)
                .query(&mut conn);
            if let Err(e) = set {
                if !answered(&e) {
                    let what = format!("connecting to {}", target(&self.client));
                    return Err(if e.is_timeout() {
                        LockError::Timeout(self.timeout)
                    } else {
                        store_error(format!("{what}: {}", cause(&e)), &e)
                    });
                }
            }
        }
        Ok(conn)
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
            .field("target", &target(&self.client))
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

/// Whether `e` is the server's own answer (an error reply), after which the connection
/// is still in step with it.
fn answered(e: &RedisError) -> bool {
    matches!(e.kind(), ErrorKind::Server(_) | ErrorKind::Extension) && !e.is_io_error()
}

/// Whether `e` says the connection was lost (closed, reset, ended) rather than slow.
fn lost(e: &RedisError) -> bool {
    !e.is_timeout() && (e.is_connection_dropped() || e.is_io_error())
}

/// Where the lock connects, for messages: `host:port` (with `tls`), or the socket's
/// path; never the password.
pub(super) fn target(client: &Client) -> String {
    let info = client.get_connection_info();
    let db = info.redis_settings().db();
    let user = info
        .redis_settings()
        .username()
        .map(|u| format!(" as user {u:?}"))
        .unwrap_or_default();
    let at = match info.addr() {
        ConnectionAddr::Tcp(host, port) => format!("redis at {host}:{port}"),
        ConnectionAddr::TcpTls { host, port, .. } => format!("redis at {host}:{port} (TLS)"),
        ConnectionAddr::Unix(path) => format!("redis at {}", path.display()),
        other => format!("redis at {other}"),
    };
    format!("{at}, database {db}{user}")
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
        Some("NOPERM") => {
            "the user may not do this (ACL): it needs EVALSHA, SCRIPT LOAD, \
                           PING and the keys under the lock's prefix"
        }
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
        _ if e.is_io_error() => "the connection failed",
        _ => "the server refused",
    }
}

fn is_db_out_of_range(e: &RedisError) -> bool {
    e.detail()
        .is_some_and(|d| d.contains("DB index is out of range"))
        || e.to_string().contains("DB index is out of range")
}

/// A [`LockError::Store`] saying `what`, with `e` as its source.
fn store_error(what: String, e: &RedisError) -> LockError {
    LockError::Store(Box::new(StoreError {
        what,
        source: e.clone(),
    }))
}

/// A failed call: what it was and why (the server's or the socket's error as source).
#[derive(Debug)]
struct StoreError {
    what: String,
    source: RedisError,
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
