//! The HorizontalPodAutoscaler controller (`pkg/controller/podautoscaler/horizontal.go`,
//! `replica_calculator.go`, `metrics/client.go`).
//!
//! Every 15 s (`--horizontal-pod-autoscaler-sync-period`) each HPA is reconciled: the
//! target's `scale` subresource is read, the resource metrics API (`pods.metrics.k8s.io`,
//! served from metrics-server's scrapes) is listed, pods are grouped as upstream does
//! (pending and not-yet-ready pods, missing metrics), the desired count is computed per
//! metric with a tolerance of 0.1, normalised (min/max, scale-up limit, `behavior` policies
//! and stabilization windows, 5 minutes for scale-down), written to the target's scale,
//! and the status (conditions AbleToScale, ScalingActive, ScalingLimited) is written
//! through the status subresource. The pure steps ([`resource_replicas`],
//! [`plain_replicas`], [`group_pods`], [`stabilize`], [`limit_with_rules`],
//! [`scale_up_limit`], [`scale_down_limit`]) are unit-tested.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::store::EventType;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, Request, Verb};
use crate::foundation::api::{self, get, get_array, get_i64, get_str, rid, Object, ResourceId, RESOURCES};
use crate::foundation::labels::Selector;
use crate::foundation::pod::condition;
use crate::foundation::sim::{parse_rfc3339, rfc3339, Millis};
use crate::foundation::value::{json, Value};
use crate::loops::events::Source;
use crate::loops::informer::Informer;
use crate::loops::{req_as, Controller, Cx};
use std::collections::{BTreeMap, BTreeSet};

/// `--horizontal-pod-autoscaler-sync-period`.
pub const SYNC_PERIOD: Millis = 15_000;
/// `--horizontal-pod-autoscaler-tolerance`.
pub const TOLERANCE: f64 = 0.1;
/// `--horizontal-pod-autoscaler-cpu-initialization-period`.
pub const CPU_INITIALIZATION_PERIOD: Millis = 300_000;
/// `--horizontal-pod-autoscaler-initial-readiness-delay`.
pub const INITIAL_READINESS_DELAY: Millis = 30_000;
/// `--horizontal-pod-autoscaler-downscale-stabilization`.
pub const DOWNSCALE_STABILIZATION: Millis = 300_000;

const COMPONENT: &str = "horizontal-pod-autoscaler";

type Key = (String, String);

/// One pod's metric: milli-units, and when and over what window it was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodMetric {
    pub value: i64,
    pub timestamp: Millis,
    pub window: Millis,
}

/// `groupPods`: ready pods with metrics, and the names of unready, missing and ignored ones.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Groups {
    pub ready: usize,
    pub unready: BTreeSet<String>,
    pub missing: BTreeSet<String>,
    pub ignored: BTreeSet<String>,
}

fn time_at(v: &Value, path: &[&str]) -> Option<Millis> {
    get_str(v, path).and_then(parse_rfc3339)
}

/// `groupPods` (`replica_calculator.go`).
pub fn group_pods(pods: &[Object], metrics: &BTreeMap<String, PodMetric>, cpu: bool, now: Millis) -> Groups {
    let mut g = Groups::default();
    for p in pods {
        let name = api::name(p).to_string();
        let phase = get_str(p, &["status", "phase"]).unwrap_or("");
        if api::is_deleting(p) || phase == "Succeeded" || phase == "Failed" {
            g.ignored.insert(name);
            continue;
        }
        if phase == "Pending" {
            g.unready.insert(name);
            continue;
        }
        let Some(metric) = metrics.get(&name) else {
            g.missing.insert(name);
            continue;
        };
        if cpu {
            let ready = condition(p, "Ready");
            let start = time_at(p, &["status", "startTime"]);
            let unready = match (ready, start) {
                (Some(c), Some(start)) => {
                    let is_false = get_str(c, &["status"]) == Some("False");
                    let transition = time_at(c, &["lastTransitionTime"]).unwrap_or(0);
                    if start + CPU_INITIALIZATION_PERIOD > now {
                        // Still initialising: unready, or no full window since it became ready.
                        is_false || metric.timestamp < transition + metric.window
                    } else {
                        // Unready and never ready since it started.
                        is_false && start + INITIAL_READINESS_DELAY > transition
                    }
                }
                _ => true,
            };
            if unready {
                g.unready.insert(name);
                continue;
            }
        }
        g.ready += 1;
    }
    g
}

fn within(ratio: f64, tolerance: (f64, f64)) -> bool {
    1.0 - tolerance.0 <= ratio && ratio <= 1.0 + tolerance.1
}

/// `GetResourceUtilizationRatio`: (usage ratio, utilization %, raw average).
fn utilization_ratio(metrics: &BTreeMap<String, PodMetric>, requests: &BTreeMap<String, i64>, target: i64) -> Result<(f64, i64, i64), String> {
    let (mut total, mut req, mut n) = (0i64, 0i64, 0i64);
    for (pod, m) in metrics {
        let Some(r) = requests.get(pod) else { continue };
        total += m.value;
        req += r;
        n += 1;
    }
    if req == 0 {
        return Err("no metrics returned matched known pods".into());
    }
    let utilization = total * 100 / req;
    Ok((utilization as f64 / target as f64, utilization, total / n))
}

/// What a resource metric proposes: replicas, utilization % (if a utilization target), raw
/// average (milli-units) and how many pods the figure is over.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Proposal {
    pub replicas: i64,
    pub utilization: Option<i64>,
    pub raw: i64,
    pub pods: usize,
}

/// `GetResourceReplicas`: the replica count for a utilization target.
pub fn resource_replicas(
    current: i64,
    target: i64,
    tolerance: (f64, f64),
    mut metrics: BTreeMap<String, PodMetric>,
    requests: &BTreeMap<String, i64>,
    g: &Groups,
) -> Result<Proposal, String> {
    for p in g.ignored.iter().chain(g.unready.iter()) {
        metrics.remove(p);
    }
    if metrics.is_empty() {
        return Err("did not receive metrics for targeted pods (pods might be unready)".into());
    }
    let (ratio, utilization, raw) = utilization_ratio(&metrics, requests, target)?;
    let pods = metrics.len();
    let proposal = |replicas| Ok(Proposal { replicas, utilization: Some(utilization), raw, pods });
    let scale_up_with_unready = !g.unready.is_empty() && ratio > 1.0;
    if !scale_up_with_unready && g.missing.is_empty() {
        if within(ratio, tolerance) {
            return proposal(current);
        }
        return proposal((ratio * g.ready as f64).ceil() as i64);
    }
    if !g.missing.is_empty() {
        for p in &g.missing {
            let value = if ratio < 1.0 { requests.get(p).copied().unwrap_or(0) * target.max(100) / 100 } else { 0 };
            if ratio != 1.0 {
                metrics.insert(p.clone(), PodMetric { value, timestamp: 0, window: 0 });
            }
        }
    }
    if scale_up_with_unready {
        for p in &g.unready {
            metrics.insert(p.clone(), PodMetric { value: 0, timestamp: 0, window: 0 });
        }
    }
    let (new_ratio, _, _) = utilization_ratio(&metrics, requests, target)?;
    if within(new_ratio, tolerance) || (ratio < 1.0 && new_ratio > 1.0) || (ratio > 1.0 && new_ratio < 1.0) {
        return proposal(current);
    }
    let replicas = (new_ratio * metrics.len() as f64).ceil() as i64;
    if (new_ratio < 1.0 && replicas > current) || (new_ratio > 1.0 && replicas < current) {
        return proposal(current);
    }
    proposal(replicas)
}

/// `calcPlainMetricReplicas`: the replica count for an average-value target.
pub fn plain_replicas(current: i64, target: i64, tolerance: (f64, f64), mut metrics: BTreeMap<String, PodMetric>, g: &Groups) -> Result<Proposal, String> {
    for p in g.ignored.iter().chain(g.unready.iter()) {
        metrics.remove(p);
    }
    if metrics.is_empty() {
        return Err("did not receive metrics for targeted pods (pods might be unready)".into());
    }
    let usage_ratio = |m: &BTreeMap<String, PodMetric>| {
        let total: i64 = m.values().map(|x| x.value).sum();
        let avg = total / m.len() as i64;
        (avg as f64 / target as f64, avg)
    };
    let (ratio, usage) = usage_ratio(&metrics);
    let pods = metrics.len();
    let proposal = |replicas| Ok(Proposal { replicas, utilization: None, raw: usage, pods });
    let scale_up_with_unready = !g.unready.is_empty() && ratio > 1.0;
    if !scale_up_with_unready && g.missing.is_empty() {
        if within(ratio, tolerance) {
            return proposal(current);
        }
        return proposal((ratio * g.ready as f64).ceil() as i64);
    }
    for p in &g.missing {
        if ratio < 1.0 {
            metrics.insert(p.clone(), PodMetric { value: target, timestamp: 0, window: 0 });
        } else if ratio > 1.0 {
            metrics.insert(p.clone(), PodMetric { value: 0, timestamp: 0, window: 0 });
        }
    }
    if scale_up_with_unready {
        for p in &g.unready {
            metrics.insert(p.clone(), PodMetric { value: 0, timestamp: 0, window: 0 });
        }
    }
    let (new_ratio, _) = usage_ratio(&metrics);
    if within(new_ratio, tolerance) || (ratio < 1.0 && new_ratio > 1.0) || (ratio > 1.0 && new_ratio < 1.0) {
        return proposal(current);
    }
    let replicas = (new_ratio * metrics.len() as f64).ceil() as i64;
    if (new_ratio < 1.0 && replicas > current) || (new_ratio > 1.0 && replicas < current) {
        return proposal(current);
    }
    proposal(replicas)
}

/// A recommendation the controller made, kept for the stabilization windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recommendation {
    pub replicas: i64,
    pub at: Millis,
}

/// A rescale, kept for the scaling policies' periods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScaleEvent {
    pub change: i64,
    pub at: Millis,
    pub outdated: bool,
}

/// `stabilizeRecommendation` (no `behavior`): the highest recommendation of the window.
pub fn stabilize(recs: &mut Vec<Recommendation>, desired: i64, window: Millis, now: Millis) -> i64 {
    let mut max = desired;
    let mut old = None;
    for (i, r) in recs.iter().enumerate() {
        if r.at + window < now {
            old = Some(i);
        } else if r.replicas > max {
            max = r.replicas;
        }
    }
    let rec = Recommendation { replicas: desired, at: now };
    match old {
        Some(i) => recs[i] = rec,
        None => recs.push(rec),
    }
    max
}

/// `stabilizeRecommendationWithBehaviors`: the recommendation kept within the lowest of
/// the scale-up window and the highest of the scale-down window; with the condition's
/// reason and message when it differs.
pub fn stabilize_with_behavior(
    recs: &mut Vec<Recommendation>,
    current: i64,
    desired: i64,
    up_window: Millis,
    down_window: Millis,
    now: Millis,
) -> (i64, &'static str, &'static str) {
    let (mut up, mut down) = (desired, desired);
    let mut old = None;
    for (i, r) in recs.iter().enumerate() {
        if r.at + up_window > now {
            up = up.min(r.replicas);
        }
        if r.at + down_window > now {
            down = down.max(r.replicas);
        }
        if r.at + up_window < now && r.at + down_window < now {
            old = Some(i);
        }
    }
    let recommendation = current.max(up).min(down);
    let rec = Recommendation { replicas: desired, at: now };
    match old {
        Some(i) => recs[i] = rec,
        None => recs.push(rec),
    }
    if desired >= current {
        (recommendation, "ScaleUpStabilized", "recent recommendations were lower than current one, applying the lowest recent recommendation")
    } else {
        (recommendation, "ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation")
    }
}

/// `convertDesiredReplicasWithRules` (no `behavior`): min/max and the scale-up limit
/// `max(2 × current, 4)`.
pub fn limit_with_rules(current: i64, desired: i64, min: i64, max: i64) -> (i64, &'static str, &'static str) {
    let up_limit = (2 * current).max(4);
    let (most, reason, message) = if max > up_limit {
        (up_limit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate")
    } else {
        (max, "TooManyReplicas", "the desired replica count is more than the maximum replica count")
    };
    if desired < min {
        (min, "TooFewReplicas", "the desired replica count is less than the minimum replica count")
    } else if desired > most {
        (most, reason, message)
    } else {
        (desired, "DesiredWithinRange", "the desired count is within the acceptable range")
    }
}

fn changes_within(events: &[ScaleEvent], period: Millis, now: Millis) -> i64 {
    events.iter().filter(|e| e.at + period > now).map(|e| e.change).sum()
}

fn policies(rules: &Value) -> Vec<(String, i64, Millis)> {
    get_array(rules, &["policies"])
        .iter()
        .map(|p| {
            (
                get_str(p, &["type"]).unwrap_or("").to_string(),
                get_i64(p, &["value"]).unwrap_or(0),
                get_i64(p, &["periodSeconds"]).unwrap_or(0).max(0) as Millis * 1000,
            )
        })
        .collect()
}

/// `calculateScaleUpLimitWithScalingRules`.
pub fn scale_up_limit(current: i64, up: &[ScaleEvent], down: &[ScaleEvent], rules: &Value, now: Millis) -> i64 {
    let select = get_str(rules, &["selectPolicy"]).unwrap_or("Max");
    if select == "Disabled" {
        return current;
    }
    let mut result = if select == "Min" { i64::MAX } else { i64::MIN };
    for (ty, value, period) in policies(rules) {
        let start = current - changes_within(up, period, now) + changes_within(down, period, now);
        let proposed = if ty == "Pods" { start + value } else { (start as f64 * (1.0 + value as f64 / 100.0)).ceil() as i64 };
        result = if select == "Min" { result.min(proposed) } else { result.max(proposed) };
    }
    result
}

/// `calculateScaleDownLimitWithBehaviors`.
pub fn scale_down_limit(current: i64, up: &[ScaleEvent], down: &[ScaleEvent], rules: &Value, now: Millis) -> i64 {
    let select = get_str(rules, &["selectPolicy"]).unwrap_or("Max");
    if select == "Disabled" {
        return current;
    }
    let mut result = if select == "Min" { i64::MIN } else { i64::MAX };
    for (ty, value, period) in policies(rules) {
        let start = current - changes_within(up, period, now) + changes_within(down, period, now);
        let proposed = if ty == "Pods" { start - value } else { (start as f64 * (1.0 - value as f64 / 100.0)) as i64 };
        result = if select == "Min" { result.max(proposed) } else { result.min(proposed) };
    }
    result
}

/// `convertDesiredReplicasWithBehaviorRate`.
pub fn limit_with_behavior(
    current: i64,
    desired: i64,
    min: i64,
    max: i64,
    up: &[ScaleEvent],
    down: &[ScaleEvent],
    behavior: &Value,
    now: Millis,
) -> (i64, &'static str, &'static str) {
    let empty = json!({});
    if desired > current {
        let limit = scale_up_limit(current, up, down, behavior.get("scaleUp").unwrap_or(&empty), now).max(current);
        let (most, reason, message) = if max > limit {
            (limit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate")
        } else {
            (max, "TooManyReplicas", "the desired replica count is more than the maximum replica count")
        };
        if desired > most {
            return (most, reason, message);
        }
    } else if desired < current {
        let limit = scale_down_limit(current, up, down, behavior.get("scaleDown").unwrap_or(&empty), now).min(current);
        let (least, reason, message) = if min < limit {
            (limit, "ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate")
        } else {
            (min, "TooFewReplicas", "the desired replica count is less than the minimum replica count")
        };
        if desired < least {
            return (least, reason, message);
        }
    }
    (desired, "DesiredWithinRange", "the desired count is within the acceptable range")
}

/// `storeScaleEvent`: reuse an outdated slot or append.
fn store_event(events: &mut Vec<ScaleEvent>, change: i64, longest: Millis, now: Millis) {
    for e in events.iter_mut() {
        if e.at + longest < now {
            e.outdated = true;
        }
    }
    let ev = ScaleEvent { change, at: now, outdated: false };
    match events.iter().rposition(|e| e.outdated) {
        Some(i) => events[i] = ev,
        None => events.push(ev),
    }
}

/// `setConditionInList`: a changed status moves `lastTransitionTime`.
fn set_condition(conds: &mut Vec<Value>, ty: &str, status: &str, reason: &str, message: &str, now: Millis) {
    let i = match conds.iter().position(|c| get_str(c, &["type"]) == Some(ty)) {
        Some(i) => i,
        None => {
            conds.push(json!({"type": ty}));
            conds.len() - 1
        }
    };
    let c = &mut conds[i];
    if get_str(c, &["status"]) != Some(status) {
        c["lastTransitionTime"] = json!(rfc3339(now));
    }
    c["status"] = json!(status);
    c["reason"] = json!(reason);
    c["message"] = json!(message);
}

/// A failure of one metric: the condition it proposes and the error text.
struct MetricError {
    reason: &'static str,
    condition_message: String,
    error: String,
}

/// What one sync worked out for the trace and the status.
struct Outcome {
    replicas: i64,
    metric: String,
    statuses: Vec<Value>,
    describe: Vec<String>,
}

#[derive(Clone)]
pub struct HorizontalController {
    user: UserInfo,
    source: Source,
    hpas: Informer,
    pods: Informer,
    queue: BTreeSet<Key>,
    /// HPAs with a resync timer set.
    scheduled: BTreeSet<Key>,
    recommendations: BTreeMap<Key, Vec<Recommendation>>,
    up_events: BTreeMap<Key, Vec<ScaleEvent>>,
    down_events: BTreeMap<Key, Vec<ScaleEvent>>,
}

impl Default for HorizontalController {
    fn default() -> Self {
        Self::new()
    }
}

/// The resources whose `scale` an HPA may target.
fn scale_target(api_version: &str, kind: &str) -> Option<ResourceId> {
    [rid::DEPLOYMENT, rid::REPLICASET, rid::STATEFULSET, rid::REPLICATIONCONTROLLER].into_iter().find(|r| {
        let res = &RESOURCES[*r];
        res.kind == kind && (api_version.is_empty() || res.api_version() == api_version || api_version.split('/').next() == Some(res.group))
    })
}

/// A quantity of milli-units as the HPA writes it: DecimalSI for CPU, BinarySI for memory.
fn quantity(resource: &str, milli: i64) -> String {
    if resource == "memory" && milli.rem_euclid(1000) == 0 {
        crate::foundation::quantity::format_bytes(milli)
    } else {
        crate::foundation::quantity::format_cpu(milli)
    }
}

impl HorizontalController {
    pub fn new() -> Self {
        let user = UserInfo::controller(COMPONENT);
        HorizontalController {
            source: Source { component: COMPONENT, host: String::new(), user: user.clone() },
            user,
            hpas: Informer::new(rid::HPA),
            pods: Informer::new(rid::POD),
            queue: BTreeSet::new(),
            scheduled: BTreeSet::new(),
            recommendations: BTreeMap::new(),
            up_events: BTreeMap::new(),
            down_events: BTreeMap::new(),
        }
    }

    fn creds(&self) -> Credentials {
        Credentials::User(self.user.clone())
    }

    fn sync_informers(&mut self, cx: &mut Cx) {
        let r = self.hpas.sync(&cx.api.store);
        for d in r.deltas {
            let key = (api::namespace(&d.object).to_string(), api::name(&d.object).to_string());
            match d.kind {
                EventType::Added => {
                    self.queue.insert(key);
                }
                EventType::Deleted => {
                    self.recommendations.remove(&key);
                    self.up_events.remove(&key);
                    self.down_events.remove(&key);
                }
                // Updates wait for the next resync, as upstream's rate-limited queue does.
                EventType::Modified => {}
            }
        }
        self.pods.sync(&cx.api.store);
    }

    /// The pods' metric values for one resource (`GetResourceMetric`).
    fn resource_metrics(
        &self,
        cx: &mut Cx,
        ns: &str,
        selector: &Selector,
        resource: &str,
        container: Option<&str>,
    ) -> Result<BTreeMap<String, PodMetric>, String> {
        let list = cx
            .api
            .handle(req_as(Request::new(Verb::List, rid::PODMETRICS, ns, "", self.creds()), COMPONENT, &self.user))
            .map_err(|s| format!("unable to fetch metrics from resource metrics API: {}", s.message))?;
        let items: Vec<&Value> = get_array(&list, &["items"]).iter().filter(|m| selector.matches(api::labels(m))).collect();
        if items.is_empty() {
            return Err("no metrics returned from resource metrics API".into());
        }
        let mut out = BTreeMap::new();
        for m in items {
            let timestamp = time_at(m, &["timestamp"]).unwrap_or(0);
            let window = get_str(m, &["window"]).and_then(crate::foundation::sim::parse_duration).unwrap_or(0);
            let ctrs = get_array(m, &["containers"]);
            let mut sum = 0;
            let mut missing = ctrs.is_empty();
            let mut found = false;
            for c in ctrs {
                if container.is_some_and(|want| get_str(c, &["name"]) != Some(want)) {
                    continue;
                }
                found = true;
                match get_str(c, &["usage", resource]).and_then(crate::foundation::quantity::parse_milli) {
                    Some(v) => sum += v,
                    None => missing = true,
                }
            }
            if !missing && (container.is_none() || found) {
                out.insert(api::name(m).to_string(), PodMetric { value: sum, timestamp, window });
            }
        }
        Ok(out)
    }

    /// `computeStatusForResourceMetricGeneric` with the replica calculator.
    #[allow(clippy::too_many_arguments)]
    fn resource_metric(
        &self,
        cx: &mut Cx,
        ns: &str,
        selector: &Selector,
        pods: &[Object],
        current: i64,
        resource: &str,
        container: Option<&str>,
        target: &Value,
        tolerance: (f64, f64),
    ) -> Result<(Proposal, Value), String> {
        let average = get_str(target, &["averageValue"]).and_then(crate::foundation::quantity::parse_milli);
        let utilization = get_i64(target, &["averageUtilization"]);
        if average.is_none() && utilization.is_none() {
            return Err("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set".into());
        }
        let what = if utilization.is_some() && average.is_none() { "utilization" } else { "usage" };
        let wrap = |e: String| format!("failed to get {resource} {what}: unable to get metrics for resource {resource}: {e}");
        let metrics = self.resource_metrics(cx, ns, selector, resource, container).map_err(wrap)?;
        if pods.is_empty() {
            return Err(format!("failed to get {resource} {what}: no pods returned by selector while calculating replica count"));
        }
        let groups = group_pods(pods, &metrics, resource == "cpu", cx.now);
        let p = if let Some(avg) = average {
            plain_replicas(current, avg, tolerance, metrics, &groups).map_err(|e| format!("failed to get {resource} {what}: {e}"))?
        } else {
            let mut requests = BTreeMap::new();
            for p in pods {
                let mut list: Vec<&Value> = get_array(p, &["spec", "containers"]).iter().collect();
                list.extend(get_array(p, &["spec", "initContainers"]).iter().filter(|c| get_str(c, &["restartPolicy"]) == Some("Always")));
                let mut total = 0;
                let mut matched = false;
                for c in list {
                    let cname = get_str(c, &["name"]).unwrap_or("");
                    if container.is_some_and(|want| want != cname) {
                        continue;
                    }
                    matched = true;
                    match get_str(c, &["resources", "requests", resource]).and_then(crate::foundation::quantity::parse_milli) {
                        Some(r) => total += r,
                        None => {
                            return Err(format!("failed to get {resource} {what}: missing request for {resource} in container {cname} of Pod {}", api::name(p)))
                        }
                    }
                }
                if let (Some(want), false) = (container, matched) {
                    return Err(format!("failed to get {resource} {what}: container {want} not found in Pod {}", api::name(p)));
                }
                requests.insert(api::name(p).to_string(), total);
            }
            resource_replicas(current, utilization.unwrap_or(0), tolerance, metrics, &requests, &groups)
                .map_err(|e| format!("failed to get {resource} {what}: {e}"))?
        };
        let mut cur = json!({"averageValue": quantity(resource, p.raw)});
        if let Some(u) = p.utilization {
            cur["averageUtilization"] = json!(u);
        }
        Ok((p, cur))
    }

    /// `computeReplicasForMetrics`: the highest proposal of the metrics that work.
    fn replicas_for_metrics(
        &self,
        cx: &mut Cx,
        hpa: &Value,
        ns: &str,
        selector: &Selector,
        current: i64,
        tolerance: (f64, f64),
    ) -> (Result<Outcome, MetricError>, Vec<Value>) {
        let pods: Vec<Object> = self.pods.list(Some(ns)).filter(|p| selector.matches(api::labels(p))).cloned().collect();
        let specs = get_array(hpa, &["spec", "metrics"]);
        let mut statuses = vec![json!({"type": ""}); specs.len()];
        let mut best: Option<Outcome> = None;
        let mut first_error: Option<MetricError> = None;
        let mut invalid = 0;
        for (i, spec) in specs.iter().enumerate() {
            let ty = get_str(spec, &["type"]).unwrap_or("");
            let result: Result<(i64, String, Value, String), MetricError> = match ty {
                "Resource" | "ContainerResource" => {
                    let field = if ty == "Resource" { "resource" } else { "containerResource" };
                    let name = get_str(spec, &[field, "name"]).unwrap_or("").to_string();
                    let container = if ty == "Resource" { None } else { get_str(spec, &[field, "container"]) };
                    let target = get(spec, &[field, "target"]).cloned().unwrap_or(json!({}));
                    match self.resource_metric(cx, ns, selector, &pods, current, &name, container, &target, tolerance) {
                        Ok((p, cur)) => {
                            let metric = match (ty, p.utilization.is_some()) {
                                ("Resource", true) => format!("{name} resource utilization (percentage of request)"),
                                ("Resource", false) => format!("{name} resource"),
                                (_, true) => format!("{name} container resource utilization (percentage of request)"),
                                (_, false) => format!("{name} container resource"),
                            };
                            let mut st = json!({"name": name, "current": cur});
                            if let Some(c) = container {
                                st["container"] = json!(c);
                            }
                            let plural = if p.pods == 1 { "" } else { "s" };
                            let describe = match (p.utilization, get_i64(&target, &["averageUtilization"])) {
                                (Some(u), Some(t)) => format!("{name} {u}% of request (target {t}%) over {} pod{plural}", p.pods),
                                _ => format!(
                                    "{name} {} per pod (target {}) over {} pod{plural}",
                                    quantity(&name, p.raw),
                                    get_str(&target, &["averageValue"]).unwrap_or(""),
                                    p.pods
                                ),
                            };
                            Ok((p.replicas, metric, json!({"type": ty, field: st}), describe))
                        }
                        Err(e) => {
                            let reason = if ty == "Resource" { "FailedGetResourceMetric" } else { "FailedGetContainerResourceMetric" };
                            let wrapped = if ty == "Resource" {
                                format!("failed to get {name} resource metric value: {e}")
                            } else {
                                format!("failed to get {} container metric value: {e}", container.unwrap_or(""))
                            };
                            Err(MetricError { reason, condition_message: e, error: wrapped })
                        }
                    }
                }
                "Pods" | "Object" | "External" => {
                    let field = ty.to_ascii_lowercase();
                    let name = get_str(spec, &[&field, "metric", "name"]).unwrap_or("").to_string();
                    let (reason, api_name) = match ty {
                        "Pods" => ("FailedGetPodsMetric", "custom"),
                        "Object" => ("FailedGetObjectMetric", "custom"),
                        _ => ("FailedGetExternalMetric", "external"),
                    };
                    let e = format!("unable to get metric {name}: unable to fetch metrics from {api_name} metrics API: no {api_name} metrics API ({api_name}.metrics.k8s.io) registered");
                    let wrapped = match ty {
                        "Pods" => format!("failed to get pods metric value: {e}"),
                        "Object" => format!("failed to get object metric value: {e}"),
                        _ => format!("failed to get {name} external metric value: {e}"),
                    };
                    Err(MetricError { reason, condition_message: e, error: wrapped })
                }
                other => {
                    let e = format!("unknown metric source type {other:?}");
                    Err(MetricError { reason: "InvalidMetricSourceType", condition_message: e.clone(), error: e })
                }
            };
            match result {
                Ok((replicas, metric, status, describe)) => {
                    statuses[i] = status;
                    match &mut best {
                        Some(b) if replicas <= b.replicas => b.describe.push(describe),
                        _ => {
                            let mut d = best.take().map(|b| b.describe).unwrap_or_default();
                            d.insert(0, describe);
                            best = Some(Outcome { replicas, metric, statuses: vec![], describe: d });
                        }
                    }
                }
                Err(e) => {
                    cx.event(&self.source, hpa, None, "Warning", e.reason, &e.condition_message, None);
                    invalid += 1;
                    if first_error.is_none() {
                        first_error = Some(e);
                    }
                }
            }
        }
        let wrap =
            |e: MetricError| MetricError { error: format!("invalid metrics ({invalid} invalid out of {}), first error is: {}", specs.len(), e.error), ..e };
        match (best, first_error) {
            (Some(b), Some(e)) if b.replicas < current => (Err(wrap(e)), statuses),
            (Some(mut b), _) => {
                b.statuses = statuses.clone();
                (Ok(b), statuses)
            }
            (None, Some(e)) => (Err(wrap(e)), statuses),
            (None, None) => {
                (Err(MetricError { reason: "FailedGetResourceMetric", condition_message: "no metrics".into(), error: "no metrics".into() }), statuses)
            }
        }
    }

    #[inline(never)]
    fn sync(&mut self, cx: &mut Cx, key: &Key) {
        let Some(hpa) = self.hpas.get(&key.0, &key.1).cloned() else { return };
        let (ns, name) = (key.0.as_str(), key.1.as_str());
        let obj = format!("HorizontalPodAutoscaler/{ns}/{name}");
        let mut conds: Vec<Value> = get_array(&hpa, &["status", "conditions"]).to_vec();
        let old_status = hpa.get("status").cloned().unwrap_or(json!({}));
        let last_scale = get(&hpa, &["status", "lastScaleTime"]).cloned();
        let target_ref = get(&hpa, &["spec", "scaleTargetRef"]).cloned().unwrap_or(json!({}));
        let (t_av, t_kind, t_name) =
            (get_str(&target_ref, &["apiVersion"]).unwrap_or(""), get_str(&target_ref, &["kind"]).unwrap_or(""), get_str(&target_ref, &["name"]).unwrap_or(""));
        let reference = format!("{t_kind}/{t_name}");
        let now = cx.now;
        let min = get_i64(&hpa, &["spec", "minReplicas"]).unwrap_or(1);
        let max = get_i64(&hpa, &["spec", "maxReplicas"]).unwrap_or(1);
        let write_status = |cx: &mut Cx, this: &Self, status: Value| {
            if status != old_status {
                let mut body = (*hpa).clone();
                body["status"] = status;
                if let Some(m) = body.get_mut("metadata").and_then(Value::as_object_mut) {
                    m.remove("resourceVersion");
                }
                let r = cx.api.handle(req_as(Request::update(rid::HPA, ns, name, body, this.creds()).with_sub("status"), COMPONENT, &this.user));
                if let Err(s) = r {
                    cx.event(&this.source, &hpa, None, "Warning", "FailedUpdateStatus", &s.message, None);
                }
            }
        };
        let status_of = |current: i64, desired: i64, metrics: &[Value], conds: &[Value], last: Option<Value>| {
            let mut st = json!({"desiredReplicas": desired});
            if current != 0 {
                st["currentReplicas"] = json!(current);
            }
            if !metrics.is_empty() {
                st["currentMetrics"] = Value::Array(metrics.to_vec());
            }
            if !conds.is_empty() {
                st["conditions"] = Value::Array(conds.to_vec());
            }
            if let Some(l) = last {
                st["lastScaleTime"] = l;
            }
            st
        };
        let old_desired = get_i64(&hpa, &["status", "desiredReplicas"]).unwrap_or(0);

        // The target's scale.
        let scale = match scale_target(t_av, t_kind) {
            None => Err(format!("no matches for kind {t_kind:?} in group {:?}", t_av.split('/').next().filter(|_| t_av.contains('/')).unwrap_or(""))),
            Some(r) => cx
                .api
                .handle(req_as(Request::new(Verb::Get, r, ns, t_name, self.creds()).with_sub("scale"), COMPONENT, &self.user))
                .map(|s| (r, s))
                .map_err(|s| s.message),
        };
        let (target_rid, scale) = match scale {
            Ok(x) => x,
            Err(e) => {
                cx.event(&self.source, &hpa, None, "Warning", "FailedGetScale", &e, None);
                set_condition(
                    &mut conds,
                    "AbleToScale",
                    "False",
                    "FailedGetScale",
                    &format!("the HPA controller was unable to get the target's current scale: {e}"),
                    now,
                );
                cx.trace(Flow::DeploymentController, "hpa", obj.clone(), "error", "", format!("{obj}: cannot read the scale of {reference}: {e}"));
                let current = get_i64(&hpa, &["status", "currentReplicas"]).unwrap_or(0);
                let metrics = get_array(&hpa, &["status", "currentMetrics"]).to_vec();
                write_status(cx, self, status_of(current, old_desired, &metrics, &conds, last_scale));
                return;
            }
        };
        set_condition(&mut conds, "AbleToScale", "True", "SucceededGetScale", "the HPA controller was able to get the target's current scale", now);
        let current = get_i64(&scale, &["spec", "replicas"]).unwrap_or(0);
        self.recommendations.entry(key.clone()).or_insert_with(|| vec![Recommendation { replicas: current, at: now }]);

        let mut desired = 0;
        let mut reason = String::new();
        let mut statuses: Vec<Value> = Vec::new();
        let mut rescale = true;
        let mut decision = String::new();
        let mut needs_metrics = true;
        if current == 0 {
            rescale = false;
            needs_metrics = false;
            set_condition(&mut conds, "ScalingActive", "False", "ScalingDisabled", "scaling is disabled since the replica count of the target is zero", now);
            decision = format!("{reference} has 0 replicas: scaling is disabled");
        } else if current > max {
            reason = "Current number of replicas above Spec.MaxReplicas".into();
            desired = max;
            needs_metrics = false;
            decision = format!("{reference} has {current} replicas, more than maxReplicas {max}");
        } else if current < min {
            reason = "Current number of replicas below Spec.MinReplicas".into();
            desired = min;
            needs_metrics = false;
            decision = format!("{reference} has {current} replicas, fewer than minReplicas {min}");
        }
        if needs_metrics {
            let selector_text = get_str(&scale, &["status", "selector"]).unwrap_or("").to_string();
            let selector = if selector_text.is_empty() {
                cx.event(&self.source, &hpa, None, "Warning", "SelectorRequired", "selector is required", None);
                set_condition(&mut conds, "ScalingActive", "False", "InvalidSelector", "the HPA target's scale is missing a selector", now);
                None
            } else {
                match Selector::parse(&selector_text) {
                    Ok(s) => Some(s),
                    Err(e) => {
                        let msg = format!("couldn't convert selector into a corresponding internal selector object: {e}");
                        cx.event(&self.source, &hpa, None, "Warning", "InvalidSelector", &msg, None);
                        set_condition(&mut conds, "ScalingActive", "False", "InvalidSelector", &msg, now);
                        None
                    }
                }
            };
            let Some(selector) = selector else {
                write_status(cx, self, status_of(current, old_desired, &[], &conds, last_scale));
                return;
            };
            let tolerance = {
                let t = |dir: &str| {
                    get_str(&hpa, &["spec", "behavior", dir, "tolerance"]).and_then(crate::foundation::quantity::parse_milli).map(|m| m as f64 / 1000.0)
                };
                (t("scaleDown").unwrap_or(TOLERANCE), t("scaleUp").unwrap_or(TOLERANCE))
            };
            let (result, sts) = self.replicas_for_metrics(cx, &hpa, ns, &selector, current, tolerance);
            match result {
                Err(e) => {
                    set_condition(
                        &mut conds,
                        "ScalingActive",
                        "False",
                        e.reason,
                        &format!("the HPA was unable to compute the replica count: {}", e.condition_message),
                        now,
                    );
                    cx.event(&self.source, &hpa, None, "Warning", "FailedComputeMetricsReplicas", &e.error, None);
                    cx.trace(
                        Flow::DeploymentController,
                        "hpa",
                        obj.clone(),
                        "error",
                        "",
                        format!("{obj}: cannot compute a replica count for {reference}: {}", e.condition_message),
                    );
                    write_status(cx, self, status_of(current, old_desired, &sts, &conds, last_scale));
                    return;
                }
                Ok(o) => {
                    set_condition(
                        &mut conds,
                        "ScalingActive",
                        "True",
                        "ValidMetricFound",
                        &format!("the HPA was able to successfully calculate a replica count from {}", o.metric),
                        now,
                    );
                    statuses = o.statuses;
                    let proposed = o.replicas;
                    if proposed > desired {
                        desired = proposed;
                    }
                    if desired > current {
                        reason = format!("{} above target", o.metric);
                    }
                    if desired < current {
                        reason = "All metrics below target".into();
                    }
                    let behavior = get(&hpa, &["spec", "behavior"]).filter(|b| !b.is_null()).cloned();
                    let recs = self.recommendations.entry(key.clone()).or_default();
                    let (stabilized, limited, why) = match &behavior {
                        None => {
                            let stabilized = stabilize(recs, desired, DOWNSCALE_STABILIZATION, now);
                            if stabilized != desired {
                                set_condition(
                                    &mut conds,
                                    "AbleToScale",
                                    "True",
                                    "ScaleDownStabilized",
                                    "recent recommendations were higher than current one, applying the highest recent recommendation",
                                    now,
                                );
                            } else {
                                set_condition(&mut conds, "AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size", now);
                            }
                            let (limited, r, m) = limit_with_rules(current, stabilized, min, max);
                            set_condition(&mut conds, "ScalingLimited", if limited == stabilized { "False" } else { "True" }, r, m, now);
                            (stabilized, limited, r)
                        }
                        Some(b) => {
                            let window = |dir: &str, default: Millis| {
                                get_i64(b, &[dir, "stabilizationWindowSeconds"]).map(|s| s.max(0) as Millis * 1000).unwrap_or(default)
                            };
                            let (stabilized, r, m) =
                                stabilize_with_behavior(recs, current, desired, window("scaleUp", 0), window("scaleDown", DOWNSCALE_STABILIZATION), now);
                            if stabilized != desired {
                                set_condition(&mut conds, "AbleToScale", "True", r, m, now);
                            } else {
                                set_condition(&mut conds, "AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size", now);
                            }
                            let up = self.up_events.get(key).cloned().unwrap_or_default();
                            let down = self.down_events.get(key).cloned().unwrap_or_default();
                            let (limited, r, m) = limit_with_behavior(current, stabilized, min, max, &up, &down, b, now);
                            set_condition(&mut conds, "ScalingLimited", if limited == stabilized { "False" } else { "True" }, r, m, now);
                            (stabilized, limited, r)
                        }
                    };
                    decision = format!("{}: desired {proposed}", o.describe.join("; "));
                    if stabilized != proposed {
                        decision.push_str(&format!(" (held at {stabilized} by the recommendations of the stabilization window)"));
                    }
                    if limited != stabilized {
                        let by = match why {
                            "ScaleUpLimit" => "the scale-up limit".to_string(),
                            "ScaleDownLimit" => "the scale-down policy".to_string(),
                            "TooManyReplicas" => format!("maxReplicas {max}"),
                            _ => format!("minReplicas {min}"),
                        };
                        decision.push_str(&format!(" (capped at {limited} by {by})"));
                    }
                    desired = limited;
                    rescale = desired != current;
                }
            }
        }
        let mut last = last_scale;
        if rescale {
            let mut body = (*scale).clone();
            api::set(&mut body, &["spec", "replicas"], json!(desired));
            let mut r = cx.api.handle(req_as(Request::update(target_rid, ns, t_name, body.clone(), self.creds()).with_sub("scale"), COMPONENT, &self.user));
            if r.as_ref().is_err_and(|s| s.code == 409) {
                // RetryOnConflict: read the scale again and retry once.
                if let Ok(fresh) = cx.api.handle(req_as(Request::new(Verb::Get, target_rid, ns, t_name, self.creds()).with_sub("scale"), COMPONENT, &self.user))
                {
                    let mut body = (*fresh).clone();
                    api::set(&mut body, &["spec", "replicas"], json!(desired));
                    r = cx.api.handle(req_as(Request::update(target_rid, ns, t_name, body, self.creds()).with_sub("scale"), COMPONENT, &self.user));
                }
            }
            match r {
                Err(s) => {
                    cx.event(
                        &self.source,
                        &hpa,
                        None,
                        "Warning",
                        "FailedRescale",
                        &format!("New size: {desired}; reason: {reason}; error: {}", s.message),
                        None,
                    );
                    set_condition(
                        &mut conds,
                        "AbleToScale",
                        "False",
                        "FailedUpdateScale",
                        &format!("the HPA controller was unable to update the target scale: {}", s.message),
                        now,
                    );
                    cx.trace(
                        Flow::DeploymentController,
                        "hpa",
                        obj.clone(),
                        "error",
                        "",
                        format!("{obj}: {decision}; scaling {reference} failed: {}", s.message),
                    );
                    write_status(cx, self, status_of(current, old_desired, &statuses, &conds, last));
                    return;
                }
                Ok(_) => {
                    set_condition(
                        &mut conds,
                        "AbleToScale",
                        "True",
                        "SucceededRescale",
                        &format!("the HPA controller was able to update the target scale to {desired}"),
                        now,
                    );
                    cx.event(&self.source, &hpa, None, "Normal", "SuccessfulRescale", &format!("New size: {desired}; reason: {reason}"), None);
                    if let Some(b) = get(&hpa, &["spec", "behavior"]).filter(|b| !b.is_null()) {
                        let longest = |dir: &str| policies(b.get(dir).unwrap_or(&json!({}))).iter().map(|p| p.2).max().unwrap_or(0);
                        if desired > current {
                            store_event(self.up_events.entry(key.clone()).or_default(), desired - current, longest("scaleUp"), now);
                        } else {
                            store_event(self.down_events.entry(key.clone()).or_default(), current - desired, longest("scaleDown"), now);
                        }
                    }
                    cx.trace(
                        Flow::DeploymentController,
                        "hpa",
                        obj.clone(),
                        "ok",
                        "",
                        format!("{obj}: {decision}; scaling {reference} from {current} to {desired}"),
                    );
                    last = Some(json!(rfc3339(now)));
                }
            }
        } else {
            desired = current;
            if cx.tracing() && !decision.is_empty() {
                cx.trace(Flow::DeploymentController, "hpa", obj.clone(), "ok", "", format!("{obj}: {decision}; {reference} stays at {current}"));
            }
        }
        write_status(cx, self, status_of(current, desired, &statuses, &conds, last));
    }
}

impl Controller for HorizontalController {
    fn name(&self) -> &'static str {
        COMPONENT
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::HPA]
    }
    fn run(&mut self, cx: &mut Cx) {
        self.sync_informers(cx);
        while let Some(k) = self.queue.pop_first() {
            self.sync(cx, &k);
            if self.hpas.get(&k.0, &k.1).is_some() && self.scheduled.insert(k.clone()) {
                cx.every(SYNC_PERIOD, format!("{}/{}", k.0, k.1));
            }
        }
    }
    fn timer(&mut self, cx: &mut Cx, key: &str) {
        if let Some((ns, name)) = key.split_once('/') {
            let k = (ns.to_string(), name.to_string());
            self.scheduled.remove(&k);
            self.queue.insert(k);
        }
        self.run(cx);
    }
    fn restart(&mut self) {
        *self = Self::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn pod(name: &str, phase: &str, ready: Option<(&str, &str)>, start: &str) -> Object {
        let mut p = json!({"metadata": {"name": name}, "status": {"phase": phase, "startTime": start}});
        if let Some((status, at)) = ready {
            p["status"]["conditions"] = json!([{"type": "Ready", "status": status, "lastTransitionTime": at}]);
        }
        Arc::new(p)
    }

    fn metric(v: i64) -> PodMetric {
        // Measured at 10 min over 15 s.
        PodMetric { value: v, timestamp: 600_000, window: 15_000 }
    }

    const T0: &str = "2026-01-01T00:00:00Z";

    #[test]
    fn within_tolerance_the_count_stays_and_beyond_it_scales_by_the_ratio() {
        let pods = vec![pod("a", "Running", Some(("True", T0)), T0), pod("b", "Running", Some(("True", T0)), T0)];
        let requests: BTreeMap<String, i64> = [("a".to_string(), 200), ("b".to_string(), 200)].into();
        let m = |x, y| [("a".to_string(), metric(x)), ("b".to_string(), metric(y))].into_iter().collect::<BTreeMap<_, _>>();
        let g = group_pods(&pods, &m(0, 0), true, 600_000);
        assert_eq!(g.ready, 2);
        // 54% against 50%: ratio 1.08, inside the tolerance.
        let p = resource_replicas(2, 50, (TOLERANCE, TOLERANCE), m(108, 108), &requests, &g).unwrap();
        assert_eq!((p.replicas, p.utilization), (2, Some(54)));
        // 150% against 50%: three times the pods.
        let p = resource_replicas(2, 50, (TOLERANCE, TOLERANCE), m(300, 300), &requests, &g).unwrap();
        assert_eq!((p.replicas, p.utilization, p.raw), (6, Some(150), 300));
        // 20% against 50%: down to one.
        assert_eq!(resource_replicas(2, 50, (TOLERANCE, TOLERANCE), m(40, 40), &requests, &g).unwrap().replicas, 1);
    }

    #[test]
    fn unready_pods_count_as_idle_on_a_scale_up_and_missing_ones_as_full_on_a_scale_down() {
        // c started 20 s before the metric and is not ready yet: unready.
        let pods = vec![pod("a", "Running", Some(("True", T0)), T0), pod("c", "Running", Some(("False", "2026-01-01T00:09:40Z")), "2026-01-01T00:09:40Z")];
        let requests: BTreeMap<String, i64> = [("a".to_string(), 100), ("c".to_string(), 100)].into();
        let metrics: BTreeMap<String, PodMetric> = [("a".to_string(), metric(200)), ("c".to_string(), metric(0))].into();
        let g = group_pods(&pods, &metrics, true, 600_000);
        assert_eq!(g.unready.len(), 1);
        // a alone is at 200% of a 50% target (ratio 4); with c at 0 it is 100% (ratio 2).
        let p = resource_replicas(2, 50, (TOLERANCE, TOLERANCE), metrics, &requests, &g).unwrap();
        assert_eq!(p.replicas, 4, "ceil(2 × 2), not ceil(1 × 4)");
        // A pending pod is unready whatever the resource; a pod without metrics is missing.
        let pods = vec![pod("a", "Running", Some(("True", T0)), T0), pod("b", "Running", Some(("True", T0)), T0), pod("p", "Pending", None, T0)];
        let requests: BTreeMap<String, i64> = [("a".to_string(), 100), ("b".to_string(), 100), ("p".to_string(), 100)].into();
        let metrics: BTreeMap<String, PodMetric> = [("a".to_string(), metric(10))].into();
        let g = group_pods(&pods, &metrics, true, 600_000);
        assert_eq!((g.ready, g.missing.len(), g.unready.len()), (1, 1, 1));
        // a is at 10% of a 50% target; b, missing, counts as 100% of its request: 55%,
        // which is within the tolerance, so nothing changes.
        let p = resource_replicas(3, 50, (TOLERANCE, TOLERANCE), metrics, &requests, &g).unwrap();
        assert_eq!(p.replicas, 3);
    }

    #[test]
    fn a_pod_past_initialisation_that_was_never_ready_is_unready_but_one_that_was_counts() {
        let metrics: BTreeMap<String, PodMetric> = [("a".to_string(), metric(10)), ("b".to_string(), metric(10))].into();
        // Started at 0, now 10 min: past the 5-minute initialisation period.
        let pods = vec![pod("a", "Running", Some(("False", "2026-01-01T00:00:10Z")), T0), pod("b", "Running", Some(("False", "2026-01-01T00:05:00Z")), T0)];
        let g = group_pods(&pods, &metrics, true, 600_000);
        assert_eq!(g.unready, ["a".to_string()].into(), "a never became ready within 30 s of starting");
        assert_eq!(g.ready, 1);
        // Memory ignores readiness.
        assert_eq!(group_pods(&pods, &metrics, false, 600_000).ready, 2);
    }

    #[test]
    fn average_values_scale_on_the_mean() {
        let pods = vec![pod("a", "Running", Some(("True", T0)), T0), pod("b", "Running", Some(("True", T0)), T0)];
        let metrics: BTreeMap<String, PodMetric> = [("a".to_string(), metric(300_000)), ("b".to_string(), metric(100_000))].into();
        let g = group_pods(&pods, &metrics, false, 600_000);
        let p = plain_replicas(2, 100_000, (TOLERANCE, TOLERANCE), metrics, &g).unwrap();
        assert_eq!((p.replicas, p.raw), (4, 200_000));
        let err = plain_replicas(2, 1, (TOLERANCE, TOLERANCE), BTreeMap::new(), &Groups::default()).unwrap_err();
        assert_eq!(err, "did not receive metrics for targeted pods (pods might be unready)");
    }

    #[test]
    fn without_behavior_scale_up_is_limited_and_scale_down_waits_for_the_window() {
        assert_eq!(limit_with_rules(1, 5, 1, 10), (4, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"));
        assert_eq!(limit_with_rules(4, 7, 1, 10).0, 7);
        assert_eq!(limit_with_rules(4, 12, 1, 10).0, 8);
        assert_eq!(limit_with_rules(8, 12, 1, 10), (10, "TooManyReplicas", "the desired replica count is more than the maximum replica count"));
        assert_eq!(limit_with_rules(2, 0, 1, 10).1, "TooFewReplicas");
        let mut recs = vec![Recommendation { replicas: 7, at: 0 }];
        assert_eq!(stabilize(&mut recs, 1, DOWNSCALE_STABILIZATION, 60_000), 7, "7 was recommended within 5 minutes");
        assert_eq!(stabilize(&mut recs, 1, DOWNSCALE_STABILIZATION, 299_000), 7);
        assert_eq!(stabilize(&mut recs, 1, DOWNSCALE_STABILIZATION, 301_000), 1, "the old recommendation left the window");
        assert_eq!(recs.len(), 3, "its slot was reused");
    }

    #[test]
    fn behavior_policies_bound_the_change_per_period() {
        let mut spec =
            json!({"spec": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 60, "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}}});
        crate::apiserver::autoscaling::default_v2(&mut spec);
        let b = spec["spec"]["behavior"].clone();
        // Default scale-up: max(+4 pods, +100%) per 15 s.
        assert_eq!(scale_up_limit(1, &[], &[], &b["scaleUp"], 0), 5);
        assert_eq!(scale_up_limit(10, &[], &[], &b["scaleUp"], 0), 20);
        // 3 added 10 s ago: the period started at 2.
        let up = [ScaleEvent { change: 3, at: 0, outdated: false }];
        assert_eq!(scale_up_limit(5, &up, &[], &b["scaleUp"], 10_000), 6);
        assert_eq!(scale_up_limit(5, &up, &[], &b["scaleUp"], 16_000), 10, "the event left the 15 s period");
        // One pod per minute down.
        let down = [ScaleEvent { change: 1, at: 0, outdated: false }];
        assert_eq!(
            limit_with_behavior(5, 1, 1, 10, &[], &down, &b, 30_000),
            (5, "ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate")
        );
        assert_eq!(limit_with_behavior(5, 1, 1, 10, &[], &down, &b, 61_000).0, 4);
        assert_eq!(
            limit_with_behavior(5, 12, 1, 10, &[], &[], &b, 0),
            (10, "TooManyReplicas", "the desired replica count is more than the maximum replica count")
        );
        // Stabilization: within 60 s the highest recommendation holds a scale-down.
        let mut recs = vec![Recommendation { replicas: 5, at: 0 }];
        assert_eq!(stabilize_with_behavior(&mut recs, 5, 2, 0, 60_000, 30_000).0, 5);
        assert_eq!(stabilize_with_behavior(&mut recs, 5, 2, 0, 60_000, 95_000).0, 2);
        // Disabled stops scaling in that direction.
        let off = json!({"selectPolicy": "Disabled", "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}]});
        assert_eq!(scale_down_limit(5, &[], &[], &off, 0), 5);
    }
}
