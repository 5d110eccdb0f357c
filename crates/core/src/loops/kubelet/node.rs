//! The Node object a kubelet registers and the Lease it renews: what the node looks like
//! to the API (`pkg/kubelet/kubelet_node_status.go`, `pkg/kubelet/nodelease`).

use crate::foundation::sim::{rfc3339, Millis};
use crate::foundation::value::{json, Value};

/// The `ephemeral-storage` capacity a node reports unless its spec sets one.
pub const DEFAULT_EPHEMERAL_STORAGE: &str = "102626232Ki";

/// A node of the simulated cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeSpec {
    pub name: String,
    /// cpu, memory, pods, ephemeral-storage (and any extended resource) as quantities; what
    /// is left out gets the kubelet's defaults in [`node_object`].
    pub capacity: crate::foundation::value::Map,
    pub labels: crate::foundation::value::Map,
    pub taints: Vec<Value>,
}

impl NodeSpec {
    pub fn worker(name: &str, zone: &str, cpu: &str, memory: &str) -> Self {
        let mut labels = crate::foundation::value::Map::new();
        labels.insert("topology.kubernetes.io/zone", json!(zone));
        let mut capacity = crate::foundation::value::Map::new();
        capacity.insert("cpu", json!(cpu));
        capacity.insert("memory", json!(memory));
        capacity.insert("pods", json!("110"));
        NodeSpec { name: name.into(), capacity, labels, taints: vec![] }
    }
}

/// The pod CIDR of the `i`th node: 10.244.i.0/24 for small clusters, a /24 of
/// 10.64.0.0/10 for large ones.
pub fn pod_cidr(i: usize, total: usize) -> (u32, String) {
    let base: u32 =
        if total <= 256 { (10 << 24) | (244 << 16) | ((i as u32) << 8) } else { (10 << 24) | ((64 + (i as u32 >> 8)) << 16) | ((i as u32 & 255) << 8) };
    (base, format!("{}/24", crate::apiserver::ip_string(base)))
}

/// The Node object a kubelet registers.
pub fn node_object(spec: &NodeSpec, index: usize, total: usize, now: Millis) -> Value {
    let mut labels = spec.labels.clone();
    for (k, v) in [
        ("kubernetes.io/hostname", spec.name.as_str()),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        ("beta.kubernetes.io/os", "linux"),
        ("beta.kubernetes.io/arch", "amd64"),
    ] {
        labels.entry(k.to_string()).or_insert(json!(v));
    }
    let mut capacity = spec.capacity.clone();
    let mem_milli = capacity.get("memory").and_then(crate::foundation::quantity::value_milli).unwrap_or(8 << 30 << 10);
    capacity.insert("memory", json!(format!("{}Ki", mem_milli / 1000 / 1024)));
    // The node file system (`/var/lib/kubelet`), as cAdvisor's statfs reports it: a kind node
    // shares the host's disk, here a 100G volume with 102626232Ki of usable blocks.
    capacity.entry("ephemeral-storage").or_insert(json!(DEFAULT_EPHEMERAL_STORAGE));
    capacity.entry("hugepages-1Gi").or_insert(json!("0"));
    capacity.entry("hugepages-2Mi").or_insert(json!("0"));
    capacity.entry("pods").or_insert(json!("110"));
    let mut allocatable = capacity.clone();
    allocatable.insert("memory", json!(format!("{}Ki", (mem_milli / 1000 - (100 << 20)) / 1024)));
    // Allocatable is capacity less reservations and the hard eviction threshold
    // (`nodestatus.MachineInfo`, `cm.GetNodeAllocatableAbsolute`): kind's kubelet configuration
    // reserves nothing and sets `evictionHard: {nodefs.available: "0%"}`, so its nodes report
    // the whole disk as allocatable ephemeral-storage.
    // Quantities as the API server serialises them (`8388608Ki` is `8Gi`).
    for m in [&mut capacity, &mut allocatable] {
        for v in m.values_mut() {
            if let Some(q) = v.as_str().map(crate::foundation::quantity::canonical) {
                *v = json!(q);
            }
        }
    }
    let (_, cidr) = pod_cidr(index, total);
    let ip = format!("172.18.{}.{}", (index + 2) / 256, (index + 2) % 256);
    let ts = rfc3339(now);
    let cond = |ty: &str, st: &str, reason: &str, msg: &str| json!({"type": ty, "status": st, "reason": reason, "message": msg, "lastHeartbeatTime": ts, "lastTransitionTime": ts});
    let mut node = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": spec.name, "labels": labels,
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr], "providerID": format!("kind://docker/kubeloop/{}", spec.name), "taints": if spec.taints.is_empty() { Value::Null } else { json!(spec.taints.clone()) }},
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": [
                cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": spec.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": format!("{:032x}", index + 1), "systemUUID": format!("{:032x}", index + 1), "bootID": format!("{:032x}", index + 7),
                "kernelVersion": "6.12.0-kubeloop", "osImage": "Debian GNU/Linux 12 (bookworm)", "containerRuntimeVersion": "containerd://2.1.4",
                "kubeletVersion": "v1.36.0", "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"},
        }
    });
    // An empty taint list is left out, as the API server's JSON leaves it out.
    if let Some(spec) = node.get_mut("spec").and_then(Value::as_object_mut) {
        spec.retain(|_, v| !v.is_null());
    }
    node
}

/// The node's Lease in `kube-node-lease`.
pub fn lease_object(node: &str, node_uid: &str, now: Millis) -> Value {
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": node, "namespace": "kube-node-lease",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid}]},
        "spec": {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": crate::foundation::sim::rfc3339_micro(now)}})
}

/// The CSINode a kubelet registers for its node (`nodeinfomanager.go`): owned by the Node,
/// one entry per CSI driver whose node plugin registered, with the node ID the driver
/// reported (the node name here) and its topology keys.
pub fn csinode_object(node: &str, node_uid: &str, drivers: &[crate::loops::csi::CsiDriverSpec]) -> Value {
    let entries: Vec<Value> = drivers
        .iter()
        .map(|d| {
            let mut e = json!({"name": d.name, "nodeID": node});
            if d.zonal {
                e["topologyKeys"] = json!([crate::loops::csi::ZONE_KEY]);
            }
            e
        })
        .collect();
    json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": node,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid}]},
        "spec": {"drivers": entries}})
}
