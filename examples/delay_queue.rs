//! Java's classic `DelayQueue` demo, in Rust: eight tasks fall due at increasing times and
//! a small pool of consumer threads takes each one as it comes due.
//!
//! The Java original offers `TaskInfo` objects due 1 to 8 seconds ahead and has a
//! three-thread pool print them. Here the tasks are due 250 ms apart (two seconds in all),
//! offered in shuffled order, and three consumers block in `take`: the leader sleeps until
//! the head is due, the others wait for it to hand the lead on.
//!
//! ```text
//! cargo run --example delay_queue
//! ```

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use schedpool::DelayQueue;

/// What the Java demo calls `TaskInfo`.
#[derive(Debug)]
struct TaskInfo {
    id: u32,
    kind: u32,
    data: String,
    due: Instant,
}

const CONSUMERS: usize = 3;
const STEP: Duration = Duration::from_millis(250);

fn main() {
    let queue: Arc<DelayQueue<Option<TaskInfo>>> = Arc::new(DelayQueue::new());
    let start = Instant::now();

    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|c| {
            let queue = Arc::clone(&queue);
            thread::Builder::new()
                .name(format!("consumer-{c}"))
                .spawn(move || {
                    let mut done = 0;
                    // `None` is the stop marker.
                    while let Some(task) = queue.take() {
                        let now = Instant::now();
                        println!(
                            "{:>5} ms  consumer-{c} runs task {}: {} (type {}, {} µs after its deadline)",
                            now.duration_since(start).as_millis(),
                            task.id,
                            task.data,
                            task.kind,
                            now.duration_since(task.due).as_micros(),
                        );
                        done += 1;
                    }
                    done
                })
                .expect("spawn a consumer")
        })
        .collect();

    // "Fetch the tasks due in the next few seconds" and queue them, out of order.
    println!("offering 8 tasks, due every {} ms", STEP.as_millis());
    for id in [5, 2, 8, 1, 7, 3, 6, 4] {
        let due = start + STEP * id;
        let task = TaskInfo {
            id,
            kind: id,
            data: format!("job {id}"),
            due,
        };
        queue.offer_at(Some(task), due);
    }
    println!(
        "{} queued; the first is due at {} ms",
        queue.len(),
        queue
            .peek_deadline()
            .map_or(0, |d| d.duration_since(start).as_millis())
    );

    // One stop marker per consumer, due after the last task.
    for _ in 0..CONSUMERS {
        queue.offer_at(None, start + STEP * 9);
    }
    let per_consumer: Vec<usize> = consumers
        .into_iter()
        .map(|c| c.join().expect("a consumer panicked"))
        .collect();
    println!(
        "all done after {} ms; tasks per consumer: {per_consumer:?}",
        start.elapsed().as_millis()
    );
    assert_eq!(per_consumer.iter().sum::<usize>(), 8);
    assert!(queue.is_empty());
}
