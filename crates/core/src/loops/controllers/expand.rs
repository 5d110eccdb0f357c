//! kube-controller-manager's `persistentvolume-expander` (`pkg/controller/volume/expand/
//! expand_controller.go`). In 1.36 it grows no volume itself: for a Bound claim that asks
//! for more than its capacity it looks for an in-tree plugin that can expand the volume,
//! finds none for CSI volumes (nor for hostPath, local or NFS ones), and says so with the
//! Normal event `ExternalExpanding` — the work is left to the driver's external-resizer
//! (`loops/controllers/resizer.rs`). A volume no resizer serves keeps that event as its
//! only answer, as on a real cluster.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::store::EventType;
use crate::apiserver::trace::Flow;
use crate::foundation::api::{self, get_str, rid, ResourceId};
use crate::foundation::volume::{claim_needs_resize, is_volume_bound_to_claim, storage_size};
use crate::loops::events::Source;
use crate::loops::informer::Informer;
use crate::loops::{Controller, Cx};
use std::collections::BTreeSet;

const NAME: &str = "expand-controller";

#[derive(Clone)]
pub struct ExpandController {
    user: UserInfo,
    src: Source,
    claims: Informer,
    volumes: Informer,
    queue: BTreeSet<(String, String)>,
}

impl Default for ExpandController {
    fn default() -> Self {
        Self::new()
    }
}

impl ExpandController {
    pub fn new() -> Self {
        let user = UserInfo::controller(NAME);
        ExpandController {
            src: Source { component: "volume_expand", host: String::new(), user: user.clone() },
            user,
            claims: Informer::new(rid::PVC),
            volumes: Informer::new(rid::PV),
            queue: BTreeSet::new(),
        }
    }

    /// `syncHandler` for one claim.
    #[inline(never)]
    fn sync(&mut self, cx: &mut Cx, key: &(String, String)) {
        let Some(claim) = self.claims.get(&key.0, &key.1).map(|c| (**c).clone()) else { return };
        if !claim_needs_resize(&claim) {
            return;
        }
        let pv_name = get_str(&claim, &["spec", "volumeName"]).unwrap_or("");
        let Some(pv) = self.volumes.get("", pv_name) else { return };
        if !is_volume_bound_to_claim(pv, &claim) {
            // `persistent Volume is not bound to PVC being updated`: retried with the next change.
            return;
        }
        // `FindExpandablePluginBySpec` finds no in-tree plugin for the volumes kubeloop
        // knows (CSI, hostPath, local, NFS): an external controller must act.
        cx.event(&self.src, &claim, None, "Normal", "ExternalExpanding", "waiting for an external controller to expand this PVC", None);
        cx.trace(
            Flow::DeploymentController,
            "expand-volume",
            format!("PersistentVolumeClaim/{}/{}", key.0, key.1),
            "ok",
            api::resource_version(&claim),
            format!("expand controller: no in-tree plugin expands {pv_name}; waiting for an external controller"),
        );
    }
}

impl Controller for ExpandController {
    fn name(&self) -> &'static str {
        NAME
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::PVC, rid::PV]
    }
    fn run(&mut self, cx: &mut Cx) {
        self.volumes.sync(&cx.api.store);
        let size = |o: &api::Object, path: &[&str]| storage_size(o, path).unwrap_or(0);
        for d in self.claims.sync(&cx.api.store).deltas {
            // Added claims that are Bound, and updates that grow the request or the capacity.
            let enqueue = match (&d.kind, &d.old) {
                (EventType::Added, _) => get_str(&d.object, &["status", "phase"]) == Some("Bound"),
                (EventType::Modified, Some(old)) => {
                    let req = ["spec", "resources", "requests", "storage"];
                    let cap = ["status", "capacity", "storage"];
                    size(&d.object, &req) > size(old, &req) || size(&d.object, &cap) > size(old, &cap)
                }
                _ => false,
            };
            if enqueue {
                self.queue.insert(api::queue_key(&d.object));
            }
        }
        while let Some(k) = self.queue.pop_first() {
            self.sync(cx, &k);
        }
    }
    fn timer(&mut self, cx: &mut Cx, _key: &str) {
        self.run(cx);
    }
    fn restart(&mut self) {
        *self = Self::new();
    }
}
