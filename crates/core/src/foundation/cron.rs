//! Cron schedules as the CronJob controller and the API's validation read them: a port of
//! `github.com/robfig/cron/v3`'s `ParseStandard` (five fields with ranges, steps, lists,
//! month and weekday names, `?`; `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`,
//! `@midnight`, `@hourly` and `@every <duration>`; a `TZ=` or `CRON_TZ=` prefix) and of
//! `SpecSchedule.Next`, with the library's error wording.
//!
//! Time zones: kubeloop carries no tz database (the page ships as wasm, and size
//! matters). It knows UTC under its names and the fixed-offset `Etc/GMT±N` zones; any
//! other zone is refused with Go's `unknown time zone` error, so that the controller says
//! so instead of silently using UTC.

use crate::foundation::sim::civil_from_days;

const STAR_BIT: u64 = 1 << 63;

/// A parsed schedule. Times are Unix milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Schedule {
    Spec {
        second: u64,
        minute: u64,
        hour: u64,
        dom: u64,
        month: u64,
        dow: u64,
        offset: i64,
    },
    /// `@every`: a constant delay, whole seconds, at least one.
    Every(i64),
}

struct Bounds {
    min: u32,
    max: u32,
    names: &'static [(&'static str, u32)],
}

const MINUTES: Bounds = Bounds { min: 0, max: 59, names: &[] };
const HOURS: Bounds = Bounds { min: 0, max: 23, names: &[] };
const DOM: Bounds = Bounds { min: 1, max: 31, names: &[] };
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[("jan", 1), ("feb", 2), ("mar", 3), ("apr", 4), ("may", 5), ("jun", 6), ("jul", 7), ("aug", 8), ("sep", 9), ("oct", 10), ("nov", 11), ("dec", 12)],
};
const DOW: Bounds = Bounds { min: 0, max: 6, names: &[("sun", 0), ("mon", 1), ("tue", 2), ("wed", 3), ("thu", 4), ("fri", 5), ("sat", 6)] };

/// `time.LoadLocation` for the zones kubeloop can compute: the offset east of UTC in
/// seconds, or Go's error.
pub fn load_location(name: &str) -> Result<i64, String> {
    const UTC: &[&str] = &[
        "",
        "UTC",
        "Etc/UTC",
        "UCT",
        "Etc/UCT",
        "Universal",
        "Etc/Universal",
        "Zulu",
        "Etc/Zulu",
        "GMT",
        "Etc/GMT",
        "GMT0",
        "Etc/GMT0",
        "GMT+0",
        "GMT-0",
        "Etc/GMT+0",
        "Etc/GMT-0",
        "Greenwich",
        "Etc/Greenwich",
    ];
    if UTC.contains(&name) {
        return Ok(0);
    }
    if let Some(rest) = name.strip_prefix("Etc/GMT") {
        // POSIX signs: Etc/GMT+5 is five hours west of Greenwich.
        let (sign, digits) = match rest.as_bytes().first() {
            Some(b'+') => (-1, &rest[1..]),
            Some(b'-') => (1, &rest[1..]),
            _ => (0, ""),
        };
        if let Ok(h) = digits.parse::<i64>() {
            if !digits.starts_with('0') && ((sign < 0 && h <= 12) || (sign > 0 && h <= 14)) {
                return Ok(sign * h * 3600);
            }
        }
    }
    Err(format!("unknown time zone {name}"))
}

/// Why kubeloop refused a zone that a real cluster's tz database may know.
pub fn unknown_zone_note() -> &'static str {
    "kubeloop carries no time zone database: it knows UTC (also Etc/UTC, GMT) and the fixed offsets Etc/GMT-14 to Etc/GMT+12"
}

/// `cron.ParseStandard`.
pub fn parse_standard(spec: &str) -> Result<Schedule, String> {
    if spec.is_empty() {
        return Err("empty spec string".into());
    }
    let mut spec = spec;
    let mut offset = 0;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let eq = spec.find('=').unwrap_or(0);
        let space = spec.find(' ').unwrap_or(spec.len());
        let name = &spec[eq + 1..space.max(eq + 1)];
        offset = load_location(name).map_err(|e| format!("provided bad location {name}: {e}"))?;
        spec = spec[space..].trim();
    }
    if spec.starts_with('@') {
        return parse_descriptor(spec, offset);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!("expected exactly 5 fields, found {}: [{}]", fields.len(), fields.join(" ")));
    }
    Ok(Schedule::Spec {
        second: 1,
        minute: get_field(fields[0], &MINUTES)?,
        hour: get_field(fields[1], &HOURS)?,
        dom: get_field(fields[2], &DOM)?,
        month: get_field(fields[3], &MONTHS)?,
        dow: get_field(fields[4], &DOW)?,
        offset,
    })
}

fn parse_descriptor(d: &str, offset: i64) -> Result<Schedule, String> {
    let spec = |minute: u64, hour: u64, dom: u64, month: u64, dow: u64| Schedule::Spec { second: 1, minute, hour, dom, month, dow, offset };
    let all = |b: &Bounds| bits(b.min, b.max, 1) | STAR_BIT;
    Ok(match d {
        "@yearly" | "@annually" => spec(1, 1, 1 << 1, 1 << 1, all(&DOW)),
        "@monthly" => spec(1, 1, 1 << 1, all(&MONTHS), all(&DOW)),
        "@weekly" => spec(1, 1, all(&DOM), all(&MONTHS), 1),
        "@daily" | "@midnight" => spec(1, 1, all(&DOM), all(&MONTHS), all(&DOW)),
        "@hourly" => spec(1, all(&HOURS), all(&DOM), all(&MONTHS), all(&DOW)),
        _ => {
            if let Some(dur) = d.strip_prefix("@every ") {
                let ms = go_duration(dur).ok_or_else(|| format!("failed to parse duration {d}: time: invalid duration {dur:?}"))?;
                let secs = (ms / 1000).max(1);
                return Ok(Schedule::Every(secs));
            }
            return Err(format!("unrecognized descriptor: {d}"));
        }
    })
}

/// Go's `time.ParseDuration` for what `@every` takes (`90s`, `1h30m`, `1.5h`), in ms.
fn go_duration(s: &str) -> Option<i64> {
    let mut rest = s.trim();
    if rest.is_empty() {
        return None;
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let n_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let n: f64 = rest[..n_len].parse().ok()?;
        rest = &rest[n_len..];
        let u_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let factor = match &rest[..u_len] {
            "ns" => 1e-6,
            "us" | "µs" => 1e-3,
            "ms" => 1.0,
            "s" => 1000.0,
            "m" => 60_000.0,
            "h" => 3_600_000.0,
            _ => return None,
        };
        total += n * factor;
        rest = &rest[u_len..];
    }
    Some(total as i64)
}

fn get_field(field: &str, b: &Bounds) -> Result<u64, String> {
    let mut out = 0;
    for expr in field.split(',') {
        out |= get_range(expr, b)?;
    }
    Ok(out)
}

fn get_range(expr: &str, b: &Bounds) -> Result<u64, String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_high.len() == 1;
    let (start, mut end, mut extra);
    if low_high[0] == "*" || low_high[0] == "?" {
        start = b.min;
        end = b.max;
        extra = STAR_BIT;
    } else {
        start = parse_int_or_name(low_high[0], b)?;
        end = match low_high.len() {
            1 => start,
            2 => parse_int_or_name(low_high[1], b)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
        extra = 0;
    }
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let s = must_parse_int(range_and_step[1])?;
            if single {
                end = b.max;
            }
            if s > 1 {
                extra = 0;
            }
            s
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < b.min {
        return Err(format!("beginning of range ({start}) below minimum ({}): {expr}", b.min));
    }
    if end > b.max {
        return Err(format!("end of range ({end}) above maximum ({}): {expr}", b.max));
    }
    if start > end {
        return Err(format!("beginning of range ({start}) beyond end of range ({end}): {expr}"));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(bits(start, end, step) | extra)
}

fn parse_int_or_name(expr: &str, b: &Bounds) -> Result<u32, String> {
    let lower = expr.to_ascii_lowercase();
    if let Some((_, v)) = b.names.iter().find(|(n, _)| *n == lower) {
        return Ok(*v);
    }
    must_parse_int(expr)
}

fn must_parse_int(expr: &str) -> Result<u32, String> {
    let n: i64 = expr.parse().map_err(|_| format!("failed to parse int from {expr}: strconv.Atoi: parsing {expr:?}: invalid syntax"))?;
    if n < 0 {
        return Err(format!("negative number ({n}) not allowed: {expr}"));
    }
    Ok(n.min(i64::from(u32::MAX)) as u32)
}

fn bits(min: u32, max: u32, step: u32) -> u64 {
    if step == 1 {
        return !(u64::MAX << (max + 1)) & (u64::MAX << min);
    }
    (min..=max).step_by(step as usize).fold(0, |acc, i| acc | 1 << i)
}

/// A local civil time, in the schedule's fixed offset.
#[derive(Clone, Copy)]
struct Civil {
    days: i64,
    secs: i64,
}

impl Civil {
    fn ymd(&self) -> (i64, u32, u32) {
        civil_from_days(self.days)
    }
    fn weekday(&self) -> u32 {
        (self.days + 4).rem_euclid(7) as u32
    }
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468
}

impl Schedule {
    /// `Next`: the first activation strictly after `t` (Unix ms), or `None` if none comes
    /// within five years (a date that never exists, such as 30 February).
    pub fn next(&self, t: i64) -> Option<i64> {
        let (second, minute, hour, dom, month, dow, offset) = match *self {
            Schedule::Every(secs) => return Some(t.div_euclid(1000) * 1000 + secs * 1000),
            Schedule::Spec { second, minute, hour, dom, month, dow, offset } => (second, minute, hour, dom, month, dow, offset),
        };
        let start = t.div_euclid(1000) + 1 + offset;
        let mut c = Civil { days: start.div_euclid(86_400), secs: start.rem_euclid(86_400) };
        let year_limit = c.ymd().0 + 5;
        let day_matches = |c: &Civil| {
            let (_, _, d) = c.ymd();
            let dom_match = (1u64 << d) & dom > 0;
            let dow_match = (1u64 << c.weekday()) & dow > 0;
            if dom & STAR_BIT > 0 || dow & STAR_BIT > 0 {
                dom_match && dow_match
            } else {
                dom_match || dow_match
            }
        };
        'wrap: loop {
            let (y, _, _) = c.ymd();
            if y > year_limit {
                return None;
            }
            while (1u64 << c.ymd().1) & month == 0 {
                let (y, m, _) = c.ymd();
                let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
                c = Civil { days: days_from_civil(ny, nm, 1), secs: 0 };
                if nm == 1 {
                    continue 'wrap;
                }
            }
            while !day_matches(&c) {
                c = Civil { days: c.days + 1, secs: 0 };
                if c.ymd().2 == 1 {
                    continue 'wrap;
                }
            }
            while (1u64 << (c.secs / 3600)) & hour == 0 {
                let h = c.secs / 3600 + 1;
                c = if h == 24 { Civil { days: c.days + 1, secs: 0 } } else { Civil { days: c.days, secs: h * 3600 } };
                if h == 24 {
                    continue 'wrap;
                }
            }
            while (1u64 << ((c.secs / 60) % 60)) & minute == 0 {
                let next = (c.secs / 60 + 1) * 60;
                c = if next == 86_400 { Civil { days: c.days + 1, secs: 0 } } else { Civil { days: c.days, secs: next } };
                if (c.secs / 60) % 60 == 0 {
                    continue 'wrap;
                }
            }
            while (1u64 << (c.secs % 60)) & second == 0 {
                let next = c.secs + 1;
                c = if next == 86_400 { Civil { days: c.days + 1, secs: 0 } } else { Civil { days: c.days, secs: next } };
                if c.secs % 60 == 0 {
                    continue 'wrap;
                }
            }
            return Some((c.days * 86_400 + c.secs - offset) * 1000);
        }
    }
}

/// Unix ms as RFC 3339 in a fixed offset (`time.RFC3339`: `Z` for UTC, else `-05:00`).
pub fn rfc3339_in(unix_ms: i64, offset: i64) -> String {
    let local = unix_ms.div_euclid(1000) + offset;
    let (y, m, d) = civil_from_days(local.div_euclid(86_400));
    let s = local.rem_euclid(86_400);
    let zone = if offset == 0 {
        "Z".to_string()
    } else {
        let sign = if offset < 0 { '-' } else { '+' };
        format!("{sign}{:02}:{:02}", offset.abs() / 3600, (offset.abs() / 60) % 60)
    };
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}{zone}", s / 3600, (s / 60) % 60, s % 60)
}

/// Unix ms in UTC as `time.RFC1123Z` (`Mon, 02 Jan 2006 15:04:05 -0700`).
pub fn rfc1123z(unix_ms: i64) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTH: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let secs = unix_ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let s = secs.rem_euclid(86_400);
    let wd = (days + 4).rem_euclid(7) as usize;
    format!("{}, {d:02} {} {y:04} {:02}:{:02}:{:02} +0000", DAYS[wd], MONTH[m as usize - 1], s / 3600, (s / 60) % 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unix ms of a UTC civil time.
    fn at(y: i64, mo: u32, d: u32, h: i64, mi: i64) -> i64 {
        (days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60) * 1000
    }

    fn next(spec: &str, from: i64) -> i64 {
        parse_standard(spec).unwrap().next(from).unwrap()
    }

    #[test]
    fn every_minute_and_steps() {
        let t = at(2026, 1, 1, 0, 0);
        assert_eq!(next("*/1 * * * *", t), at(2026, 1, 1, 0, 1), "strictly after the time given");
        assert_eq!(next("*/1 * * * *", t + 500), at(2026, 1, 1, 0, 1));
        assert_eq!(next("*/15 * * * *", at(2026, 1, 1, 0, 16)), at(2026, 1, 1, 0, 30));
        assert_eq!(next("5-10/2 * * * *", at(2026, 1, 1, 0, 7)), at(2026, 1, 1, 0, 9));
        assert_eq!(next("0,30 9-17 * * *", at(2026, 1, 1, 17, 30)), at(2026, 1, 2, 9, 0));
    }

    #[test]
    fn days_months_and_names() {
        // 2026-01-01 is a Thursday.
        assert_eq!(next("0 0 * * MON", at(2026, 1, 1, 0, 0)), at(2026, 1, 5, 0, 0));
        assert_eq!(next("0 12 * * sat,sun", at(2026, 1, 1, 0, 0)), at(2026, 1, 3, 12, 0));
        assert_eq!(next("0 0 1 jun *", at(2026, 1, 1, 0, 0)), at(2026, 6, 1, 0, 0));
        assert_eq!(next("0 0 29 2 *", at(2026, 1, 1, 0, 0)), at(2028, 2, 29, 0, 0), "the next leap day");
        // Day of month and day of week both restricted: either matches.
        assert_eq!(next("0 0 13 * 5", at(2026, 1, 1, 0, 0)), at(2026, 1, 2, 0, 0));
        assert_eq!(parse_standard("0 0 30 2 *").unwrap().next(at(2026, 1, 1, 0, 0)), None);
    }

    #[test]
    fn descriptors_and_every() {
        let t = at(2026, 3, 14, 15, 9);
        assert_eq!(next("@hourly", t), at(2026, 3, 14, 16, 0));
        assert_eq!(next("@daily", t), at(2026, 3, 15, 0, 0));
        assert_eq!(next("@midnight", t), at(2026, 3, 15, 0, 0));
        assert_eq!(next("@weekly", t), at(2026, 3, 15, 0, 0), "Sunday");
        assert_eq!(next("@monthly", t), at(2026, 4, 1, 0, 0));
        assert_eq!(next("@yearly", t), at(2027, 1, 1, 0, 0));
        assert_eq!(next("@annually", t), at(2027, 1, 1, 0, 0));
        assert_eq!(next("@every 90s", t + 250), t + 90_000);
        assert_eq!(next("@every 1h30m", t), t + 5_400_000);
    }

    #[test]
    fn time_zones_shift_the_schedule() {
        // 09:00 five hours west of Greenwich is 14:00 UTC.
        assert_eq!(next("TZ=Etc/GMT+5 0 9 * * *", at(2026, 1, 1, 0, 0)), at(2026, 1, 1, 14, 0));
        assert_eq!(next("CRON_TZ=UTC 0 9 * * *", at(2026, 1, 1, 0, 0)), at(2026, 1, 1, 9, 0));
        assert_eq!(load_location("Etc/GMT-14"), Ok(14 * 3600));
        assert_eq!(load_location("Etc/GMT+13"), Err("unknown time zone Etc/GMT+13".into()));
        assert_eq!(load_location("America/New_York"), Err("unknown time zone America/New_York".into()));
        assert_eq!(parse_standard("TZ=Mars/Base 0 9 * * *").unwrap_err(), "provided bad location Mars/Base: unknown time zone Mars/Base");
        assert_eq!(rfc3339_in(at(2026, 1, 1, 14, 0), -5 * 3600), "2026-01-01T09:00:00-05:00");
        assert_eq!(rfc3339_in(at(2026, 1, 1, 14, 0), 0), "2026-01-01T14:00:00Z");
        assert_eq!(rfc1123z(at(2026, 1, 1, 14, 5)), "Thu, 01 Jan 2026 14:05:00 +0000");
    }

    #[test]
    fn errors_read_as_the_library_writes_them() {
        assert_eq!(parse_standard("").unwrap_err(), "empty spec string");
        assert_eq!(parse_standard("* * *").unwrap_err(), "expected exactly 5 fields, found 3: [* * *]");
        assert_eq!(parse_standard("60 * * * *").unwrap_err(), "end of range (60) above maximum (59): 60");
        assert_eq!(parse_standard("* * 0 * *").unwrap_err(), "beginning of range (0) below minimum (1): 0");
        assert_eq!(parse_standard("5-1 * * * *").unwrap_err(), "beginning of range (5) beyond end of range (1): 5-1");
        assert_eq!(parse_standard("*/0 * * * *").unwrap_err(), "step of range should be a positive number: */0");
        assert_eq!(parse_standard("x * * * *").unwrap_err(), "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax");
        assert_eq!(parse_standard("1-2-3 * * * *").unwrap_err(), "too many hyphens: 1-2-3");
        assert_eq!(parse_standard("@often").unwrap_err(), "unrecognized descriptor: @often");
        assert_eq!(parse_standard("* * * * 7").unwrap_err(), "end of range (7) above maximum (6): 7");
    }
}
