//! What the cron tests share: wall-clock times as `Timestamp`s, and [`Wall`], a pinned
//! mapping between instants and wall-clock time, so that a test states deadlines as
//! dates.

use std::time::{Duration, Instant, SystemTime};

use jiff::Timestamp;
use schedpool::{CronTrigger, Trigger, TriggerContext};

/// `y-mo-d h:mi:s` at the UTC offset `offset_h` hours (`-4` for US EDT).
pub(crate) fn at_offset(y: i16, mo: i8, d: i8, h: i8, mi: i8, s: i8, offset_h: i8) -> Timestamp {
    let zone = jiff::tz::TimeZone::fixed(jiff::tz::offset(offset_h));
    jiff::civil::date(y, mo, d)
        .at(h, mi, s, 0)
        .to_zoned_datetime(zone)
        .unwrap()
        .timestamp()
}

/// `y-mo-d h:mi:s` UTC.
pub(crate) fn utc(y: i16, mo: i8, d: i8, h: i8, mi: i8, s: i8) -> Timestamp {
    at_offset(y, mo, d, h, mi, s, 0)
}

/// The `SystemTime` of a `Timestamp`.
pub(crate) fn system(t: Timestamp) -> SystemTime {
    SystemTime::try_from(t).unwrap()
}

/// A pinned mapping: instants from `t0` on read as wall-clock times from `wall0` on.
pub(crate) struct Wall {
    pub(crate) t0: Instant,
    pub(crate) wall0: Timestamp,
}

impl Wall {
    /// Instants from now on are read as wall-clock times from `wall0` on.
    pub(crate) fn starting(wall0: Timestamp) -> Self {
        Wall {
            t0: Instant::now(),
            wall0,
        }
    }

    /// `expr` in UTC, pinned to this mapping.
    pub(crate) fn trigger(&self, expr: &str) -> CronTrigger {
        self.pin(CronTrigger::parse(expr).unwrap())
    }

    /// `trigger` pinned to this mapping.
    pub(crate) fn pin(&self, trigger: CronTrigger) -> CronTrigger {
        trigger.anchored_at(self.t0, system(self.wall0))
    }

    pub(crate) fn instant(&self, wall: Timestamp) -> Instant {
        let since = wall.duration_since(self.wall0);
        self.t0 + Duration::try_from(since).expect("not before the anchor")
    }

    pub(crate) fn wall(&self, at: Instant) -> Timestamp {
        self.wall0 + at.duration_since(self.t0)
    }

    pub(crate) fn first(
        &self,
        trigger: &mut CronTrigger,
        earliest: Timestamp,
    ) -> Option<Timestamp> {
        let at = trigger.first_deadline(self.instant(earliest))?;
        Some(self.wall(at))
    }

    pub(crate) fn next(
        &self,
        trigger: &mut CronTrigger,
        scheduled: Timestamp,
        finished: Timestamp,
    ) -> Option<Timestamp> {
        let ctx = TriggerContext {
            scheduled: self.instant(scheduled),
            started: self.instant(scheduled),
            finished: self.instant(finished),
            runs: 1,
            panicked: false,
        };
        let at = trigger.next_deadline(&ctx)?;
        Some(self.wall(at))
    }

    /// The deadlines from `from` on, each run ending at its deadline: up to `n`, fewer if
    /// the matches run out.
    pub(crate) fn series(
        &self,
        trigger: &mut CronTrigger,
        from: Timestamp,
        n: usize,
    ) -> Vec<Timestamp> {
        let mut out: Vec<Timestamp> = self.first(trigger, from).into_iter().collect();
        while let Some(&last) = out.last().filter(|_| out.len() < n) {
            match self.next(trigger, last, last) {
                Some(next) => out.push(next),
                None => break,
            }
        }
        out
    }
}
