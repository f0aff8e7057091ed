//! Request timeouts in a `DelayQueue`, cancelled by key when the response arrives.
//!
//! Each request puts its timeout in the queue and keeps the `DelayKey`. A watcher thread
//! `take`s timeouts as they fall due. When a response arrives, the client calls
//! `remove(key)`: `Some` means it beat the timeout (O(log n), nothing is left behind in the
//! queue), `None` means the watcher already timed the request out. The queue decides that
//! race: exactly one of the two gets each request.
//!
//! The simulated network is a second `DelayQueue` holding each response until its latency
//! has passed.
//!
//! ```text
//! cargo run --example timeouts
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use schedpool::{DelayKey, DelayQueue};

const TIMEOUT: Duration = Duration::from_millis(300);

/// Simulated round-trip time of each request, in ms.
const LATENCIES: [u64; 12] = [120, 480, 60, 350, 200, 90, 610, 250, 30, 400, 150, 520];

fn main() {
    let start = Instant::now();
    let at = move || start.elapsed().as_millis();

    // Request id -> the key of its timeout.
    let timeouts: Arc<DelayQueue<Option<usize>>> = Arc::new(DelayQueue::new());
    let keys: Arc<Mutex<HashMap<usize, DelayKey>>> = Arc::default();
    // Responses in flight: request id, due when the response arrives.
    let network: Arc<DelayQueue<usize>> = Arc::new(DelayQueue::new());

    let watcher = {
        let timeouts = Arc::clone(&timeouts);
        thread::spawn(move || {
            let mut timed_out = 0;
            while let Some(id) = timeouts.take() {
                println!(
                    "{:>4} ms  request #{id:<2} TIMED OUT after {} ms",
                    at(),
                    TIMEOUT.as_millis()
                );
                timed_out += 1;
            }
            timed_out
        })
    };

    let client = {
        let timeouts = Arc::clone(&timeouts);
        let keys = Arc::clone(&keys);
        let network = Arc::clone(&network);
        thread::spawn(move || {
            let (mut in_time, mut late) = (0, 0);
            for _ in 0..LATENCIES.len() {
                let id = network.take();
                let key = keys.lock().unwrap()[&id];
                match timeouts.remove(key) {
                    Some(_) => {
                        in_time += 1;
                        println!(
                            "{:>4} ms  request #{id:<2} answered in time ({} ms), timeout cancelled",
                            at(),
                            LATENCIES[id]
                        );
                    }
                    None => {
                        late += 1;
                        println!(
                            "{:>4} ms  request #{id:<2} answer arrived after its timeout ({} ms), dropped",
                            at(),
                            LATENCIES[id]
                        );
                    }
                }
            }
            (in_time, late)
        })
    };

    // Send every request: arm its timeout, then put the response "on the wire".
    for (id, latency) in LATENCIES.iter().enumerate() {
        let key = timeouts.offer(Some(id), TIMEOUT);
        keys.lock().unwrap().insert(id, key);
        network.offer(id, Duration::from_millis(*latency));
    }
    println!(
        "sent {} requests, timeout {} ms; {} timeouts armed",
        LATENCIES.len(),
        TIMEOUT.as_millis(),
        timeouts.len()
    );

    let (in_time, late) = client.join().expect("client panicked");
    // Every response has arrived, so every timeout has fired or been cancelled; the
    // stop marker is due now, after all of them.
    timeouts.offer(None, Duration::ZERO);
    let timed_out = watcher.join().expect("watcher panicked");

    println!(
        "{in_time} answered in time, {timed_out} timed out ({late} of them answered later); \
         {} timeouts left in the queue",
        timeouts.len()
    );
    assert_eq!(in_time + timed_out, LATENCIES.len());
    assert_eq!(late, timed_out);
    assert!(timeouts.is_empty());
}
