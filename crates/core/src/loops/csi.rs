//! The storage systems under the cluster: simulated CSI drivers. A driver is what a cloud's
//! or a vendor's CSI plugin is to a real cluster — the thing that creates disks, attaches
//! them to machines and mounts them — described by how long each takes and whether its
//! volumes are tied to a zone. Its controller side (external-provisioner, external-attacher,
//! external-resizer) and node side (the kubelet's CSI calls) are loops that read this
//! description; `Fault::StorageDriverDown` makes both stop answering.

use crate::foundation::api::{self, get_array, get_str, Object};
use crate::foundation::sim::Millis;
use crate::foundation::sort::CollectTree;
use crate::foundation::value::Value;
use crate::loops::informer::Informer;

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
    /// How long ControllerExpandVolume (growing the disk) takes.
    pub expand_ms: Millis,
    /// ControllerExpandVolume answers `node_expansion_required`: the file system on the
    /// node must be grown too (NodeExpandVolume, by the kubelet that mounts it).
    pub node_expansion_required: bool,
}

impl CsiDriverSpec {
    /// A zonal block-storage driver like a cloud's disks.
    pub fn disk(name: &str) -> Self {
        CsiDriverSpec {
            name: name.to_string(),
            provision_ms: 3000,
            attach_ms: 2000,
            mount_ms: 500,
            zonal: true,
            attach_required: true,
            expand_ms: 2000,
            node_expansion_required: true,
        }
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

/// The name of a CSI volume as the attach/detach controller and the kubelet track it
/// (`kubernetes.io/csi/<driver>^<volumeHandle>`): what `node.status.volumesAttached` and
/// `volumesInUse` list.
pub fn unique_volume_name(driver: &str, handle: &str) -> String {
    format!("kubernetes.io/csi/{driver}^{handle}")
}

/// The VolumeAttachment of a volume on a node (`csi_attacher.go` `getAttachmentName`):
/// `csi-` and the SHA-256 of handle, driver and node name.
pub fn attachment_name(handle: &str, driver: &str, node: &str) -> String {
    let digest = sha256(format!("{handle}{driver}{node}").as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("csi-{hex}")
}

/// The finalizer external-attacher puts on VolumeAttachments and PersistentVolumes it
/// attached (`GetFinalizerName`, `SanitizeDriverName`: every character but letters, digits
/// and `-` turned into `-`, and an `X` after a trailing `-`).
pub fn attacher_finalizer(driver: &str) -> String {
    let mut name: String = driver.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '-' }).collect();
    if name.ends_with('-') {
        name.push('X');
    }
    format!("external-attacher/{name}")
}

/// FIPS 180-4 SHA-256 (only VolumeAttachment names need it; no crate for one hash).
fn sha256(data: &[u8]) -> [u8; 32] {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
        0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
        0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
        0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ];
    let mut h: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in msg.chunks(64) {
        let mut w = [0u32; 64];
        for (i, word) in block.chunks(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16].wrapping_add(s0).wrapping_add(w[i - 7]).wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh.wrapping_add(s1).wrapping_add(ch).wrapping_add(K[i]).wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 32];
    for (i, x) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&x.to_be_bytes());
    }
    out
}

/// A sidecar's event source per driver: `component` names it from the driver's name
/// (`<driver>_csi-controller-0`, `external-resizer <driver>`).
pub fn sidecar_sources(
    drivers: &[CsiDriverSpec],
    user: &crate::apiserver::rbac::UserInfo,
    component: impl Fn(&str) -> String,
) -> std::collections::BTreeMap<String, crate::loops::events::Source> {
    drivers
        .iter()
        .map(|d| {
            // Source components are static; there are few drivers and one cluster each.
            let c: &'static str = Box::leak(component(&d.name).into_boxed_str());
            (d.name.clone(), crate::loops::events::Source { component: c, host: String::new(), user: user.clone() })
        })
        .collect_tree()
}

/// Which of a sidecar's drivers are down (`Fault::StorageDriverDown` until
/// `StorageDriverUp`); it outlives the sidecar's restarts, as the driver's state does.
#[derive(Debug, Default, Clone)]
pub struct DownDrivers(std::collections::BTreeSet<String>);

impl DownDrivers {
    pub fn contains(&self, driver: &str) -> bool {
        self.0.contains(driver)
    }
    /// Take a storage driver fault naming one of `drivers`; whether it did.
    pub fn take(&mut self, drivers: &[CsiDriverSpec], fault: &crate::loops::Fault) -> bool {
        use crate::loops::Fault;
        match fault {
            Fault::StorageDriverDown(d) | Fault::StorageDriverUp(d) if drivers.iter().any(|x| &x.name == d) => {
                if matches!(fault, Fault::StorageDriverDown(_)) {
                    self.0.insert(d.clone());
                } else {
                    self.0.remove(d);
                }
                true
            }
            _ => false,
        }
    }
}

/// A PersistentVolume's CSI source: its driver and volume handle.
pub fn csi_source(pv: &Value) -> Option<(&str, &str)> {
    Some((get_str(pv, &["spec", "csi", "driver"])?, get_str(pv, &["spec", "csi", "volumeHandle"])?))
}

/// Whether volumes of `driver` are attached before they are mounted: unless a CSIDriver
/// object says `attachRequired: false` (`csi_plugin.go` `skipAttach`; no object means
/// attach).
pub fn attach_required(driver: &str, csidrivers: &Informer) -> bool {
    csidrivers.get("", driver).and_then(|d| api::get_bool(d, &["spec", "attachRequired"])) != Some(false)
}

/// Whether a PV may be attached to several nodes at once (`util.IsMultiAttachAllowed`):
/// it lists ReadWriteMany or ReadOnlyMany, or no access mode at all.
pub fn multi_attach_allowed(pv: &Value) -> bool {
    let modes = get_array(pv, &["spec", "accessModes"]);
    modes.is_empty() || modes.iter().any(|m| matches!(m.as_str(), Some("ReadWriteMany") | Some("ReadOnlyMany")))
}

/// The PersistentVolume behind a pod's claim, with the kubelet's desired-state populator's
/// errors (`desired_state_of_world_populator.go` `getPVCExtractPV`, `getPVSpec`, wrapped by
/// `createVolumeSpec`).
pub fn claimed_volume(namespace: &str, claim: &str, pvcs: &Informer, pvs: &Informer) -> Result<Object, String> {
    let wrap = |e: String| format!("error processing PVC {namespace}/{claim}: {e}");
    let Some(pvc) = pvcs.get(namespace, claim) else {
        return Err(wrap(format!("failed to fetch PVC from API server: persistentvolumeclaims {claim:?} not found")));
    };
    if api::is_deleting(pvc) {
        return Err(wrap(format!("can't start pod because PVC {namespace}/{claim} is being deleted")));
    }
    let phase = get_str(pvc, &["status", "phase"]).unwrap_or("");
    let volume = get_str(pvc, &["spec", "volumeName"]).unwrap_or("");
    if phase != "Bound" || volume.is_empty() {
        return Err(wrap(format!("PVC {namespace}/{claim} has non-bound phase ({phase:?}) or empty pvc.Spec.VolumeName ({volume:?})")));
    }
    let Some(pv) = pvs.get("", volume) else {
        return Err(wrap(format!("failed to fetch PV {volume} from API server: persistentvolumes {volume:?} not found")));
    };
    let Some(claim_ref) = pv.get("spec").and_then(|s| s.get("claimRef")) else {
        return Err(wrap(format!("found PV object {volume} but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim")));
    };
    let ref_uid = get_str(claim_ref, &["uid"]).unwrap_or("");
    if ref_uid != api::uid(pvc) {
        return Err(wrap(format!("found PV object {volume} but its pv.Spec.ClaimRef.UID {ref_uid} does not point to claim.UID {}", api::uid(pvc))));
    }
    Ok(pv.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_matches_the_standard_vectors() {
        let hex = |d: [u8; 32]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
        assert_eq!(hex(sha256(b"")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(hex(sha256(b"abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(
            hex(sha256(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
    }

    #[test]
    fn attachment_names_and_finalizers_follow_upstream() {
        let n = attachment_name("vol-1", DEFAULT_DRIVER, "node-a");
        assert!(n.starts_with("csi-") && n.len() == 68, "{n}");
        assert_ne!(n, attachment_name("vol-1", DEFAULT_DRIVER, "node-b"));
        assert_eq!(attacher_finalizer(DEFAULT_DRIVER), "external-attacher/disk-csi-kubeloop-dev");
        assert_eq!(unique_volume_name(DEFAULT_DRIVER, "vol-1"), "kubernetes.io/csi/disk.csi.kubeloop.dev^vol-1");
    }
}
