//! API Priority and Fairness (`k8s.io/apiserver/pkg/util/flowcontrol`): every request,
//! after authentication and before authorization, is classified by the FlowSchemas
//! (lowest `matchingPrecedence` first) into a priority level, and must find seats there.
//!
//! A limited level has `ceil(600 × nominalConcurrencyShares / Σ shares)` seats (600 =
//! `--max-requests-inflight` 400 + `--max-mutating-requests-inflight` 200). A request takes
//! one seat, a LIST one per 100 kB it returns (at most 10, and at most the level's
//! `max(1, min(ceil(0.15 × seats), seats / handSize))`), for as long as it runs:
//! kubeloop's model of that time is 2 ms plus 0.1 ms per object listed. When the level is
//! full the request waits in the level's queues (`Queue`: at most `handSize ×
//! queueLengthLimit` waiting for one flow, `queues × queueLengthLimit` for the level, and
//! at most 15 s, a quarter of the request timeout), or is refused at once (`Reject`);
//! refusal is `429 Too many requests, please try again later.` (plain text) with
//! `Retry-After: 1` (upstream's grows to 32 s under sustained refusals). The
//! `exempt` level (`system:masters`) never waits.
//!
//! kubeloop's requests take no simulated time: a queued request is carried out at once,
//! and its wait is what the trace and `dump_priority_levels` report. kubeloop's own loops
//! are counted but never queued or refused: they fire their requests in instant bursts
//! where real components spread them out with client-side rate limits. A level's queues
//! are served first come first served, where upstream's fair queuing lets a quiet flow's
//! requests pass a noisy flow's queued ones. Borrowing between
//! levels (`lendablePercent`, `borrowingLimitPercent`) is not modelled: each level keeps its
//! nominal seats.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::store::Store;
use crate::foundation::api::{get, get_array, get_i64, get_str, rid, ResourceInfo};
use crate::foundation::sim::Millis;
use crate::foundation::sort::{CollectTree, Sort};
use crate::foundation::value::Value;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};

/// The server's concurrency limit: `--max-requests-inflight` + `--max-mutating-requests-inflight`.
pub const SERVER_CONCURRENCY: i64 = 600;
/// How long a request may wait in a queue: a quarter of the 60 s request timeout.
pub const MAX_WAIT: Millis = 15_000;
const BYTES_PER_SEAT: u64 = 100_000;
const MAX_SEATS: i64 = 10;

/// What a request is, for classification.
pub struct Attrs<'a> {
    pub user: &'a UserInfo,
    pub verb: &'a str,
    pub res: &'a ResourceInfo,
    pub subresource: &'a str,
    pub namespace: &'a str,
}

/// Where a request went.
#[derive(Debug, Clone, PartialEq)]
pub enum Admit {
    /// The exempt level: no seats, no queue.
    Exempt { flow_schema: String },
    /// Seats found, after `waited` ms in a queue (0 if at once).
    Dispatched { flow_schema: String, level: String, seats: i64, waited: Millis },
    /// Refused: the queues were full, the wait too long, or the level rejects.
    Rejected { flow_schema: String, level: String, why: &'static str },
}

#[derive(Debug, Default, Clone)]
struct Level {
    /// When each seat is next free (a min-heap over the level's seats).
    seats: BinaryHeap<Reverse<Millis>>,
    /// Requests dispatched to start later (they wait in the queues): start, sequence, flow.
    waiting: BTreeMap<(Millis, u64), String>,
    /// How many of `waiting` each flow has.
    per_flow: HashMap<String, i64>,
    /// Requests' runs, for the dump (pruned now and then).
    runs: Vec<(Millis, Millis)>,
    seq: u64,
    dispatched: u64,
    rejected: u64,
    timed_out: u64,
}

impl Level {
    /// Forget what has started by `now`.
    fn advance(&mut self, now: Millis) {
        while let Some((&(start, seq), _)) = self.waiting.first_key_value() {
            if start > now {
                break;
            }
            if let Some(flow) = self.waiting.remove(&(start, seq)) {
                if let Some(n) = self.per_flow.get_mut(&flow) {
                    *n -= 1;
                    if *n <= 0 {
                        self.per_flow.remove(&flow);
                    }
                }
            }
        }
        if self.runs.len() > 4096 {
            self.runs.retain(|(_, end)| *end > now);
        }
    }
}

#[derive(Debug, Default, Clone)]
pub struct FlowControl {
    levels: BTreeMap<String, Level>,
    /// Classification by (user, groups, verb, resource, namespaced), valid for the
    /// FlowSchema and PriorityLevelConfiguration revisions it was made at.
    cache: HashMap<(String, String, usize), (String, String)>,
    cache_at: (u64, u64),
    /// When each client's last request ends: a client (a controller's worker, a kubelet,
    /// kubectl) sends its next request once the last one is answered.
    clients: HashMap<String, Millis>,
}

fn matches_list(list: &[Value], want: &str) -> bool {
    list.iter().any(|v| v.as_str() == Some("*") || v.as_str() == Some(want))
}

/// `matchesASubject`.
fn subject_matches(s: &Value, user: &UserInfo) -> bool {
    match get_str(s, &["kind"]) {
        Some("User") => get_str(s, &["user", "name"]).is_some_and(|n| n == "*" || n == user.name),
        Some("Group") => get_str(s, &["group", "name"]).is_some_and(|n| n == "*" || user.groups.iter().any(|g| g == n)),
        Some("ServiceAccount") => {
            let (ns, name) = (get_str(s, &["serviceAccount", "namespace"]).unwrap_or(""), get_str(s, &["serviceAccount", "name"]).unwrap_or(""));
            match user.name.strip_prefix("system:serviceaccount:").and_then(|r| r.split_once(':')) {
                Some((un, uname)) => un == ns && (name == "*" || name == uname),
                None => false,
            }
        }
        _ => false,
    }
}

/// `matchesPolicyRule` for resource requests.
fn rule_matches(rule: &Value, a: &Attrs) -> bool {
    if !get_array(rule, &["subjects"]).iter().any(|s| subject_matches(s, a.user)) {
        return false;
    }
    let resource = if a.subresource.is_empty() { a.res.plural.to_string() } else { format!("{}/{}", a.res.plural, a.subresource) };
    get_array(rule, &["resourceRules"]).iter().any(|r| {
        matches_list(get_array(r, &["verbs"]), a.verb)
            && matches_list(get_array(r, &["apiGroups"]), a.res.group)
            && matches_list(get_array(r, &["resources"]), &resource)
            && if a.namespace.is_empty() {
                crate::foundation::api::get_bool(r, &["clusterScope"]) == Some(true)
            } else {
                matches_list(get_array(r, &["namespaces"]), a.namespace)
            }
    })
}

/// The FlowSchema that matches first, and its priority level (`catch-all` if none).
pub fn classify(store: &Store, a: &Attrs) -> (String, String) {
    let mut schemas: Vec<&Value> = store.list(rid::FLOWSCHEMA, None).map(|o| &**o).collect();
    schemas.sort_stable_by_key(|f| (get_i64(f, &["spec", "matchingPrecedence"]).unwrap_or(1000), crate::foundation::api::name(f).to_string()));
    for f in schemas {
        if get_array(f, &["spec", "rules"]).iter().any(|r| rule_matches(r, a)) {
            let level = get_str(f, &["spec", "priorityLevelConfiguration", "name"]).unwrap_or("catch-all");
            return (crate::foundation::api::name(f).to_string(), level.to_string());
        }
    }
    ("catch-all".into(), "catch-all".into())
}

/// What kubeloop's model leaves out of a FlowSchema or PriorityLevelConfiguration being
/// written, said as a warning: borrowing between levels, and rules for non-resource URLs
/// (kubeloop's API server classifies resource requests only).
pub fn unsimulated_fields(obj: &Value) -> Option<String> {
    let name = crate::foundation::api::name(obj);
    match get_str(obj, &["kind"]) {
        Some("PriorityLevelConfiguration") => {
            let lends = get_i64(obj, &["spec", "limited", "lendablePercent"]).is_some_and(|p| p > 0);
            let borrows = get(obj, &["spec", "limited", "borrowingLimitPercent"]).is_some_and(|b| !b.is_null());
            (lends || borrows).then(|| {
                format!("kubeloop does not simulate borrowing between priority levels: prioritylevelconfiguration {name:?} keeps its nominal seats (lendablePercent and borrowingLimitPercent are stored only)")
            })
        }
        Some("FlowSchema") => get_array(obj, &["spec", "rules"])
            .iter()
            .any(|r| !get_array(r, &["nonResourceRules"]).is_empty())
            .then(|| format!("kubeloop does not classify non-resource requests: the nonResourceRules of flowschema {name:?} match nothing")),
        _ => None,
    }
}

/// A request's width in seats (`WorkEstimator`; `SizeBasedListCostEstimate`, on since
/// 1.34): a LIST takes one seat per 100 kB of the objects it returns, at most 10.
pub fn seats(verb: &str, listed_bytes: u64) -> i64 {
    if verb == "list" {
        (listed_bytes.div_ceil(BYTES_PER_SEAT) as i64).clamp(1, MAX_SEATS)
    } else {
        1
    }
}

/// The bootstrap configuration (`pkg/apis/flowcontrol/bootstrap/default.go`): the
/// mandatory and suggested PriorityLevelConfigurations and FlowSchemas, defaulted.
pub fn bootstrap_objects() -> Vec<Value> {
    let all: Value = serde_json::from_str(include_str!("../../data/apf-bootstrap.json")).unwrap_or(Value::Null);
    let mut out: Vec<Value> = get_array(&all, &["priorityLevelConfigurations"]).to_vec();
    // The configuration controller's `Dangling` condition: every bootstrap FlowSchema's
    // priority level exists.
    out.extend(get_array(&all, &["flowSchemas"]).iter().map(|f| {
        let mut f = f.clone();
        let pl = get_str(&f, &["spec", "priorityLevelConfiguration", "name"]).unwrap_or("").to_string();
        f["status"] = crate::foundation::value::json!({"conditions": [{
            "type": "Dangling", "status": "False", "lastTransitionTime": crate::foundation::sim::rfc3339(0), "reason": "Found",
            "message": format!("This FlowSchema references the PriorityLevelConfiguration object named {pl:?} and it exists"),
        }]});
        f
    }));
    out
}

/// kubeloop's model of how long a request runs.
pub fn duration(listed: usize) -> Millis {
    2 + listed as Millis / 10
}

/// A level's nominal seats.
fn nominal(store: &Store, level: &Value) -> i64 {
    let shares = |l: &Value| get_i64(l, &["spec", "limited", "nominalConcurrencyShares"]).unwrap_or(0);
    let total: i64 = store.list(rid::PRIORITYLEVEL, None).filter(|l| get_str(l, &["spec", "type"]) == Some("Limited")).map(|l| shares(l)).sum();
    if total == 0 {
        return 1;
    }
    ((SERVER_CONCURRENCY * shares(level) + total - 1) / total).max(1)
}

impl FlowControl {
    /// Classify, then find seats for a request of `width` seats running `dur` ms, sent by
    /// `client` at `now` (or when its previous request is answered, if later).
    pub fn admit(&mut self, store: &Store, a: &Attrs, client: &str, now: Millis, width: i64, dur: Millis, limited: bool) -> Admit {
        let at = (store.last_write(rid::FLOWSCHEMA), store.last_write(rid::PRIORITYLEVEL));
        if at != self.cache_at {
            self.cache.clear();
            self.cache_at = at;
        }
        let key = (
            format!("{}|{}", a.user.name, a.user.groups.join(",")),
            format!("{}|{}|{}", a.verb, a.subresource, a.namespace.is_empty()),
            a.res as *const _ as usize,
        );
        let (fs, level_name) = match self.cache.get(&key) {
            Some(c) => c.clone(),
            None => {
                let c = classify(store, a);
                self.cache.insert(key, c.clone());
                c
            }
        };
        let Some(pl) = store.get_by(rid::PRIORITYLEVEL, "", &level_name) else {
            return Admit::Exempt { flow_schema: fs };
        };
        if get_str(pl, &["spec", "type"]) != Some("Limited") {
            return Admit::Exempt { flow_schema: fs };
        }
        let limit = nominal(store, pl);
        let distinguisher = store.get_by(rid::FLOWSCHEMA, "", &fs).and_then(|f| get_str(f, &["spec", "distinguisherMethod", "type"])).unwrap_or("");
        let flow = match distinguisher {
            "ByUser" => format!("{fs}/{}", a.user.name),
            "ByNamespace" => format!("{fs}/{}", a.namespace),
            _ => fs.clone(),
        };
        let response = get(pl, &["spec", "limited", "limitResponse"]);
        let queuing = response.filter(|r| get_str(r, &["type"]) == Some("Queue")).and_then(|r| r.get("queuing"));
        let level = self.levels.entry(level_name.clone()).or_default();
        level.advance(now);
        if !limited {
            level.dispatched += 1;
            return Admit::Dispatched { flow_schema: fs, level: level_name, seats: width, waited: 0 };
        }
        let sent = self.clients.get(client).copied().unwrap_or(0).max(now);
        let now = sent;
        let hand = queuing.and_then(|q| get_i64(q, &["handSize"])).unwrap_or(8).max(1);
        let width = width.min(((limit * 15 + 99) / 100).min(limit / hand).max(1));
        // The level's seats, as many as its nominal limit (it may have changed).
        while (level.seats.len() as i64) < limit {
            level.seats.push(Reverse(0));
        }
        while (level.seats.len() as i64) > limit {
            level.seats.pop();
        }
        // The earliest start with `width` seats free: the width-th seat to come free.
        let mut taken: Vec<Millis> = (0..width).filter_map(|_| level.seats.pop().map(|Reverse(t)| t)).collect();
        let start = taken.iter().copied().max().unwrap_or(0).max(now);
        let waited = start - now;
        if waited > 0 {
            // Waiting for seats: queued, or refused (out of line: crates/split keeps a first
            // visit's download to what it runs).
            if let Err(why) = queue(level, &mut taken, queuing, flow, hand, start, waited) {
                return Admit::Rejected { flow_schema: fs, level: level_name, why };
            }
        }
        for _ in taken.drain(..) {
            level.seats.push(Reverse(start + dur));
        }
        level.runs.push((start, start + dur));
        level.dispatched += 1;
        self.clients.insert(client.to_string(), start + dur);
        Admit::Dispatched { flow_schema: fs, level: level_name, seats: width, waited }
    }

    /// `/debug/api_priority_and_fairness/dump_priority_levels` at `now`.
    pub fn dump(&self, store: &Store, now: Millis) -> String {
        let mut out = [
            "PriorityLevelName",
            "ActiveQueues",
            "IsIdle",
            "IsQuiescing",
            "WaitingRequests",
            "ExecutingRequests",
            "DispatchedRequests",
            "RejectedRequests",
            "TimedoutRequests",
            "CancelledRequests",
        ]
        .join(",\t")
            + "\n";
        for pl in store.list(rid::PRIORITYLEVEL, None) {
            let name = crate::foundation::api::name(pl);
            let l = self.levels.get(name).cloned().unwrap_or_default();
            let waiting = l.waiting.keys().filter(|(s, _)| *s > now).count();
            let executing = l.runs.iter().filter(|(s, e)| *s <= now && now < *e).count();
            let queues: std::collections::BTreeSet<&str> = l.waiting.iter().filter(|((s, _), _)| *s > now).map(|(_, f)| f.as_str()).collect_tree();
            let cells = [
                name.to_string(),
                queues.len().to_string(),
                (waiting + executing == 0).to_string(),
                "false".into(),
                waiting.to_string(),
                executing.to_string(),
                l.dispatched.to_string(),
                l.rejected.to_string(),
                l.timed_out.to_string(),
                "0".into(),
            ];
            out.push_str(&cells.join(",\t"));
            out.push('\n');
        }
        out
    }
}

/// A request that must wait for seats: queue it on its flow, or say why it is refused (its
/// seats given back).
#[inline(never)]
fn queue(
    level: &mut Level,
    taken: &mut Vec<Millis>,
    queuing: Option<&Value>,
    flow: String,
    hand: i64,
    start: Millis,
    waited: Millis,
) -> Result<(), &'static str> {
    let refuse = |level: &mut Level, taken: &mut Vec<Millis>, timed_out: bool| {
        for t in taken.drain(..) {
            level.seats.push(Reverse(t));
        }
        level.rejected += 1;
        level.timed_out += u64::from(timed_out);
    };
    let Some(q) = queuing else {
        refuse(level, taken, false);
        return Err("the level rejects requests when its seats are taken");
    };
    let (queues, per_queue) = (get_i64(q, &["queues"]).unwrap_or(64), get_i64(q, &["queueLengthLimit"]).unwrap_or(50));
    if level.per_flow.get(&flow).copied().unwrap_or(0) >= hand * per_queue || level.waiting.len() as i64 >= queues * per_queue {
        refuse(level, taken, false);
        return Err("its queues are full");
    }
    if waited > MAX_WAIT {
        refuse(level, taken, true);
        return Err("it waited in the queue for longer than 15s");
    }
    level.seq += 1;
    level.waiting.insert((start, level.seq), flow.clone());
    *level.per_flow.entry(flow).or_default() += 1;
    Ok(())
}
