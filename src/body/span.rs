//! The link of a run's `task` span to the span its task was submitted in: [`Linked`] for
//! a one-shot, [`link_to`] for `Guarded` (`context.rs`), and [`submitter_span`], which
//! decides at submission whether a link is recorded at all.

use crate::task::{OnceBody, Ran, RunCx};

/// A one-shot's closure submitted inside a span: the task's `task` span is linked to
/// that span (`follows_from`) when it runs (a periodic task's link is in `Guarded`,
/// `context.rs`, with what else its spec adds around a run). It is chosen at submission
/// only when such a link can be recorded ([`submitter_span`]), so a task submitted
/// without tracing pays nothing for it.
///
/// The submitter's span is held (kept open) until the closure is dropped: after a
/// one-shot's run or at its cancel, when a periodic task ends. A span id alone could be
/// reused by the subscriber once the span closed, and the link would then point at
/// another span.
pub(crate) struct Linked<B> {
    pub(crate) body: B,
    pub(crate) parent: tracing::Span,
}

/// Links the span this run is in (the worker's `task` span) to `parent`, the span the
/// task was submitted in.
#[inline]
pub(crate) fn link_to(parent: &tracing::Span) {
    let current = tracing::Span::current();
    if current
        .metadata()
        .is_some_and(|m| m.target() == "schedpool" && m.name() == "task")
    {
        current.follows_from(parent);
    }
}

impl<B: OnceBody<T>, T> OnceBody<T> for Linked<B> {
    #[inline]
    fn call(self, cx: &RunCx<'_>) -> Ran<T> {
        link_to(&self.parent);
        self.body.call(cx)
    }
}

/// The span a task submitted now should be linked to: the caller's current span, if the
/// task's `task` span could be recorded at all at `level` (the pool's
/// `task_span_level`; `None` costs a level check when tracing is off). Always inlined:
/// the check is a few instructions, a call costs more.
#[inline(always)]
pub(crate) fn submitter_span(level: tracing::Level) -> Option<tracing::Span> {
    use tracing::Level;
    let enabled = match level {
        Level::TRACE => tracing::span_enabled!(target: "schedpool", Level::TRACE),
        Level::DEBUG => tracing::span_enabled!(target: "schedpool", Level::DEBUG),
        Level::INFO => tracing::span_enabled!(target: "schedpool", Level::INFO),
        Level::WARN => tracing::span_enabled!(target: "schedpool", Level::WARN),
        _ => tracing::span_enabled!(target: "schedpool", Level::ERROR),
    };
    if !enabled {
        return None;
    }
    let current = tracing::Span::current();
    (!current.is_none()).then_some(current)
}
