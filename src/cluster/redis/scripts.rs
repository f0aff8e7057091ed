//! The Lua scripts of a [`RedisLock`](super::RedisLock): each call of the lock is one of
//! them, one round trip, atomic in the server (Redis runs a script alone), every time in
//! it the server's `TIME` (LK4).
//!
//! # Design
//! A lock is a hash at `{prefix}lock:{name}`: `until` (taken until, microseconds since
//! the Unix epoch by the server's clock), `at` (when the current lease was acquired),
//! `by` (the holder's node name) and `token` (the current lease's fencing token). A
//! pause is a hash at `{prefix}pause:{name}`: `by`, `since` and `until` (empty: until
//! resumed). Neither key has a time to live: the lock's record keeps the last
//! acquisition (catch-up) and the last token, as `PgLock`'s row does, and a key without
//! one is never evicted under the `volatile-*` memory policies.
//!
//! Times are microseconds in Lua numbers (doubles, exact below 2^53, which the epoch
//! in microseconds stays under until the year 2255); they are written with `%.0f`, since
//! Lua's `tostring` would write `1.7e+15`. A duration is capped at [`MAX_MICROS`]
//! (about 100 years) before it is added to one.
//!
//! A token is the previous token plus one, or the server's time in microseconds if that
//! is larger. So tokens grow with every acquisition (LK2) as a counter would, and they
//! keep growing after the server lost its data (a restart without persistence, a
//! failover to a replica that had not received the last writes), as long as its clock
//! did not go back: a plain counter would start again from 1 there, and a downstream
//! store that keeps the largest token it has seen would refuse every new holder.
//! Tokens are compared as the strings the scripts wrote, never as numbers.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::Script;

/// About 100 years in microseconds: the longest duration a script adds to a time.
pub(super) const MAX_MICROS: u64 = 100 * 365 * 24 * 3600 * 1_000_000;

/// The prologue of every script: the server's time in microseconds.
macro_rules! with_now {
    ($body:literal) => {
        concat!(
            "local t = redis.call('TIME')\n",
            "local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n",
            "local function fmt(n) return string.format('%.0f', n) end\n",
            $body
        )
    };
}

/// `KEYS[1]` the lock; ARGV at_most_for (µs), node. The token, or nil if a lease of the
/// lock is valid now (LK1): the check and the write are one step.
const ACQUIRE: &str = with_now!(
    "local r = redis.call('HMGET', KEYS[1], 'until', 'token')
local lim = tonumber(r[1])
if lim and lim > now then return false end
local token = math.max((tonumber(r[2]) or 0) + 1, now)
redis.call('HSET', KEYS[1], 'until', fmt(now + tonumber(ARGV[1])), 'at', fmt(now),
  'by', ARGV[2], 'token', fmt(token))
return token"
);

/// `KEYS[1]` the lock; ARGV token, at_least_for (µs). 1: released (the lock taken until
/// `max(at + at_least_for, now)`, LK3); 2: the token is still the lock's but the lease
/// ran out (nobody acquired since); 0: another lease since, or no record (LK2).
const RELEASE: &str = with_now!(
    "local r = redis.call('HMGET', KEYS[1], 'until', 'at', 'token')
if r[3] ~= ARGV[1] then return 0 end
local lim = tonumber(r[1])
if not (lim and lim > now) then return 2 end
redis.call('HSET', KEYS[1], 'until', fmt(math.max(tonumber(r[2]) + tonumber(ARGV[2]), now)))
return 1"
);

/// `KEYS[1]` the lock; ARGV token, at_most_for (µs). 1 if the lease was the lock's current,
/// valid one and now lasts until `now + at_most_for` (LK5); else 0, nothing changed.
const EXTEND: &str = with_now!(
    "local r = redis.call('HMGET', KEYS[1], 'until', 'token')
local lim = tonumber(r[1])
if r[2] ~= ARGV[1] or not (lim and lim > now) then return 0 end
redis.call('HSET', KEYS[1], 'until', fmt(now + tonumber(ARGV[2])))
return 1"
);

/// `KEYS[1]` the lock. Microseconds since its last acquisition, or nil if never acquired.
const LAST_ACQUIRED: &str = with_now!(
    "local at = tonumber(redis.call('HGET', KEYS[1], 'at'))
if not at then return false end
return math.max(now - at, 0)"
);

/// `KEYS[1]` the lock. The holder's node name if a lease is valid now, else nil.
const HOLDER: &str = with_now!(
    "local r = redis.call('HMGET', KEYS[1], 'until', 'by')
local lim = tonumber(r[1])
if lim and lim > now then return r[2] end
return false"
);

/// `KEYS[1]` the pause; ARGV by, until (µs since the epoch, or empty). Replaces any pause.
const PAUSE: &str = with_now!(
    "redis.call('HSET', KEYS[1], 'by', ARGV[1], 'since', fmt(now), 'until', ARGV[2])
return 1"
);

/// `KEYS[1]` the pause. `{by, since, until}` of the pause in force now, else nil.
const PAUSED: &str = with_now!(
    "local r = redis.call('HMGET', KEYS[1], 'by', 'since', 'until')
if not r[1] then return false end
local lim = tonumber(r[3])
if lim and lim <= now then return false end
return {r[1], r[2], r[3] or ''}"
);

/// `KEYS[1]` the pause. Removes it; 1 if it was in force, else 0.
const RESUME: &str = with_now!(
    "local r = redis.call('HMGET', KEYS[1], 'by', 'until')
if not r[1] then return 0 end
redis.call('DEL', KEYS[1])
local lim = tonumber(r[2])
if lim and lim <= now then return 0 end
return 1"
);

/// The scripts, each with its SHA-1 computed once (a call sends `EVALSHA`, and the
/// script itself only after a server answered that it does not know it).
pub(super) struct Scripts {
    pub(super) acquire: Script,
    pub(super) release: Script,
    pub(super) extend: Script,
    pub(super) last_acquired: Script,
    pub(super) holder: Script,
    pub(super) pause: Script,
    pub(super) paused: Script,
    pub(super) resume: Script,
}

impl Scripts {
    pub(super) fn new() -> Self {
        Scripts {
            acquire: Script::new(ACQUIRE),
            release: Script::new(RELEASE),
            extend: Script::new(EXTEND),
            last_acquired: Script::new(LAST_ACQUIRED),
            holder: Script::new(HOLDER),
            pause: Script::new(PAUSE),
            paused: Script::new(PAUSED),
            resume: Script::new(RESUME),
        }
    }
}

/// `d` in microseconds, capped at [`MAX_MICROS`].
pub(super) fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros())
        .unwrap_or(u64::MAX)
        .min(MAX_MICROS)
}

/// A wall-clock time as the scripts keep it: microseconds since the Unix epoch (0 for a
/// time before it).
pub(super) fn epoch_micros(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, micros_since_epoch)
}

/// Microseconds since the epoch, exact up to the year 2255 (far beyond a pause).
fn micros_since_epoch(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// The wall-clock time of `micros` since the Unix epoch, as a script wrote it; `None` if
/// it is not a number.
pub(super) fn from_epoch_micros(micros: &str) -> Option<SystemTime> {
    let n: u64 = micros.parse().ok()?;
    UNIX_EPOCH.checked_add(Duration::from_micros(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_capped_and_times_round_trip() {
        assert_eq!(micros(Duration::from_millis(1500)), 1_500_000);
        assert_eq!(micros(Duration::MAX), MAX_MICROS);
        let t = UNIX_EPOCH + Duration::from_micros(1_700_000_000_123_456);
        assert_eq!(from_epoch_micros(&epoch_micros(t).to_string()), Some(t));
        assert_eq!(epoch_micros(UNIX_EPOCH - Duration::from_secs(1)), 0);
        assert_eq!(from_epoch_micros(""), None);
        assert_eq!(from_epoch_micros("1.7e+15"), None);
    }

    #[test]
    fn every_script_reads_the_servers_clock_first() {
        for s in [
            ACQUIRE,
            RELEASE,
            EXTEND,
            LAST_ACQUIRED,
            HOLDER,
            PAUSE,
            PAUSED,
            RESUME,
        ] {
            assert!(s.starts_with("local t = redis.call('TIME')"), "{s}");
        }
    }
}
