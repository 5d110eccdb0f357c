//! The CronJob controller (`pkg/controller/cronjob/cronjob_controllerv2.go` and
//! `utils.go`).
//!
//! A sync reads the CronJob and the Jobs it controls from the informer caches, deletes
//! finished Jobs past the history limits, reconciles `status.active` with the Jobs that
//! exist, and if a scheduled time has passed that no Job was made for (within
//! `startingDeadlineSeconds`), applies the concurrency policy and creates the Job
//! `<cronjob>-<scheduled minutes since the Unix epoch>`. It then comes back 100 ms after
//! the next scheduled time. That wake-up is periodic work: a cluster whose only pending
//! task is a CronJob's next run is quiet, so `run_to_quiet` ends; `run_until` still runs
//! the schedule.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::store::EventType;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, Request};
use crate::foundation::api::{self, get, get_array, get_bool, get_i64, get_str, rid, Object, ResourceId};
use crate::foundation::cron::{self, Schedule};
use crate::foundation::sim::{epoch, parse_rfc3339, rfc3339, Millis};
use crate::foundation::sort::{CollectTree, Sort};
use crate::foundation::value::{json, Value};
use crate::loops::controllers::job::finished_type;
use crate::loops::events::Source;
use crate::loops::informer::{Informer, WatchState};
use crate::loops::{req_as, Controller, Cx};
use std::collections::{BTreeMap, BTreeSet};

/// The padding after a scheduled time before the sync (`nextScheduleDelta`).
const NEXT_SCHEDULE_DELTA: i64 = 100;

/// Simulated ms to Unix ms and back.
fn unix(t: Millis) -> i64 {
    epoch() * 1000 + t as i64
}
fn sim(unix_ms: i64) -> Millis {
    (unix_ms - epoch() * 1000).max(0) as Millis
}

/// How many scheduled times passed without a Job (`missedSchedulesType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    None,
    Few,
    Many,
}

/// `mostRecentScheduleTime`: the earliest time considered, the most recent scheduled time
/// not after `now` (Unix ms), and how many were missed.
pub fn most_recent_schedule_time(
    created: i64,
    last_schedule: Option<i64>,
    starting_deadline: Option<i64>,
    now: i64,
    sched: &Schedule,
) -> Result<(i64, Option<i64>, Missed), String> {
    let mut earliest = last_schedule.unwrap_or(created);
    if let Some(sds) = starting_deadline {
        earliest = earliest.max(now.saturating_sub(sds.saturating_mul(1000)));
    }
    let too_close = || "time difference between two schedules is less than 1 second".to_string();
    let t1 = sched.next(earliest).ok_or_else(too_close)?;
    let t2 = sched.next(t1).ok_or_else(too_close)?;
    if now < t1 {
        return Ok((earliest, None, Missed::None));
    }
    if now < t2 {
        return Ok((earliest, Some(t1), Missed::None));
    }
    let between = ((t2 - t1) as f64 / 1000.0).round() as i64;
    if between < 1 {
        return Err(too_close());
    }
    let elapsed = (now - t1) / 1000;
    let missed = elapsed / between + 1;
    let mut most_recent = None;
    let mut t = sched.next(t1 + (missed - 2) * between * 1000);
    while let Some(x) = t.filter(|x| *x <= now) {
        most_recent = Some(x);
        t = sched.next(x);
    }
    let kind = if missed > 100 { Missed::Many } else { Missed::Few };
    Ok((earliest, most_recent, kind))
}

/// `nextScheduleTimeDuration`: how long from `now` until 100 ms past the next run.
pub fn next_schedule_delay(created: i64, last_schedule: Option<i64>, now: i64, sched: &Schedule) -> i64 {
    let base = match most_recent_schedule_time(created, last_schedule, None, now, sched) {
        Err(_) => now,
        Ok((_, Some(t), _)) => t,
        Ok((earliest, None, Missed::None)) => earliest,
        Ok((_, None, _)) => now,
    };
    match sched.next(base) {
        Some(n) => (n + NEXT_SCHEDULE_DELTA - now).max(0),
        None => 3_600_000,
    }
}

type Key = (String, String);

#[derive(Clone)]
pub struct CronJobController {
    user: UserInfo,
    source: Source,
    cronjobs: Informer,
    jobs: Informer,
    queue: BTreeSet<Key>,
    /// When the next timer of each CronJob is due.
    pending: BTreeMap<Key, Millis>,
}

impl Default for CronJobController {
    fn default() -> Self {
        Self::new()
    }
}

/// `formatSchedule`: the schedule with the CronJob's time zone as a `TZ=` prefix; the
/// warning when the schedule carries its own.
fn format_schedule(cj: &Value) -> (String, bool) {
    let schedule = get_str(cj, &["spec", "schedule"]).unwrap_or("");
    if schedule.contains("TZ") {
        return (schedule.to_string(), true);
    }
    match get_str(cj, &["spec", "timeZone"]) {
        Some(tz) if cron::load_location(tz).is_ok() => (format!("TZ={tz} {schedule}"), false),
        _ => (schedule.to_string(), false),
    }
}

fn in_active(status: &Value, uid: &str) -> bool {
    get_array(status, &["active"]).iter().any(|r| get_str(r, &["uid"]) == Some(uid))
}

fn remove_from_active(status: &mut Value, uid: &str) {
    let kept: Vec<Value> = get_array(status, &["active"]).iter().filter(|r| get_str(r, &["uid"]) != Some(uid)).cloned().collect();
    set_active(status, kept);
}

fn set_active(status: &mut Value, list: Vec<Value>) {
    if let Some(m) = status.as_object_mut() {
        if list.is_empty() {
            m.remove("active");
        } else {
            m.insert("active", Value::Array(list));
        }
    }
}

impl CronJobController {
    pub fn new() -> Self {
        let user = UserInfo::controller("cronjob-controller");
        CronJobController {
            source: Source { component: "cronjob-controller", host: String::new(), user: user.clone() },
            user,
            cronjobs: Informer::new(rid::CRONJOB),
            jobs: Informer::new(rid::JOB),
            queue: BTreeSet::new(),
            pending: BTreeMap::new(),
        }
    }

    fn creds(&self) -> Credentials {
        Credentials::User(self.user.clone())
    }

    fn enqueue_after(&mut self, cx: &mut Cx, key: &Key, delay: Millis) {
        if delay == 0 {
            self.queue.insert(key.clone());
            return;
        }
        let at = cx.now + delay;
        if self.pending.get(key).is_some_and(|&t| t <= at && t > cx.now) {
            return;
        }
        self.pending.insert(key.clone(), at);
        cx.every(delay, format!("{}/{}", key.0, key.1));
    }

    fn resolve(&self, ns: &str, r: &(String, String)) -> Option<Key> {
        self.cronjobs.get(ns, &r.0).filter(|c| api::uid(c) == r.1).map(|c| api::queue_key(c))
    }

    fn sync_informers(&mut self, cx: &mut Cx) {
        let r = self.cronjobs.sync(&cx.api.store);
        for d in r.deltas {
            let key = api::queue_key(&d.object);
            let changed_schedule = d.kind == EventType::Modified
                && d.old.as_ref().is_some_and(|o| {
                    get_str(o, &["spec", "schedule"]) != get_str(&d.object, &["spec", "schedule"])
                        || get_str(o, &["spec", "timeZone"]) != get_str(&d.object, &["spec", "timeZone"])
                });
            if changed_schedule {
                match cron::parse_standard(&format_schedule(&d.object).0) {
                    Err(_) => {
                        let msg = format!("unparseable schedule for cronjob: {}", get_str(&d.object, &["spec", "schedule"]).unwrap_or(""));
                        cx.event(&self.source, &d.object, None, "Warning", "UnParseableCronJobSchedule", &msg, None);
                    }
                    Ok(sched) => {
                        let created = get_str(&d.object, &["metadata", "creationTimestamp"]).and_then(parse_rfc3339).unwrap_or(0);
                        let last = get_str(&d.object, &["status", "lastScheduleTime"]).and_then(parse_rfc3339).map(unix);
                        let delay = next_schedule_delay(unix(created), last, unix(cx.now), &sched);
                        self.enqueue_after(cx, &key, delay as Millis);
                    }
                }
            } else {
                self.queue.insert(key);
            }
        }
        if self.cronjobs.is_empty() {
            // A cluster without CronJobs keeps no copy of its Jobs for this loop.
            if self.jobs.state != WatchState::Empty {
                self.jobs = Informer::new(rid::JOB);
            }
            return;
        }
        let r = self.jobs.sync(&cx.api.store);
        for d in r.deltas {
            let ns = api::namespace(&d.object).to_string();
            let mut owners: Vec<Key> = Vec::new();
            if let Some(o) = api::controller_of_kind(&d.object, "CronJob").and_then(|r| self.resolve(&ns, &r)) {
                owners.push(o);
            }
            if let Some(o) = d.old.as_ref().and_then(|o| api::controller_of_kind(o, "CronJob")).and_then(|r| self.resolve(&ns, &r)) {
                owners.push(o);
            }
            self.queue.extend(owners);
        }
    }

    #[inline(never)]
    fn sync(&mut self, cx: &mut Cx, key: &Key) {
        let Some(cj) = self.cronjobs.get(&key.0, &key.1).cloned() else { return };
        let jobs: Vec<Object> =
            self.jobs.list(Some(&key.0)).filter(|j| api::controller_ref(j).and_then(|r| get_str(r, &["name"])) == Some(&key.1)).cloned().collect();
        let mut status = cj.get("status").cloned().unwrap_or(json!({}));
        let cleaned = self.cleanup_finished_jobs(cx, &cj, &mut status, &jobs);
        let (requeue, synced) = self.sync_cronjob(cx, &cj, &mut status, &jobs);
        if cleaned || synced {
            let mut body = (*cj).clone();
            body["status"] = status;
            if let Some(m) = body.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("resourceVersion");
            }
            let _ =
                cx.api.handle(req_as(Request::update(rid::CRONJOB, &key.0, &key.1, body, self.creds()).with_sub("status"), "cronjob-controller", &self.user));
        }
        if let Some(d) = requeue {
            self.enqueue_after(cx, key, d.max(1) as Millis);
        }
    }

    /// `cleanupFinishedJobs`: the oldest finished Jobs past the history limits go.
    fn cleanup_finished_jobs(&mut self, cx: &mut Cx, cj: &Value, status: &mut Value, jobs: &[Object]) -> bool {
        let limits = (get_i64(cj, &["spec", "successfulJobsHistoryLimit"]), get_i64(cj, &["spec", "failedJobsHistoryLimit"]));
        let mut changed = false;
        for (ty, limit) in [("Complete", limits.0), ("Failed", limits.1)] {
            let Some(limit) = limit else { continue };
            let mut list: Vec<&Object> = jobs.iter().filter(|j| finished_type(j) == Some(ty)).collect();
            let n = list.len() as i64 - limit;
            if n <= 0 {
                continue;
            }
            // `byJobStartTime`: started before not started, then by start, then by name.
            list.sort_stable_by(|a, b| {
                let start = |j: &Value| get_str(j, &["status", "startTime"]).and_then(parse_rfc3339);
                match (start(a), start(b)) {
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (x, y) => x.cmp(&y).then_with(|| api::name(a).cmp(api::name(b))),
                }
            });
            for j in list.into_iter().take(n as usize) {
                let why = if ty == "Complete" { format!("keeps {limit} successful Jobs") } else { format!("keeps {limit} failed Jobs") };
                if self.delete_job(cx, cj, status, j, &why) {
                    changed = true;
                }
            }
        }
        changed
    }

    /// `deleteJob`: delete in the background, and drop it from the active list.
    fn delete_job(&mut self, cx: &mut Cx, cj: &Value, status: &mut Value, job: &Value, why: &str) -> bool {
        let (ns, name) = (api::namespace(job), api::name(job));
        let mut req = Request::delete(rid::JOB, ns, name, self.creds());
        req.propagation = Some("Background".into());
        match cx.api.handle(req_as(req, "cronjob-controller", &self.user)) {
            Err(s) => {
                cx.event(&self.source, cj, None, "Warning", "FailedDelete", &format!("Deleted job: {}", s.message), None);
                false
            }
            Ok(_) => {
                remove_from_active(status, api::uid(job));
                cx.trace(
                    Flow::DeploymentController,
                    "delete-job",
                    format!("Job/{ns}/{name}"),
                    "ok",
                    "",
                    format!("CronJob/{ns}/{}: {why}: deleted {name}", api::name(cj)),
                );
                cx.event(&self.source, cj, None, "Normal", "SuccessfulDelete", &format!("Deleted job {name}"), None);
                true
            }
        }
    }

    fn get_job(&mut self, cx: &mut Cx, ns: &str, name: &str) -> Result<Object, crate::foundation::status::Status> {
        cx.api.handle(req_as(Request::new(crate::apiserver::Verb::Get, rid::JOB, ns, name, self.creds()), "cronjob-controller", &self.user))
    }

    /// `syncCronJob`: returns when to come back, and whether the status changed.
    fn sync_cronjob(&mut self, cx: &mut Cx, cj: &Object, status: &mut Value, jobs: &[Object]) -> (Option<i64>, bool) {
        let now = unix(cx.now);
        let ns = api::namespace(cj).to_string();
        let cj_name = api::name(cj).to_string();
        let obj = format!("CronJob/{ns}/{cj_name}");
        let mut update = false;
        let children: BTreeSet<&str> = jobs.iter().map(|j| api::uid(j)).collect_tree();
        for j in jobs {
            let found = in_active(status, api::uid(j));
            let finished = finished_type(j);
            if !found && finished.is_none() {
                let msg = format!("Saw a job that the controller did not create or forgot: {}", api::name(j));
                cx.event(&self.source, cj, None, "Warning", "UnexpectedJob", &msg, None);
            } else if let (true, Some(ty)) = (found, finished) {
                remove_from_active(status, api::uid(j));
                let msg = format!("Saw completed job: {}, status: {ty}", api::name(j));
                cx.event(&self.source, cj, None, "Normal", "SawCompletedJob", &msg, None);
                update = true;
            } else if finished == Some("Complete") {
                let done = get_str(j, &["status", "completionTime"]).and_then(parse_rfc3339);
                let last = get_str(status, &["lastSuccessfulTime"]).and_then(parse_rfc3339);
                if let Some(d) = done {
                    if last.is_none_or(|l| d > l) {
                        status["lastSuccessfulTime"] = json!(rfc3339(d));
                        update = true;
                    }
                }
            }
        }
        // Active Jobs that no longer exist.
        let missing: Vec<(String, String)> = get_array(status, &["active"])
            .iter()
            .filter(|r| !children.contains(get_str(r, &["uid"]).unwrap_or("")))
            .map(|r| (get_str(r, &["name"]).unwrap_or("").to_string(), get_str(r, &["uid"]).unwrap_or("").to_string()))
            .collect();
        for (name, uid) in missing {
            if let Err(s) = self.get_job(cx, &ns, &name) {
                if s.code == 404 {
                    cx.event(&self.source, cj, None, "Normal", "MissingJob", &format!("Active job went missing: {name}"), None);
                    remove_from_active(status, &uid);
                    update = true;
                }
            }
        }
        if api::is_deleting(cj) {
            return (None, update);
        }
        if let Some(tz) = get_str(cj, &["spec", "timeZone"]) {
            if let Err(e) = cron::load_location(tz) {
                let msg = format!("invalid timeZone: {tz:?}: {e} ({})", cron::unknown_zone_note());
                cx.event(&self.source, cj, None, "Warning", "UnknownTimeZone", &msg, None);
                cx.trace(Flow::DeploymentController, "schedule", obj.clone(), "error", "", format!("{obj}: time zone {tz} unknown here: no Job is started"));
                return (None, update);
            }
        }
        if get_bool(cj, &["spec", "suspend"]) == Some(true) {
            return (None, update);
        }
        let (spec, tz_in_schedule) = format_schedule(cj);
        if tz_in_schedule {
            let msg = format!(
                "CRON_TZ or TZ used in schedule {:?} is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details",
                get_str(cj, &["spec", "schedule"]).unwrap_or("")
            );
            cx.event(&self.source, cj, None, "Warning", "UnsupportedSchedule", &msg, None);
        }
        let schedule_text = get_str(cj, &["spec", "schedule"]).unwrap_or("").to_string();
        let sched = match cron::parse_standard(&spec) {
            Ok(s) => s,
            Err(e) => {
                cx.event(&self.source, cj, None, "Warning", "UnparseableSchedule", &format!("unparseable schedule: {schedule_text:?} : {e}"), None);
                return (None, update);
            }
        };
        let created = unix(get_str(cj, &["metadata", "creationTimestamp"]).and_then(parse_rfc3339).unwrap_or(0));
        let last = get_str(status, &["lastScheduleTime"]).and_then(parse_rfc3339).map(unix);
        let sds = get_i64(cj, &["spec", "startingDeadlineSeconds"]);
        let next = |last: Option<i64>| Some(next_schedule_delay(created, last, now, &sched));
        let scheduled = match most_recent_schedule_time(created, last, sds, now, &sched) {
            Err(e) => {
                cx.event(&self.source, cj, None, "Warning", "InvalidSchedule", &format!("invalid schedule: {schedule_text} : {e}"), None);
                return (None, update);
            }
            Ok((_, None, _)) => return (next(last), update),
            Ok((_, Some(t), missed)) => {
                if missed == Missed::Many {
                    cx.event(
                        &self.source,
                        cj,
                        None,
                        "Warning",
                        "TooManyMissedTimes",
                        "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew",
                        None,
                    );
                }
                t
            }
        };
        if sds.is_some_and(|s| scheduled.saturating_add(s.saturating_mul(1000)) < now) {
            let msg = format!("Missed scheduled time to start a job: {}", cron::rfc1123z(scheduled));
            cx.event(&self.source, cj, None, "Warning", "MissSchedule", &msg, None);
            return (next(last), update);
        }
        let job_name = format!("{cj_name}-{}", scheduled.div_euclid(60_000));
        let active_by_name = get_array(status, &["active"]).iter().any(|r| get_str(r, &["name"]) == Some(&job_name));
        if active_by_name || last == Some(scheduled) {
            return (next(last), update);
        }
        let policy = get_str(cj, &["spec", "concurrencyPolicy"]).unwrap_or("Allow");
        if policy == "Forbid" && !get_array(status, &["active"]).is_empty() {
            cx.event(
                &self.source,
                cj,
                None,
                "Normal",
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is Forbid",
                None,
            );
            cx.trace(
                Flow::DeploymentController,
                "schedule",
                obj.clone(),
                "ok",
                "",
                format!("{obj}: {} is due but a Job is still running and concurrencyPolicy is Forbid: skipped", rfc3339(sim(scheduled))),
            );
            return (next(last), update);
        }
        if policy == "Replace" {
            let active: Vec<String> = get_array(status, &["active"]).iter().filter_map(|r| get_str(r, &["name"])).map(str::to_string).collect();
            for name in active {
                let job = match self.get_job(cx, &ns, &name) {
                    Ok(j) => j,
                    Err(s) => {
                        cx.event(&self.source, cj, None, "Warning", "FailedGet", &format!("Get job: {}", s.message), None);
                        return (None, update);
                    }
                };
                if !self.delete_job(cx, cj, status, &job, "concurrencyPolicy is Replace and the next run is due") {
                    return (None, update);
                }
                update = true;
            }
        }
        // `getJobFromTemplate2`
        let offset = get_str(cj, &["spec", "timeZone"]).and_then(|tz| cron::load_location(tz).ok()).unwrap_or(0);
        let mut annotations = get(cj, &["spec", "jobTemplate", "metadata", "annotations"]).cloned().unwrap_or(json!({}));
        annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"] = json!(cron::rfc3339_in(scheduled, offset));
        let mut meta = json!({"name": job_name, "namespace": ns, "annotations": annotations, "ownerReferences": [api::owner_reference(cj)]});
        if let Some(l) = get(cj, &["spec", "jobTemplate", "metadata", "labels"]) {
            meta["labels"] = l.clone();
        }
        let body =
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": get(cj, &["spec", "jobTemplate", "spec"]).cloned().unwrap_or(json!({}))});
        let created_job = match cx.api.handle(req_as(Request::create(rid::JOB, &ns, body, self.creds()), "cronjob-controller", &self.user)) {
            Ok(j) => {
                cx.trace(
                    Flow::DeploymentController,
                    "create-job",
                    format!("Job/{ns}/{job_name}"),
                    "ok",
                    api::resource_version(&j),
                    format!("{obj} schedule {schedule_text:?} was due at {}: created Job {job_name}", rfc3339(sim(scheduled))),
                );
                cx.event(&self.source, cj, None, "Normal", "SuccessfulCreate", &format!("Created job {job_name}"), None);
                j
            }
            Err(s) if s.code == 409 && s.reason == "AlreadyExists" => {
                let Ok(j) = self.get_job(cx, &ns, &job_name) else { return (None, update) };
                let ours = api::controller_ref(&j).and_then(|r| get_str(r, &["uid"])) == Some(api::uid(cj));
                if !ours || in_active(status, api::uid(&j)) {
                    return (None, update);
                }
                j
            }
            Err(s) => {
                if !s.message.contains("because it is being terminated") {
                    cx.event(&self.source, cj, None, "Warning", "FailedCreate", &format!("Error creating job: {}", s.message), None);
                }
                return (None, update);
            }
        };
        let mut active: Vec<Value> = get_array(status, &["active"]).to_vec();
        active.push(json!({"apiVersion": "batch/v1", "kind": "Job", "namespace": ns, "name": api::name(&created_job),
            "uid": api::uid(&created_job), "resourceVersion": api::resource_version(&created_job)}));
        set_active(status, active);
        status["lastScheduleTime"] = json!(rfc3339(sim(scheduled)));
        (next(Some(scheduled)), true)
    }
}

impl Controller for CronJobController {
    fn name(&self) -> &'static str {
        "cronjob-controller"
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::CRONJOB, rid::JOB]
    }
    fn run(&mut self, cx: &mut Cx) {
        self.sync_informers(cx);
        while let Some(k) = self.queue.pop_first() {
            self.sync(cx, &k);
        }
    }
    fn timer(&mut self, cx: &mut Cx, key: &str) {
        if let Some((ns, name)) = key.split_once('/') {
            let k = (ns.to_string(), name.to_string());
            match self.pending.get(&k) {
                // A later timer replaced this one: wait for it.
                Some(&t) if t > cx.now => {}
                _ => {
                    self.pending.remove(&k);
                    self.queue.insert(k);
                }
            }
        }
        self.run(cx);
    }
    fn busy(&self, _now: Millis) -> bool {
        !self.queue.is_empty()
    }
    fn restart(&mut self) {
        *self = Self::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000;

    #[test]
    fn the_most_recent_missed_time_is_found_and_many_are_flagged() {
        let every = cron::parse_standard("*/1 * * * *").unwrap();
        let t0 = 1_767_225_600_000; // 2026-01-01T00:00:00Z
        assert_eq!(most_recent_schedule_time(t0, None, None, t0 + 30_000, &every), Ok((t0, None, Missed::None)));
        assert_eq!(most_recent_schedule_time(t0, None, None, t0 + MIN + 100, &every), Ok((t0, Some(t0 + MIN), Missed::None)));
        assert_eq!(most_recent_schedule_time(t0, None, None, t0 + 5 * MIN + 100, &every), Ok((t0, Some(t0 + 5 * MIN), Missed::Few)));
        assert_eq!(most_recent_schedule_time(t0, None, None, t0 + 200 * MIN, &every).map(|r| r.2), Ok(Missed::Many));
        // A starting deadline moves the earliest time considered forward.
        assert_eq!(
            most_recent_schedule_time(t0, None, Some(90), t0 + 200 * MIN + 5, &every),
            Ok((t0 + 200 * MIN + 5 - 90_000, Some(t0 + 200 * MIN), Missed::Few))
        );
        assert_eq!(next_schedule_delay(t0, Some(t0 + MIN), t0 + MIN + 200, &every), MIN - 100);
        let never = cron::parse_standard("0 0 31 2 *").unwrap();
        assert!(most_recent_schedule_time(t0, None, None, t0, &never).is_err());
    }
}
