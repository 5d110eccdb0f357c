//! The CSI drivers' external-attacher sidecars (`kubernetes-csi/external-attacher`,
//! `pkg/controller/csi_handler.go`): for each VolumeAttachment whose attacher is a driver
//! of the cluster, put its finalizer on the attachment and the PersistentVolume, call the
//! driver's ControllerPublishVolume (which takes the driver's `attach_ms`), then mark the
//! attachment `status.attached`; on deletion, ControllerUnpublishVolume and the finalizer
//! comes off. A driver that is down fails the calls: the error is saved in
//! `status.attachError` (or `detachError`) and retried with the sidecar's exponential
//! back-off (1 s doubling to 5 min).

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, PatchType, Request};
use crate::foundation::api::{self, get_array, get_str, rid, Object, ResourceId};
use crate::foundation::sim::{rfc3339, Millis};
use crate::foundation::value::{json, Value};
use crate::loops::csi::{attacher_finalizer, CsiDriverSpec};
use crate::loops::informer::Informer;
use crate::loops::kubelet::go_duration;
use crate::loops::{req_as, Controller, Cx, Fault};
use std::collections::{BTreeMap, BTreeSet};

const NAME: &str = "csi-attacher";

/// The annotation the sidecar records the driver's node ID in (`vaNodeIDAnnotation`).
pub const NODE_ID_ANNOTATION: &str = "csi.alpha.kubernetes.io/node-id";

/// What a gRPC call to a driver whose plugin is not running returns.
pub fn driver_unavailable() -> String {
    "rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial unix /csi/csi.sock: connect: connection refused\""
        .into()
}

/// `--retry-interval-start` and `--retry-interval-max`.
const RETRY_START_MS: Millis = 1000;
const RETRY_MAX_MS: Millis = 5 * 60 * 1000;

#[derive(Clone)]
pub struct CsiAttacher {
    user: UserInfo,
    drivers: Vec<CsiDriverSpec>,
    down: BTreeSet<String>,
    vas: Informer,
    pvs: Informer,
    /// VolumeAttachment → when the driver call in flight for it returns.
    in_flight: BTreeMap<String, Millis>,
    /// VolumeAttachment → the delay before the next retry after a failure.
    backoff: BTreeMap<String, Millis>,
    /// VolumeAttachment → when its failed call is retried (nothing happens before).
    retry_at: BTreeMap<String, Millis>,
    queue: BTreeSet<String>,
    pv_queue: BTreeSet<String>,
}

impl CsiAttacher {
    pub fn new(drivers: &[CsiDriverSpec]) -> Self {
        CsiAttacher {
            user: UserInfo::controller(NAME),
            drivers: drivers.to_vec(),
            down: BTreeSet::new(),
            vas: Informer::new(rid::VOLUMEATTACHMENT),
            pvs: Informer::new(rid::PV),
            in_flight: BTreeMap::new(),
            backoff: BTreeMap::new(),
            retry_at: BTreeMap::new(),
            queue: BTreeSet::new(),
            pv_queue: BTreeSet::new(),
        }
    }

    fn driver(&self, name: &str) -> Option<&CsiDriverSpec> {
        self.drivers.iter().find(|d| d.name == name)
    }

    fn request(&self, cx: &mut Cx, r: Request) -> Result<Object, crate::foundation::status::Status> {
        cx.api.handle(req_as(r, NAME, &self.user))
    }

    fn creds(&self) -> Credentials {
        Credentials::User(self.user.clone())
    }

    fn sync_informers(&mut self, cx: &mut Cx) {
        for d in self.vas.sync(&cx.api.store).deltas {
            self.queue.insert(api::name(&d.object).to_string());
            if let Some(pv) = get_str(&d.object, &["spec", "source", "persistentVolumeName"]) {
                self.pv_queue.insert(pv.to_string());
            }
        }
        for d in self.pvs.sync(&cx.api.store).deltas {
            self.pv_queue.insert(api::name(&d.object).to_string());
        }
    }

    /// Add or remove this sidecar's finalizer on an object with a merge patch.
    fn set_finalizer(&self, cx: &mut Cx, resource: ResourceId, obj: &Value, finalizer: &str, present: bool, extra: Option<(&str, &str)>) -> Result<(), String> {
        let mut list: Vec<Value> = get_array(obj, &["metadata", "finalizers"]).to_vec();
        let has = list.iter().any(|f| f.as_str() == Some(finalizer));
        if has == present && extra.is_none() {
            return Ok(());
        }
        if present && !has {
            list.push(json!(finalizer));
        } else if !present {
            list.retain(|f| f.as_str() != Some(finalizer));
        }
        let mut meta = json!({"finalizers": if list.is_empty() { Value::Null } else { Value::Array(list) }});
        if let Some((k, v)) = extra {
            meta["annotations"] = json!({k: v});
        }
        let r = Request::patch(resource, "", api::name(obj), PatchType::Merge, json!({"metadata": meta}), self.creds());
        self.request(cx, r).map(|_| ()).map_err(|s| s.message)
    }

    fn save_error(&mut self, cx: &mut Cx, va: &Value, field: &str, message: &str) {
        let name = api::name(va).to_string();
        let body = json!({"status": {field: {"message": message, "time": rfc3339(cx.now)}}});
        let _ = self.request(cx, Request::patch(rid::VOLUMEATTACHMENT, "", &name, PatchType::Merge, body, self.creds()).with_sub("status"));
        let delay = self.backoff.get(&name).copied().unwrap_or(RETRY_START_MS);
        self.backoff.insert(name.clone(), (delay * 2).min(RETRY_MAX_MS));
        self.retry_at.insert(name.clone(), cx.now + delay);
        let verb = if field == "attachError" { "attach" } else { "detach" };
        cx.trace(
            Flow::NodeError,
            verb,
            format!("VolumeAttachment/{name}"),
            "error",
            api::resource_version(va),
            format!("failed to {verb}: {message}; retrying in {}", go_duration(delay)),
        );
        cx.every(delay, name);
    }

    #[inline(never)]
    fn sync(&mut self, cx: &mut Cx, name: &str) {
        let Some(va) = self.vas.get("", name).cloned() else {
            self.in_flight.remove(name);
            self.backoff.remove(name);
            self.retry_at.remove(name);
            return;
        };
        if self.retry_at.get(name).is_some_and(|t| *t > cx.now) {
            return;
        }
        self.retry_at.remove(name);
        let driver_name = get_str(&va, &["spec", "attacher"]).unwrap_or("").to_string();
        let Some(driver) = self.driver(&driver_name).cloned() else { return };
        let finalizer = attacher_finalizer(&driver.name);
        let obj = format!("VolumeAttachment/{name}");
        let down = self.down.contains(&driver.name);
        let node = get_str(&va, &["spec", "nodeName"]).unwrap_or("").to_string();
        let pv_name = get_str(&va, &["spec", "source", "persistentVolumeName"]).unwrap_or("").to_string();
        if api::is_deleting(&va) {
            if !get_array(&va, &["metadata", "finalizers"]).iter().any(|f| f.as_str() == Some(finalizer.as_str())) {
                return;
            }
            match self.in_flight.get(name).copied() {
                None if down => self.save_error(cx, &va, "detachError", &driver_unavailable()),
                None => {
                    self.in_flight.insert(name.to_string(), cx.now + driver.attach_ms);
                    cx.after(driver.attach_ms, name.to_string());
                    cx.trace(
                        Flow::Runtime,
                        "detach",
                        obj,
                        "ok",
                        api::resource_version(&va),
                        format!("{} detaching volume {pv_name:?} from {node}", driver.name),
                    );
                }
                Some(done) if done > cx.now => {}
                Some(_) => {
                    self.in_flight.remove(name);
                    if down {
                        self.save_error(cx, &va, "detachError", &driver_unavailable());
                        return;
                    }
                    match self.set_finalizer(cx, rid::VOLUMEATTACHMENT, &va, &finalizer, false, None) {
                        Ok(()) => {
                            self.backoff.remove(name);
                            cx.trace(Flow::Runtime, "detach", obj, "ok", "", format!("{} detached volume {pv_name:?} from {node}", driver.name));
                        }
                        Err(m) => cx.trace(Flow::NodeError, "detach", obj, "error", "", m),
                    }
                }
            }
            return;
        }
        if api::get_bool(&va, &["status", "attached"]) == Some(true) {
            return;
        }
        match self.in_flight.get(name).copied() {
            Some(done) if done > cx.now => {}
            Some(_) => {
                self.in_flight.remove(name);
                if down {
                    self.save_error(cx, &va, "attachError", &driver_unavailable());
                    return;
                }
                // markAsAttached.
                let body = json!({"status": {"attached": true, "attachError": null}});
                match self.request(cx, Request::patch(rid::VOLUMEATTACHMENT, "", name, PatchType::Merge, body, self.creds()).with_sub("status")) {
                    Ok(stored) => {
                        self.backoff.remove(name);
                        cx.trace(
                            Flow::Runtime,
                            "attach",
                            obj,
                            "ok",
                            api::resource_version(&stored),
                            format!("{} attached volume {pv_name:?} to {node}", driver.name),
                        );
                    }
                    Err(s) => cx.trace(Flow::NodeError, "attach", obj, "error", "", s.message),
                }
            }
            None => {
                // Check what can be checked before the finalizers go on.
                let Some(pv) = self.pvs.get("", &pv_name).cloned() else {
                    let msg = format!("persistentvolume {pv_name:?} not found");
                    self.save_error(cx, &va, "attachError", &msg);
                    return;
                };
                if api::is_deleting(&pv) {
                    let msg = format!("PersistentVolume {pv_name:?} is marked for deletion");
                    self.save_error(cx, &va, "attachError", &msg);
                    return;
                }
                if let Err(m) = self.set_finalizer(cx, rid::PV, &pv, &finalizer, true, None) {
                    let msg = format!("could not add PersistentVolume finalizer: {m}");
                    self.save_error(cx, &va, "attachError", &msg);
                    return;
                }
                let has_id = api::annotation(&va, NODE_ID_ANNOTATION) == Some(node.as_str());
                let extra = (!has_id).then_some((NODE_ID_ANNOTATION, node.as_str()));
                if let Err(m) = self.set_finalizer(cx, rid::VOLUMEATTACHMENT, &va, &finalizer, true, extra) {
                    let msg = format!("could not save VolumeAttachment: {m}");
                    self.save_error(cx, &va, "attachError", &msg);
                    return;
                }
                if down {
                    self.save_error(cx, &va, "attachError", &driver_unavailable());
                    return;
                }
                self.in_flight.insert(name.to_string(), cx.now + driver.attach_ms);
                cx.after(driver.attach_ms, name.to_string());
                cx.trace(
                    Flow::Runtime,
                    "attach",
                    obj,
                    "ok",
                    api::resource_version(&va),
                    format!("{} attaching volume {pv_name:?} to {node} (ControllerPublishVolume, {})", driver.name, go_duration(driver.attach_ms)),
                );
            }
        }
    }

    /// `SyncNewOrUpdatedPersistentVolume`: a PV being deleted loses this finalizer once no
    /// VolumeAttachment uses it.
    fn sync_pv(&mut self, cx: &mut Cx, name: &str) {
        let Some(pv) = self.pvs.get("", name).cloned() else { return };
        if !api::is_deleting(&pv) {
            return;
        }
        let used = self.vas.list(None).any(|v| get_str(v, &["spec", "source", "persistentVolumeName"]) == Some(name));
        if used {
            return;
        }
        let ours: Vec<String> = self
            .drivers
            .iter()
            .map(|d| attacher_finalizer(&d.name))
            .filter(|f| get_array(&pv, &["metadata", "finalizers"]).iter().any(|x| x.as_str() == Some(f.as_str())))
            .collect();
        for f in ours {
            if let Err(m) = self.set_finalizer(cx, rid::PV, &pv, &f, false, None) {
                cx.trace(Flow::NodeError, "detach", format!("PersistentVolume/{name}"), "error", "", m);
            }
        }
    }
}

impl Controller for CsiAttacher {
    fn name(&self) -> &'static str {
        NAME
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::VOLUMEATTACHMENT, rid::PV]
    }
    fn run(&mut self, cx: &mut Cx) {
        self.sync_informers(cx);
        while let Some(n) = self.queue.pop_first() {
            self.sync(cx, &n);
        }
        while let Some(n) = self.pv_queue.pop_first() {
            self.sync_pv(cx, &n);
        }
    }
    fn timer(&mut self, cx: &mut Cx, key: &str) {
        self.queue.insert(key.to_string());
        self.run(cx);
    }
    fn busy(&self, _now: Millis) -> bool {
        !self.queue.is_empty()
    }
    fn fault(&mut self, cx: &mut Cx, fault: &Fault) -> bool {
        let (name, down) = match fault {
            Fault::StorageDriverDown(n) => (n, true),
            Fault::StorageDriverUp(n) => (n, false),
            _ => return false,
        };
        if self.driver(name).is_none() {
            return false;
        }
        let changed = if down { self.down.insert(name.clone()) } else { self.down.remove(name) };
        if changed {
            let what = if down { "stops answering: attach and detach calls fail" } else { "answers again" };
            cx.trace(Flow::Runtime, "fault", format!("CSIDriver/{name}"), if down { "error" } else { "ok" }, "", format!("{name}'s controller plugin {what}"));
        }
        true
    }
    fn restart(&mut self) {
        let drivers = std::mem::take(&mut self.drivers);
        let down = std::mem::take(&mut self.down);
        *self = Self::new(&drivers);
        self.down = down;
    }
}
