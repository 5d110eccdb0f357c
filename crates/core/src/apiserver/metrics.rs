//! The resource metrics API, `metrics.k8s.io/v1beta1` `PodMetrics` and `NodeMetrics`, as
//! metrics-server serves it behind the API server's aggregation layer
//! (`kubernetes-sigs/metrics-server`: `pkg/scraper`, `pkg/storage/{pod,node}.go`).
//!
//! Every `--metric-resolution` (15 s) the cluster asks the kubelets, through
//! [`KubeletClient::resource_stats`], for each running container's cumulative CPU time and
//! working set. The last two scrapes are kept: CPU usage is the rate between them, memory
//! the last value, `window` the time between them and `timestamp` the last scrape. A pod is
//! served once both scrapes saw it; until then `kubectl top` says the metrics are not
//! available yet. Nothing is stored in etcd and nothing can be written.

use super::*;
use crate::foundation::quantity::format_bytes;
use crate::foundation::sort::CollectTree;

/// metrics-server's `--metric-resolution`.
pub const METRIC_RESOLUTION: Millis = 15_000;

/// What a node's kubelet runs apart from pods (kubelet, container runtime, system
/// daemons): added to the pods' usage in a NodeMetrics.
pub const NODE_SYSTEM_CPU_MILLI: u64 = 25;
pub const NODE_SYSTEM_MEMORY: u64 = 320 << 20;

/// One container as the kubelet's resource endpoint reports it (`/metrics/resource`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerStats {
    pub name: String,
    /// When this instance of the container started: a restart resets the counter.
    pub started: Millis,
    /// Cumulative CPU time, in microseconds (`container_cpu_usage_seconds_total`).
    pub cpu_us: u64,
    /// `container_memory_working_set_bytes`.
    pub memory: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodStats {
    pub namespace: String,
    pub name: String,
    pub containers: Vec<ContainerStats>,
}

/// One node's answer to a scrape: the pods it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeStats {
    pub name: String,
    pub pods: Vec<PodStats>,
}

/// (namespace, pod, container) -> (node, started, cumulative CPU µs, memory).
type ContainerSamples = BTreeMap<(String, String, String), (String, Millis, u64, u64)>;
/// (namespace, pod) -> (node, each container's usage).
pub type PodUsage = BTreeMap<(String, String), (String, Vec<(String, Usage)>)>;

/// One scrape of every kubelet that answered.
#[derive(Debug, Clone, Default)]
struct Scrape {
    at: Millis,
    containers: ContainerSamples,
    nodes: BTreeSet<String>,
}

/// What metrics-server holds: the last two scrapes.
#[derive(Debug, Clone, Default)]
pub struct MetricsServer {
    prev: Option<Scrape>,
    last: Option<Scrape>,
}

/// A container's usage over the window: CPU in nanocores, memory in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub cpu_nano: u64,
    pub memory: u64,
}

impl MetricsServer {
    /// Take in one scrape.
    pub fn record(&mut self, at: Millis, nodes: Vec<NodeStats>) {
        let mut s = Scrape { at, ..Scrape::default() };
        for n in nodes {
            for p in n.pods {
                for c in p.containers {
                    s.containers.insert((p.namespace.clone(), p.name.clone(), c.name), (n.name.clone(), c.started, c.cpu_us, c.memory));
                }
            }
            s.nodes.insert(n.name);
        }
        self.prev = self.last.take();
        self.last = Some(s);
    }

    /// Each pod's containers with their usage between the last two scrapes, and the
    /// window; a container that restarted in between (or was not seen twice) is left out.
    pub fn pod_usage(&self) -> Option<(Millis, Millis, PodUsage)> {
        let (prev, last) = (self.prev.as_ref()?, self.last.as_ref()?);
        let window = last.at.saturating_sub(prev.at).max(1);
        let mut out: PodUsage = BTreeMap::new();
        for ((ns, pod, ctr), (node, started, cpu, mem)) in &last.containers {
            let Some((_, p_started, p_cpu, _)) = prev.containers.get(&(ns.clone(), pod.clone(), ctr.clone())) else { continue };
            if p_started != started || p_cpu > cpu {
                continue;
            }
            // µs of CPU per ms of wall time, in nanocores: Δµs × 10⁶ / Δms.
            let cpu_nano = (cpu - p_cpu).saturating_mul(1_000_000) / window;
            let e = out.entry((ns.clone(), pod.clone())).or_insert_with(|| (node.clone(), Vec::new()));
            e.1.push((ctr.clone(), Usage { cpu_nano, memory: *mem }));
        }
        Some((last.at, window, out))
    }

    /// Nodes answered in both scrapes, with their usage: their pods' and the system's.
    pub fn node_usage(&self) -> Option<(Millis, Millis, BTreeMap<String, Usage>)> {
        let (at, window, pods) = self.pod_usage()?;
        let (prev, last) = (self.prev.as_ref()?, self.last.as_ref()?);
        let mut out: BTreeMap<String, Usage> = last
            .nodes
            .iter()
            .filter(|n| prev.nodes.contains(*n))
            .map(|n| (n.clone(), Usage { cpu_nano: NODE_SYSTEM_CPU_MILLI * 1_000_000, memory: NODE_SYSTEM_MEMORY }))
            .collect_tree();
        for (node, ctrs) in pods.values() {
            if let Some(u) = out.get_mut(node) {
                for (_, c) in ctrs {
                    u.cpu_nano += c.cpu_nano;
                    u.memory += c.memory;
                }
            }
        }
        Some((at, window, out))
    }
}

/// CPU in nanocores as a Quantity prints (`250m`, `1`, `12345n`).
pub fn cpu_quantity(nano: u64) -> String {
    if nano == 0 {
        "0".into()
    } else if nano.is_multiple_of(1_000_000_000) {
        format!("{}", nano / 1_000_000_000)
    } else if nano.is_multiple_of(1_000_000) {
        format!("{}m", nano / 1_000_000)
    } else if nano.is_multiple_of(1000) {
        format!("{}u", nano / 1000)
    } else {
        format!("{nano}n")
    }
}

/// Bytes as a BinarySI Quantity prints (`10Mi`, `2460Ki`, `1234`).
pub fn memory_quantity(bytes: u64) -> String {
    if bytes == 0 {
        "0".into()
    } else {
        format_bytes(bytes as i64 * 1000)
    }
}

/// Go's `time.Duration.String()` of a window in milliseconds, as metav1.Duration serialises.
fn window_string(ms: Millis) -> String {
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{}s", format!("{}.{:03}", ms / 1000, ms % 1000).trim_end_matches('0'))
    }
}

impl ApiServer {
    /// One scrape of the kubelets (the cluster calls this every [`METRIC_RESOLUTION`]).
    pub fn scrape_metrics(&mut self, kubelet: Option<&dyn KubeletClient>) {
        let stats = kubelet.map(|k| k.resource_stats(self.now)).unwrap_or_default();
        self.metrics.record(self.now, stats);
    }

    /// GET and LIST of `pods.metrics.k8s.io` and `nodes.metrics.k8s.io`; anything else is
    /// refused as metrics-server refuses it.
    #[inline(never)]
    pub(super) fn serve_metrics(&self, res: &ResourceInfo, rid: ResourceId, ns: &str, req: &Request) -> Result<Object, Status> {
        if !matches!(req.verb, Verb::Get | Verb::List) || !req.subresource.is_empty() {
            return Err(Status::new(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"));
        }
        let now = rfc3339(self.now);
        let items: Vec<Value> = if rid == api::rid::PODMETRICS {
            let Some((at, window, pods)) = self.metrics.pod_usage() else { return self.metrics_list_or_missing(res, req, Vec::new()) };
            pods.into_iter()
                .filter(|((pns, _), _)| ns.is_empty() || pns == ns)
                .filter_map(|((pns, pod), (_, ctrs))| {
                    let obj = self.store.get_by(api::rid::POD, &pns, &pod)?;
                    let mut meta = json!({"name": pod, "namespace": pns, "creationTimestamp": now});
                    if let Some(l) = get(obj, &["metadata", "labels"]) {
                        meta["labels"] = l.clone();
                    }
                    let containers: Vec<Value> =
                        ctrs.iter().map(|(n, u)| json!({"name": n, "usage": {"cpu": cpu_quantity(u.cpu_nano), "memory": memory_quantity(u.memory)}})).collect();
                    Some(json!({"kind": "PodMetrics", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": meta,
                        "timestamp": rfc3339(at), "window": window_string(window), "containers": containers}))
                })
                .collect()
        } else {
            let Some((at, window, nodes)) = self.metrics.node_usage() else { return self.metrics_list_or_missing(res, req, Vec::new()) };
            nodes
                .into_iter()
                .filter_map(|(name, u)| {
                    let obj = self.store.get_by(api::rid::NODE, "", &name)?;
                    let mut meta = json!({"name": name, "creationTimestamp": now});
                    if let Some(l) = get(obj, &["metadata", "labels"]) {
                        meta["labels"] = l.clone();
                    }
                    Some(json!({"kind": "NodeMetrics", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": meta,
                        "timestamp": rfc3339(at), "window": window_string(window), "usage": {"cpu": cpu_quantity(u.cpu_nano), "memory": memory_quantity(u.memory)}}))
                })
                .collect()
        };
        self.metrics_list_or_missing(res, req, items)
    }

    fn metrics_list_or_missing(&self, res: &ResourceInfo, req: &Request, items: Vec<Value>) -> Result<Object, Status> {
        if req.verb == Verb::Get {
            let found = items.into_iter().find(|i| api::name(i) == req.name);
            return found.map(Object::new).ok_or_else(|| {
                let kind = if res.kind == "PodMetrics" { "podmetrics" } else { "nodemetrics" };
                let shown = if res.namespaced { format!("{}/{}", req.namespace, req.name) } else { req.name.clone() };
                Status::new(404, "NotFound", format!("{kind}.metrics.k8s.io {shown:?} not found"))
            });
        }
        Ok(Object::new(json!({"kind": format!("{}List", res.kind), "apiVersion": "metrics.k8s.io/v1beta1", "metadata": {}, "items": items})))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, pods: &[(&str, u64, u64, Millis)]) -> NodeStats {
        NodeStats {
            name: name.into(),
            pods: pods
                .iter()
                .map(|(p, cpu, mem, started)| PodStats {
                    namespace: "default".into(),
                    name: p.to_string(),
                    containers: vec![ContainerStats { name: "c".into(), started: *started, cpu_us: *cpu, memory: *mem }],
                })
                .collect(),
        }
    }

    #[test]
    fn cpu_is_the_rate_between_the_last_two_scrapes() {
        let mut m = MetricsServer::default();
        m.record(0, vec![node("n", &[("a", 0, 10 << 20, 0)])]);
        assert!(m.pod_usage().is_none(), "one scrape is not enough for a rate");
        // 3.75 s of CPU in 15 s: a quarter of a core.
        m.record(15_000, vec![node("n", &[("a", 3_750_000, 12 << 20, 0), ("b", 1_000, 1 << 20, 14_000)])]);
        let (at, window, pods) = m.pod_usage().unwrap();
        assert_eq!((at, window), (15_000, 15_000));
        let a = &pods[&("default".to_string(), "a".to_string())].1[0].1;
        assert_eq!(cpu_quantity(a.cpu_nano), "250m");
        assert_eq!(memory_quantity(a.memory), "12Mi");
        assert!(!pods.contains_key(&("default".to_string(), "b".to_string())), "b was seen once");
        let (_, _, nodes) = m.node_usage().unwrap();
        assert_eq!(cpu_quantity(nodes["n"].cpu_nano), "275m");
    }

    #[test]
    fn a_restarted_container_has_no_rate_until_it_is_seen_twice() {
        let mut m = MetricsServer::default();
        m.record(0, vec![node("n", &[("a", 5_000_000, 1, 0)])]);
        m.record(15_000, vec![node("n", &[("a", 1_000, 1, 10_000)])]);
        assert!(m.pod_usage().unwrap().2.is_empty());
    }

    #[test]
    fn quantities_print_as_the_api_does() {
        assert_eq!(cpu_quantity(1_000_000_000), "1");
        assert_eq!(cpu_quantity(1_500_000), "1500u");
        assert_eq!(cpu_quantity(123), "123n");
        assert_eq!(memory_quantity(2460 * 1024), "2460Ki");
        assert_eq!(window_string(15_000), "15s");
        assert_eq!(window_string(15_500), "15.5s");
    }
}
