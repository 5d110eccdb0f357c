//! The Job controller (`pkg/controller/job/job_controller.go`, with `indexed_job_utils.go`,
//! `backoff_utils.go`, `pod_failure_policy.go`, `success_policy.go` and
//! `tracking_utils.go`).
//!
//! A sync reads the Job and its pods from the informer caches, checks expectations, counts
//! newly finished pods, decides whether the Job has finished (success criteria, pod
//! failure policy, backoff limit, active deadline, failed indexes, success policy), then
//! either deletes the remaining active pods or manages the active count
//! ([`manage_job`](JobController::manage_job)), and finally tracks the status: finished
//! pods go to `status.uncountedTerminatedPods` first, their
//! `batch.kubernetes.io/job-tracking` finalizer is removed, and only then are they added
//! to `succeeded`/`failed`. The terminal conditions come in two steps, as since 1.31: the
//! interim `SuccessCriteriaMet` or `FailureTarget`, then `Complete` or `Failed` once no pod
//! is left terminating or uncounted. The pure parts ([`Intervals`], [`backoff_delay`],
//! [`match_pod_failure_policy`], [`match_success_policy`], [`first_pending_indexes`]) are
//! unit-tested below.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::store::EventType;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, PatchType, Request};
use crate::foundation::api::{self, get, get_array, get_bool, get_i64, get_str, rid, Object, ResourceId};
use crate::foundation::pod::{condition, pod_is_active, pod_is_ready};
use crate::foundation::sim::{parse_rfc3339, rfc3339, Millis};
use crate::foundation::sort::{CollectTree, Sort};
use crate::foundation::value::{json, Value};
use crate::loops::events::Source;
use crate::loops::informer::{Informer, WatchState};
use crate::loops::{req_as, Controller, Cx};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The finalizer that keeps a finished pod until the controller has counted it.
pub const JOB_TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
/// Annotation and label of an Indexed Job's pods.
pub const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
pub const INDEX_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-failure-count";
pub const INDEX_IGNORED_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-ignored-failure-count";
const COMPLETION_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
/// Pod events are batched: the Job is synced this long after one (`syncJobBatchPeriod`).
const SYNC_BATCH_PERIOD: Millis = 1000;
/// The pod-failure back-off: 10 s doubling (`DefaultJobPodFailureBackOff`), capped at
/// `MaxJobPodFailureBackOff`.
pub const DEFAULT_POD_FAILURE_BACKOFF: Millis = 10_000;
pub const MAX_POD_FAILURE_BACKOFF: Millis = 600_000;
const MAX_UNCOUNTED_PODS: usize = 500;
const MAX_POD_CREATE_DELETE_PER_SYNC: i64 = 500;
/// `names.MaxGeneratedNameLength`: 63 less the 5 random characters.
const MAX_GENERATED_NAME_LENGTH: usize = 58;
/// The longest wait a timer is set for: a deadline further off (the API takes any int64 for
/// `activeDeadlineSeconds`) is looked at again then, and the timer set anew.
const MAX_TIMER: Millis = 365 * 24 * 3600 * 1000;

/// Seconds from the API (any int64) as simulated milliseconds, without overflow.
fn secs(s: i64) -> Millis {
    (s.max(0) as Millis).saturating_mul(1000)
}

// ---------------------------------------------------------------------------------------
// Indexes as ordered intervals (`orderedIntervals`).

/// Completion indexes as ordered, non-adjacent closed intervals; printed as
/// `status.completedIndexes` prints them (`0-2,4,6,7`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Intervals(pub Vec<(i64, i64)>);

impl Intervals {
    /// `parseIndexesFromString`: intervals at or past `completions` are cut off; corrupt
    /// parts are skipped.
    pub fn parse(s: &str, completions: i64) -> Intervals {
        let mut out: Vec<(i64, i64)> = Vec::new();
        if s.is_empty() {
            return Intervals(out);
        }
        for part in s.split(',') {
            let limits: Vec<&str> = part.split('-').collect();
            let Ok(first) = limits[0].parse::<i64>() else { continue };
            if first >= completions {
                break;
            }
            let last = if limits.len() > 1 {
                match limits[1].parse::<i64>() {
                    Ok(l) => l.min(completions - 1),
                    Err(_) => continue,
                }
            } else {
                first
            };
            match out.last_mut() {
                Some(prev) if prev.1 == first - 1 => prev.1 = last,
                _ => out.push((first, last)),
            }
        }
        Intervals(out)
    }

    /// A copy that also holds `indexes` (given in increasing order).
    pub fn with_indexes(&self, indexes: &[i64]) -> Intervals {
        self.merge(&Intervals(indexes.iter().map(|&i| (i, i)).collect()))
    }

    pub fn merge(&self, other: &Intervals) -> Intervals {
        let mut out: Vec<(i64, i64)> = Vec::new();
        let mut push = |iv: (i64, i64)| match out.last_mut() {
            Some(last) if iv.0 <= last.1 + 1 => last.1 = last.1.max(iv.1),
            _ => out.push(iv),
        };
        let (a, b) = (&self.0, &other.0);
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            if a[i].0 < b[j].0 {
                push(a[i]);
                i += 1;
            } else {
                push(b[j]);
                j += 1;
            }
        }
        a[i..].iter().chain(b[j..].iter()).for_each(|&iv| push(iv));
        Intervals(out)
    }

    pub fn total(&self) -> i64 {
        self.0.iter().map(|(f, l)| l - f + 1).sum()
    }

    pub fn has(&self, ix: i64) -> bool {
        self.0.iter().any(|&(f, l)| f <= ix && ix <= l)
    }
}

impl std::fmt::Display for Intervals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, &(first, last)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{first}")?;
            if last > first {
                let sep = if last == first + 1 { "," } else { "-" };
                write!(f, "{sep}{last}")?;
            }
        }
        Ok(())
    }
}

/// `firstPendingIndexes`: the first `count` indexes below `completions` not in `taken`.
pub fn first_pending_indexes(taken: &Intervals, count: usize, completions: i64) -> Vec<i64> {
    let mut out = Vec::new();
    let mut candidate = 0;
    for &(first, last) in &taken.0 {
        while candidate < completions && out.len() < count && candidate < first {
            out.push(candidate);
            candidate += 1;
        }
        candidate = candidate.max(last + 1);
    }
    while candidate < completions && out.len() < count {
        out.push(candidate);
        candidate += 1;
    }
    out
}

// ---------------------------------------------------------------------------------------
// Back-off (`backoff_utils.go`).

/// How long to wait before a new pod after `failures` consecutive failures: 10 s, 20 s,
/// 40 s, ... up to the cap.
pub fn backoff_delay(failures: i64) -> Millis {
    let mut d = DEFAULT_POD_FAILURE_BACKOFF;
    for _ in 1..failures {
        d *= 2;
        if d >= MAX_POD_FAILURE_BACKOFF {
            return MAX_POD_FAILURE_BACKOFF;
        }
    }
    d
}

/// `getRemainingTimeForFailuresCount`.
pub fn remaining_backoff(now: Millis, failures: i64, last_failure: Option<Millis>) -> Millis {
    if failures == 0 {
        return 0;
    }
    let elapsed = now.saturating_sub(last_failure.unwrap_or(now));
    backoff_delay(failures).saturating_sub(elapsed)
}

/// Failures since the last success, kept in memory per Job (`backoffRecord`).
#[derive(Debug, Clone, Default, PartialEq)]
struct BackoffRecord {
    failures_after_last_success: i64,
    last_failure: Option<Millis>,
}

fn new_backoff_record(old: Option<&BackoffRecord>, succeeded: &[&Object], failed: &[&Object]) -> BackoffRecord {
    let mut b = old.cloned().unwrap_or_default();
    let mut s: Vec<Millis> = succeeded.iter().map(|p| finished_time(p)).collect();
    let mut f: Vec<Millis> = failed.iter().map(|p| finished_time(p)).collect();
    s.sort_unstable();
    f.sort_unstable();
    match (s.last(), f.last()) {
        (None, None) => {}
        (None, Some(&last)) => {
            b.failures_after_last_success += f.len() as i64;
            b.last_failure = Some(last);
        }
        (Some(_), None) => b = BackoffRecord::default(),
        (Some(&last_success), Some(_)) => {
            b = BackoffRecord::default();
            for &t in f.iter().rev() {
                if t <= last_success {
                    break;
                }
                if b.last_failure.is_none() {
                    b.last_failure = Some(t);
                }
                b.failures_after_last_success += 1;
            }
        }
    }
    b
}

/// `getFinishedTime`: the last container's finish, the Ready=False transition, the
/// deletion time less the grace period, or the creation time.
fn finished_time(p: &Value) -> Millis {
    let statuses = get_array(p, &["status", "containerStatuses"]);
    let mut from_containers: Option<Millis> = None;
    let mut all = !statuses.is_empty();
    for c in statuses {
        match get_str(c, &["state", "terminated", "finishedAt"]).and_then(parse_rfc3339) {
            Some(t) => from_containers = Some(from_containers.map_or(t, |m: Millis| m.max(t))),
            None => all = false,
        }
    }
    if all {
        if let Some(t) = from_containers {
            return t;
        }
    }
    if let Some(c) = condition(p, "Ready") {
        if get_str(c, &["status"]) == Some("False") {
            if let Some(t) = get_str(c, &["lastTransitionTime"]).and_then(parse_rfc3339) {
                return t;
            }
        }
    }
    if let Some(t) = get_str(p, &["metadata", "deletionTimestamp"]).and_then(parse_rfc3339) {
        let grace = secs(get_i64(p, &["metadata", "deletionGracePeriodSeconds"]).unwrap_or(0));
        return t.saturating_sub(grace);
    }
    get_str(p, &["metadata", "creationTimestamp"]).and_then(parse_rfc3339).unwrap_or(0)
}

// ---------------------------------------------------------------------------------------
// Pod failure policy and success policy.

/// `matchPodFailurePolicy`: the FailJob message, whether the failure counts against the
/// backoff limits, and the action of the rule that matched.
pub fn match_pod_failure_policy(policy: Option<&Value>, pod: &Value) -> (Option<String>, bool, Option<&'static str>) {
    let Some(policy) = policy else { return (None, true, None) };
    for (index, rule) in get_array(policy, &["rules"]).iter().enumerate() {
        let action = get_str(rule, &["action"]).unwrap_or("");
        let matched: Option<String> = if let Some(req) = get(rule, &["onExitCodes"]) {
            match_on_exit_codes(pod, req).map(|(name, code)| {
                format!(
                    "Container {name} for pod {}/{} failed with exit code {code} matching {action} rule at index {index}",
                    api::namespace(pod),
                    api::name(pod)
                )
            })
        } else if let Some(patterns) = get(rule, &["onPodConditions"]).and_then(Value::as_array) {
            get_array(pod, &["status", "conditions"])
                .iter()
                .find(|c| {
                    patterns
                        .iter()
                        .any(|p| get_str(c, &["type"]) == get_str(p, &["type"]) && get_str(c, &["status"]) == Some(get_str(p, &["status"]).unwrap_or("True")))
                })
                .map(|c| {
                    format!(
                        "Pod {}/{} has condition {} matching {action} rule at index {index}",
                        api::namespace(pod),
                        api::name(pod),
                        get_str(c, &["type"]).unwrap_or("")
                    )
                })
        } else {
            None
        };
        let Some(msg) = matched else { continue };
        match action {
            "Ignore" => return (None, false, Some("Ignore")),
            "FailIndex" => return (None, true, Some("FailIndex")),
            "Count" => return (None, true, Some("Count")),
            "FailJob" => return (Some(msg), true, Some("FailJob")),
            _ => {}
        }
    }
    (None, true, None)
}

/// The first terminated container (then init container) whose non-zero exit code the
/// requirement matches: its name and code.
fn match_on_exit_codes(pod: &Value, req: &Value) -> Option<(String, i64)> {
    let name = get_str(req, &["containerName"]);
    let op = get_str(req, &["operator"]).unwrap_or("");
    let values: Vec<i64> = get_array(req, &["values"]).iter().filter_map(Value::as_i64).collect();
    for list in ["containerStatuses", "initContainerStatuses"] {
        for c in get_array(pod, &["status", list]) {
            let Some(code) = get_i64(c, &["state", "terminated", "exitCode"]) else { continue };
            let cname = get_str(c, &["name"]).unwrap_or("");
            if name.is_some_and(|n| n != cname) || code == 0 {
                continue;
            }
            let hit = match op {
                "In" => values.contains(&code),
                "NotIn" => !values.contains(&code),
                _ => false,
            };
            if hit {
                return Some((cname.to_string(), code));
            }
        }
    }
    None
}

/// `matchSuccessPolicy`: the message of the first rule the succeeded indexes satisfy.
pub fn match_success_policy(policy: Option<&Value>, completions: i64, succeeded: &Intervals) -> Option<String> {
    let policy = policy?;
    if succeeded.0.is_empty() {
        return None;
    }
    for (index, rule) in get_array(policy, &["rules"]).iter().enumerate() {
        let count = get_i64(rule, &["succeededCount"]);
        if let Some(s) = get_str(rule, &["succeededIndexes"]) {
            let required = Intervals::parse(s, completions);
            if required.0.is_empty() {
                continue;
            }
            let contains: i64 = required.0.iter().flat_map(|r| succeeded.0.iter().map(move |s| (r.1.min(s.1) - r.0.max(s.0) + 1).max(0))).sum();
            if contains == required.total() || count.is_some_and(|c| contains >= c) {
                return Some(format!("Matched rules at index {index}"));
            }
        } else if count.is_some_and(|c| succeeded.total() >= c) {
            return Some(format!("Matched rules at index {index}"));
        }
    }
    None
}

// ---------------------------------------------------------------------------------------
// Reading Jobs and pods.

fn phase(p: &Value) -> &str {
    get_str(p, &["status", "phase"]).unwrap_or("")
}

fn has_tracking_finalizer(p: &Value) -> bool {
    get_array(p, &["metadata", "finalizers"]).iter().any(|f| f.as_str() == Some(JOB_TRACKING_FINALIZER))
}

/// `getCompletionIndex`: the annotation as a non-negative number.
fn completion_index(p: &Value) -> Option<i64> {
    api::annotation(p, COMPLETION_INDEX).and_then(|v| v.parse::<i64>().ok()).filter(|i| *i >= 0)
}

fn annotation_count(p: &Value, key: &str) -> i64 {
    api::annotation(p, key).and_then(|v| v.parse::<i64>().ok()).filter(|v| (0..=i64::from(i32::MAX)).contains(v)).unwrap_or(0)
}

fn is_indexed(job: &Value) -> bool {
    get_str(job, &["spec", "completionMode"]) == Some("Indexed")
}

fn completions(job: &Value) -> Option<i64> {
    get_i64(job, &["spec", "completions"])
}

fn suspended(job: &Value) -> bool {
    get_bool(job, &["spec", "suspend"]) == Some(true)
}

fn backoff_limit_per_index(job: &Value) -> Option<i64> {
    get_i64(job, &["spec", "backoffLimitPerIndex"])
}

fn pod_failure_policy(job: &Value) -> Option<&Value> {
    get(job, &["spec", "podFailurePolicy"]).filter(|v| !v.is_null())
}

/// `onlyReplaceFailedPods`: a terminating pod is replaced only once it has failed.
fn only_replace_failed(job: &Value) -> bool {
    get_str(job, &["spec", "podReplacementPolicy"]) == Some("Failed") || pod_failure_policy(job).is_some()
}

/// `isPodFailed`: Failed, or (unless only failed pods are replaced) deleted before it
/// succeeded.
fn is_pod_failed(p: &Value, job: &Value) -> bool {
    if phase(p) == "Failed" {
        return true;
    }
    if only_replace_failed(job) {
        return false;
    }
    api::is_deleting(p) && phase(p) != "Succeeded"
}

fn is_terminating(p: &Value) -> bool {
    api::is_deleting(p) && phase(p) != "Failed" && phase(p) != "Succeeded"
}

fn condition_true<'a>(conds: &'a [Value], ty: &str) -> Option<&'a Value> {
    conds.iter().find(|c| get_str(c, &["type"]) == Some(ty) && get_str(c, &["status"]) == Some("True"))
}

/// Complete or Failed (`IsJobFinished`).
pub fn is_finished(job: &Value) -> bool {
    finished_type(job).is_some()
}

pub fn finished_type(job: &Value) -> Option<&'static str> {
    let conds = get_array(job, &["status", "conditions"]);
    if condition_true(conds, "Complete").is_some() {
        Some("Complete")
    } else if condition_true(conds, "Failed").is_some() {
        Some("Failed")
    } else {
        None
    }
}

fn new_condition(ty: &str, status: &str, reason: &str, message: &str, now: Millis) -> Value {
    let t = rfc3339(now);
    let mut c = json!({"type": ty, "status": status, "lastProbeTime": t, "lastTransitionTime": t});
    if !reason.is_empty() {
        c["reason"] = json!(reason);
    }
    if !message.is_empty() {
        c["message"] = json!(message);
    }
    c
}

fn cond_field<'a>(c: &'a Value, f: &str) -> &'a str {
    get_str(c, &[f]).unwrap_or("")
}

/// `ensureJobConditionStatus`: update the condition of that type, or append it unless it
/// would be False. Returns whether the list changed.
fn ensure_condition(list: &mut Vec<Value>, ty: &str, status: &str, reason: &str, message: &str, now: Millis) -> bool {
    if let Some(c) = list.iter_mut().find(|c| get_str(c, &["type"]) == Some(ty)) {
        if cond_field(c, "status") != status || cond_field(c, "reason") != reason || cond_field(c, "message") != message {
            *c = new_condition(ty, status, reason, message, now);
            return true;
        }
        return false;
    }
    if status != "False" {
        list.push(new_condition(ty, status, reason, message, now));
        return true;
    }
    false
}

/// `batch/v1` JobStatus, with Go's omitempty rules when written back.
#[derive(Debug, Clone, Default, PartialEq)]
struct JobStatus {
    conditions: Vec<Value>,
    start_time: Option<String>,
    completion_time: Option<String>,
    active: i64,
    succeeded: i64,
    failed: i64,
    terminating: Option<i64>,
    ready: Option<i64>,
    completed_indexes: String,
    failed_indexes: Option<String>,
    uncounted_succeeded: Vec<String>,
    uncounted_failed: Vec<String>,
}

impl JobStatus {
    fn of(job: &Value) -> JobStatus {
        let s = |f: &str| get_str(job, &["status", f]).map(str::to_string);
        let uids = |f: &str| get_array(job, &["status", "uncountedTerminatedPods", f]).iter().filter_map(Value::as_str).map(str::to_string).collect();
        JobStatus {
            conditions: get_array(job, &["status", "conditions"]).to_vec(),
            start_time: s("startTime"),
            completion_time: s("completionTime"),
            active: get_i64(job, &["status", "active"]).unwrap_or(0),
            succeeded: get_i64(job, &["status", "succeeded"]).unwrap_or(0),
            failed: get_i64(job, &["status", "failed"]).unwrap_or(0),
            terminating: get_i64(job, &["status", "terminating"]),
            ready: get_i64(job, &["status", "ready"]),
            completed_indexes: s("completedIndexes").unwrap_or_default(),
            failed_indexes: s("failedIndexes"),
            uncounted_succeeded: uids("succeeded"),
            uncounted_failed: uids("failed"),
        }
    }

    fn to_json(&self) -> Value {
        let mut s = json!({});
        if !self.conditions.is_empty() {
            s["conditions"] = Value::Array(self.conditions.clone());
        }
        if let Some(t) = &self.start_time {
            s["startTime"] = json!(t);
        }
        if let Some(t) = &self.completion_time {
            s["completionTime"] = json!(t);
        }
        for (k, v) in [("active", self.active), ("succeeded", self.succeeded), ("failed", self.failed)] {
            if v != 0 {
                s[k] = json!(v);
            }
        }
        if let Some(t) = self.terminating {
            s["terminating"] = json!(t);
        }
        if let Some(r) = self.ready {
            s["ready"] = json!(r);
        }
        if !self.completed_indexes.is_empty() {
            s["completedIndexes"] = json!(self.completed_indexes);
        }
        if let Some(f) = &self.failed_indexes {
            s["failedIndexes"] = json!(f);
        }
        let mut u = json!({});
        if !self.uncounted_succeeded.is_empty() {
            u["succeeded"] = json!(self.uncounted_succeeded);
        }
        if !self.uncounted_failed.is_empty() {
            u["failed"] = json!(self.uncounted_failed);
        }
        s["uncountedTerminatedPods"] = u;
        s
    }

    /// `cleanUncountedPodsWithoutFinalizers`: pods whose finalizer is gone are counted.
    fn clean_uncounted(&mut self, with_finalizer: &BTreeSet<String>) -> bool {
        let mut changed = false;
        let keep: Vec<String> = self.uncounted_succeeded.iter().filter(|u| with_finalizer.contains(*u)).cloned().collect();
        if keep.len() != self.uncounted_succeeded.len() {
            self.succeeded += (self.uncounted_succeeded.len() - keep.len()) as i64;
            self.uncounted_succeeded = keep;
            changed = true;
        }
        let keep: Vec<String> = self.uncounted_failed.iter().filter(|u| with_finalizer.contains(*u)).cloned().collect();
        if keep.len() != self.uncounted_failed.len() {
            self.failed += (self.uncounted_failed.len() - keep.len()) as i64;
            self.uncounted_failed = keep;
            changed = true;
        }
        changed
    }
}

/// `controller.ActivePods` order: the first are the best to delete.
fn sort_for_removal(pods: &mut [Object]) {
    fn phase_rank(p: &Value) -> i32 {
        match phase(p) {
            "Pending" => 0,
            "Unknown" => 1,
            "Running" => 2,
            _ => 3,
        }
    }
    let assigned = |p: &Value| get_str(p, &["spec", "nodeName"]).is_some_and(|n| !n.is_empty());
    let ready_at = |p: &Value| condition(p, "Ready").and_then(|c| get_str(c, &["lastTransitionTime"])).and_then(parse_rfc3339);
    let restarts = |p: &Value| get_array(p, &["status", "containerStatuses"]).iter().map(|c| get_i64(c, &["restartCount"]).unwrap_or(0)).max().unwrap_or(0);
    let created = |p: &Value| get_str(p, &["metadata", "creationTimestamp"]).and_then(parse_rfc3339);
    pods.sort_stable_by(|a, b| {
        assigned(a)
            .cmp(&assigned(b))
            .then(phase_rank(a).cmp(&phase_rank(b)))
            .then(pod_is_ready(a).cmp(&pod_is_ready(b)))
            .then_with(|| if pod_is_ready(a) && pod_is_ready(b) { ready_at(b).cmp(&ready_at(a)) } else { std::cmp::Ordering::Equal })
            .then(restarts(b).cmp(&restarts(a)))
            .then(created(b).cmp(&created(a)))
            .then_with(|| api::name(a).cmp(api::name(b)))
    });
}

/// `activePodsForRemoval`: for an Indexed Job, pods with repeated, missing or out-of-range
/// indexes first; then the lowest-ranked until `at_least`.
fn active_pods_for_removal(job: &Value, active: &[Object], at_least: usize) -> Vec<Object> {
    let mut rm: Vec<Object> = Vec::new();
    let mut left: Vec<Object> = Vec::new();
    if is_indexed(job) {
        let n = completions(job).unwrap_or(0);
        let mut by_index: BTreeMap<i64, Vec<Object>> = BTreeMap::new();
        for p in active {
            match completion_index(p) {
                Some(ix) if ix < n => by_index.entry(ix).or_default().push(p.clone()),
                _ => rm.push(p.clone()),
            }
        }
        for (_, mut same) in by_index {
            sort_for_removal(&mut same);
            let keep = same.pop();
            rm.extend(same);
            left.extend(keep);
        }
    } else {
        left = active.to_vec();
    }
    if rm.len() < at_least {
        sort_for_removal(&mut left);
        let more = at_least - rm.len();
        rm.extend(left.into_iter().take(more));
    }
    rm
}

/// What one sync knows (`syncJobCtx`).
struct SyncCtx {
    pods: Vec<Object>,
    active_pods: Vec<Object>,
    finished: Option<Value>,
    succeeded: i64,
    prev_succeeded_indexes: Intervals,
    succeeded_indexes: Intervals,
    failed_indexes: Option<Intervals>,
    new_backoff: BackoffRecord,
    expected_rm_finalizers: BTreeSet<String>,
    uncounted_succeeded: BTreeSet<String>,
    uncounted_failed: BTreeSet<String>,
    delayed_per_index: BTreeMap<i64, Object>,
    terminating: i64,
    ready: i64,
}

/// Creations and deletions a Job waits to observe (`ControllerExpectations`).
#[derive(Debug, Default, Clone)]
struct Expectations {
    adds: i64,
    dels: i64,
}

type Key = (String, String);

#[derive(Clone)]
pub struct JobController {
    user: UserInfo,
    source: Source,
    jobs: Informer,
    pods: Informer,
    /// Job uid -> its pods.
    by_owner: HashMap<String, BTreeSet<Key>>,
    expectations: BTreeMap<Key, Expectations>,
    /// Pod uids whose finalizer removal a Job waits to observe (`uidTrackingExpectations`).
    finalizer_expectations: BTreeMap<Key, BTreeSet<String>>,
    backoff: BTreeMap<Key, BackoffRecord>,
    queue: BTreeSet<Key>,
    /// When a delayed sync of each Job is due (the work queue's `AddAfter`).
    pending: BTreeMap<Key, Millis>,
    /// Pods whose tracking finalizer no Job will remove.
    orphans: BTreeSet<Key>,
}

impl Default for JobController {
    fn default() -> Self {
        Self::new()
    }
}

impl JobController {
    pub fn new() -> Self {
        let user = UserInfo::controller("job-controller");
        JobController {
            source: Source { component: "job-controller", host: String::new(), user: user.clone() },
            user,
            jobs: Informer::new(rid::JOB),
            pods: Informer::new(rid::POD),
            by_owner: HashMap::new(),
            expectations: BTreeMap::new(),
            finalizer_expectations: BTreeMap::new(),
            backoff: BTreeMap::new(),
            queue: BTreeSet::new(),
            pending: BTreeMap::new(),
            orphans: BTreeSet::new(),
        }
    }

    fn creds(&self) -> Credentials {
        Credentials::User(self.user.clone())
    }

    /// `AddAfter`: a sync no later than `delay` from now.
    fn enqueue_after(&mut self, cx: &mut Cx, key: &Key, delay: Millis) {
        if delay == 0 {
            self.queue.insert(key.clone());
            return;
        }
        let delay = delay.min(MAX_TIMER);
        let at = cx.now + delay;
        if self.pending.get(key).is_some_and(|&t| t <= at) {
            return;
        }
        self.pending.insert(key.clone(), at);
        cx.after(delay, format!("{}/{}", key.0, key.1));
    }

    /// The Job a pod's controllerRef names, if it is in the cache with that uid.
    fn resolve(&self, ns: &str, r: &(String, String)) -> Option<&Object> {
        self.jobs.get(ns, &r.0).filter(|j| api::uid(j) == r.1)
    }

    fn sync_informers(&mut self, cx: &mut Cx) {
        let fresh = self.jobs.state == WatchState::Empty;
        let r = self.jobs.sync(&cx.api.store);
        if let Some(m) = r.relisted {
            cx.trace(Flow::Etcd, "watch", "Job".into(), "relist", "", format!("410 Gone from the watch cache ({m}): relisted Jobs"));
        }
        // With no Job, and no Job deleted since the last look whose pods may still carry the
        // tracking finalizer, a cluster keeps no copy of its pods for this loop: they are
        // listed again when a Job appears (a pod left with the finalizer then shows up as
        // an orphan, as it does when the controller starts).
        if self.jobs.is_empty() && r.deltas.is_empty() && self.orphans.is_empty() && !fresh {
            if self.pods.state != WatchState::Empty {
                self.pods = Informer::new(rid::POD);
                self.by_owner.clear();
            }
            return;
        }
        for d in r.deltas {
            let key = api::queue_key(&d.object);
            match d.kind {
                EventType::Added => self.queue.insert(key.clone()),
                EventType::Deleted => {
                    self.queue.insert(key.clone());
                    self.cleanup_pod_finalizers(&d.object);
                    continue;
                }
                EventType::Modified => {
                    let same_gen = d.old.as_ref().is_some_and(|o| api::generation(o) == api::generation(&d.object));
                    if same_gen {
                        self.enqueue_after(cx, &key, SYNC_BATCH_PERIOD);
                    } else {
                        self.queue.insert(key.clone());
                    }
                    if is_finished(&d.object) {
                        self.cleanup_pod_finalizers(&d.object);
                    }
                    // A changed activeDeadlineSeconds needs a sync when it runs out.
                    if let (Some(start), Some(ads)) =
                        (get_str(&d.object, &["status", "startTime"]).and_then(parse_rfc3339), get_i64(&d.object, &["spec", "activeDeadlineSeconds"]))
                    {
                        let old_ads = d.old.as_ref().and_then(|o| get_i64(o, &["spec", "activeDeadlineSeconds"]));
                        if old_ads != Some(ads) {
                            let left = start.saturating_add(secs(ads)).saturating_sub(cx.now);
                            self.enqueue_after(cx, &key, left);
                        }
                    }
                    true
                }
            };
        }
        let r = self.pods.sync(&cx.api.store);
        if let Some(m) = r.relisted {
            cx.trace(Flow::Etcd, "watch", "Pod".into(), "relist", "", format!("410 Gone from the watch cache ({m}): relisted Pods"));
        }
        for d in r.deltas {
            let pkey = api::queue_key(&d.object);
            let owner = api::controller_of_kind(&d.object, "Job");
            let old_owner = d.old.as_ref().and_then(|o| api::controller_of_kind(o, "Job"));
            if let Some((_, uid)) = &old_owner {
                if owner.as_ref().map(|o| &o.1) != Some(uid) || d.kind == EventType::Deleted {
                    if let Some(set) = self.by_owner.get_mut(uid) {
                        set.remove(&pkey);
                    }
                }
            }
            if let Some((_, uid)) = &owner {
                if d.kind != EventType::Deleted {
                    self.by_owner.entry(uid.clone()).or_default().insert(pkey.clone());
                }
            }
            let ns = pkey.0.clone();
            let deleting = api::is_deleting(&d.object);
            let fin = has_tracking_finalizer(&d.object);
            // The old controller is synced when the controllerRef changed.
            if let (Some(old), true) = (&old_owner, old_owner != owner) {
                if let Some(job) = self.resolve(&ns, old) {
                    let jkey = api::queue_key(job);
                    if !fin {
                        if let Some(s) = self.finalizer_expectations.get_mut(&jkey) {
                            s.remove(api::uid(&d.object));
                        }
                    }
                    self.enqueue_after(cx, &jkey, SYNC_BATCH_PERIOD);
                }
            }
            let job = owner.as_ref().and_then(|o| self.resolve(&ns, o)).cloned();
            let Some(job) = job else {
                // An orphan, or a pod of a Job that is gone: nobody will remove its finalizer.
                if fin && d.kind != EventType::Deleted {
                    self.orphans.insert(pkey);
                }
                continue;
            };
            let jkey = api::queue_key(&job);
            let final_delete = d.kind == EventType::Deleted;
            if final_delete || deleting {
                if is_finished(&job) {
                    if fin && !final_delete {
                        self.orphans.insert(pkey);
                    }
                    continue;
                }
                if let Some(e) = self.expectations.get_mut(&jkey) {
                    e.dels -= 1;
                }
                if final_delete || !fin {
                    if let Some(s) = self.finalizer_expectations.get_mut(&jkey) {
                        s.remove(api::uid(&d.object));
                    }
                }
            } else {
                if d.kind == EventType::Added {
                    if let Some(e) = self.expectations.get_mut(&jkey) {
                        e.adds -= 1;
                    }
                }
                if !fin {
                    if let Some(s) = self.finalizer_expectations.get_mut(&jkey) {
                        s.remove(api::uid(&d.object));
                    }
                }
            }
            self.enqueue_after(cx, &jkey, SYNC_BATCH_PERIOD);
        }
    }

    /// `cleanupPodFinalizers`: a finished or deleted Job's pods lose their finalizer.
    fn cleanup_pod_finalizers(&mut self, job: &Value) {
        let Some(owned) = self.by_owner.get(api::uid(job)) else { return };
        for k in owned {
            if self.pods.get(&k.0, &k.1).is_some_and(|p| has_tracking_finalizer(p)) {
                self.orphans.insert(k.clone());
            }
        }
    }

    fn owned_pods(&self, job: &Value) -> Vec<Object> {
        let ns = api::namespace(job);
        self.by_owner
            .get(api::uid(job))
            .map(|set| set.iter().filter(|(n, _)| n == ns).filter_map(|(n, name)| self.pods.get(n, name).cloned()).collect())
            .unwrap_or_default()
    }

    /// `syncOrphanPod`: remove the finalizer unless a running Job owns the pod.
    #[inline(never)]
    fn sync_orphan(&mut self, cx: &mut Cx, key: &Key) {
        let Some(pod) = self.pods.get(&key.0, &key.1).cloned() else { return };
        if let Some(r) = api::controller_ref(&pod) {
            if get_str(r, &["kind"]) != Some("Job") || get_str(r, &["apiVersion"]) != Some("batch/v1") {
                return;
            }
            let owner = api::controller_of_kind(&pod, "Job").unwrap_or_default();
            if self.resolve(&key.0, &owner).is_some_and(|j| !is_finished(j)) {
                return;
            }
        }
        if has_tracking_finalizer(&pod) {
            let _ = self.remove_finalizer(cx, &pod);
        }
    }

    /// A JSON patch that drops the tracking finalizer, guarded by a test of its position
    /// (the effect of the strategic patch's `$deleteFromPrimitiveList/finalizers`).
    fn remove_finalizer(&mut self, cx: &mut Cx, pod: &Value) -> Result<(), crate::foundation::status::Status> {
        let Some(i) = get_array(pod, &["metadata", "finalizers"]).iter().position(|f| f.as_str() == Some(JOB_TRACKING_FINALIZER)) else { return Ok(()) };
        let path = format!("/metadata/finalizers/{i}");
        let patch = json!([{"op": "test", "path": path, "value": JOB_TRACKING_FINALIZER}, {"op": "remove", "path": path}]);
        let r = cx.api.handle(req_as(
            Request::patch(rid::POD, api::namespace(pod), api::name(pod), PatchType::Json, patch, self.creds()),
            "job-controller",
            &self.user,
        ));
        match r {
            Ok(_) => Ok(()),
            Err(s) if s.code == 404 => Ok(()),
            Err(s) => Err(s),
        }
    }

    fn delete_pod(&mut self, cx: &mut Cx, job: &Value, pod: &Value, why: &str) -> Result<(), crate::foundation::status::Status> {
        let (ns, name) = (api::namespace(pod), api::name(pod));
        let r = cx.api.handle(req_as(Request::delete(rid::POD, ns, name, self.creds()), "job-controller", &self.user));
        match r {
            Ok(_) => {
                cx.trace(
                    Flow::ReplicaSetController,
                    "delete-pod",
                    format!("Pod/{ns}/{name}"),
                    "ok",
                    "",
                    format!("Job/{ns}/{}: {why}: deleting {name}", api::name(job)),
                );
                cx.event(&self.source, job, None, "Normal", "SuccessfulDelete", &format!("Deleted pod: {name}"), None);
                Ok(())
            }
            Err(s) if s.code == 404 => Err(s),
            Err(s) => {
                cx.event(&self.source, job, None, "Warning", "FailedDelete", &format!("Error deleting: {}", s.message), None);
                Err(s)
            }
        }
    }

    /// `deleteJobPods`: drop the finalizer, then delete. Returns (ready deleted, deleted).
    fn delete_job_pods(&mut self, cx: &mut Cx, job: &Value, key: &Key, pods: &[Object], why: &str) -> (i64, i64) {
        let mut deleted = pods.len() as i64;
        let mut ready = 0;
        for p in pods {
            let failed = match self.remove_finalizer(cx, p) {
                Err(_) => true,
                Ok(()) => matches!(self.delete_pod(cx, job, p, why), Err(s) if s.code != 404),
            };
            if failed {
                deleted -= 1;
                if let Some(e) = self.expectations.get_mut(key) {
                    e.dels -= 1;
                }
            }
            if pod_is_ready(p) {
                ready += 1;
            }
        }
        (ready, deleted)
    }

    #[inline(never)]
    fn sync(&mut self, cx: &mut Cx, key: &Key) {
        let Some(job) = self.jobs.get(&key.0, &key.1).cloned() else {
            self.expectations.remove(key);
            self.finalizer_expectations.remove(key);
            self.backoff.remove(key);
            return;
        };
        if is_finished(&job) {
            self.backoff.remove(key);
            return;
        }
        let mode = get_str(&job, &["spec", "completionMode"]).unwrap_or("NonIndexed");
        if mode != "NonIndexed" && mode != "Indexed" {
            cx.event(&self.source, &job, None, "Warning", "UnknownCompletionMode", "Skipped Job sync because completion mode is unknown", None);
            return;
        }
        let indexed = is_indexed(&job);
        let now = cx.now;
        let mut st = JobStatus::of(&job);
        let satisfied = self.expectations.get(key).is_none_or(|e| e.adds <= 0 && e.dels <= 0);
        let pods = self.owned_pods(&job);
        let active_pods: Vec<Object> = pods.iter().filter(|p| pod_is_active(p)).cloned().collect();
        let mut c = SyncCtx {
            ready: active_pods.iter().filter(|p| pod_is_ready(p)).count() as i64,
            terminating: pods.iter().filter(|p| is_terminating(p)).count() as i64,
            expected_rm_finalizers: self.finalizer_expectations.get(key).cloned().unwrap_or_default(),
            uncounted_succeeded: st.uncounted_succeeded.iter().cloned().collect_tree(),
            uncounted_failed: st.uncounted_failed.iter().cloned().collect_tree(),
            pods,
            active_pods,
            finished: None,
            succeeded: 0,
            prev_succeeded_indexes: Intervals::default(),
            succeeded_indexes: Intervals::default(),
            failed_indexes: None,
            new_backoff: BackoffRecord::default(),
            delayed_per_index: BTreeMap::new(),
        };
        let mut active = c.active_pods.len() as i64;
        let n_completions = completions(&job);
        let valid = |p: &Object, uncounted: &BTreeSet<String>| {
            let uid = api::uid(p);
            has_tracking_finalizer(p)
                && !uncounted.contains(uid)
                && !c.expected_rm_finalizers.contains(uid)
                && (!indexed || completion_index(p).is_some_and(|i| i < n_completions.unwrap_or(0)))
        };
        let new_succeeded: Vec<&Object> = c.pods.iter().filter(|p| valid(p, &c.uncounted_succeeded) && phase(p) == "Succeeded").collect();
        let new_failed: Vec<&Object> = c.pods.iter().filter(|p| valid(p, &c.uncounted_failed) && is_pod_failed(p, &job)).collect();
        let policy = pod_failure_policy(&job);
        let counted_failed = new_failed.iter().filter(|p| match_pod_failure_policy(policy, p).1).count() as i64;
        c.succeeded = st.succeeded + new_succeeded.len() as i64 + c.uncounted_succeeded.len() as i64;
        let failed = st.failed + counted_failed + c.uncounted_failed.len() as i64;
        if st.start_time.is_none() && !suspended(&job) {
            st.start_time = Some(rfc3339(now));
        }
        c.new_backoff = new_backoff_record(self.backoff.get(key), &new_succeeded, &new_failed);

        let backoff_limit = get_i64(&job, &["spec", "backoffLimit"]).unwrap_or(6);
        c.finished = condition_true(&st.conditions, "SuccessCriteriaMet").cloned();
        if c.finished.is_none() {
            if let Some(ft) = condition_true(&st.conditions, "FailureTarget") {
                c.finished = Some(new_condition("Failed", "True", cond_field(ft, "reason"), cond_field(ft, "message"), now));
            } else if let Some(msg) = c.pods.iter().filter(|p| is_pod_failed(p, &job)).find_map(|p| match_pod_failure_policy(policy, p).0) {
                c.finished = Some(new_condition("FailureTarget", "True", "PodFailurePolicy", &msg, now));
            }
        }
        if c.finished.is_none() {
            let start = st.start_time.as_deref().and_then(parse_rfc3339);
            let ads = get_i64(&job, &["spec", "activeDeadlineSeconds"]);
            if failed > backoff_limit || past_backoff_limit_on_failure(&job, &c.pods, backoff_limit) {
                c.finished = Some(new_condition("FailureTarget", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit", now));
            } else if let (Some(ads), Some(start), false) = (ads, start, suspended(&job)) {
                let deadline = start.saturating_add(secs(ads));
                if now >= deadline {
                    c.finished = Some(new_condition("FailureTarget", "True", "DeadlineExceeded", "Job was active longer than specified deadline", now));
                } else {
                    self.enqueue_after(cx, key, deadline - now);
                }
            }
        }
        if indexed {
            let n = n_completions.unwrap_or(0);
            c.prev_succeeded_indexes = Intervals::parse(&st.completed_indexes, n);
            let mut fresh: Vec<i64> = c
                .pods
                .iter()
                .filter(|p| phase(p) == "Succeeded" && has_tracking_finalizer(p))
                .filter_map(|p| completion_index(p))
                .filter(|&i| i < n)
                .collect_tree::<BTreeSet<i64>>()
                .into_iter()
                .collect();
            fresh.sort_unstable();
            c.succeeded_indexes = c.prev_succeeded_indexes.with_indexes(&fresh);
            c.succeeded = c.succeeded_indexes.total();
            if let Some(per_index) = backoff_limit_per_index(&job) {
                let prev = st.failed_indexes.as_deref().map(|s| Intervals::parse(s, n)).unwrap_or_default();
                let newly: Vec<i64> = c
                    .pods
                    .iter()
                    .filter(|p| has_tracking_finalizer(p))
                    .filter_map(|p| completion_index(p).filter(|&i| i < n).map(|i| (i, p)))
                    .filter(|(_, p)| is_index_failed(&job, p, per_index))
                    .map(|(i, _)| i)
                    .collect_tree::<BTreeSet<i64>>()
                    .into_iter()
                    .collect();
                let failed_ix = prev.with_indexes(&newly);
                if c.finished.is_none() {
                    let max_failed = get_i64(&job, &["spec", "maxFailedIndexes"]);
                    if max_failed.is_some_and(|m| failed_ix.total() > m) {
                        c.finished = Some(new_condition(
                            "FailureTarget",
                            "True",
                            "MaxFailedIndexesExceeded",
                            "Job has exceeded the specified maximal number of failed indexes",
                            now,
                        ));
                    } else if failed_ix.total() > 0 && failed_ix.total() + c.succeeded_indexes.total() >= n {
                        c.finished = Some(new_condition("FailureTarget", "True", "FailedIndexes", "Job has failed indexes", now));
                    }
                }
                c.failed_indexes = Some(failed_ix);
                c.delayed_per_index = pods_with_delayed_deletion(&job, &c);
            }
            if c.finished.is_none() {
                if let Some(msg) = match_success_policy(get(&job, &["spec", "successPolicy"]).filter(|v| !v.is_null()), n, &c.succeeded_indexes) {
                    c.finished = Some(new_condition("SuccessCriteriaMet", "True", "SuccessPolicy", &msg, now));
                }
            }
        }

        let mut suspend_changed = false;
        if c.finished.is_some() {
            // `deleteActivePods`: deleted with their finalizers, which tracking removes.
            let mut deleted = 0;
            let mut deleted_ready = 0;
            let why = format!("the Job is finishing ({})", c.finished.as_ref().map(|f| cond_field(f, "reason").to_string()).unwrap_or_default());
            for p in c.active_pods.clone() {
                match self.delete_pod(cx, &job, &p, &why) {
                    Ok(()) => deleted += 1,
                    Err(s) if s.code == 404 => deleted += 1,
                    Err(_) => {}
                }
                if pod_is_ready(&p) {
                    deleted_ready += 1;
                }
            }
            if deleted != active || !satisfied {
                c.finished = None;
            }
            active -= deleted;
            c.terminating += deleted;
            c.ready -= deleted_ready;
        } else {
            let mut manage_called = false;
            if satisfied && !api::is_deleting(&job) {
                active = self.manage_job(cx, &job, key, &mut c);
                manage_called = true;
            }
            let complete = match n_completions {
                None => c.succeeded > 0 && active == 0,
                Some(n) => c.succeeded >= n && active == 0,
            };
            if complete {
                c.finished = Some(new_condition("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods", now));
            } else if manage_called {
                if suspended(&job) {
                    if ensure_condition(&mut st.conditions, "Suspended", "True", "JobSuspended", "Job suspended", now) {
                        suspend_changed = true;
                        cx.event(&self.source, &job, None, "Normal", "Suspended", "Job suspended", None);
                    }
                } else if ensure_condition(&mut st.conditions, "Suspended", "False", "JobResumed", "Job resumed", now) {
                    suspend_changed = true;
                    cx.event(&self.source, &job, None, "Normal", "Resumed", "Job resumed", None);
                    // activeDeadlineSeconds counts continuous activity: resuming restarts it.
                    st.start_time = Some(rfc3339(now));
                }
            }
        }
        let needs_update = suspend_changed || active != st.active || Some(c.ready) != st.ready || Some(c.terminating) != st.terminating;
        st.active = active;
        st.ready = Some(c.ready);
        st.terminating = Some(c.terminating);
        self.track_status(cx, &job, key, st, c, needs_update);
    }

    /// `manageJob`: delete surplus pods or create missing ones, respecting the back-off.
    /// Returns the active count after it.
    fn manage_job(&mut self, cx: &mut Cx, job: &Object, key: &Key, c: &mut SyncCtx) -> i64 {
        let mut active = c.active_pods.len() as i64;
        let parallelism = get_i64(job, &["spec", "parallelism"]).unwrap_or(1);
        let n_completions = completions(job);
        let obj = format!("Job/{}/{}", key.0, key.1);
        if suspended(job) {
            let to_delete = active_pods_for_removal(job, &c.active_pods, active as usize);
            self.expectations.insert(key.clone(), Expectations { adds: 0, dels: to_delete.len() as i64 });
            let (ready, removed) = self.delete_job_pods(cx, job, key, &to_delete, "the Job is suspended");
            c.terminating += removed;
            c.ready -= ready;
            return active - removed;
        }
        let want = match n_completions {
            None if c.succeeded > 0 => active,
            None => parallelism,
            Some(n) => (n - c.succeeded).min(parallelism).max(0),
        };
        let rm_at_least = (active - want).max(0);
        let mut to_delete = active_pods_for_removal(job, &c.active_pods, rm_at_least as usize);
        to_delete.truncate(MAX_POD_CREATE_DELETE_PER_SYNC as usize);
        if !to_delete.is_empty() {
            self.expectations.insert(key.clone(), Expectations { adds: 0, dels: to_delete.len() as i64 });
            let why = format!("{active} active, {want} wanted");
            let (ready, removed) = self.delete_job_pods(cx, job, key, &to_delete, &why);
            c.terminating += removed;
            c.ready -= ready;
            return active - removed;
        }
        let terminating = if only_replace_failed(job) { c.terminating } else { 0 };
        let mut diff = want - terminating - active;
        if diff <= 0 {
            return active;
        }
        let per_index = backoff_limit_per_index(job).is_some();
        if !per_index {
            let remaining = remaining_backoff(cx.now, c.new_backoff.failures_after_last_success, c.new_backoff.last_failure);
            if remaining > 0 {
                cx.trace(
                    Flow::ReplicaSetController,
                    "backoff",
                    obj.clone(),
                    "ok",
                    "",
                    format!(
                        "{obj} wants {diff} more pods but {} pods failed since the last success: waiting {} s (back-off {} s)",
                        c.new_backoff.failures_after_last_success,
                        remaining.div_ceil(1000),
                        backoff_delay(c.new_backoff.failures_after_last_success) / 1000
                    ),
                );
                self.enqueue_after(cx, key, remaining.max(SYNC_BATCH_PERIOD));
                // As upstream's `manageJob` does: while the back-off runs, the sync reports
                // no active pods (status.active reads 0 even if some still run).
                return 0;
            }
        }
        diff = diff.min(MAX_POD_CREATE_DELETE_PER_SYNC);
        let mut indexes: Vec<i64> = Vec::new();
        if is_indexed(job) {
            let n = n_completions.unwrap_or(0);
            let active_ix: Vec<i64> = c.active_pods.iter().filter_map(|p| completion_index(p)).collect_tree::<BTreeSet<_>>().into_iter().collect();
            let mut taken = c.succeeded_indexes.with_indexes(&active_ix);
            if only_replace_failed(job) {
                let term: Vec<i64> =
                    c.pods.iter().filter(|p| is_terminating(p)).filter_map(|p| completion_index(p)).collect_tree::<BTreeSet<_>>().into_iter().collect();
                taken = taken.with_indexes(&term);
            }
            if let Some(f) = &c.failed_indexes {
                taken = taken.merge(f);
            }
            indexes = first_pending_indexes(&taken, diff as usize, n);
            if per_index {
                let mut now_ready = Vec::new();
                let mut min_wait: Option<Millis> = None;
                for &ix in &indexes {
                    let wait = c.delayed_per_index.get(&ix).map_or(0, |p| {
                        let failures = annotation_count(p, INDEX_FAILURE_COUNT) + annotation_count(p, INDEX_IGNORED_FAILURE_COUNT) + 1;
                        remaining_backoff(cx.now, failures, Some(finished_time(p)))
                    });
                    if wait == 0 {
                        now_ready.push(ix);
                    } else {
                        min_wait = Some(min_wait.map_or(wait, |m| m.min(wait)));
                    }
                }
                if now_ready.is_empty() {
                    if let Some(w) = min_wait {
                        self.enqueue_after(cx, key, w.max(SYNC_BATCH_PERIOD));
                        return 0;
                    }
                    return active;
                }
                indexes = now_ready;
            }
            diff = indexes.len() as i64;
        }
        if diff <= 0 {
            return active;
        }
        self.expectations.insert(key.clone(), Expectations { adds: diff, dels: 0 });
        active += diff;
        let mut template = get(job, &["spec", "template"]).cloned().unwrap_or(json!({}));
        if is_indexed(job) {
            add_completion_index_env(&mut template);
        }
        let mut finalizers: Vec<Value> = get_array(&template, &["metadata", "finalizers"]).to_vec();
        if !finalizers.iter().any(|f| f.as_str() == Some(JOB_TRACKING_FINALIZER)) {
            finalizers.push(json!(JOB_TRACKING_FINALIZER));
        }
        let mut base = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": format!("{}-", key.1), "namespace": key.0,
            "ownerReferences": [api::owner_reference(job)], "finalizers": finalizers}, "spec": template.get("spec").cloned().unwrap_or(json!({}))});
        for f in ["labels", "annotations"] {
            if let Some(v) = get(&template, &["metadata", f]) {
                base["metadata"][f] = v.clone();
            }
        }
        let counts = format!(
            "{obj} has {} active, {} succeeded of {}",
            c.active_pods.len(),
            c.succeeded,
            n_completions.map_or_else(|| format!("parallelism {parallelism} (no completions set)"), |n| format!("{n} completions"))
        );
        let mut remaining = diff;
        let mut batch = 1;
        let mut queue_ix = indexes.into_iter();
        while remaining > 0 {
            let size = batch.min(remaining);
            let mut errors = false;
            for _ in 0..size {
                let mut pod = base.clone();
                let index = queue_ix.next();
                if let Some(ix) = index {
                    pod["metadata"]["annotations"][COMPLETION_INDEX] = json!(ix.to_string());
                    pod["metadata"]["labels"][COMPLETION_INDEX] = json!(ix.to_string());
                    pod["spec"]["hostname"] = json!(format!("{}-{ix}", key.1));
                    pod["metadata"]["generateName"] = json!(generate_name_with_index(&key.1, ix));
                    if backoff_limit_per_index(job).is_some() {
                        let (count, ignored) = match c.delayed_per_index.get(&ix) {
                            Some(prev) => {
                                let (mut count, mut ignored) =
                                    (annotation_count(prev, INDEX_FAILURE_COUNT), annotation_count(prev, INDEX_IGNORED_FAILURE_COUNT));
                                if match_pod_failure_policy(pod_failure_policy(job), prev).1 {
                                    count += 1;
                                } else {
                                    ignored += 1;
                                }
                                (count, ignored)
                            }
                            None => (0, 0),
                        };
                        pod["metadata"]["annotations"][INDEX_FAILURE_COUNT] = json!(count.to_string());
                        if ignored > 0 {
                            pod["metadata"]["annotations"][INDEX_IGNORED_FAILURE_COUNT] = json!(ignored.to_string());
                        }
                    }
                }
                let r = cx.api.handle(req_as(Request::create(rid::POD, &key.0, pod, self.creds()), "job-controller", &self.user));
                match r {
                    Ok(p) => {
                        let pname = api::name(&p).to_string();
                        if cx.tracing() {
                            let what = index.map_or(String::new(), |ix| format!(" for index {ix}"));
                            cx.trace(
                                Flow::ReplicaSetController,
                                "create-pod",
                                format!("Pod/{}/{pname}", key.0),
                                "ok",
                                api::resource_version(&p),
                                format!("{counts}: created {pname}{what} (nodeName empty)"),
                            );
                        }
                        cx.event(&self.source, job, None, "Normal", "SuccessfulCreate", &format!("Created pod: {pname}"), None);
                    }
                    Err(s) => {
                        if let Some(e) = self.expectations.get_mut(key) {
                            e.adds -= 1;
                        }
                        active -= 1;
                        if !s.message.contains("because it is being terminated") {
                            cx.event(&self.source, job, None, "Warning", "FailedCreate", &format!("Error creating: {}", s.message), None);
                            errors = true;
                        }
                        cx.trace(
                            Flow::ReplicaSetController,
                            "create-pod",
                            format!("Pod/{}/{}-", key.0, key.1),
                            "error",
                            "",
                            format!("Error creating: {}", s.message),
                        );
                    }
                }
            }
            remaining -= size;
            if errors && remaining > 0 {
                // Slow start: the batches not tried are not expected; a retry comes later.
                if let Some(e) = self.expectations.get_mut(key) {
                    e.adds -= remaining;
                }
                active -= remaining;
                cx.every(5000, format!("{}/{}", key.0, key.1));
                break;
            }
            batch *= 2;
        }
        active
    }

    /// `trackJobStatusAndRemoveFinalizers` with `flushUncountedAndRemoveFinalizers` and
    /// `enactJobFinished`.
    fn track_status(&mut self, cx: &mut Cx, job: &Object, key: &Key, mut st: JobStatus, mut c: SyncCtx, mut needs_flush: bool) {
        let indexed = is_indexed(job);
        let n = completions(job).unwrap_or(0);
        let now = cx.now;
        if indexed {
            c.pods.sort_stable_by_key(|p| completion_index(p).unwrap_or(-1));
        }
        let mut with_finalizer: BTreeSet<String> = c
            .pods
            .iter()
            .filter(|p| has_tracking_finalizer(p) && !c.expected_rm_finalizers.contains(api::uid(p)))
            .map(|p| api::uid(p).to_string())
            .collect_tree();
        let old = st.clone();
        if st.clean_uncounted(&with_finalizer) {
            needs_flush = true;
        }
        let policy = pod_failure_policy(job);
        let finished_failing = c.finished.as_ref().is_some_and(|f| cond_field(f, "type") != "SuccessCriteriaMet");
        let mut to_remove: Vec<Object> = Vec::new();
        let mut new_indexes: Vec<i64> = Vec::new();
        let mut reached_max = false;
        for p in &c.pods {
            let uid = api::uid(p).to_string();
            if !has_tracking_finalizer(p) || c.expected_rm_finalizers.contains(&uid) {
                continue;
            }
            let failed = is_pod_failed(p, job);
            // `canRemoveFinalizer`
            let removable = api::is_deleting(job)
                || c.finished.is_some()
                || phase(p) == "Succeeded"
                || (failed && completion_index(p).and_then(|ix| c.delayed_per_index.get(&ix)).is_none_or(|d| api::uid(d) != uid));
            if !removable {
                continue;
            }
            to_remove.push(p.clone());
            if phase(p) == "Succeeded" && !c.uncounted_failed.contains(&uid) {
                if indexed {
                    if let Some(ix) = completion_index(p).filter(|&ix| ix < n && !c.prev_succeeded_indexes.has(ix)) {
                        new_indexes.push(ix);
                        needs_flush = true;
                    }
                } else if !c.uncounted_succeeded.contains(&uid) {
                    needs_flush = true;
                    st.uncounted_succeeded.push(uid.clone());
                }
            } else if failed || finished_failing {
                let ix_ok = !indexed || completion_index(p).is_some_and(|ix| ix < n);
                if !c.uncounted_failed.contains(&uid) && ix_ok && match_pod_failure_policy(policy, p).1 {
                    needs_flush = true;
                    st.uncounted_failed.push(uid.clone());
                }
            }
            if new_indexes.len() + st.uncounted_succeeded.len() + st.uncounted_failed.len() >= MAX_UNCOUNTED_PODS {
                reached_max = true;
                break;
            }
        }
        if indexed {
            new_indexes.sort_unstable();
            new_indexes.dedup();
            c.succeeded_indexes = c.succeeded_indexes.with_indexes(&new_indexes);
            let s = c.succeeded_indexes.to_string();
            if s != st.completed_indexes {
                needs_flush = true;
            }
            st.succeeded = c.succeeded_indexes.total();
            st.completed_indexes = s;
            let f = c.failed_indexes.as_ref().map(|f| f.to_string());
            if f != st.failed_indexes {
                st.failed_indexes = f;
                needs_flush = true;
            }
        }
        if let Some(f) = c.finished.clone() {
            if cond_field(&f, "type") == "FailureTarget" {
                st.conditions.push(f.clone());
                needs_flush = true;
                c.finished = Some(new_condition("Failed", "True", cond_field(&f, "reason"), cond_field(&f, "message"), now));
            } else if cond_field(&f, "type") == "SuccessCriteriaMet" {
                if condition_true(&st.conditions, "SuccessCriteriaMet").is_none() {
                    st.conditions.push(f.clone());
                    needs_flush = true;
                }
                c.finished = Some(new_condition("Complete", "True", cond_field(&f, "reason"), cond_field(&f, "message"), now));
            }
        }
        // Flush the uncounted pods (and interim condition) before removing finalizers.
        if needs_flush {
            self.update_status(cx, job, &st);
            self.backoff.insert(key.clone(), c.new_backoff.clone());
            needs_flush = false;
        }
        let mut rm_failed = false;
        if !to_remove.is_empty() {
            let uids: BTreeSet<String> = to_remove.iter().map(|p| api::uid(p).to_string()).collect_tree();
            self.finalizer_expectations.entry(key.clone()).or_default().extend(uids);
            for p in &to_remove {
                match self.remove_finalizer(cx, p) {
                    Ok(()) => {
                        with_finalizer.remove(api::uid(p));
                    }
                    Err(_) => {
                        rm_failed = true;
                        if let Some(s) = self.finalizer_expectations.get_mut(key) {
                            s.remove(api::uid(p));
                        }
                    }
                }
            }
        }
        if st.clean_uncounted(&with_finalizer) {
            needs_flush = true;
        }
        if rm_failed && needs_flush {
            self.update_status(cx, job, &st);
            needs_flush = false;
            cx.every(5000, format!("{}/{}", key.0, key.1));
        }
        let mut finished_now = false;
        if let (false, Some(f)) = (reached_max, &c.finished) {
            if st.uncounted_succeeded.is_empty() && st.uncounted_failed.is_empty() && c.terminating <= 0 {
                let ty = cond_field(f, "type").to_string();
                ensure_condition(&mut st.conditions, &ty, "True", cond_field(f, "reason"), cond_field(f, "message"), now);
                if ty == "Complete" {
                    st.completion_time = Some(rfc3339(now));
                }
                finished_now = true;
                needs_flush = true;
            }
        }
        if needs_flush || (old != st && finished_now) {
            self.update_status(cx, job, &st);
        }
        if finished_now {
            let f = c.finished.clone().unwrap_or_default();
            let obj = format!("Job/{}/{}", key.0, key.1);
            if cond_field(&f, "type") == "Complete" {
                if completions(job).is_some_and(|n| st.succeeded > n) {
                    cx.event(
                        &self.source,
                        job,
                        None,
                        "Warning",
                        "TooManySucceededPods",
                        "Too many succeeded pods running after completion count reached",
                        None,
                    );
                }
                cx.event(&self.source, job, None, "Normal", "Completed", "Job completed", None);
                let what = match completions(job) {
                    Some(n) if cond_field(&f, "reason") == "CompletionsReached" => format!("all {n} completions succeeded"),
                    None => "a pod succeeded and none is left running".to_string(),
                    _ => format!("{} ({})", cond_field(&f, "message"), cond_field(&f, "reason")),
                };
                cx.trace(Flow::ReplicaSetController, "job-finished", obj.clone(), "ok", "", format!("{obj}: {what}: Complete"));
            } else {
                cx.event(&self.source, job, None, "Warning", cond_field(&f, "reason"), cond_field(&f, "message"), None);
                cx.trace(
                    Flow::ReplicaSetController,
                    "job-finished",
                    obj.clone(),
                    "error",
                    "",
                    format!("{obj}: {} ({} failed): Failed, reason {}", cond_field(&f, "message"), st.failed, cond_field(&f, "reason")),
                );
            }
        }
    }

    fn update_status(&mut self, cx: &mut Cx, job: &Object, st: &JobStatus) {
        let mut body = (**job).clone();
        body["status"] = st.to_json();
        if let Some(m) = body.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
        let _ = cx.api.handle(req_as(
            Request::update(rid::JOB, api::namespace(job), api::name(job), body, self.creds()).with_sub("status"),
            "job-controller",
            &self.user,
        ));
    }
}

/// `pastBackoffLimitOnFailure`: with `restartPolicy: OnFailure` the restarts of running
/// pods count against the limit.
fn past_backoff_limit_on_failure(job: &Value, pods: &[Object], limit: i64) -> bool {
    if get_str(job, &["spec", "template", "spec", "restartPolicy"]) != Some("OnFailure") {
        return false;
    }
    let restarts: i64 = pods
        .iter()
        .filter(|p| matches!(phase(p), "Running" | "Pending"))
        .flat_map(|p| get_array(p, &["status", "initContainerStatuses"]).iter().chain(get_array(p, &["status", "containerStatuses"])))
        .map(|c| get_i64(c, &["restartCount"]).unwrap_or(0))
        .sum();
    if limit == 0 {
        restarts > 0
    } else {
        restarts >= limit
    }
}

/// `isIndexFailed`: the pod failed (and counts), and its index has no failures left.
fn is_index_failed(job: &Value, p: &Value, per_index: i64) -> bool {
    if !is_pod_failed(p, job) {
        return false;
    }
    let counted = match pod_failure_policy(job) {
        Some(policy) => {
            let (_, count, action) = match_pod_failure_policy(Some(policy), p);
            if action == Some("FailIndex") {
                return true;
            }
            count
        }
        None => true,
    };
    counted && annotation_count(p, INDEX_FAILURE_COUNT) >= per_index
}

/// `getPodsWithDelayedDeletionPerIndex`: per index, the last failed pod, kept (with its
/// finalizer) until its replacement exists so that the failure count carries over.
fn pods_with_delayed_deletion(job: &Value, c: &SyncCtx) -> BTreeMap<i64, Object> {
    let n = completions(job).unwrap_or(0);
    let active: BTreeSet<i64> = c.active_pods.iter().filter_map(|p| completion_index(p)).collect_tree();
    let mut out: BTreeMap<i64, Object> = BTreeMap::new();
    for p in &c.pods {
        if !has_tracking_finalizer(p) || c.expected_rm_finalizers.contains(api::uid(p)) || !is_pod_failed(p, job) {
            continue;
        }
        let Some(ix) = completion_index(p).filter(|&i| i < n) else { continue };
        if c.succeeded_indexes.has(ix) || c.failed_indexes.as_ref().is_some_and(|f| f.has(ix)) || active.contains(&ix) {
            continue;
        }
        let abs = |q: &Value| annotation_count(q, INDEX_FAILURE_COUNT) + annotation_count(q, INDEX_IGNORED_FAILURE_COUNT);
        match out.get(&ix) {
            Some(last) if !(abs(last) <= abs(p) && finished_time(p) >= finished_time(last)) => {}
            _ => {
                out.insert(ix, p.clone());
            }
        }
    }
    out
}

/// `addCompletionIndexEnvVariables`: `JOB_COMPLETION_INDEX` from the pod's index label.
fn add_completion_index_env(template: &mut Value) {
    for list in ["initContainers", "containers"] {
        let Some(cs) = template.get_mut("spec").and_then(|s| s.get_mut(list)).and_then(Value::as_array_mut) else { continue };
        for c in cs {
            if get_array(c, &["env"]).iter().any(|e| get_str(e, &["name"]) == Some(COMPLETION_INDEX_ENV)) {
                continue;
            }
            let var = json!({"name": COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {"fieldPath": format!("metadata.labels['{COMPLETION_INDEX}']")}}});
            let mut env: Vec<Value> = get_array(c, &["env"]).to_vec();
            env.push(var);
            c["env"] = Value::Array(env);
        }
    }
}

/// `podGenerateNameWithIndex`: `<job>-<index>-`, the job name cut to fit.
fn generate_name_with_index(job: &str, index: i64) -> String {
    let suffix = format!("-{index}-");
    let prefix = format!("{job}{suffix}");
    if prefix.len() > MAX_GENERATED_NAME_LENGTH {
        let keep = MAX_GENERATED_NAME_LENGTH - suffix.len();
        format!("{}{suffix}", &job[..keep.min(job.len())])
    } else {
        prefix
    }
}

impl Controller for JobController {
    fn name(&self) -> &'static str {
        "job-controller"
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::JOB, rid::POD]
    }
    fn run(&mut self, cx: &mut Cx) {
        self.sync_informers(cx);
        while let Some(k) = self.queue.pop_first() {
            self.sync(cx, &k);
        }
        while let Some(k) = self.orphans.pop_first() {
            self.sync_orphan(cx, &k);
        }
    }
    fn timer(&mut self, cx: &mut Cx, key: &str) {
        if let Some((ns, name)) = key.split_once('/') {
            let k = (ns.to_string(), name.to_string());
            if self.pending.get(&k).is_some_and(|&t| t <= cx.now) {
                self.pending.remove(&k);
            }
            self.queue.insert(k);
        }
        self.run(cx);
    }
    fn busy(&self, _now: Millis) -> bool {
        !self.queue.is_empty() || !self.orphans.is_empty()
    }
    fn restart(&mut self) {
        *self = Self::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_jobs_the_loop_keeps_no_pods() {
        use crate::apiserver::rbac::UserInfo;
        let admin = || Credentials::User(UserInfo::admin());
        let mut api = crate::apiserver::ApiServer::new(1, true);
        for o in crate::apiserver::rbac::bootstrap_policy() {
            api.bootstrap_object(o);
        }
        api.bootstrap_object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}));
        api.bootstrap_object(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": "default"}}));
        for i in 0..3 {
            let p = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("other-{i}"), "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
            api.handle(Request::create(rid::POD, "default", p, admin())).unwrap();
        }
        let mut c = JobController::new();
        crate::loops::run_once(&mut c, &mut api, 1000);
        crate::loops::run_once(&mut c, &mut api, 1005);
        assert!(c.pods.is_empty() && c.pods.state == WatchState::Empty, "no Job: no copy of the pods");
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi", "namespace": "default"},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}});
        api.handle(Request::create(rid::JOB, "default", job, admin())).unwrap();
        crate::loops::run_once(&mut c, &mut api, 2000);
        assert_eq!(c.pods.len(), 3, "the first Job lists the pods");
        crate::loops::run_once(&mut c, &mut api, 2005);
        assert_eq!(c.pods.len(), 4, "and sees the one it made");
    }

    #[test]
    fn completed_indexes_print_as_ranges_with_pairs_written_out() {
        let iv = Intervals::default().with_indexes(&[0, 1, 2, 4, 6, 7]);
        assert_eq!(iv.to_string(), "0-2,4,6,7");
        assert_eq!(iv.total(), 6);
        assert!(iv.has(4) && !iv.has(5) && iv.has(7));
        assert_eq!(Intervals::parse("0-2,4,6,7", 10), iv);
        // Out-of-range indexes are cut off at completions; corrupt parts are skipped.
        assert_eq!(Intervals::parse("1-3,x,5-9", 7).to_string(), "1-3,5,6");
        assert_eq!(Intervals::parse("", 3), Intervals::default());
        let merged = Intervals::parse("0-1,5", 10).merge(&Intervals::parse("2,7-8", 10));
        assert_eq!(merged.to_string(), "0-2,5,7,8");
    }

    #[test]
    fn pending_indexes_skip_those_taken() {
        let taken = Intervals::parse("0-1,4", 10);
        assert_eq!(first_pending_indexes(&taken, 3, 10), vec![2, 3, 5]);
        assert_eq!(first_pending_indexes(&taken, 10, 6), vec![2, 3, 5]);
        assert_eq!(first_pending_indexes(&Intervals::default(), 2, 10), vec![0, 1]);
    }

    #[test]
    fn the_pod_failure_back_off_doubles_from_ten_seconds_to_its_cap() {
        assert_eq!(backoff_delay(1), 10_000);
        assert_eq!(backoff_delay(2), 20_000);
        assert_eq!(backoff_delay(3), 40_000);
        assert_eq!(backoff_delay(6), 320_000);
        assert_eq!(backoff_delay(7), MAX_POD_FAILURE_BACKOFF);
        assert_eq!(backoff_delay(30), MAX_POD_FAILURE_BACKOFF);
        assert_eq!(remaining_backoff(15_000, 2, Some(10_000)), 15_000);
        assert_eq!(remaining_backoff(50_000, 2, Some(10_000)), 0);
        assert_eq!(remaining_backoff(50_000, 0, None), 0);
    }

    fn failed_pod(container: &str, code: i64, conditions: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns"}, "status": {"phase": "Failed", "conditions": conditions,
            "containerStatuses": [{"name": container, "state": {"terminated": {"exitCode": code, "finishedAt": "2026-01-01T00:00:10Z"}}}]}})
    }

    #[test]
    fn the_pod_failure_policy_matches_rules_in_order() {
        let policy = json!({"rules": [
            {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}},
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
            {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [1]}},
        ]});
        let (msg, count, action) = match_pod_failure_policy(Some(&policy), &failed_pod("main", 42, json!([])));
        assert_eq!(msg.as_deref(), Some("Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 0"));
        assert!(count);
        assert_eq!(action, Some("FailJob"));
        let disrupted = failed_pod("main", 1, json!([{"type": "DisruptionTarget", "status": "True"}]));
        assert_eq!(match_pod_failure_policy(Some(&policy), &disrupted), (None, false, Some("Ignore")));
        assert_eq!(match_pod_failure_policy(Some(&policy), &failed_pod("other", 42, json!([]))), (None, true, Some("Count")));
        assert_eq!(match_pod_failure_policy(Some(&policy), &failed_pod("main", 1, json!([]))), (None, true, None));
        assert_eq!(match_pod_failure_policy(None, &failed_pod("main", 42, json!([]))), (None, true, None));
    }

    #[test]
    fn a_success_policy_rule_needs_its_indexes_or_its_count() {
        let policy = json!({"rules": [{"succeededIndexes": "0,2-3", "succeededCount": 1}]});
        assert_eq!(match_success_policy(Some(&policy), 10, &Intervals::parse("2", 10)).as_deref(), Some("Matched rules at index 0"));
        assert_eq!(match_success_policy(Some(&policy), 10, &Intervals::parse("1,4-9", 10)), None);
        let all = json!({"rules": [{"succeededCount": 5}, {"succeededIndexes": "0-1"}]});
        assert_eq!(match_success_policy(Some(&all), 10, &Intervals::parse("0-1", 10)).as_deref(), Some("Matched rules at index 1"));
        assert_eq!(match_success_policy(Some(&all), 10, &Intervals::parse("3-7", 10)).as_deref(), Some("Matched rules at index 0"));
    }

    #[test]
    fn generate_names_keep_the_index() {
        assert_eq!(generate_name_with_index("pi", 3), "pi-3-");
        let long = "a".repeat(60);
        let g = generate_name_with_index(&long, 12);
        assert_eq!(g.len(), MAX_GENERATED_NAME_LENGTH);
        assert!(g.ends_with("-12-"));
    }

    #[test]
    fn the_status_omits_zero_counters_as_go_does() {
        let st = JobStatus { ready: Some(0), terminating: Some(0), succeeded: 1, ..Default::default() };
        let v = st.to_json();
        assert_eq!(v, json!({"ready": 0, "terminating": 0, "succeeded": 1, "uncountedTerminatedPods": {}}));
        assert_eq!(JobStatus::of(&json!({"status": v})), st);
    }
}
