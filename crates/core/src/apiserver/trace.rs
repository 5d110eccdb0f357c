//! The records the UI draws: every stage of every request, and every loop's decision,
//! tagged with the step of the apply-to-running-pod diagram it belongs to.

use crate::foundation::sim::Millis;
use crate::foundation::value::Value;
use serde::Serialize;

/// A step of the diagram in `seeds/004`: `1`..`11`, or a failure path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Flow {
    #[serde(rename = "1")]
    Request,
    #[serde(rename = "2")]
    AuthnAuthz,
    #[serde(rename = "3")]
    MutatingAdmission,
    #[serde(rename = "4")]
    Validation,
    #[serde(rename = "5")]
    Etcd,
    #[serde(rename = "6")]
    DeploymentController,
    #[serde(rename = "7")]
    ReplicaSetController,
    #[serde(rename = "8")]
    Scheduler,
    #[serde(rename = "9")]
    Kubelet,
    #[serde(rename = "10")]
    Runtime,
    #[serde(rename = "11")]
    Ready,
    #[serde(rename = "denied")]
    Denied,
    #[serde(rename = "pending")]
    Pending,
    #[serde(rename = "node-error")]
    NodeError,
}

impl Flow {
    pub fn as_str(self) -> &'static str {
        match self {
            Flow::Request => "1",
            Flow::AuthnAuthz => "2",
            Flow::MutatingAdmission => "3",
            Flow::Validation => "4",
            Flow::Etcd => "5",
            Flow::DeploymentController => "6",
            Flow::ReplicaSetController => "7",
            Flow::Scheduler => "8",
            Flow::Kubelet => "9",
            Flow::Runtime => "10",
            Flow::Ready => "11",
            Flow::Denied => "denied",
            Flow::Pending => "pending",
            Flow::NodeError => "node-error",
        }
    }
    pub const ALL: [Flow; 14] = [
        Flow::Request,
        Flow::AuthnAuthz,
        Flow::MutatingAdmission,
        Flow::Validation,
        Flow::Etcd,
        Flow::DeploymentController,
        Flow::ReplicaSetController,
        Flow::Scheduler,
        Flow::Kubelet,
        Flow::Runtime,
        Flow::Ready,
        Flow::Denied,
        Flow::Pending,
        Flow::NodeError,
    ];
}

/// One trace record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Record {
    /// Simulated milliseconds.
    pub t: Millis,
    pub flow: Flow,
    /// The finer stage: `authentication`, `authorization`, `mutating-admission`,
    /// `schema`, `validation`, `validating-admission`, `etcd`, `watch`, or a loop's step.
    pub stage: &'static str,
    pub component: String,
    pub user: String,
    pub verb: String,
    /// `Kind/namespace/name`.
    pub object: String,
    #[serde(rename = "resourceVersion")]
    pub resource_version: String,
    /// `ok`, `denied`, `error`, `pending`, ...
    pub result: &'static str,
    pub message: String,
    /// Which request this record belongs to (index into the request log), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<usize>,
}

/// One API request as the audit log would show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestLog {
    pub t: Millis,
    pub user: String,
    pub verb: String,
    pub object: String,
    pub code: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Value>,
}

/// Collects records; `enabled = false` keeps only counters (benchmarks).
///
/// Records and requests are numbered from the start of the run: [`Record::request`], the
/// page's "seen so far" and a followed object's journey keep those numbers. With a
/// `window` (the page sets one), only about the latest `window` of each are kept and the
/// oldest are dropped, so that a tab left running does not grow without end; `record(i)`
/// of a dropped one is `None`, and `records_base()` says where the kept ones start.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub enabled: bool,
    records: Vec<Record>,
    requests: Vec<RequestLog>,
    records_base: usize,
    requests_base: usize,
    /// How many records and requests to keep at least (0: all of them).
    pub window: usize,
    /// Writes that reached etcd, counted even when records are off.
    pub writes: u64,
}

impl Trace {
    pub fn new(enabled: bool) -> Self {
        Trace { enabled, ..Default::default() }
    }
    pub fn push(&mut self, r: Record) {
        if self.enabled {
            self.records.push(r);
            self.records_base += trim(&mut self.records, self.window);
        }
    }
    pub fn push_request(&mut self, r: RequestLog) {
        if self.enabled {
            self.requests.push(r);
            self.requests_base += trim(&mut self.requests, self.window);
        }
    }
    /// The records kept, oldest first; the first is number `records_base()`.
    pub fn records(&self) -> &[Record] {
        &self.records
    }
    /// The number of the oldest record kept.
    pub fn records_base(&self) -> usize {
        self.records_base
    }
    /// The number the next record will get: how many were written in all.
    pub fn records_end(&self) -> usize {
        self.records_base + self.records.len()
    }
    /// Record number `i`, unless it was never written or was dropped from the window.
    pub fn record(&self, i: usize) -> Option<&Record> {
        i.checked_sub(self.records_base).and_then(|k| self.records.get(k))
    }
    /// The records from number `i` on (all kept ones if `i` was dropped), with the number
    /// of the first.
    pub fn records_from(&self, i: usize) -> (usize, &[Record]) {
        let k = i.saturating_sub(self.records_base).min(self.records.len());
        (self.records_base + k, &self.records[k..])
    }
    /// The requests kept, oldest first; the first is number `requests_base()`.
    pub fn requests(&self) -> &[RequestLog] {
        &self.requests
    }
    pub fn requests_base(&self) -> usize {
        self.requests_base
    }
    /// The number the next request will get.
    pub fn requests_end(&self) -> usize {
        self.requests_base + self.requests.len()
    }
    /// The requests from number `i` on (all kept ones if `i` was dropped).
    pub fn requests_from(&self, i: usize) -> &[RequestLog] {
        &self.requests[i.saturating_sub(self.requests_base).min(self.requests.len())..]
    }
}

/// Drop the oldest entries once there are a quarter more than `window`, down to
/// `window` (so that dropping costs a constant per entry); how many were dropped.
fn trim<T>(v: &mut Vec<T>, window: usize) -> usize {
    if window == 0 || v.len() <= window + window / 4 {
        return 0;
    }
    let drop = v.len() - window;
    v.drain(..drop);
    drop
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(t: Millis) -> Record {
        Record {
            t,
            flow: Flow::Etcd,
            stage: "etcd",
            component: String::new(),
            user: String::new(),
            verb: "create".into(),
            object: format!("ConfigMap/default/c{t}"),
            resource_version: t.to_string(),
            result: "ok",
            message: String::new(),
            request: None,
        }
    }

    #[test]
    fn a_window_keeps_the_latest_records_under_their_first_numbers() {
        let mut tr = Trace::new(true);
        tr.window = 8;
        for t in 0..100 {
            tr.push(record(t));
            assert!(tr.records().len() <= 10, "at most a quarter over the window");
            assert_eq!(tr.records_end(), t as usize + 1);
        }
        assert!(tr.records().len() >= 8);
        let base = tr.records_base();
        assert_eq!(base + tr.records().len(), 100);
        // Numbers keep their records; dropped ones are gone, not shifted.
        assert_eq!(tr.record(99).map(|r| r.t), Some(99));
        assert_eq!(tr.record(base).map(|r| r.t), Some(base as Millis));
        assert!(tr.record(base - 1).is_none());
        assert!(tr.record(100).is_none());
        let (from, rest) = tr.records_from(3);
        assert_eq!((from, rest.len()), (base, tr.records().len()));
        let (from, rest) = tr.records_from(98);
        assert_eq!((from, rest.iter().map(|r| r.t).collect::<Vec<_>>()), (98, vec![98, 99]));
        assert!(tr.records_from(500).1.is_empty());
    }

    #[test]
    fn without_a_window_everything_is_kept() {
        let mut tr = Trace::new(true);
        for t in 0..1000 {
            tr.push(record(t));
        }
        assert_eq!((tr.records_base(), tr.records().len()), (0, 1000));
        let mut off = Trace::new(false);
        off.push(record(1));
        assert_eq!(off.records_end(), 0);
    }
}
