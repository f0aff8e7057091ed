//! A worker's thread start that fails while another worker is alive (Linux only).
//!
//! The pool reserves a worker slot for a new task and publishes the task before it
//! starts the thread (E1, `src/pool/mod.rs`). When the start fails, the task is taken
//! back and the submission refused only if no worker is left to run it; with a live
//! worker, the task stays queued and that worker runs it. A thread start that fails
//! every time (`thread_stack_size(usize::MAX)`, `tests/faults.rs`) never has a live
//! worker beside it, so this test makes only the second start fail: the first worker
//! starts with a 1 GiB stack (address space only), then the process's address-space
//! limit (`RLIMIT_AS`) is lowered below what another such stack needs.
//!
//! The limit is the whole process's, so this file holds this one test (its own process).

#![cfg(target_os = "linux")]

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
use schedpool::ScheduledThreadPoolExecutor;
use std::time::Duration;

const STACK: usize = 1 << 30;
const BOUND: Duration = Duration::from_secs(30);

/// The process's virtual size in bytes (`VmSize` in `/proc/self/status`).
fn virtual_size() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("procfs");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmSize in /proc/self/status");
    kib * 1024
}

/// Restores the address-space limit when dropped (also if an assertion fails).
struct Restore(Rlimit);

impl Drop for Restore {
    fn drop(&mut self) {
        setrlimit(Resource::As, self.0).expect("restore RLIMIT_AS");
    }
}

/// `true` under valgrind, which manages the program's address space itself: there the
/// limit binds some thread starts and not others, so the test cannot arrange its one
/// failing start (`scripts/memcheck.sh` runs every test binary under it).
fn under_valgrind() -> bool {
    std::env::var_os("LD_PRELOAD").is_some_and(|p| p.to_string_lossy().contains("vgpreload"))
}

#[test]
fn a_failed_thread_start_beside_a_live_worker_keeps_the_task() {
    if under_valgrind() {
        eprintln!("spawn_limit: skipped under valgrind");
        return;
    }
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .thread_stack_size(STACK)
        .build();
    // The first worker starts, runs a task and stays, idle.
    assert_eq!(pool.submit(|| 1).unwrap().get().unwrap(), 1);
    assert_eq!(pool.stats().pool_size, 1);

    let before = getrlimit(Resource::As);
    let restore = Restore(before);
    // Room for the heap, not for a 1 GiB stack; never above the hard limit.
    let limit = (virtual_size() + (256 << 20)).min(before.maximum.unwrap_or(u64::MAX));
    setrlimit(
        Resource::As,
        Rlimit {
            current: Some(limit),
            maximum: before.maximum,
        },
    )
    .expect("lowering RLIMIT_AS needs no privilege");
    assert!(
        std::thread::Builder::new()
            .stack_size(STACK)
            .spawn(|| ())
            .is_err(),
        "the limit leaves no room for another 1 GiB stack"
    );

    // The second task reserves the second worker slot; its thread cannot start.
    let second = pool.submit(|| 2);
    let second = second.expect("a live worker is left: the task stays queued");
    assert!(second.wait_timeout(BOUND), "the first worker runs it");
    assert_eq!(second.get().unwrap(), 2);
    assert_eq!(
        pool.stats().rejected_count,
        0,
        "the submission was not refused"
    );
    assert_eq!(
        pool.stats().pool_size,
        1,
        "the failed start left no worker behind"
    );
    drop(restore);

    pool.shutdown();
    assert!(pool.await_termination(BOUND));
}
