//! The simulation substrate: a virtual clock, seeded random streams and the event queue.
//!
//! Follows the deterministic-simulation habits of madsim and TigerBeetle's VOPR: time only
//! moves when the queue pops the next task, every component draws from its own ChaCha
//! stream forked from the scenario seed, and ties in the queue break by insertion order.

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Simulated milliseconds since the cluster started.
pub type Millis = u64;

/// The longest stretch of simulated time kubeloop runs in one go: `kubeloop run --for`,
/// `kubectl --at`, and the times a share link replays to. A day of a small cluster takes a
/// few seconds to simulate; the loops' periodic work (leases, heartbeats) grows with it.
pub const MAX_RUN: Millis = 24 * 60 * 60 * 1000;

/// Wall-clock instant of simulated time 0 by default: 2026-01-01T00:00:00Z (Unix seconds).
pub const EPOCH_UNIX_SECS: i64 = 1_767_225_600;

static EPOCH: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(EPOCH_UNIX_SECS);

/// The Unix second that simulated time 0 stands for.
pub fn epoch() -> i64 {
    EPOCH.load(std::sync::atomic::Ordering::Relaxed)
}

/// Move simulated time 0 to another Unix second, once, before a cluster starts.
/// `kubeloop serve` anchors it to the wall clock so that timestamps look current to a
/// client that compares them with its own clock; scenario runs keep the fixed default.
pub fn set_epoch(unix_secs: i64) {
    EPOCH.store(unix_secs, std::sync::atomic::Ordering::Relaxed);
}

/// An RFC 3339 timestamp (`2026-01-01T00:01:05Z`) for simulated time `t`, as Kubernetes
/// serialises `metav1.Time` (second precision).
pub fn rfc3339(t: Millis) -> String {
    let secs = epoch() + (t / 1000) as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, (rem / 60) % 60, rem % 60)
}

/// `metav1.MicroTime` (`2026-01-01T00:01:05.123000Z`).
pub fn rfc3339_micro(t: Millis) -> String {
    let s = rfc3339(t);
    format!("{}.{:06}Z", &s[..s.len() - 1], (t % 1000) * 1000)
}

/// Parse what [`rfc3339`] or [`rfc3339_micro`] wrote back to simulated milliseconds.
pub fn parse_rfc3339(s: &str) -> Option<Millis> {
    rfc3339_offset(s).and_then(|t| u64::try_from(t).ok())
}

/// A UTC RFC 3339 time as milliseconds from simulated time 0, before it negative.
pub fn rfc3339_offset(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut ms = 0;
    if b[19] == b'.' {
        let frac: String = s[20..].chars().take_while(|c| c.is_ascii_digit()).collect();
        let frac3: String = format!("{frac:0<3}").chars().take(3).collect();
        ms = frac3.parse::<i64>().ok()?;
    }
    let days = days_from_civil(y, mo as u32, d as u32);
    let secs = days * 86_400 + h * 3600 + mi * 60 + se - epoch();
    Some(secs * 1000 + ms)
}

// Howard Hinnant's civil-date algorithms.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parse a Go-style duration (`90s`, `5m`, `1h30m`, `250ms`) to milliseconds.
pub fn parse_duration(s: &str) -> Option<Millis> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    if let Ok(n) = s.parse::<u64>() {
        return Some(n * 1000);
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        if num_len == 0 {
            return None;
        }
        let n: f64 = rest[..num_len].parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "ms" => 1.0,
            "s" => 1000.0,
            "m" => 60_000.0,
            "h" => 3_600_000.0,
            _ => return None,
        };
        total += n * factor;
        rest = &rest[unit_len..];
    }
    Some(total.round() as Millis)
}

/// Components that draw randomness; each gets its own stream of the seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    ApiServer = 1,
    Scheduler = 2,
    Kubelet = 3,
    Registry = 4,
    /// The seed sweep's scenario generator (outside any run).
    Sweep = 5,
    /// kubectl's own random names (`kubectl debug`'s `debugger-xxxxx`).
    Kubectl = 6,
}

/// A ChaCha8 stream forked from the scenario seed.
#[derive(Debug, Clone)]
pub struct Rng(ChaCha8Rng);

impl Rng {
    pub fn new(seed: u64, stream: Stream) -> Self {
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        r.set_stream(stream as u64);
        Rng(r)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// Uniform in `0..n` (`n > 0`), by rejection so it is unbiased.
    pub fn below(&mut self, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let v = self.0.next_u64();
            if v < zone {
                return v % n;
            }
        }
    }
    /// A random RFC 4122 version-4 UID.
    pub fn uuid(&mut self) -> String {
        let a = self.0.next_u64();
        let b = self.0.next_u64();
        let b = (b & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
        let a = (a & 0xffff_ffff_ffff_0fff) | 0x0000_0000_0000_4000;
        format!("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xffff, b >> 48, b & 0xffff_ffff_ffff)
    }
    /// `n` characters of the apiserver's name-suffix alphabet (no vowels, no confusables),
    /// as `k8s.io/apimachinery/pkg/util/rand.String` draws them.
    pub fn name_suffix(&mut self, n: usize) -> String {
        const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        (0..n).map(|_| ALPHANUMS[self.below(ALPHANUMS.len() as u64) as usize] as char).collect()
    }
}

/// A time-ordered queue; equal times pop in insertion order.
#[derive(Debug, Clone)]
pub struct Queue<T> {
    heap: BinaryHeap<Reverse<(Millis, u64, Slot<T>)>>,
    seq: u64,
}

/// Wraps a payload so the heap orders only by (time, seq).
#[derive(Debug, Clone)]
struct Slot<T>(T);
impl<T> PartialEq for Slot<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl<T> Eq for Slot<T> {}
impl<T> PartialOrd for Slot<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Slot<T> {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue { heap: BinaryHeap::new(), seq: 0 }
    }
}

impl<T> Queue<T> {
    pub fn push(&mut self, at: Millis, item: T) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, Slot(item))));
    }
    pub fn peek_time(&self) -> Option<Millis> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }
    pub fn pop(&mut self) -> Option<(Millis, T)> {
        self.heap.pop().map(|Reverse((t, _, Slot(x)))| (t, x))
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.heap.iter().map(|Reverse((_, _, Slot(x)))| x)
    }
}

/// Go's `time.Duration.String()` for milliseconds (`1.234s`, `512ms`, `1m2.5s`).
pub fn go_duration(ms: Millis) -> String {
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let trim = |s: String| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    let secs = ms / 1000;
    let frac = ms % 1000;
    if secs < 60 {
        return format!("{}s", trim(format!("{secs}.{frac:03}")));
    }
    let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    let sec = format!("{}s", trim(format!("{s}.{frac:03}")));
    if h > 0 {
        format!("{h}h{m}m{sec}")
    } else {
        format!("{m}m{sec}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip() {
        assert_eq!(rfc3339(0), "2026-01-01T00:00:00Z");
        assert_eq!(rfc3339(65_000), "2026-01-01T00:01:05Z");
        assert_eq!(rfc3339_micro(65_123), "2026-01-01T00:01:05.123000Z");
        for t in [0, 999, 65_123, 86_400_000 * 400 + 7] {
            assert_eq!(parse_rfc3339(&rfc3339_micro(t)), Some(t));
        }
        assert_eq!(rfc3339(86_400_000 * 59), "2026-03-01T00:00:00Z");
    }

    #[test]
    fn durations_parse_like_go() {
        assert_eq!(parse_duration("90s"), Some(90_000));
        assert_eq!(parse_duration("1h30m"), Some(5_400_000));
        assert_eq!(parse_duration("250ms"), Some(250));
        assert_eq!(parse_duration("1.5s"), Some(1500));
        assert_eq!(parse_duration("30"), Some(30_000));
        assert_eq!(parse_duration("5x"), None);
    }

    #[test]
    fn streams_are_reproducible_and_independent() {
        let mut a = Rng::new(7, Stream::ApiServer);
        let mut b = Rng::new(7, Stream::ApiServer);
        let mut c = Rng::new(7, Stream::Scheduler);
        let xa: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let xb: Vec<u64> = (0..4).map(|_| b.next_u64()).collect();
        let xc: Vec<u64> = (0..4).map(|_| c.next_u64()).collect();
        assert_eq!(xa, xb);
        assert_ne!(xa, xc);
        let u = a.uuid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(a.name_suffix(5).chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    }

    #[test]
    fn queue_breaks_ties_by_insertion() {
        let mut q = Queue::default();
        q.push(5, "b");
        q.push(1, "a");
        q.push(5, "c");
        assert_eq!(q.pop(), Some((1, "a")));
        assert_eq!(q.pop(), Some((5, "b")));
        assert_eq!(q.pop(), Some((5, "c")));
    }
}
