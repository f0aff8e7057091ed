//! Unit tests of the unsafe module (`mod.rs`, `ptr.rs`, `slot.rs`); Miri runs them
//! (`scripts/sanitize.sh`).

use super::ptr::MAX_REFS;
use super::*;
use crate::task::testing::DropCount;
use crate::task::Header;
use crate::task::{OnceTask, Plain};
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;
use std::sync::Arc;

#[test]
fn the_last_reference_frees_the_task_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let guard = DropCount(drops.clone());
    let a = TaskRef::new(OnceTask::new(7, Plain(move || drop(guard))));
    let b = a.clone();
    assert!(TaskRef::ptr_eq(&a, &b));
    let other = TaskRef::new(OnceTask::new(7, Plain(|| ())));
    assert!(!TaskRef::ptr_eq(&a, &other), "two tasks are two");
    assert_eq!(a.header().deadline(), 7);
    assert_eq!(b.header().deadline(), 7, "Deref and header name one task");
    drop(a);
    assert_eq!(drops.load(Ordering::SeqCst), 0, "one reference is left");
    drop(b);
    assert_eq!(drops.load(Ordering::SeqCst), 1, "freed with the closure");
}

#[test]
fn references_from_many_threads_free_the_task_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let guard = DropCount(drops.clone());
    let t = TaskRef::new(OnceTask::new(0, Plain(move || drop(guard))));
    std::thread::scope(|s| {
        for _ in 0..4 {
            let mine = t.clone();
            s.spawn(move || {
                for _ in 0..1000 {
                    drop(mine.clone());
                }
                drop(mine);
            });
        }
    });
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(t);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn a_pair_is_two_references_to_one_task() {
    let drops = Arc::new(AtomicUsize::new(0));
    let guard = DropCount(drops.clone());
    let (typed, queued) = TaskRef::new_typed_pair(OnceTask::new(5, Plain(move || drop(guard))));
    assert!(TaskRef::ptr_eq(typed.task(), &queued));
    assert_eq!(queued.header().refs.load(Ordering::Relaxed), 2);
    drop(queued);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        0,
        "the future's reference is left"
    );
    assert_eq!(typed.header().refs.load(Ordering::Relaxed), 1);
    drop(typed);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "freed with the closure, once"
    );
}

#[test]
fn a_count_at_the_limit_still_clones() {
    // `MAX_REFS` references may still make one more; only a count past it aborts.
    let t = TaskRef::new(OnceTask::new(0, Plain(|| ())));
    t.header().refs.store(MAX_REFS, Ordering::Relaxed);
    let u = t.clone();
    assert_eq!(t.header().refs.load(Ordering::Relaxed), MAX_REFS + 1);
    t.header().refs.store(2, Ordering::Relaxed); // the two references that exist
    drop(u);
    drop(t);
}

#[test]
fn a_task_ref_debugs_as_its_header() {
    let t = TaskRef::new(OnceTask::new(3, Plain(|| ())));
    let shown = format!("{t:?}");
    assert_eq!(shown, format!("{:?}", t.header()));
    assert!(shown.contains("scheduled"), "{shown}");
}

#[test]
fn a_typed_reference_reaches_the_outcome() {
    let t = TaskRef::new_typed(OnceTask::new(0, Plain(|| 3)));
    let env_clock = crate::task::testing::clock();
    let report = t.task().run(&crate::task::testing::env(&env_clock, 0));
    assert!(report.ran);
    assert_eq!(t.clone().outcome().wait_take().unwrap(), 3);
}

#[test]
fn a_task_ref_is_one_pointer() {
    assert_eq!(std::mem::size_of::<TaskRef>(), 8);
    assert_eq!(std::mem::size_of::<Option<TaskRef>>(), 8);
    assert_eq!(std::mem::size_of::<TypedRef<u64>>(), 8);
    // A future: its task and its pool (`Arc<dyn Host>`, a stripe).
    assert_eq!(std::mem::size_of::<crate::ScheduledFuture<()>>(), 24);
    // A heap node and a lane slot (`docs/DESIGN.md`, "Memory").
    type Node = crate::pool::Entry;
    assert_eq!(std::mem::size_of::<Node>(), 16);
    assert_eq!(std::mem::size_of::<Option<Node>>(), 16);
}

#[test]
fn a_pending_one_shot_with_a_small_closure_fits_a_48_byte_chunk() {
    // `docs/DESIGN.md`, "Memory": the 32-byte header and an 8-byte slot, 40 bytes, a
    // 48-byte malloc chunk (glibc adds 8 bytes and rounds up to 16).
    fn size_of_task<F: FnOnce() -> T + Send + 'static, T: Send + 'static>(_: &F) -> usize {
        std::mem::size_of::<OnceTask<Plain<F>, T>>()
    }
    assert_eq!(std::mem::size_of::<Header>(), 32);
    assert_eq!(size_of_task(&|| {}), 40, "no capture, no output");
    let token = Arc::new(AtomicUsize::new(0));
    let one_capture = move || {
        token.fetch_add(1, Ordering::Relaxed);
    };
    assert_eq!(size_of_task(&one_capture), 40, "one pointer captured");
    assert_eq!(size_of_task(&|| 7u64), 40, "an 8-byte output");
}

/// A task that counts its wake-ups (`Task::wake`), for the waker's tests.
#[repr(C)]
struct Woken {
    header: Header,
    wakes: AtomicUsize,
    drops: Arc<AtomicUsize>,
}

impl Drop for Woken {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

impl crate::task::Task for Woken {
    fn header(&self) -> &Header {
        &self.header
    }

    fn header_mut(&mut self) -> &mut Header {
        &mut self.header
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn schedule(&self) -> &crate::schedule::Schedule {
        static ONCE: crate::schedule::Schedule = crate::schedule::Schedule::Once;
        &ONCE
    }

    fn run(&self, _env: &crate::task::RunEnv<'_>) -> crate::task::RunReport {
        crate::task::RunReport::NOT_RUN
    }

    fn run_now(&self, env: &crate::task::RunEnv<'_>, _: bool) -> crate::task::RunReport {
        self.run(env)
    }

    fn finish_cancelled(&self) {}

    fn wake(&self, me: &TaskRef) {
        assert!(
            std::ptr::eq(me.header(), &self.header),
            "woken with its own reference"
        );
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }
}

fn woken() -> (TaskRef, Arc<AtomicUsize>) {
    let drops = Arc::new(AtomicUsize::new(0));
    let task = TaskRef::new(Woken {
        header: Header::new(false, 0),
        wakes: AtomicUsize::new(0),
        drops: drops.clone(),
    });
    (task, drops)
}

fn wakes(task: &TaskRef) -> usize {
    let woken: &Woken = task.as_any().downcast_ref().expect("a Woken");
    woken.wakes.load(Ordering::SeqCst)
}

/// A task's waker (`TaskRef::with_waker`) is a counted reference: a lent one counts none,
/// a clone counts one, `wake` gives its count back, `wake_by_ref` keeps it, and the task
/// is freed once, by the last of its references and wakers, whichever that is.
#[test]
fn a_tasks_waker_counts_its_references_and_wakes_the_task() {
    let (task, drops) = woken();
    let refs = |t: &TaskRef| t.header().refs.load(Ordering::SeqCst);
    let kept = task.with_waker(|w| {
        assert_eq!(refs(&task), 1, "a lent waker counts nothing");
        w.wake_by_ref();
        let clone = w.clone();
        assert_eq!(refs(&task), 2, "a clone counts one");
        assert!(clone.will_wake(w));
        clone
    });
    assert_eq!(wakes(&task), 1);
    kept.wake_by_ref();
    let second = kept.clone();
    kept.wake(); // by value: its count given back
    assert_eq!((wakes(&task), refs(&task)), (3, 2));
    drop(task);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        0,
        "the waker keeps the task alive"
    );
    second.wake();
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "freed by its last waker's wake"
    );
}

/// Wakers of one task cloned, woken and dropped on several threads (Miri's race detector
/// sees the count and the free).
#[test]
fn a_tasks_wakers_on_many_threads_free_it_once() {
    let (task, drops) = woken();
    let waker = task.with_waker(Clone::clone);
    drop(task);
    std::thread::scope(|s| {
        for _ in 0..3 {
            let mine = waker.clone();
            s.spawn(move || {
                for _ in 0..20 {
                    mine.wake_by_ref();
                    drop(mine.clone());
                }
                mine.wake();
            });
        }
    });
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(waker);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}
