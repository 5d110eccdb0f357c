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
#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub enabled: bool,
    pub records: Vec<Record>,
    pub requests: Vec<RequestLog>,
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
        }
    }
}
