//! [`AsyncRuntime`]: what runs an async job's future on the worker thread that runs the
//! job ([`schedule_async`](crate::ScheduledThreadPoolExecutor::schedule_async) and its
//! periodic forms), [`ParkingRuntime`] (the calling thread, parked between polls: for
//! futures that need no reactor), and, with the cargo feature `tokio`, tokio's runtime.
//!
//! # Design
//! The trait's one required method, `block_on`, polls a future to completion on the
//! calling thread: a job submitted through the forms whose future need not be `Send`
//! (`schedule_async` and its forms) occupies its worker until its future completes, and
//! the future never leaves that thread. The future is type-erased (`Pin<&mut dyn
//! Future<Output = ()>>`: the crate's own wrapper, whose output it keeps itself), so the
//! trait is object-safe (an `Arc<dyn AsyncRuntime>` is a runtime too) and a runtime with a
//! `block_on` function implements it in three lines.
//!
//! Two provided methods let the pool poll futures itself: [`AsyncRuntime::can_enter`]
//! (`false` by default) and [`AsyncRuntime::enter`] (the runtime's context around one
//! poll). Where they say so, a job of the `*_send` forms gives its worker back while its
//! future is pending, and any free worker polls it again when its waker fires
//! (`body/async_run.rs`, "Off the worker"). A runtime written against the trait's one
//! method keeps compiling, and keeps the worker-holding path.
//!
//! Nothing here is a protocol of the crate: `ParkingRuntime` parks with `std::thread`
//! (`sync.rs` lists it among the exceptions), and the runtimes' wakers are called only
//! through `user.rs` by the pool (`task/sleepers.rs`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use std::thread::{self, Thread};

/// What runs an async job's future: an executor with a `block_on` that polls a future to
/// completion on the calling thread, and, optionally, a context the pool's own threads can
/// enter to poll a future one step at a time ([`can_enter`](Self::can_enter),
/// [`enter`](Self::enter)). Through `block_on`, a run occupies its worker until its future
/// completes, as a closure's run does; through `enter` (the `*_send` job forms), a run
/// whose future is pending holds no worker.
///
/// Implemented for [`ParkingRuntime`], for `Arc`s, boxes and `'static` references of a
/// runtime, and, with the cargo feature `tokio`, for tokio's `Handle` and `Runtime`
/// (what works with a `current_thread` runtime is on the `Handle` impl). Any executor with
/// a `block_on` implements it in a few lines; here, a one-thread executor of the
/// `futures` crate's kind, written out with `std` alone:
///
/// ```
/// use schedpool::{AsyncRuntime, ScheduledThreadPoolExecutor};
/// use std::future::Future;
/// use std::pin::Pin;
/// use std::sync::Arc;
/// use std::task::{Context, Wake, Waker};
/// use std::time::Duration;
///
/// struct Unpark(std::thread::Thread);
/// impl Wake for Unpark {
///     fn wake(self: Arc<Self>) {
///         self.0.unpark();
///     }
/// }
///
/// /// With the `futures` crate, this would be `futures::executor::block_on(future)`.
/// struct MyBlockOn;
/// impl AsyncRuntime for MyBlockOn {
///     fn block_on(&self, mut future: Pin<&mut (dyn Future<Output = ()> + '_)>) {
///         let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
///         let mut cx = Context::from_waker(&waker);
///         while future.as_mut().poll(&mut cx).is_pending() {
///             std::thread::park(); // spurious returns only cost a poll
///         }
///     }
/// }
///
/// let pool = ScheduledThreadPoolExecutor::new(1);
/// let answer = pool
///     .schedule_async(Duration::ZERO, MyBlockOn, || async { 6 * 7 })
///     .unwrap();
/// assert_eq!(answer.get().unwrap(), 42);
/// ```
///
/// # Contract
/// `block_on` polls `future` on the calling thread until it is ready, and returns then.
/// It may panic (tokio's does when called inside another runtime): the job's run then
/// panicked, and its future says so. A panic of the job's own future never reaches the
/// runtime: the pool catches it inside the poll.
pub trait AsyncRuntime: Send + Sync + 'static {
    /// Polls `future` to completion on the calling thread.
    fn block_on(&self, future: Pin<&mut (dyn Future<Output = ()> + '_)>);

    /// Whether the pool may poll this runtime's futures itself, one poll at a time on
    /// whichever of its threads is free, each inside [`enter`](Self::enter): then an async
    /// job submitted through a method whose future is `Send` (the `*_send` forms, such as
    /// [`schedule_periodic_async_send`](crate::ScheduledThreadPoolExecutor::schedule_periodic_async_send))
    /// gives its worker back while its future is pending. `false`, the default: every run
    /// occupies its worker through [`block_on`](Self::block_on), as a closure's run does
    /// (so a runtime that implements only `block_on` keeps working as it always did).
    fn can_enter(&self) -> bool {
        false
    }

    /// Calls `poll` inside the runtime's context on the calling thread (tokio:
    /// `Handle::enter`, so that the job's timers and sockets register with the runtime,
    /// whose own threads drive them). Called only where [`can_enter`](Self::can_enter)
    /// says `true`; the default calls `poll` as it is (a runtime with no context of its
    /// own, such as [`ParkingRuntime`]).
    fn enter(&self, poll: &mut dyn FnMut()) {
        poll();
    }

    /// The measured candidate that lost (`docs/BENCHMARKS.md`, "Async jobs that hold no
    /// worker"), in a build with `--cfg schedpool_async_spawn` only: spawns `future` on the
    /// runtime, which polls it; `false` if it cannot.
    #[cfg(schedpool_async_spawn)]
    #[doc(hidden)]
    fn spawn(&self, future: Pin<Box<dyn Future<Output = ()> + Send>>) -> bool {
        drop(future);
        false
    }
}

impl<R: AsyncRuntime + ?Sized> AsyncRuntime for Arc<R> {
    fn block_on(&self, future: Pin<&mut (dyn Future<Output = ()> + '_)>) {
        (**self).block_on(future)
    }

    fn can_enter(&self) -> bool {
        (**self).can_enter()
    }

    fn enter(&self, poll: &mut dyn FnMut()) {
        (**self).enter(poll)
    }
}

impl<R: AsyncRuntime + ?Sized> AsyncRuntime for Box<R> {
    fn block_on(&self, future: Pin<&mut (dyn Future<Output = ()> + '_)>) {
        (**self).block_on(future)
    }

    fn can_enter(&self) -> bool {
        (**self).can_enter()
    }

    fn enter(&self, poll: &mut dyn FnMut()) {
        (**self).enter(poll)
    }
}

impl<R: AsyncRuntime + ?Sized> AsyncRuntime for &'static R {
    fn block_on(&self, future: Pin<&mut (dyn Future<Output = ()> + '_)>) {
        (**self).block_on(future)
    }

    fn can_enter(&self) -> bool {
        (**self).can_enter()
    }

    fn enter(&self, poll: &mut dyn FnMut()) {
        (**self).enter(poll)
    }
}

/// The simplest [`AsyncRuntime`]: the worker polls the future itself and parks between
/// polls until the future's waker unparks it. Enough for futures that need no reactor:
/// channels and other synchronization primitives (`tokio::sync`, `futures::channel`,
/// `async-channel`), futures completed by other threads, async code that computes. A
/// future that needs a runtime's IO or timers (`tokio::time::sleep`, a socket) panics
/// with that runtime's message (tokio: "there is no reactor running"), which the job's
/// future reports; run those on their runtime (tokio's `Handle`, feature `tokio`).
///
/// ```
/// use schedpool::{ParkingRuntime, ScheduledThreadPoolExecutor};
/// use std::time::Duration;
///
/// let pool = ScheduledThreadPoolExecutor::new(1);
/// let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
/// let job = pool
///     .schedule_async(Duration::ZERO, ParkingRuntime, move || async move {
///         rx.await.map(|n| n + 1) // parked until the value comes
///     })
///     .unwrap();
/// tx.send(41).unwrap();
/// assert_eq!(job.get().unwrap(), Ok(42));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParkingRuntime;

impl AsyncRuntime for ParkingRuntime {
    fn block_on(&self, mut future: Pin<&mut (dyn Future<Output = ()> + '_)>) {
        let waker = Waker::from(Arc::new(Unpark(thread::current())));
        let mut cx = Context::from_waker(&waker);
        while future.as_mut().poll(&mut cx).is_pending() {
            thread::park(); // a spurious return only costs a poll
        }
    }

    /// No context to enter: the pool polls the futures of the `*_send` job forms itself.
    fn can_enter(&self) -> bool {
        true
    }
}

/// [`ParkingRuntime`]'s waker: unparks the polling thread.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

#[cfg(feature = "tokio")]
mod tokio_impl {
    use super::AsyncRuntime;
    use std::future::Future;
    use std::pin::Pin;

    /// `Handle::block_on`: the worker enters the runtime's context and polls the job's
    /// future itself, parked between polls; the runtime's drivers fire its timers and
    /// IO.
    ///
    /// - A `multi_thread` runtime drives its timers and IO on its own threads: every
    ///   async job works.
    /// - A `current_thread` runtime drives them only while some thread is inside its
    ///   `Runtime::block_on` (tokio's `Handle::block_on` docs). So a job whose future
    ///   awaits a timer or a socket completes while, for example, the program's main
    ///   thread is in `runtime.block_on(...)` awaiting something (the job's
    ///   `ScheduledFuture`, a server's accept loop), and **hangs** while nobody is: tokio
    ///   offers no way to see that from outside, so the pool cannot report it. Such a
    ///   hang ends by an `interrupt` or `shutdown_now`, which drop the future like any
    ///   other. Pass the `Runtime` itself (`Arc<Runtime>`) instead, and a worker drives
    ///   it while no other thread does.
    /// - Futures that need no driver (channels, `tokio::sync`) work in every case.
    /// - Called on a thread that is already inside a runtime (a `PendingTask::run` or a
    ///   `CallerRuns` run from async code), tokio panics ("Cannot start a runtime from
    ///   within a runtime"); the job's future reports the panic.
    ///
    /// ```
    /// use schedpool::ScheduledThreadPoolExecutor;
    /// use std::time::Duration;
    ///
    /// let rt = tokio::runtime::Runtime::new().unwrap(); // multi_thread
    /// let pool = ScheduledThreadPoolExecutor::new(2);
    /// let job = pool
    ///     .schedule_async(Duration::from_millis(5), rt.handle().clone(), || async {
    ///         tokio::time::sleep(Duration::from_millis(5)).await; // tokio's timer
    ///         "done"
    ///     })
    ///     .unwrap();
    /// // An async caller awaits the job's future, here with a time limit (made inside
    /// // the async block: a tokio timer is made in the runtime's context).
    /// let out = rt.block_on(async { tokio::time::timeout(Duration::from_secs(10), job).await });
    /// assert_eq!(out.unwrap().unwrap(), "done");
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    impl AsyncRuntime for tokio::runtime::Handle {
        fn block_on(&self, future: Pin<&mut (dyn Future<Output = ()> + '_)>) {
            tokio::runtime::Handle::block_on(self, future)
        }

        #[cfg(schedpool_async_spawn)]
        fn spawn(&self, future: Pin<Box<dyn Future<Output = ()> + Send>>) -> bool {
            drop(tokio::runtime::Handle::spawn(self, future));
            true
        }

        /// The pool polls the futures of the `*_send` job forms itself, inside
        /// `Handle::enter`; the runtime's own threads drive their timers and IO (a
        /// `current_thread` runtime only while a thread is inside its `block_on`, as
        /// above).
        fn can_enter(&self) -> bool {
            true
        }

        fn enter(&self, poll: &mut dyn FnMut()) {
            let _context = tokio::runtime::Handle::enter(self);
            poll();
        }
    }

    /// `Runtime::block_on`. With a `multi_thread` runtime it is the `Handle`'s. With a
    /// `current_thread` runtime the worker takes the runtime's scheduler when no other
    /// thread holds it and drives its timers, IO and spawned tasks itself until its job's
    /// future completes, so the job completes whether or not another thread is in
    /// `block_on`; while another thread holds the scheduler, that thread drives the
    /// timers and the worker waits for its future's wake-up, or for the scheduler.
    ///
    /// Share the runtime as an `Arc<Runtime>` (the blanket impl), and keep a clone of
    /// your own: a task that ends drops its copy, and dropping the last one inside async
    /// code panics in tokio.
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    impl AsyncRuntime for tokio::runtime::Runtime {
        fn block_on(&self, future: Pin<&mut (dyn Future<Output = ()> + '_)>) {
            tokio::runtime::Runtime::block_on(self, future)
        }

        /// A `multi_thread` runtime: as the `Handle`'s. A `current_thread` one: no, its
        /// runs occupy their worker, which drives the runtime in `block_on` (above).
        fn can_enter(&self) -> bool {
            self.handle().runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
        }

        fn enter(&self, poll: &mut dyn FnMut()) {
            let _context = tokio::runtime::Runtime::enter(self);
            poll();
        }
    }
}
