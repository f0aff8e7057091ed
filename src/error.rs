//! Errors: [`TaskError`] (why a future has no value), [`PanicPayload`] (what a panicking
//! task left) and [`ScheduleError`] (why a task was not accepted).

use crate::sync::Arc;
use std::any::{Any, TypeId};
use std::fmt;

/// Why a [`ScheduledFuture`](crate::ScheduledFuture) has no value.
///
/// Java throws `CancellationException` or `ExecutionException` from `get`; here `get`
/// returns this error. It is `Send + Sync + 'static`, so `?` converts it into
/// `Box<dyn Error + Send + Sync>` (or `anyhow::Error`):
///
/// ```
/// use schedpool::ScheduledThreadPoolExecutor;
/// use std::time::Duration;
///
/// fn answer(pool: &ScheduledThreadPoolExecutor) -> Result<u32, Box<dyn std::error::Error + Send + Sync>> {
///     let fut = pool.schedule(Duration::ZERO, || 42)?;
///     Ok(fut.get()?)
/// }
/// let pool = ScheduledThreadPoolExecutor::new(1);
/// assert_eq!(answer(&pool).unwrap(), 42);
/// ```
///
/// (`TaskError` is not `#[non_exhaustive]`: the API contract matches its two variants
/// exhaustively.)
pub enum TaskError {
    /// The task was cancelled before it produced a value (by
    /// [`cancel`](crate::ScheduledFuture::cancel), a shutdown policy, a discarded
    /// submission or a dropped [`PendingTask`](crate::PendingTask)).
    Cancelled,
    /// The task panicked; the payload holds the value passed to `panic!`.
    Panicked(PanicPayload),
}

impl TaskError {
    /// The panic message, when the payload is a string (as `panic!("...")` makes it).
    ///
    /// ```
    /// use schedpool::{PanicPayload, TaskError};
    /// let e = TaskError::Panicked(PanicPayload::new(Box::new("boom")));
    /// assert_eq!(e.panic_message(), Some("boom"));
    /// assert_eq!(TaskError::Cancelled.panic_message(), None);
    /// ```
    pub fn panic_message(&self) -> Option<&str> {
        match self {
            TaskError::Cancelled => None,
            TaskError::Panicked(payload) => payload.message(),
        }
    }

    /// `true` for [`TaskError::Cancelled`].
    pub fn is_cancelled(&self) -> bool {
        matches!(self, TaskError::Cancelled)
    }

    /// `true` for [`TaskError::Panicked`].
    pub fn is_panicked(&self) -> bool {
        matches!(self, TaskError::Panicked(_))
    }
}

/// A caught panic's payload: the value passed to `panic!` (or to
/// `std::panic::panic_any`), as [`TaskError::Panicked`] carries it.
///
/// The payload itself is only `Send`; this wrapper is also `Sync` (so [`TaskError`] is)
/// because it lends the value to no one while it is shared: [`message`](Self::message)
/// and [`is`](Self::is) read what was recorded when it was made, and only the methods
/// that consume it ([`downcast`](Self::downcast), [`into_inner`](Self::into_inner)) give
/// the value back.
///
/// ```
/// use schedpool::PanicPayload;
///
/// let caught = std::panic::catch_unwind(|| std::panic::panic_any(7u32)).unwrap_err();
/// let payload = PanicPayload::from(caught);
/// assert!(payload.is::<u32>());
/// assert_eq!(payload.message(), None); // not a string
/// assert_eq!(*payload.downcast::<u32>().unwrap(), 7);
///
/// let text = PanicPayload::new(Box::new(String::from("boom")));
/// assert_eq!(text.message(), Some("boom"));
/// // The original value, for example to resume the panic on this thread:
/// let inner = text.into_inner();
/// assert_eq!(inner.downcast_ref::<String>().map(String::as_str), Some("boom"));
/// ```
pub struct PanicPayload(Box<Held>);

/// What a [`PanicPayload`] holds, boxed so that a task's outcome slot stays one pointer
/// wide for it (`docs/DESIGN.md`, Memory).
struct Held {
    /// The value; behind a mutex only so the wrapper is `Sync` without `unsafe`. Nothing
    /// locks it while the payload is shared: the consuming methods take it by value.
    value: parking_lot::Mutex<Box<dyn Any + Send + 'static>>,
    /// The value's type, recorded when the payload was made ([`is`](PanicPayload::is)).
    type_id: TypeId,
    /// A copy of the message of a `&str` or `String` payload.
    message: Option<Box<str>>,
}

impl PanicPayload {
    /// Wraps a payload as `std::panic::catch_unwind` returns it.
    pub fn new(payload: Box<dyn Any + Send + 'static>) -> Self {
        let message = panic_message(payload.as_ref()).map(Box::from);
        PanicPayload(Box::new(Held {
            type_id: (*payload).type_id(),
            value: parking_lot::Mutex::new(payload),
            message,
        }))
    }

    /// The panic message, when the payload is a `&str` or a `String` (as `panic!("...")`
    /// and `panic!("{x}")` make it).
    pub fn message(&self) -> Option<&str> {
        self.0.message.as_deref()
    }

    /// `true` if the payload is a `T`.
    pub fn is<T: Any>(&self) -> bool {
        self.0.type_id == TypeId::of::<T>()
    }

    /// The payload as a `T`, or the payload back if it is not one.
    ///
    /// # Errors
    /// `Err(self)` if the payload is not a `T`.
    pub fn downcast<T: Any>(self) -> Result<Box<T>, PanicPayload> {
        if !self.is::<T>() {
            return Err(self);
        }
        self.into_inner().downcast::<T>().map_err(PanicPayload::new) // unreachable: the type was checked
    }

    /// The payload itself, for example to pass to `std::panic::resume_unwind`.
    pub fn into_inner(self) -> Box<dyn Any + Send + 'static> {
        self.0.value.into_inner()
    }
}

impl From<Box<dyn Any + Send + 'static>> for PanicPayload {
    /// [`PanicPayload::new`].
    fn from(payload: Box<dyn Any + Send + 'static>) -> Self {
        PanicPayload::new(payload)
    }
}

impl fmt::Debug for PanicPayload {
    /// `PanicPayload("boom")`, or `PanicPayload(<non-string payload>)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.message() {
            Some(m) => f.debug_tuple("PanicPayload").field(&m).finish(),
            None => f.write_str("PanicPayload(<non-string payload>)"),
        }
    }
}

/// A caught panic: its payload and message.
pub(crate) type Caught = (PanicPayload, String);

/// Runs `f` catching a panic; returns the payload and its message.
pub(crate) fn run_caught<R>(f: impl FnOnce() -> R) -> Result<R, Caught> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        let payload = PanicPayload::new(payload);
        let msg = payload
            .message()
            .unwrap_or("<non-string payload>")
            .to_owned();
        (payload, msg)
    })
}

/// The message of a panic payload, if it is a `&str` or a `String`.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&'static str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

impl fmt::Debug for TaskError {
    /// `Cancelled`, `Panicked("boom")`, or `Panicked(<non-string payload>)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskError::Cancelled => f.write_str("Cancelled"),
            TaskError::Panicked(p) => match p.message() {
                Some(m) => f.debug_tuple("Panicked").field(&m).finish(),
                None => f.write_str("Panicked(<non-string payload>)"),
            },
        }
    }
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskError::Cancelled => f.write_str("task was cancelled"),
            TaskError::Panicked(_) => match self.panic_message() {
                Some(msg) => write!(f, "task panicked: {msg}"),
                None => f.write_str("task panicked"),
            },
        }
    }
}

impl std::error::Error for TaskError {}

/// Why a task was not accepted.
///
/// Precedence when several apply: [`ZeroPeriod`](ScheduleError::ZeroPeriod) and
/// [`NeverDue`](ScheduleError::NeverDue) (argument errors), then
/// [`Shutdown`](ScheduleError::Shutdown), then [`QueueFull`](ScheduleError::QueueFull).
///
/// [`ThreadSpawn`](ScheduleError::ThreadSpawn) carries the operating system's error,
/// which [`source`](std::error::Error::source) returns:
///
/// ```
/// use schedpool::{ScheduleError, ScheduledThreadPoolExecutor};
/// use std::error::Error;
/// use std::time::Duration;
///
/// // A stack no thread can have: the first task finds no worker to run it.
/// let pool = ScheduledThreadPoolExecutor::builder().thread_stack_size(usize::MAX / 2).build();
/// match pool.schedule(Duration::ZERO, || ()) {
///     Err(e @ ScheduleError::ThreadSpawn(_)) => {
///         let io = e.source().and_then(|s| s.downcast_ref::<std::io::Error>());
///         assert!(io.is_some(), "the operating system's error: {e}");
///     }
///     other => panic!("expected ThreadSpawn, got {other:?}"),
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScheduleError {
    /// The executor has been shut down (Java: `RejectedExecutionException`).
    Shutdown,
    /// The queue holds `max_queued_tasks` tasks and the policy is
    /// [`RejectionPolicy::Abort`](crate::RejectionPolicy::Abort).
    QueueFull,
    /// A periodic task was given a zero period or delay (Java:
    /// `IllegalArgumentException`).
    ZeroPeriod,
    /// No worker thread could be started for the task (the operating system refused to
    /// create a thread, for example because of an oversized `thread_stack_size`), and no
    /// other worker is alive to run it. The task was not queued. Holds the operating
    /// system's error, the [`source`](std::error::Error::source) of this one.
    ThreadSpawn(SpawnError),
    /// A periodic task's trigger has no first deadline and says that is a mistake
    /// ([`Trigger::refuse_if_never_due`](crate::Trigger::refuse_if_never_due)): for a
    /// [`CronTrigger`](crate::CronTrigger), an expression that matches no time from now
    /// on, such as one whose years are all past. The task was not accepted.
    NeverDue,
}

/// The operating system's refusal to start a worker thread
/// ([`ScheduleError::ThreadSpawn`]): the [`std::io::Error`] of `std::thread::Builder::spawn`,
/// shared so that the error stays `Clone`. Two are equal when their kinds and messages
/// are.
#[derive(Clone)]
pub struct SpawnError(Arc<std::io::Error>);

impl SpawnError {
    pub(crate) fn new(error: std::io::Error) -> Self {
        SpawnError(Arc::new(error))
    }

    /// The operating system's error.
    pub fn io_error(&self) -> &std::io::Error {
        &self.0
    }

    fn key(&self) -> (std::io::ErrorKind, String) {
        (self.0.kind(), self.0.to_string())
    }
}

impl fmt::Debug for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl PartialEq for SpawnError {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.key() == other.key()
    }
}

impl Eq for SpawnError {}

impl std::hash::Hash for SpawnError {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ScheduleError::Shutdown => "executor has been shut down",
            ScheduleError::QueueFull => "executor queue is full",
            ScheduleError::ZeroPeriod => "period or delay of a periodic task must be non-zero",
            ScheduleError::ThreadSpawn(_) => "no worker thread could be started",
            ScheduleError::NeverDue => {
                "the trigger has no deadline from now on: the task would never run"
            }
        })
    }
}

impl std::error::Error for ScheduleError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ScheduleError::ThreadSpawn(e) => Some(e.io_error()),
            _ => None,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn send_sync_error<E: std::error::Error + Send + Sync + 'static>() {}

    #[test]
    fn task_error_composes_with_boxed_errors() {
        send_sync_error::<TaskError>();
        fn fails() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
            Err(TaskError::Panicked(PanicPayload::new(Box::new("boom"))))?;
            Ok(())
        }
        assert_eq!(fails().unwrap_err().to_string(), "task panicked: boom");
    }

    #[test]
    fn payload_keeps_its_type_and_value() {
        let p = PanicPayload::from(Box::new(7u32) as Box<dyn Any + Send>);
        assert!(p.is::<u32>() && !p.is::<i32>() && !p.is::<Box<dyn Any + Send>>());
        assert_eq!(format!("{p:?}"), "PanicPayload(<non-string payload>)");
        let p = p.downcast::<i32>().unwrap_err(); // the wrong type gives it back intact
        assert_eq!(*p.downcast::<u32>().unwrap(), 7);
        let s = PanicPayload::new(Box::new("static"));
        assert_eq!(
            (s.message(), format!("{s:?}")),
            (Some("static"), "PanicPayload(\"static\")".to_owned())
        );
        assert_eq!(*s.into_inner().downcast::<&str>().unwrap(), "static");
    }

    #[test]
    fn messages() {
        let owned = TaskError::Panicked(PanicPayload::new(Box::new(String::from("owned"))));
        assert_eq!(owned.panic_message(), Some("owned"));
        assert_eq!(owned.to_string(), "task panicked: owned");
        assert_eq!(format!("{owned:?}"), "Panicked(\"owned\")");
        let opaque = TaskError::Panicked(PanicPayload::new(Box::new(42)));
        assert_eq!(opaque.panic_message(), None);
        assert_eq!(opaque.to_string(), "task panicked");
        assert_eq!(format!("{opaque:?}"), "Panicked(<non-string payload>)");
        assert_eq!(TaskError::Cancelled.to_string(), "task was cancelled");
        assert!(TaskError::Cancelled.is_cancelled() && opaque.is_panicked());
        assert_eq!(
            ScheduleError::QueueFull.to_string(),
            "executor queue is full"
        );
    }
}
