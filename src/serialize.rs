//! `serde::Serialize` for the task list and the statistics (cargo feature `serde`):
//! [`TaskInfo`], [`PoolStats`], [`LastRun`] and [`TaskKind`], written out rather than
//! derived, so that no derive macro is built and the shape is stated here.
//!
//! A task's times are wall-clock times in RFC 3339, UTC (`next_run_at`,
//! `last_started_at`); durations are seconds, as numbers (`due_in`, the lateness
//! percentiles); `kind` and `last_run` are their `as_str` names. The monotonic
//! `Instant`s (`deadline`, `last_started`) mean nothing outside the process and are left
//! out.

use serde::ser::{Serialize, SerializeStruct, Serializer};

use crate::clock::rfc3339;
use crate::stats::{LastRun, PoolStats, TaskInfo, TaskKind};

impl Serialize for TaskKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl Serialize for LastRun {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// `{"id":7,"name":"report","kind":"fixed_rate","schedule":"fixed rate 1m",
/// "next_run_at":"2026-12-05T10:00:00.000Z","due_in":59.5,"running":false,
/// "last_started_at":"2026-12-05T09:59:00.000Z","runs":1,"last_run":"completed",
/// "cancelled":false,"paused":false,"paused_by":null,"paused_since":null,
/// "paused_until":null}` (the last three set for a job paused on every node)
impl Serialize for TaskInfo {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut t = s.serialize_struct("TaskInfo", 15)?;
        t.serialize_field("id", &self.id)?;
        t.serialize_field("name", &self.name)?;
        t.serialize_field("kind", &self.kind)?;
        t.serialize_field("schedule", &self.schedule)?;
        t.serialize_field("next_run_at", &rfc3339(self.next_run_at))?;
        t.serialize_field("due_in", &self.due_in.as_secs_f64())?;
        t.serialize_field("running", &self.running)?;
        t.serialize_field("last_started_at", &self.last_started_at.map(rfc3339))?;
        t.serialize_field("runs", &self.runs)?;
        t.serialize_field("last_run", &self.last_run)?;
        t.serialize_field("cancelled", &self.cancelled)?;
        t.serialize_field("paused", &self.paused)?;
        t.serialize_field("paused_by", &self.paused_by)?;
        t.serialize_field("paused_since", &self.paused_since.map(rfc3339))?;
        t.serialize_field("paused_until", &self.paused_until.map(rfc3339))?;
        t.end()
    }
}

/// Every field of [`PoolStats`] under its own name; the lateness percentiles in seconds.
impl Serialize for PoolStats {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut t = s.serialize_struct("PoolStats", 22)?;
        t.serialize_field("core_pool_size", &self.core_pool_size)?;
        t.serialize_field("pool_size", &self.pool_size)?;
        t.serialize_field("active_count", &self.active_count)?;
        t.serialize_field("largest_pool_size", &self.largest_pool_size)?;
        t.serialize_field("queued", &self.queued)?;
        t.serialize_field("task_count", &self.task_count)?;
        t.serialize_field("completed_task_count", &self.completed_task_count)?;
        t.serialize_field("rejected_count", &self.rejected_count)?;
        t.serialize_field("cancelled_count", &self.cancelled_count)?;
        t.serialize_field("panicked_count", &self.panicked_count)?;
        t.serialize_field("late_count", &self.late_count)?;
        t.serialize_field("skipped_runs", &self.skipped_runs)?;
        t.serialize_field("paused_runs", &self.paused_runs)?;
        t.serialize_field("failed_runs", &self.failed_runs)?;
        t.serialize_field("lock_acquired", &self.lock_acquired)?;
        t.serialize_field("lock_skipped", &self.lock_skipped)?;
        t.serialize_field("lock_failed", &self.lock_failed)?;
        t.serialize_field("lock_overruns", &self.lock_overruns)?;
        t.serialize_field("lock_extended", &self.lock_extended)?;
        t.serialize_field("lateness_p50", &self.lateness_p50.as_secs_f64())?;
        t.serialize_field("lateness_p99", &self.lateness_p99.as_secs_f64())?;
        t.serialize_field("lateness_max", &self.lateness_max.as_secs_f64())?;
        t.end()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::{ManualClock, Periodic, ScheduledThreadPoolExecutor};
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn the_task_list_in_json_with_wall_clock_times() {
        let clock = ManualClock::new();
        clock.set_wall_time(UNIX_EPOCH + Duration::from_secs(1_764_927_000)); // 2025-12-05 09:30 UTC
        let pool = ScheduledThreadPoolExecutor::builder()
            .clock(clock.clone())
            .core_pool_size(1)
            .build();
        let spec = Periodic::at_fixed_rate(Duration::from_secs(60)).name("report");
        pool.schedule_periodic(spec, || ()).unwrap();
        assert!(pool.wait_idle(Duration::from_secs(10)));
        let rows = serde_json::to_value(pool.scheduled_tasks()).unwrap();
        let row = &rows[0];
        assert_eq!(row["name"], "report");
        assert_eq!(row["kind"], "fixed_rate");
        assert_eq!(row["next_run_at"], "2025-12-05T09:31:00.000Z");
        assert_eq!(row["last_started_at"], "2025-12-05T09:30:00.000Z");
        assert_eq!(row["due_in"], 60.0);
        assert_eq!(row["runs"], 1);
        assert_eq!(row["last_run"], "completed");
        assert_eq!(row["paused"], false);
        assert!(row.get("deadline").is_none(), "no monotonic instants");
        let stats = serde_json::to_value(pool.stats()).unwrap();
        assert_eq!(stats["completed_task_count"], 1);
        assert_eq!(stats["lateness_max"], 0.0);
        pool.close();
    }
}
