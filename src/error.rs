//! Errors: [`TaskError`] (why a future has no value) and [`ScheduleError`] (why a task was
//! not accepted).

use std::any::Any;
use std::fmt;

/// Why a [`ScheduledFuture`](crate::ScheduledFuture) has no value.
///
/// Java throws `CancellationException` or `ExecutionException` from `get`; here `get`
/// returns this error.
pub enum TaskError {
    /// The task was cancelled before it produced a value (by
    /// [`cancel`](crate::ScheduledFuture::cancel), a shutdown policy, a discarded
    /// submission or a dropped [`PendingTask`](crate::PendingTask)).
    Cancelled,
    /// The task panicked; the payload is the value passed to `panic!`.
    Panicked(Box<dyn Any + Send + 'static>),
}

impl TaskError {
    /// The panic message, when the payload is a string (as `panic!("...")` makes it).
    ///
    /// ```
    /// use schedpool::TaskError;
    /// let e = TaskError::Panicked(Box::new("boom"));
    /// assert_eq!(e.panic_message(), Some("boom"));
    /// assert_eq!(TaskError::Cancelled.panic_message(), None);
    /// ```
    pub fn panic_message(&self) -> Option<&str> {
        match self {
            TaskError::Cancelled => None,
            TaskError::Panicked(payload) => panic_message(payload.as_ref()),
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

/// The message of a panic payload, if it is a `&str` or a `String`.
/// A caught panic: its payload and message.
pub(crate) type Caught = (Box<dyn Any + Send>, String);

/// Runs `f` catching a panic; returns the payload and its message.
pub(crate) fn run_caught<R>(f: impl FnOnce() -> R) -> Result<R, Caught> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        let msg = panic_message(payload.as_ref())
            .unwrap_or("<non-string payload>")
            .to_owned();
        (payload, msg)
    })
}

pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&'static str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

impl fmt::Debug for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskError::Cancelled => f.write_str("Cancelled"),
            TaskError::Panicked(_) => f
                .debug_tuple("Panicked")
                .field(&self.panic_message().unwrap_or("<non-string payload>"))
                .finish(),
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
/// Precedence when several apply: [`ZeroPeriod`](ScheduleError::ZeroPeriod) (an argument
/// error), then [`Shutdown`](ScheduleError::Shutdown), then
/// [`QueueFull`](ScheduleError::QueueFull).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
    /// other worker is alive to run it. The task was not queued.
    ThreadSpawn,
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ScheduleError::Shutdown => "executor has been shut down",
            ScheduleError::QueueFull => "executor queue is full",
            ScheduleError::ZeroPeriod => "period or delay of a periodic task must be non-zero",
            ScheduleError::ThreadSpawn => "no worker thread could be started",
        })
    }
}

impl std::error::Error for ScheduleError {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn messages() {
        let owned = TaskError::Panicked(Box::new(String::from("owned")));
        assert_eq!(owned.panic_message(), Some("owned"));
        assert_eq!(owned.to_string(), "task panicked: owned");
        let opaque = TaskError::Panicked(Box::new(42));
        assert_eq!(opaque.panic_message(), None);
        assert_eq!(opaque.to_string(), "task panicked");
        assert_eq!(format!("{opaque:?}"), "Panicked(\"<non-string payload>\")");
        assert_eq!(TaskError::Cancelled.to_string(), "task was cancelled");
        assert!(TaskError::Cancelled.is_cancelled() && opaque.is_panicked());
        assert_eq!(
            ScheduleError::QueueFull.to_string(),
            "executor queue is full"
        );
    }
}
