//! Producers and consumers on a `PriorityBlockingQueue`: the producers are faster than
//! the workers, so a backlog builds and urgent jobs overtake normal and bulk ones, equal priorities keep their submission order, one worker takes jobs one at
//! a time while another grabs batches with `drain_to`, and a producer withdraws a job by
//! key before anyone runs it.
//!
//! ```text
//! cargo run --example priority_queue
//! ```

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use schedpool::PriorityBlockingQueue;

/// Smaller comes out first; `Stop` after every real job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Priority {
    Urgent,
    Normal,
    Bulk,
    Stop,
}

/// Ordered by priority only, so equal priorities come out in submission order.
#[derive(Debug)]
struct Job {
    priority: Priority,
    name: String,
}

impl PartialEq for Job {
    fn eq(&self, other: &Self) -> bool {
        self.priority == other.priority
    }
}
impl Eq for Job {}
impl PartialOrd for Job {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Job {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.priority.cmp(&other.priority)
    }
}

const WORK: Duration = Duration::from_millis(40);

fn main() {
    let queue: Arc<PriorityBlockingQueue<Job>> = Arc::new(PriorityBlockingQueue::new());
    let start = Instant::now();
    let ms = move || start.elapsed().as_millis();

    // Worker "single" takes one job at a time.
    let single = {
        let queue = Arc::clone(&queue);
        thread::spawn(move || {
            let mut done = 0;
            loop {
                let job = queue.take();
                if job.priority == Priority::Stop {
                    return done;
                }
                println!(
                    "{:>4} ms  single  runs {:?} {}",
                    ms(),
                    job.priority,
                    job.name
                );
                thread::sleep(WORK);
                done += 1;
            }
        })
    };
    // Worker "batch" blocks for one job, then drains up to three more in priority order.
    let batch = {
        let queue = Arc::clone(&queue);
        thread::spawn(move || {
            let mut done = 0;
            let mut jobs = Vec::new();
            loop {
                jobs.push(queue.take());
                queue.drain_to(&mut jobs, 3);
                let names: Vec<String> = jobs
                    .iter()
                    .filter(|j| j.priority != Priority::Stop)
                    .map(|j| format!("{:?} {}", j.priority, j.name))
                    .collect();
                if !names.is_empty() {
                    println!("{:>4} ms  batch   runs [{}]", ms(), names.join(", "));
                }
                let mut batch = jobs.drain(..);
                for job in batch.by_ref() {
                    if job.priority == Priority::Stop {
                        // Stop markers sort last: whatever else was drained is another
                        // worker's stop marker; hand it back.
                        for other in batch {
                            queue.offer(other);
                        }
                        return done;
                    }
                    thread::sleep(WORK / 2);
                    done += 1;
                }
            }
        })
    };

    // Three producers, each with its own kind of work.
    let producers: Vec<_> = [
        ("report", Priority::Bulk, 8),
        ("order", Priority::Normal, 8),
        ("alert", Priority::Urgent, 4),
    ]
    .into_iter()
    .map(|(kind, priority, count)| {
        let queue = Arc::clone(&queue);
        thread::spawn(move || {
            let mut withdrawn = 0;
            for i in 0..count {
                let key = queue.offer(Job {
                    priority,
                    name: format!("{kind}-{i}"),
                });
                // The order producer changes its mind about its last order at once:
                // remove by key, O(log n). `None` would mean a worker already took it.
                if kind == "order" && i == count - 1 {
                    match queue.remove(key) {
                        Some(job) => {
                            println!("{:>4} ms  withdrew {} before it ran", ms(), job.name);
                            withdrawn += 1;
                        }
                        None => println!("{:>4} ms  {kind}-{i} already taken", ms()),
                    }
                }
                thread::sleep(Duration::from_millis(3));
            }
            count - withdrawn
        })
    })
    .collect();
    let offered: usize = producers.into_iter().map(|p| p.join().unwrap()).sum();

    // One stop marker per worker; they sort after every job.
    for _ in 0..2 {
        queue.offer(Job {
            priority: Priority::Stop,
            name: "stop".into(),
        });
    }
    let by_single = single.join().unwrap();
    let by_batch = batch.join().unwrap();
    println!(
        "{:>4} ms  {offered} jobs offered and kept: {by_single} run singly, {by_batch} in batches; {} left",
        ms(),
        queue.len()
    );
    assert_eq!(by_single + by_batch, offered);
}
