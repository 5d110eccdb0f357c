//! `DELETE`: graceful deletion, finalizers, and the propagation policies (`Orphan`,
//! `Background`, `Foreground`), as the generic registry's `Delete` does them.

use super::*;

impl ApiServer {
    pub(super) fn remove(&mut self, c: &Ctx, res: &ResourceInfo, key: &ObjectKey, obj: &Value) -> Result<Object, Status> {
        if res.kind == "Service" {
            self.release_service(obj);
        }
        match self.store.delete(key, None) {
            Ok(gone) => {
                self.trace.writes += 1;
                let rv = api::resource_version(&gone).to_string();
                record!(self, c, Flow::Etcd, "etcd", "ok", &rv, format!("deleted {} at resourceVersion {rv}", key.display()));
                self.log(c, 200, None);
                Ok(gone)
            }
            Err(_) => self.fail(c, "etcd", Status::not_found(res, &key.name)),
        }
    }

    pub(super) fn delete(&mut self, c: &Ctx, user: &UserInfo, res: &ResourceInfo, rid: ResourceId, ns: &str, req: &Request) -> Result<Object, Status> {
        let Some(current) = self.store.get_by(rid, ns, &req.name).cloned() else {
            return self.fail(c, "etcd", Status::not_found(res, &req.name));
        };
        {
            let ar = self.admission_request("DELETE", res, "", ns, req.name.clone(), user, None, Some(&current), req.dry_run);
            if let Err(s) = admission::namespace_lifecycle(&self.store, &ar) {
                return self.fail(c, "mutating-admission", s);
            }
        }
        record!(self, c, Flow::MutatingAdmission, "mutating-admission", "ok", "", "delete admitted".into());
        match self.validate_admission(res, "DELETE", "", ns, &req.name, user, None, Some(&current), req.dry_run) {
            Ok(_) => record!(self, c, Flow::Validation, "validating-admission", "ok", "", "delete allowed".into()),
            Err(s) => {
                record!(self, c, Flow::Validation, "validating-admission", "denied", "", s.message.clone());
                return self.fail(c, "validating-admission", s);
            }
        }
        if req.dry_run {
            self.log(c, 200, None);
            return Ok(current);
        }
        let key = ObjectKey::new(rid, ns, &req.name);
        let mut obj = (*current).clone();
        let finalizers: Vec<String> = api::get_array(&obj, &["metadata", "finalizers"]).iter().filter_map(Value::as_str).map(str::to_string).collect();
        // The namespace registry's `Delete` (`pkg/registry/core/namespace/storage`): the
        // first request only marks the namespace Terminating for the namespace controller
        // to empty; while `spec.finalizers` holds it, a later one is a Conflict; once it is
        // finalized, the generic delete runs (metadata finalizers still hold it).
        if res.kind == "Namespace" {
            if !api::is_deleting(&obj) {
                api::set(&mut obj, &["metadata", "deletionTimestamp"], json!(rfc3339(self.now)));
                api::set(&mut obj, &["status", "phase"], json!("Terminating"));
                let policy = req.propagation.as_deref();
                let has = |f: &str| finalizers.iter().any(|x| x == f);
                // `shouldHaveOrphanFinalizer`, `shouldHaveDeleteDependentsFinalizer`.
                let want = [
                    ("orphan", policy.map_or(has("orphan"), |p| p == "Orphan")),
                    ("foregroundDeletion", policy.map_or(has("foregroundDeletion"), |p| p == "Foreground")),
                ];
                if want.iter().any(|(f, w)| has(f) != *w) {
                    let mut fs: Vec<String> = finalizers.iter().filter(|f| want.iter().all(|(w, keep)| f.as_str() != *w || *keep)).cloned().collect();
                    fs.extend(want.iter().filter(|(f, w)| *w && !has(f)).map(|(f, _)| f.to_string()));
                    api::set(&mut obj, &["metadata", "finalizers"], json!(fs));
                }
                return self.store_update(c, &key, obj, "marked for deletion (Terminating)");
            }
            if !api::get_array(&obj, &["spec", "finalizers"]).is_empty() {
                let s = Status::conflict(
                    res,
                    &req.name,
                    "The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system.",
                );
                return self.fail(c, "etcd", s);
            }
        }
        // Propagation: options, then existing finalizers, then the resource default.
        let policy = req.propagation.clone().unwrap_or_else(|| {
            if finalizers.iter().any(|f| f == "orphan") {
                "Orphan".into()
            } else if finalizers.iter().any(|f| f == "foregroundDeletion") {
                "Foreground".into()
            } else if res.kind == "ReplicationController" || res.kind == "Job" {
                // core/v1 ReplicationControllers and batch/v1 Jobs orphan by default, "for
                // back compatibility"; a Job's deletion says so.
                if res.kind == "Job" {
                    self.warnings.push(
                        "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning".into(),
                    );
                }
                "Orphan".into()
            } else {
                "Background".into()
            }
        });
        let mut new_finalizers = finalizers.clone();
        match policy.as_str() {
            "Orphan" if !new_finalizers.iter().any(|f| f == "orphan") => new_finalizers.push("orphan".into()),
            "Foreground" if !new_finalizers.iter().any(|f| f == "foregroundDeletion") => new_finalizers.push("foregroundDeletion".into()),
            _ => {}
        }
        // Graceful deletion of scheduled, running pods.
        if res.kind == "Pod" {
            let phase = get_str(&obj, &["status", "phase"]).unwrap_or("");
            let scheduled = get_str(&obj, &["spec", "nodeName"]).is_some();
            let mut grace = req.grace_period.unwrap_or_else(|| api::get_i64(&obj, &["spec", "terminationGracePeriodSeconds"]).unwrap_or(30));
            if grace < 0 {
                grace = 1;
            }
            if !scheduled || phase == "Succeeded" || phase == "Failed" {
                grace = 0;
            }
            let current_grace = api::get_i64(&obj, &["metadata", "deletionGracePeriodSeconds"]);
            if grace > 0 && current_grace.is_none_or(|g| grace < g) {
                api::set(&mut obj, &["metadata", "deletionTimestamp"], json!(rfc3339(self.now + grace as u64 * 1000)));
                api::set(&mut obj, &["metadata", "deletionGracePeriodSeconds"], json!(grace));
                if new_finalizers != finalizers {
                    api::set(&mut obj, &["metadata", "finalizers"], json!(new_finalizers));
                }
                return self.store_update(c, &key, obj, &format!("marked for graceful deletion ({grace}s)"));
            }
            if grace > 0 {
                // Already terminating with a shorter grace period.
                self.log(c, 200, None);
                return Ok(current);
            }
        }
        if !new_finalizers.is_empty() {
            if !api::is_deleting(&obj) {
                api::set(&mut obj, &["metadata", "deletionTimestamp"], json!(rfc3339(self.now)));
                api::set(&mut obj, &["metadata", "deletionGracePeriodSeconds"], json!(0));
            } else if res.kind == "Pod" {
                api::set(&mut obj, &["metadata", "deletionGracePeriodSeconds"], json!(0));
            }
            api::set(&mut obj, &["metadata", "finalizers"], json!(new_finalizers));
            if *current == obj {
                self.log(c, 200, None);
                return Ok(current);
            }
            return self.store_update(c, &key, obj, &format!("deletion pending finalizers {new_finalizers:?}"));
        }
        self.remove(c, res, &key, &obj)
    }

    pub(super) fn store_update(&mut self, c: &Ctx, key: &ObjectKey, obj: Value, what: &str) -> Result<Object, Status> {
        match self.store_write(key, obj, false) {
            Ok(stored) => {
                self.trace.writes += 1;
                let rv = api::resource_version(&stored).to_string();
                record!(self, c, Flow::Etcd, "etcd", "ok", &rv, format!("{} {what} at resourceVersion {rv}", key.display()));
                self.log(c, 200, None);
                Ok(stored)
            }
            Err(e) => self.fail_write(c, e, Status::not_found(&RESOURCES[key.resource], &key.name)),
        }
    }
}
