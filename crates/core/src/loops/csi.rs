//! The storage systems under the cluster: simulated CSI drivers. A driver is what a cloud's
//! or a vendor's CSI plugin is to a real cluster — the thing that creates disks, attaches
//! them to machines and mounts them — described by how long each takes and whether its
//! volumes are tied to a zone. Its controller side (external-provisioner, external-attacher,
//! external-resizer) and node side (the kubelet's CSI calls) are loops that read this
//! description; `Fault::StorageDriverDown` makes both stop answering.

use crate::foundation::sim::Millis;

/// The driver of the default cluster's `standard` StorageClass.
pub const DEFAULT_DRIVER: &str = "disk.csi.kubeloop.dev";

/// The topology key of zonal volumes (a PV's node affinity, a CSINode's `topologyKeys`).
pub const ZONE_KEY: &str = "topology.kubernetes.io/zone";

/// A simulated CSI driver.
#[derive(Debug, Clone, PartialEq)]
pub struct CsiDriverSpec {
    /// The driver's name (a StorageClass's `provisioner`, a PV's `spec.csi.driver`).
    pub name: String,
    /// How long CreateVolume takes.
    pub provision_ms: Millis,
    /// How long ControllerPublishVolume (attaching to a node) takes.
    pub attach_ms: Millis,
    /// How long NodeStage and NodePublish (mounting on the node) take.
    pub mount_ms: Millis,
    /// Volumes live in one zone (node affinity on `topology.kubernetes.io/zone`).
    pub zonal: bool,
    /// Volumes must be attached to a node before they are mounted (CSIDriver `attachRequired`).
    pub attach_required: bool,
}

impl CsiDriverSpec {
    /// A zonal block-storage driver like a cloud's disks.
    pub fn disk(name: &str) -> Self {
        CsiDriverSpec { name: name.to_string(), provision_ms: 3000, attach_ms: 2000, mount_ms: 500, zonal: true, attach_required: true }
    }
}

impl Default for CsiDriverSpec {
    fn default() -> Self {
        Self::disk(DEFAULT_DRIVER)
    }
}

/// `ValidateCSIDriverName` (`pkg/apis/core/validation`): at most 63 characters,
/// alphanumerics at both ends, dashes, dots and alphanumerics between.
pub fn is_driver_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'.')
}

/// The CSIDriver object the driver's installation creates, as the API defaults it.
pub fn csi_driver_object(d: &CsiDriverSpec) -> crate::foundation::value::Value {
    crate::foundation::value::json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": d.name},
        "spec": {
            "attachRequired": d.attach_required,
            "podInfoOnMount": false,
            "requiresRepublish": false,
            "storageCapacity": false,
            "seLinuxMount": false,
            "fsGroupPolicy": "ReadWriteOnceWithFSType",
            "volumeLifecycleModes": ["Persistent"],
        },
    })
}

/// The `standard` StorageClass of the default cluster, as kind installs its own.
pub fn default_storage_class(driver: &str) -> crate::foundation::value::Value {
    crate::foundation::value::json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": driver,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
    })
}
