//! The TTL-after-finished controller
//! (`pkg/controller/ttlafterfinished/ttlafterfinished_controller.go`).
//!
//! A Job with `ttlSecondsAfterFinished` is deleted that many seconds after its Complete
//! or Failed condition's `lastTransitionTime`, with foreground propagation so that its
//! pods go first. Before deleting, the controller re-reads the Job from the API server, as
//! the TTL may have changed since the cache saw it.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::store::EventType;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, Request, Verb};
use crate::foundation::api::{self, get_array, get_i64, get_str, rid, ResourceId};
use crate::foundation::sim::{parse_rfc3339, Millis};
use crate::foundation::value::Value;
use crate::loops::informer::Informer;
use crate::loops::{req_as, Controller, Cx};
use std::collections::BTreeSet;

/// `timeLeft`: ms until the Job expires (negative once past), or `None` when it needs no
/// clean-up (no TTL, not finished, being deleted, no finish time).
pub fn time_left(job: &Value, now: Millis) -> Option<i64> {
    if api::is_deleting(job) {
        return None;
    }
    let ttl = get_i64(job, &["spec", "ttlSecondsAfterFinished"])?;
    let finished_at = get_array(job, &["status", "conditions"])
        .iter()
        .find(|c| matches!(get_str(c, &["type"]), Some("Complete" | "Failed")) && get_str(c, &["status"]) == Some("True"))
        .and_then(|c| get_str(c, &["lastTransitionTime"]))
        .and_then(parse_rfc3339)?;
    Some((finished_at as i64).saturating_add(ttl.saturating_mul(1000)).saturating_sub(now as i64))
}

type Key = (String, String);

#[derive(Clone)]
pub struct TtlAfterFinishedController {
    user: UserInfo,
    jobs: Informer,
    queue: BTreeSet<Key>,
}

impl Default for TtlAfterFinishedController {
    fn default() -> Self {
        Self::new()
    }
}

impl TtlAfterFinishedController {
    pub fn new() -> Self {
        TtlAfterFinishedController { user: UserInfo::controller("ttl-after-finished-controller"), jobs: Informer::new(rid::JOB), queue: BTreeSet::new() }
    }

    fn creds(&self) -> Credentials {
        Credentials::User(self.user.clone())
    }

    /// `processTTL`: whether the TTL has run out; if it will later, come back then.
    fn expired(&self, cx: &mut Cx, job: &Value) -> bool {
        match time_left(job, cx.now) {
            None => false,
            Some(left) if left <= 0 => true,
            Some(left) => {
                // A TTL further off than a year is looked at again then.
                cx.after((left as Millis).min(365 * 24 * 3600 * 1000), format!("{}/{}", api::namespace(job), api::name(job)));
                false
            }
        }
    }

    fn process(&mut self, cx: &mut Cx, key: &Key) {
        let Some(job) = self.jobs.get(&key.0, &key.1).cloned() else { return };
        if !self.expired(cx, &job) {
            return;
        }
        let get = Request::new(Verb::Get, rid::JOB, &key.0, &key.1, self.creds());
        let Ok(fresh) = cx.api.handle(req_as(get, "ttl-after-finished-controller", &self.user)) else { return };
        if api::uid(&fresh) != api::uid(&job) || !self.expired(cx, &fresh) {
            return;
        }
        let mut del = Request::delete(rid::JOB, &key.0, &key.1, self.creds());
        del.propagation = Some("Foreground".into());
        let ttl = get_i64(&fresh, &["spec", "ttlSecondsAfterFinished"]).unwrap_or(0);
        if cx.api.handle(req_as(del, "ttl-after-finished-controller", &self.user)).is_ok() {
            cx.trace(
                Flow::DeploymentController,
                "delete-job",
                format!("Job/{}/{}", key.0, key.1),
                "ok",
                "",
                format!("Job/{}/{} finished more than ttlSecondsAfterFinished={ttl} s ago: deleted with its pods (foreground)", key.0, key.1),
            );
        }
    }
}

impl Controller for TtlAfterFinishedController {
    fn name(&self) -> &'static str {
        "ttl-after-finished-controller"
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::JOB]
    }
    fn run(&mut self, cx: &mut Cx) {
        let r = self.jobs.sync(&cx.api.store);
        for d in r.deltas {
            if d.kind != EventType::Deleted && time_left(&d.object, cx.now).is_some() {
                self.queue.insert((api::namespace(&d.object).to_string(), api::name(&d.object).to_string()));
            }
        }
        while let Some(k) = self.queue.pop_first() {
            self.process(cx, &k);
        }
    }
    fn timer(&mut self, cx: &mut Cx, key: &str) {
        if let Some((ns, name)) = key.split_once('/') {
            self.queue.insert((ns.to_string(), name.to_string()));
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
    use crate::foundation::value::json;

    #[test]
    fn the_ttl_counts_from_the_finish_condition() {
        let job = |ttl: Value, cond: &str| {
            json!({"metadata": {"name": "j"}, "spec": {"ttlSecondsAfterFinished": ttl},
                "status": {"conditions": [{"type": cond, "status": "True", "lastTransitionTime": "2026-01-01T00:01:00Z"}]}})
        };
        assert_eq!(time_left(&job(json!(100), "Complete"), 60_000), Some(100_000));
        assert_eq!(time_left(&job(json!(100), "Failed"), 200_000), Some(-40_000));
        assert_eq!(time_left(&job(json!(0), "Complete"), 60_000), Some(0));
        assert_eq!(time_left(&job(json!(100), "SuccessCriteriaMet"), 60_000), None, "not finished yet");
        assert_eq!(time_left(&job(Value::Null, "Complete"), 60_000), None, "no TTL");
    }
}
