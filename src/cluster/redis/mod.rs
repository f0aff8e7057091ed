//! [`RedisLock`]: the lease protocol (LK1–LK5, `cluster/mod.rs`) in Redis.
//!
//! # Design
//! Each call is one Lua script (`scripts.rs`), one round trip, atomic in the server, with
//! the server's `TIME` for every time (LK4); a script is sent by its SHA-1 (`EVALSHA`),
//! and whole only to a server that does not know it yet. There is no read-then-write
//! from the client: a plain `SET NX PX` would give LK1, but not the fencing token, the
//! last acquisition or LK3's "until `at_least_for` after the acquisition", which need
//! the record read and written in the same step. Scripts are replicated and written to
//! the append-only file as their effects (the `HSET`s with the values the script
//! computed), so a replica or a replayed file holds the same times and tokens.
//!
//! Each call runs on the caller's thread, on a connection of its own taken from a short
//! idle list, bounded by the lock's timeout through the socket's read and write
//! timeouts (`conn.rs`). A call whose script ran but whose reply timed out may have
//! changed the store: an acquisition that way is a lease nobody uses, which runs out at
//! `at_most_for` (that tick is skipped everywhere); a release only frees the lock sooner.
//!
//! Faults, as `PgLock` meets them: a server that is down or refuses fails each call at
//! once (or at the connect timeout), and the next call connects again; a connection
//! that was open before the call and is lost (a restart, an idle connection the server
//! closed) is retried once on a new one, within the bound (RS2 in `conn.rs`). A release
//! whose first try ran but whose reply was lost finds on the retry its lease ended with
//! its token still the lock's: nobody acquired since, so the release answers valid; a
//! changed token answers "no longer valid" (an overrun), as `PgLock`'s retry does.
//!
//! What Redis cannot promise (`docs/CLUSTER.md`, "What each store guarantees"): the
//! lease is as durable as the server's data. A restart without persistence, or with
//! `appendfsync everysec` and a crash in the last second, loses leases, and a failover
//! to a replica can lose the last writes (replication is asynchronous): a node may then
//! take a lock another still holds, and run a tick that already ran. Tokens still grow
//! across such a loss (`scripts.rs`).

use std::fmt;
use std::time::{Duration, SystemTime};

use redis::{Client, ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo};

use super::{ClusterLock, Lease, LockError, Pause};

mod conn;
mod scripts;
#[cfg(feature = "redis-tls")]
mod tls;

use conn::{Connections, Setup};
use scripts::{epoch_micros, from_epoch_micros, micros, Scripts};

/// The default bound on each call ([`RedisLockBuilder::timeout`]).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// The default prefix of the lock's keys ([`RedisLockBuilder::prefix`]).
const DEFAULT_PREFIX: &str = "schedpool:";

/// A [`ClusterLock`] in Redis, shared by every node that connects to the same server and
/// database with the same key prefix (ShedLock's `RedisLockProvider`). Needs the cargo
/// feature `redis`; `rediss://` needs `redis-tls`.
///
/// Every call is one Lua script, one round trip, atomic in the server, with the server's
/// clock for every time (never a node's), bounded by the lock's
/// [`timeout`](RedisLockBuilder::timeout). A lock `name` is a hash at
/// `{prefix}lock:{name}` (`until`, `at`, `by`, `token`), a pause one at
/// `{prefix}pause:{name}`; neither expires, so that the last acquisition (catch-up) and
/// the last token are kept, as `PgLock`'s rows keep them. Any string is a name: keys are
/// bytes to Redis.
///
/// **Durability.** A lease lasts only as long as the server keeps its data. Run the
/// server with `appendonly yes` (and `appendfsync always` for no loss at all on a
/// crash), and a memory policy that does not evict these keys (`noeviction` or a
/// `volatile-*` one: the keys have no time to live). A restart without persistence, or
/// a failover to a replica that had not received the last writes, can let two nodes run
/// one tick; `docs/CLUSTER.md` has what each deployment guarantees. The fencing tokens
/// keep growing across such a loss (they never fall below the server's time in
/// microseconds).
///
/// **Connections.** A call runs on the caller's thread on a connection of its own (up to
/// four are kept idle between calls): share one `RedisLock` (in an `Arc`) among the jobs
/// of a process. The URL is the `redis` crate's: `redis://[user[:password]@]host[:port]
/// [/database]`, `rediss://` for TLS (feature `redis-tls`), `redis+unix:///path` for a
/// socket. An ACL user needs `EVALSHA`, `SCRIPT LOAD` and `PING`, the commands the
/// scripts run (`TIME`, `HGET`, `HMGET`, `HSET`, `DEL`) and the keys under the prefix
/// (`~schedpool:*`); `CLIENT SETNAME` is used where allowed.
///
/// **TLS.** With the feature `redis-tls`, a `rediss://` URL connects over TLS (rustls with
/// ring, no OpenSSL), checking the server's certificate and host name against the
/// system's roots, or against a CA of your own
/// (`RedisLockBuilder::tls_root_certificate`), with a client certificate when the server
/// asks for one (`RedisLockBuilder::tls_client_certificate`). Files are read and checked
/// by [`build`](RedisLockBuilder::build). The `redis` crate's `#insecure` (no check of
/// the certificate) is refused.
///
/// ```no_run
/// use schedpool::cluster::{Exclusive, RedisLock};
/// use schedpool::{Periodic, ScheduledThreadPoolExecutor};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let lock = Arc::new(RedisLock::new("redis://app:secret@127.0.0.1:6379/0")?);
/// lock.check()?; // connect now, to fail early
/// let pool = ScheduledThreadPoolExecutor::new(2);
/// let send_due = Periodic::at_fixed_rate(Duration::from_secs(1))
///     .exclusive(Exclusive::new(lock, "send-due-messages", Duration::from_secs(60))
///         .at_least_for(Duration::from_millis(500)));
/// pool.schedule_periodic(send_due, || { /* one node sends the messages due now */ })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RedisLock {
    conns: Connections,
    scripts: Scripts,
    prefix: Vec<u8>,
    node: String,
}

/// Configures a [`RedisLock`]: from [`RedisLock::builder`].
#[derive(Clone)]
pub struct RedisLockBuilder {
    url: String,
    prefix: Vec<u8>,
    node: Option<String>,
    timeout: Duration,
    connect_timeout: Option<Duration>,
    database: Option<i64>,
    username: Option<String>,
    password: Option<String>,
    #[cfg(feature = "redis-tls")]
    tls: tls::Files,
}

impl RedisLockBuilder {
    /// The prefix of every key of the lock (default `schedpool:`): the lock `name` is the
    /// key `{prefix}lock:{name}`. Any bytes; nodes that share locks use the same prefix.
    #[must_use]
    pub fn prefix(mut self, prefix: impl AsRef<[u8]>) -> Self {
        self.prefix = prefix.as_ref().to_vec();
        self
    }

    /// This node's name in the lock's `by` field and its connections' client name
    /// (default: the host name and the process id, `host:pid`).
    #[must_use]
    pub fn node_name(mut self, node: impl Into<String>) -> Self {
        self.node = Some(node.into());
        self
    }

    /// The bound on every call, connecting included (default 5 s; at least 1 ms).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The bound on making a connection (the TCP connection, TLS, `AUTH` and `SELECT`),
    /// within a call's [`timeout`](Self::timeout) (default: the timeout itself).
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout.max(Duration::from_millis(1)));
        self
    }

    /// The database index (`SELECT`), instead of the URL's (`/N`; default 0).
    #[must_use]
    pub fn database(mut self, index: i64) -> Self {
        self.database = Some(index);
        self
    }

    /// The ACL user (Redis 6 or later), instead of the URL's.
    #[must_use]
    pub fn username(mut self, user: impl Into<String>) -> Self {
        self.username = Some(user.into());
        self
    }

    /// The password (of the ACL user, or `requirepass`'s), instead of the URL's.
    #[must_use]
    pub fn password(mut self, password: impl Into<String>) -> Self {
        self.password = Some(password.into());
        self
    }

    /// The lock. It does not connect yet ([`RedisLock::check`] does).
    ///
    /// # Errors
    /// [`LockError::Config`] for a URL that does not parse, a negative database index, a
    /// `rediss://` URL without the feature `redis-tls` or with `#insecure`, a TLS file
    /// that is missing or does not parse, or a client key that does not match its
    /// certificate.
    pub fn build(self) -> Result<RedisLock, LockError> {
        let config = |msg: String| LockError::Config(msg);
        let tls = is_tls_url(&self.url);
        #[cfg(not(feature = "redis-tls"))]
        if tls {
            return Err(config(
                "a rediss:// URL asks for TLS: build schedpool with the cargo feature \
                 `redis-tls`"
                    .to_owned(),
            ));
        }
        let info = self
            .url
            .as_str()
            .into_connection_info()
            .map_err(|e| config(format!("Redis URL: {e}")))?;
        if matches!(info.addr(), ConnectionAddr::TcpTls { insecure: true, .. }) {
            return Err(config(
                "the URL's #insecure would skip the check of the server's certificate; \
                 give its CA with tls_root_certificate instead"
                    .to_owned(),
            ));
        }
        // The handshake is the lock's own (`conn.rs`): the client only connects.
        let url_settings = info.redis_settings();
        let setup = Setup {
            db: self.database.unwrap_or(url_settings.db()),
            username: self
                .username
                .or_else(|| url_settings.username().map(str::to_owned)),
            password: self
                .password
                .or_else(|| url_settings.password().map(str::to_owned)),
        };
        if setup.db < 0 {
            return Err(config(format!("database index {} is negative", setup.db)));
        }
        let info = info.set_redis_settings(RedisConnectionInfo::default().set_skip_set_lib_name());
        #[cfg(feature = "redis-tls")]
        let client = if tls {
            self.tls.client(info)?
        } else {
            Client::open(info).map_err(|e| config(format!("Redis URL: {e}")))?
        };
        #[cfg(not(feature = "redis-tls"))]
        let client = Client::open(info).map_err(|e| config(format!("Redis URL: {e}")))?;
        let node = self.node.unwrap_or_else(super::default_node_name);
        let timeout = self.timeout;
        Ok(RedisLock {
            conns: Connections::new(
                client,
                setup,
                timeout,
                self.connect_timeout.unwrap_or(timeout),
                client_name(&node),
            ),
            scripts: Scripts::new(),
            prefix: self.prefix,
            node,
        })
    }
}

impl fmt::Debug for RedisLockBuilder {
    /// Without the URL, which may hold a password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisLockBuilder")
            .field("prefix", &String::from_utf8_lossy(&self.prefix))
            .field("node", &self.node)
            .field("timeout", &self.timeout)
            .field("database", &self.database)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

impl RedisLock {
    /// A lock with the default settings on the server at `url` (`redis://host:port/db`).
    ///
    /// # Errors
    /// As [`RedisLockBuilder::build`].
    pub fn new(url: &str) -> Result<Self, LockError> {
        Self::builder(url).build()
    }

    /// A builder for a lock on the server at `url`.
    pub fn builder(url: &str) -> RedisLockBuilder {
        RedisLockBuilder {
            url: url.to_owned(),
            prefix: DEFAULT_PREFIX.as_bytes().to_vec(),
            node: None,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: None,
            database: None,
            username: None,
            password: None,
            #[cfg(feature = "redis-tls")]
            tls: tls::Files::default(),
        }
    }

    /// Connects now if no connection is idle and checks that the server answers (`PING`).
    ///
    /// # Errors
    /// [`LockError`] if it cannot, within the timeout, with the cause (refused,
    /// authentication, database index, TLS).
    pub fn check(&self) -> Result<(), LockError> {
        self.conns
            .run("checking the server", None, |c| {
                redis::cmd("PING").query::<String>(c)
            })
            .map(drop)
    }

    /// The node holding a valid lease of `name` now (its `by`), if any.
    ///
    /// # Errors
    /// [`LockError`] if the server could not be asked within the timeout.
    pub fn holder(&self, name: &str) -> Result<Option<String>, LockError> {
        let key = self.key(LOCK, name);
        let by = self
            .conns
            .run("asking who holds the lock", Some(name), |c| {
                self.scripts.holder.key(&key).invoke::<Option<Vec<u8>>>(c)
            })?;
        Ok(by.value.map(|b| String::from_utf8_lossy(&b).into_owned()))
    }

    /// This node's name in the lock's `by` field.
    pub fn node_name(&self) -> &str {
        &self.node
    }

    /// The key of `name`'s record of `kind` ([`LOCK`] or [`PAUSE`]).
    fn key(&self, kind: &[u8], name: &str) -> Vec<u8> {
        let mut key = Vec::with_capacity(self.prefix.len() + kind.len() + name.len());
        key.extend_from_slice(&self.prefix);
        key.extend_from_slice(kind);
        key.extend_from_slice(name.as_bytes());
        key
    }
}

/// The infix of a lock's key.
const LOCK: &[u8] = b"lock:";
/// The infix of a pause's key.
const PAUSE: &[u8] = b"pause:";

impl ClusterLock for RedisLock {
    fn try_acquire(&self, name: &str, at_most_for: Duration) -> Result<Option<Lease>, LockError> {
        let key = self.key(LOCK, name);
        let token = self.conns.run("acquiring the lock", Some(name), |c| {
            self.scripts
                .acquire
                .key(&key)
                .arg(micros(at_most_for))
                .arg(&self.node)
                .invoke::<Option<u64>>(c)
        })?;
        Ok(token.value.map(|t| Lease::new(name, t, at_most_for)))
    }

    fn release(&self, lease: Lease, at_least_for: Duration) -> Result<bool, LockError> {
        let key = self.key(LOCK, lease.name());
        let at_least_for = at_least_for.min(lease.at_most_for()); // capped (the trait's docs)
        let answer = self
            .conns
            .run("releasing the lock", Some(lease.name()), |c| {
                self.scripts
                    .release
                    .key(&key)
                    .arg(lease.token())
                    .arg(micros(at_least_for))
                    .invoke::<u8>(c)
            })?;
        Ok(match answer.value {
            1 => true,
            // The lease ended with its token still the lock's: after a retry, the first
            // try released it and its reply was lost (or it ran out with nobody after).
            2 if answer.retried => {
                crate::user::traced(|| {
                    tracing::debug!(
                        target: "schedpool",
                        node = %self.node,
                        lock = lease.name(),
                        token = lease.token(),
                        "a release's reply was lost with its connection; its retry found \
                         the lease ended and no other holder since"
                    )
                });
                true
            }
            _ => false,
        })
    }

    fn extend(&self, lease: &Lease, at_most_for: Duration) -> Result<bool, LockError> {
        let key = self.key(LOCK, lease.name());
        let answer = self
            .conns
            .run("extending the lock", Some(lease.name()), |c| {
                self.scripts
                    .extend
                    .key(&key)
                    .arg(lease.token())
                    .arg(micros(at_most_for))
                    .invoke::<u8>(c)
            })?;
        Ok(answer.value == 1)
    }

    fn last_acquired(&self, name: &str) -> Result<Option<Duration>, LockError> {
        let key = self.key(LOCK, name);
        let age = self
            .conns
            .run("asking the last acquisition of the lock", Some(name), |c| {
                self.scripts
                    .last_acquired
                    .key(&key)
                    .invoke::<Option<u64>>(c)
            })?;
        Ok(age.value.map(Duration::from_micros))
    }

    /// A hash at `{prefix}pause:{name}`; `since` is the server's time, and a pause past
    /// `until` by the server's clock is over.
    fn pause(&self, name: &str, by: &str, until: Option<SystemTime>) -> Result<(), LockError> {
        let key = self.key(PAUSE, name);
        let until = until
            .map(|u| epoch_micros(u).to_string())
            .unwrap_or_default();
        self.conns
            .run("pausing the job", Some(name), |c| {
                self.scripts
                    .pause
                    .key(&key)
                    .arg(by)
                    .arg(&until)
                    .invoke::<u8>(c)
            })
            .map(drop)
    }

    fn resume(&self, name: &str) -> Result<bool, LockError> {
        let key = self.key(PAUSE, name);
        let was = self.conns.run("resuming the job", Some(name), |c| {
            self.scripts.resume.key(&key).invoke::<u8>(c)
        })?;
        Ok(was.value == 1)
    }

    fn paused(&self, name: &str) -> Result<Option<Pause>, LockError> {
        let key = self.key(PAUSE, name);
        let row = self
            .conns
            .run("asking for a pause of the job", Some(name), |c| {
                self.scripts
                    .paused
                    .key(&key)
                    .invoke::<Option<(Vec<u8>, String, String)>>(c)
            })?;
        let Some((by, since, until)) = row.value else {
            return Ok(None);
        };
        let since = from_epoch_micros(&since);
        let until = if until.is_empty() {
            Some(None)
        } else {
            from_epoch_micros(&until).map(Some)
        };
        match (since, until) {
            (Some(since), Some(until)) => {
                Ok(Some(Pause::new(String::from_utf8_lossy(&by), since, until)))
            }
            _ => Err(LockError::Store(
                format!(
                    "the pause of {name:?} at {:?} is not one RedisLock wrote (another \
                     program's key under the lock's prefix?)",
                    String::from_utf8_lossy(&key)
                )
                .into(),
            )),
        }
    }
}

impl fmt::Debug for RedisLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisLock")
            .field("prefix", &String::from_utf8_lossy(&self.prefix))
            .field("node", &self.node)
            .field("connections", &self.conns)
            .finish_non_exhaustive()
    }
}

/// Whether `url` asks for TLS (`rediss://`, or the `valkeys://` the `redis` crate reads
/// as the same).
fn is_tls_url(url: &str) -> bool {
    let scheme = url.split("://").next().unwrap_or_default();
    scheme.eq_ignore_ascii_case("rediss") || scheme.eq_ignore_ascii_case("valkeys")
}

/// A client name Redis accepts (no spaces or newlines): the node's, with `_` for those.
fn client_name(node: &str) -> String {
    let name: String = node
        .chars()
        .map(|c| if c.is_ascii_graphic() { c } else { '_' })
        .collect();
    format!("schedpool:{name}")
}

#[cfg(all(test, not(loom)))]
mod tests;
