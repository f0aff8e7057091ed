//! The connection thread of a [`PgLock`]: its session (the connection and
//! its prepared statements), the loop that answers the lock's requests, and the
//! connection itself (TLS as the connection string asks, READ COMMITTED, the table
//! created if missing). The lock's side (requests, time-outs, abandoned threads) is in
//! `mod.rs`.

use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use postgres::{Client, NoTls, Statement};

use super::{Answer, Op, PgLock, Request, Shared};
use crate::cluster::LockError;
use crate::sync::Ordering;

/// A connection and its prepared statements.
struct Session {
    client: Client,
    acquire: Statement,
    release: Statement,
    extend: Statement,
    holder: Statement,
    last: Statement,
    /// `None` while the table of pauses does not exist (`prepare_paused`).
    paused: Option<Statement>,
}

/// The connection thread: runs the requests until its sender is dropped (the lock was
/// dropped, or this thread was abandoned).
pub(super) fn serve(shared: &Shared, generation: u64, rx: &mpsc::Receiver<Request>) {
    let mut session: Option<Session> = None;
    while let Ok(req) = rx.recv() {
        if Instant::now() >= req.give_up {
            continue; // its caller has given up: do not take a lease nobody uses
        }
        let fresh = session.is_none();
        let mut result = run(shared, &mut session, &req.op);
        if connection_lost(&result, &session) {
            session = None;
            if !fresh && Instant::now() < req.give_up {
                // The server closed a connection that was open before this request (a
                // restart, a dropped connection): try once more on a new one. The first
                // try may have committed with its reply lost. An acquisition that did
                // makes the retry find the lock held (LK1), so the run is skipped and
                // that lease runs out by itself; an extension that did is extended again.
                // A release that did makes the retry find the lease over: `released`
                // tells that apart from a lease another node took over.
                result = run(shared, &mut session, &req.op);
                if connection_lost(&result, &session) {
                    session = None;
                } else if let (Op::Release { name, token, .. }, Ok(Answer::Released(false))) =
                    (&req.op, &result)
                {
                    if released(shared, &mut session, name, *token) {
                        result = Ok(Answer::Released(true));
                    }
                }
            }
        }
        let _ = req.reply.send(result); // a caller that gave up dropped its receiver
    }
    drop(session);
    // An abandoned thread counts itself out (`abandon` moved the generation on); the
    // current one ends only when the lock is dropped, and was never counted in.
    if shared.conn.lock().generation != generation {
        shared.abandoned.fetch_sub(1, Ordering::Relaxed);
    }
}

/// After a release retried on a new connection found its lease no longer valid: whether
/// the lock's row still carries the lease's token. Every acquisition gives the row a new
/// token (LK2), so an unchanged one means no node has taken the lock since the lease
/// began: the lease ended by this release's first try, whose reply was lost, or ran out
/// with nobody after it; either way no other node held the lock while the run went on.
/// `false` for a changed token, a missing row, or a question that failed (the retry's
/// answer stands).
fn released(shared: &Shared, session: &mut Option<Session>, name: &str, token: u64) -> bool {
    let Some(s) = session.as_mut() else {
        return false;
    };
    let lease = i64::try_from(token).unwrap_or(i64::MAX);
    let row: Result<_, LockError> = s
        .client
        .query_opt(
            &format!("SELECT token FROM {} WHERE name = $1", shared.table),
            &[&name],
        )
        .map_err(|e| LockError::Store(Box::new(e)));
    let unchanged = match &row {
        Ok(row) => row.as_ref().is_some_and(|r| r.get::<_, i64>(0) == lease),
        Err(_) => false,
    };
    if connection_lost(&row, session) {
        *session = None;
    }
    if unchanged {
        crate::user::traced(|| {
            tracing::debug!(
                target: "schedpool",
                node = %shared.node,
                lock = name,
                token,
                "a release's reply was lost with its connection; its retry found the lease \
                 ended and no other holder since"
            )
        });
    }
    unchanged
}

/// Whether a failed call lost its connection: the client saw it close, the error says so,
/// or the server's error is of the connection kind (SQLSTATE class 08, or 57P01–57P03: the
/// backend was terminated, or the server is shutting down or not yet accepting). Right
/// after `pg_terminate_backend` the server's FATAL 57P01 can arrive before the client
/// marks itself closed, so the client's flag alone missed it, now and then.
fn connection_lost<T>(result: &Result<T, LockError>, session: &Option<Session>) -> bool {
    let Err(err) = result else {
        return false;
    };
    if session.as_ref().is_some_and(|s| s.client.is_closed()) {
        return true;
    }
    let LockError::Store(e) = err else {
        return false;
    };
    let Some(pg) = e.downcast_ref::<postgres::Error>() else {
        return false;
    };
    pg.is_closed()
        || pg.code().is_some_and(|c| {
            let c = c.code();
            c.starts_with("08") || matches!(c, "57P01" | "57P02" | "57P03")
        })
}

fn run(shared: &Shared, session: &mut Option<Session>, op: &Op) -> Result<Answer, LockError> {
    if session.is_none() {
        *session = Some(connect(shared)?);
    }
    let s = session.as_mut().expect("connected just above");
    let store = |e: postgres::Error| LockError::Store(Box::new(e));
    Ok(match op {
        Op::Acquire { name, at_most_for } => {
            let row = s
                .client
                .query_opt(&s.acquire, &[name, &micros(*at_most_for), &shared.node])
                .map_err(store)?;
            Answer::Token(row.map(|r| r.get::<_, i64>(0).unsigned_abs()))
        }
        Op::Release {
            name,
            token,
            at_least_for,
        } => {
            let token = i64::try_from(*token).unwrap_or(i64::MAX);
            let n = s
                .client
                .execute(&s.release, &[name, &token, &micros(*at_least_for)])
                .map_err(store)?;
            Answer::Released(n == 1)
        }
        Op::Extend {
            name,
            token,
            at_most_for,
        } => {
            let token = i64::try_from(*token).unwrap_or(i64::MAX);
            let n = s
                .client
                .execute(&s.extend, &[name, &token, &micros(*at_most_for)])
                .map_err(store)?;
            Answer::Released(n == 1)
        }
        Op::LastAcquired { name } => {
            let row = s.client.query_opt(&s.last, &[name]).map_err(store)?;
            Answer::Age(row.map(|r| Duration::from_secs_f64(r.get::<_, f64>(0).max(0.0))))
        }
        Op::Holder { name } => {
            let row = s.client.query_opt(&s.holder, &[name]).map_err(store)?;
            Answer::Holder(row.map(|r| r.get::<_, String>(0)))
        }
        Op::Pause { name, by, until } => pause(shared, s, name, by, until)?,
        Op::Resume { name } => resume(shared, s, name)?,
        Op::Paused { name } => paused(shared, s, name)?,
        Op::Check => {
            s.client.simple_query("SELECT 1").map_err(store)?;
            Answer::Ready
        }
    })
}

/// Pauses job `name` on every node (`ClusterLock::pause`): one row, replaced if there.
fn pause(
    shared: &Shared,
    s: &mut Session,
    name: &str,
    by: &str,
    until: &Option<SystemTime>,
) -> Result<Answer, LockError> {
    let p = pauses(shared);
    s.client
        .execute(
            &format!(
                "INSERT INTO {p} (name, paused_by, paused_at, paused_until) \
                 VALUES ($1, $2, now(), $3) \
                 ON CONFLICT (name) DO UPDATE SET paused_by = EXCLUDED.paused_by, \
                 paused_at = EXCLUDED.paused_at, paused_until = EXCLUDED.paused_until"
            ),
            &[&name, &by, until],
        )
        .map_err(|e| missing_pauses(e, shared))?;
    Ok(Answer::Ready)
}

/// Resumes job `name` (`ClusterLock::resume`): whether a pause in force was lifted.
fn resume(shared: &Shared, s: &mut Session, name: &str) -> Result<Answer, LockError> {
    let p = pauses(shared);
    let row = s
        .client
        .query_opt(
            &format!(
                "DELETE FROM {p} WHERE name = $1 \
                 RETURNING paused_until IS NULL OR paused_until > now()"
            ),
            &[&name],
        )
        .map_err(|e| missing_pauses(e, shared))?;
    Ok(Answer::Released(row.is_some_and(|r| r.get::<_, bool>(0))))
}

/// Job `name`'s pause in force now, if any (`ClusterLock::paused`).
fn paused(shared: &Shared, s: &mut Session, name: &str) -> Result<Answer, LockError> {
    if s.paused.is_none() {
        // Prepared once the table exists (another node, or an operator, may have created
        // it since this connection was made).
        s.paused = prepare_paused(&mut s.client, shared).ok();
    }
    let Some(stmt) = &s.paused else {
        return Ok(Answer::Pause(None)); // no table of pauses: nothing was paused
    };
    match s.client.query_opt(stmt, &[&name]) {
        Ok(row) => Ok(Answer::Pause(row.map(|r| {
            crate::cluster::Pause::new(
                r.get::<_, String>(0),
                r.get::<_, SystemTime>(1),
                r.get::<_, Option<SystemTime>>(2),
            )
        }))),
        // A role not granted the table of pauses (a deployment from before it) cannot see
        // one: its jobs run as before, rather than fail.
        Err(e) if pauses_unreadable(&e) => Ok(Answer::Pause(None)),
        Err(e) => Err(LockError::Store(Box::new(e))),
    }
}

/// The table of paused jobs (`PgLock::pause_schema`).
fn pauses(shared: &Shared) -> String {
    format!("{}_pauses", shared.table)
}

/// Whether `e` says the table of pauses is missing or not granted to this role.
fn pauses_unreadable(e: &postgres::Error) -> bool {
    e.code().is_some_and(|c| {
        *c == postgres::error::SqlState::UNDEFINED_TABLE
            || *c == postgres::error::SqlState::INSUFFICIENT_PRIVILEGE
    })
}

/// A pause's error, told apart when the table of pauses is missing or not granted.
fn missing_pauses(e: postgres::Error, shared: &Shared) -> LockError {
    if pauses_unreadable(&e) {
        let p = pauses(shared);
        let why = e
            .as_db_error()
            .map_or_else(|| e.to_string(), |d| d.message().to_owned());
        return LockError::Store(
            format!(
                "{why}: pausing a job needs the table {p}; create it once as a role that may \
                 (PgLock::pause_schema gives the statement) and grant this one SELECT, INSERT, \
                 UPDATE and DELETE on it"
            )
            .into(),
        );
    }
    LockError::Store(Box::new(e))
}

/// The question "is this job paused now" (by the database's clock).
fn prepare_paused(client: &mut Client, shared: &Shared) -> Result<Statement, postgres::Error> {
    let p = pauses(shared);
    client.prepare(&format!(
        "SELECT paused_by, paused_at, paused_until FROM {p} \
         WHERE name = $1 AND (paused_until IS NULL OR paused_until > now())"
    ))
}

/// Creates the lock table and the table of pauses where they are missing (`create_table`);
/// a table that exists is used even where this role may not create one.
fn create_tables(client: &mut Client, shared: &Shared) -> Result<(), LockError> {
    let store = |e: postgres::Error| LockError::Store(Box::new(e));
    let t = &shared.table;
    // The table of pauses beside it, where this role may create it (else pausing
    // needs it made once by one that may: `missing_pauses`).
    let _ = client.batch_execute(&PgLock::pause_schema(t));
    if let Err(e) = client.batch_execute(&PgLock::schema(t)) {
        // Two nodes creating the table at once: one of them gets a duplicate error
        // from the catalog, and the table exists.
        let raced = e.code().is_some_and(|c| {
            *c == postgres::error::SqlState::UNIQUE_VIOLATION
                || *c == postgres::error::SqlState::DUPLICATE_TABLE
                || *c == postgres::error::SqlState::DUPLICATE_OBJECT
        });
        // A role without CREATE on the schema (ordinary roles on `public` since
        // PostgreSQL 15) is refused even when the table exists: then it is used.
        let denied = e.code() == Some(&postgres::error::SqlState::INSUFFICIENT_PRIVILEGE);
        if denied {
            let exists: bool = client
                .query_one("SELECT to_regclass($1) IS NOT NULL", &[t])
                .map_err(store)?
                .get(0);
            if !exists {
                let why = e
                    .as_db_error()
                    .map_or_else(|| e.to_string(), |d| d.message().to_owned());
                return Err(LockError::Store(
                    format!(
                        "{why}: the table {t} does not exist and this role may not create \
                         it; create it once as a role that may (PgLock::schema gives the \
                         statement) and grant this one SELECT, INSERT and UPDATE on it"
                    )
                    .into(),
                ));
            }
        } else if !raced {
            return Err(store(e));
        }
    }
    Ok(())
}

/// A new connection: its statement timeout, the table if configured, the statements.
fn connect(shared: &Shared) -> Result<Session, LockError> {
    let store = |e: postgres::Error| LockError::Store(Box::new(e));
    #[cfg(feature = "postgres-tls")]
    let connected = match &shared.tls {
        Some(tls) => shared.config.connect(tls.clone()),
        None => shared.config.connect(NoTls),
    };
    #[cfg(not(feature = "postgres-tls"))]
    let connected = shared.config.connect(NoTls);
    let mut client = connected.map_err(store)?;
    // A little under the caller's bound, so that a statement the database is slow with
    // is cancelled there, with its error, before the caller gives up on the connection.
    let ms = (shared.timeout.as_millis() * 3 / 4).max(1);
    // READ COMMITTED whatever the database's or the role's default: each statement is
    // atomic on its own (one row, `ON CONFLICT`), and at SERIALIZABLE or REPEATABLE READ
    // a statement that meets a concurrent update of the row fails with 40001 where the
    // protocol's answer is simply "held" (acquire) or "done" (release).
    client
        .batch_execute(&format!(
            "SET statement_timeout = {ms}; \
             SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED"
        ))
        .map_err(store)?;
    if shared.create_table {
        create_tables(&mut client, shared)?;
    }
    let t = &shared.table;
    let acquire = client
        .prepare(&format!(
            "INSERT INTO {t} AS l (name, lock_until, locked_at, locked_by, token) \
             VALUES ($1, now() + $2::float8 * interval '1 microsecond', now(), $3, 1) \
             ON CONFLICT (name) DO UPDATE SET lock_until = EXCLUDED.lock_until, \
             locked_at = EXCLUDED.locked_at, locked_by = EXCLUDED.locked_by, token = l.token + 1 \
             WHERE l.lock_until <= now() \
             RETURNING token"
        ))
        .map_err(store)?;
    let release = client
        .prepare(&format!(
            "UPDATE {t} SET lock_until = GREATEST(locked_at + $3::float8 * interval '1 microsecond', now()) \
             WHERE name = $1 AND token = $2 AND lock_until > now()"
        ))
        .map_err(store)?;
    let extend = client
        .prepare(&format!(
            "UPDATE {t} SET lock_until = now() + $3::float8 * interval '1 microsecond' \
             WHERE name = $1 AND token = $2 AND lock_until > now()"
        ))
        .map_err(store)?;
    let holder = client
        .prepare(&format!(
            "SELECT locked_by FROM {t} WHERE name = $1 AND lock_until > now()"
        ))
        .map_err(store)?;
    let last = client
        .prepare(&format!(
            "SELECT extract(epoch FROM now() - locked_at)::float8 FROM {t} WHERE name = $1"
        ))
        .map_err(store)?;
    let paused = prepare_paused(&mut client, shared).ok();
    Ok(Session {
        client,
        acquire,
        release,
        extend,
        holder,
        last,
        paused,
    })
}

/// A duration in microseconds, as the statements take it.
fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
