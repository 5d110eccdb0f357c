//! `PUT` and `PATCH`, on the main resource and on the `status`, `scale` and `finalize`
//! subresources: the update path of `k8s.io/apiserver/pkg/endpoints/handlers/{update,patch}.go`
//! and the generic registry's `Update` — the proposed object, decoding, preconditions, the
//! strategy's `PrepareForUpdate`, mutating admission, validation, validating admission,
//! then etcd (or nothing, for a no-op).

use super::*;
use crate::foundation::sort::CollectTree;

impl ApiServer {
    pub(super) fn update(
        &mut self,
        c: &Ctx,
        user: &UserInfo,
        res: &ResourceInfo,
        rid: ResourceId,
        ns: &str,
        req: &Request,
        body: Option<Value>,
    ) -> Result<Object, Status> {
        let Some(current) = self.store.get_by(rid, ns, &req.name).cloned() else {
            return self.fail(c, "etcd", Status::not_found(res, &req.name));
        };
        let Some(body) = body else {
            return self.fail(c, "decode", Status::bad_request("the body of the request was empty"));
        };
        match self.admit_update(c, user, res, rid, ns, req, &current, body) {
            // The scale subresource answers with a Scale, whether or not anything was written.
            Ok(new) if req.subresource == "scale" => self.persist_update(c, res, rid, ns, req, current, new).map(|o| Object::new(scale_of(&o, res))),
            Ok(new) => self.persist_update(c, res, rid, ns, req, current, new),
            Err((stage, s)) => self.fail(c, stage, s),
        }
    }

    /// Every stage before storage; the object as it will be stored.
    fn admit_update(
        &mut self,
        c: &Ctx,
        user: &UserInfo,
        res: &ResourceInfo,
        rid: ResourceId,
        ns: &str,
        req: &Request,
        current: &Object,
        mut body: Value,
    ) -> Staged<Value> {
        let sub = req.subresource.as_str();
        let mut new = self.proposed(res, rid, req, current, &mut body)?;
        self.decode_update(res, req, &mut new)?;
        check_preconditions(res, req, &body, &new, current)?;
        prepare_for_update(res, req, &body, current, &mut new, self.now);
        // The PersistentVolume status strategy stamps a phase change the client did not
        // stamp itself.
        if res.kind == "PersistentVolume" && sub == "status" {
            stamp_phase_transition(current, &mut new, self.now);
        }
        // The field manager's record is of the object as the request made it.
        let requested = if req.field_manager.is_empty() { None } else { Some(new.clone()) };
        if sub != "status" && sub != "finalize" && sub != "approval" {
            self.admit_mutating(c, res, "UPDATE", ns, &req.name, user, &mut new, Some(current), req.dry_run)?;
        } else {
            record!(self, c, Flow::MutatingAdmission, "mutating-admission", "ok", "", "status update".into());
        }
        check_finalizers_while_deleting(res, &req.name, current, &new)?;
        let mut errs = if res.kind == certificates::KIND {
            let mut e = validation::validate(res.kind, res.namespaced, &new);
            e.extend(certificates::validate(&new, Some(current), sub));
            e
        } else if sub == "status" || sub == "finalize" {
            vec![]
        } else {
            validation::validate(res.kind, res.namespaced, &new)
        };
        if sub.is_empty() {
            errs.extend(validation::validate_update(res.kind, current, &new));
        }
        if sub == "ephemeralcontainers" {
            errs.extend(validation::validate_ephemeral_update(current, &new));
        }
        self.admit_validating(c, res, "UPDATE", sub, ns, &req.name, user, &errs, &new, Some(current), req.dry_run)?;
        if has_generation(res.kind) && sub != "status" && strip_for_generation(&new) != strip_for_generation(current) {
            api::set(&mut new, &["metadata", "generation"], json!(api::generation(current) + 1));
        }
        // A DaemonSet's template generation follows its template (`PrepareForUpdate`).
        if res.kind == "DaemonSet" && sub.is_empty() {
            template_generation(current, &mut new);
        }
        // A no-op update writes nothing and keeps the resourceVersion.
        api::set(&mut new, &["metadata", "resourceVersion"], json!(api::resource_version(current)));
        if let Some(requested) = requested.filter(|_| !matches!(req.verb, Verb::Patch(PatchType::Apply { .. }))) {
            managed::track_update(Some(current), &requested, &mut new, &req.field_manager, sub, &res.api_version(), res.kind, self.now);
        }
        Ok(new)
    }

    /// The object the request proposes: the scale, an applied configuration, a patched
    /// status, a patched object, a replaced status, or the body itself.
    fn proposed(&self, res: &ResourceInfo, rid: ResourceId, req: &Request, current: &Object, body: &mut Value) -> Staged<Value> {
        let json_patch = |target: &mut Value, body: &Value| patch::json_patch(target, body).map_err(|e| ("decode", e.status()));
        let sub = req.subresource.as_str();
        Ok(match (req.verb, sub) {
            (_, "scale") => {
                let mut scale = scale_of(current, res);
                match req.verb {
                    Verb::Patch(PatchType::Json) => json_patch(&mut scale, body)?,
                    Verb::Patch(_) => patch::merge(&mut scale, body),
                    _ => scale = body.clone(),
                }
                let Some(r) = api::get_i64(&scale, &["spec", "replicas"]) else {
                    return Err((
                        "validation",
                        Status::invalid(&RESOURCES[rid], &req.name, &[crate::foundation::status::FieldError::required("spec.replicas", "")]),
                    ));
                };
                if i32::try_from(r).is_err() {
                    let s = Status::bad_request(format!(
                        "Scale in version \"v1\" cannot be handled as a Scale: json: cannot unmarshal number {r} into Go struct field ScaleSpec.spec.replicas of type int32"
                    ));
                    return Err(("decode", s));
                }
                if r < 0 {
                    let msg = format!("Scale.autoscaling {:?} is invalid: spec.replicas: Invalid value: {r}: must be greater than or equal to 0", req.name);
                    return Err(("validation", Status::new(422, "Invalid", msg)));
                }
                let mut n = (**current).clone();
                api::set(&mut n, &["spec", "replicas"], json!(r));
                n
            }
            (Verb::Patch(PatchType::Apply { force }), _) => {
                managed::apply(Some(current), body, &req.field_manager, force, &res.api_version(), res.kind, sub, self.now).map_err(|s| ("conflict", s))?
            }
            (Verb::Patch(ty), "status") => {
                // Only status changes through the status subresource.
                let mut n = (**current).clone();
                let mut st = n.get_mut("status").map(Value::take).unwrap_or(json!({}));
                let empty = json!({});
                let p = body.get("status").unwrap_or(&empty);
                match ty {
                    PatchType::Merge => patch::merge(&mut st, p),
                    PatchType::Strategic => patch::strategic_merge(&mut st, p),
                    // Applied above.
                    PatchType::Apply { .. } => {}
                    PatchType::Json => {
                        let mut whole = (**current).clone();
                        json_patch(&mut whole, body)?;
                        st = whole.get("status").cloned().unwrap_or(json!({}));
                    }
                }
                api::set(&mut n, &["status"], st);
                n
            }
            (Verb::Patch(ty), _) => {
                let mut n = (**current).clone();
                match ty {
                    PatchType::Merge => patch::merge(&mut n, body),
                    PatchType::Strategic => patch::strategic_merge(&mut n, body),
                    // Applied above.
                    PatchType::Apply { .. } => {}
                    PatchType::Json => json_patch(&mut n, body)?,
                }
                n
            }
            (_, "status") => {
                let mut n = (**current).clone();
                match body.get("status") {
                    Some(st) => api::set(&mut n, &["status"], st.clone()),
                    None => {
                        if let Some(m) = n.as_object_mut() {
                            m.remove("status");
                        }
                    }
                }
                n
            }
            // A full update: the body is the new object.
            _ => std::mem::take(body),
        })
    }

    /// Strict decoding of the proposed object (of its status alone, through `status`).
    fn decode_update(&mut self, res: &ResourceInfo, req: &Request, new: &mut Value) -> Staged<()> {
        match req.subresource.as_str() {
            "status" => {
                let errs = if req.protobuf { Default::default() } else { schema::check_field(&res.api_version(), res.kind, "status", new) };
                if !errs.is_empty() {
                    let s = Status::bad_request(format!("{} in version {:?} cannot be handled as a {}: {}", res.kind, res.version, res.kind, errs.message()));
                    return Err(("schema", s));
                }
                Ok(())
            }
            "scale" => Ok(()),
            _ => self.decode(res, new, req.protobuf, req.field_validation).map_err(|s| ("schema", s)),
        }
    }

    /// etcd: nothing for a no-op or a dry run, the deletion's end when the last finalizer
    /// goes, otherwise a write at a new resourceVersion.
    fn persist_update(&mut self, c: &Ctx, res: &ResourceInfo, rid: ResourceId, ns: &str, req: &Request, current: Object, new: Value) -> Result<Object, Status> {
        let sub = req.subresource.as_str();
        let unchanged = if sub == "status" && res.kind != "Deployment" { new.get("status") == current.get("status") } else { new == *current };
        if unchanged {
            record!(self, c, Flow::Etcd, "etcd", "ok", api::resource_version(&current), "no change: nothing written".into());
            self.log(c, 200, None);
            return Ok(current);
        }
        if req.dry_run {
            record!(self, c, Flow::Etcd, "etcd", "ok", "", "dry run: not persisted".into());
            self.log(c, 200, None);
            return Ok(Object::new(new));
        }
        let key = ObjectKey::new(rid, ns, &req.name);
        // The last finalizer removed from a deleting object completes its deletion.
        let spec_finalized = res.kind != "Namespace" || api::get_array(&new, &["spec", "finalizers"]).is_empty();
        if api::is_deleting(&new) && api::get_array(&new, &["metadata", "finalizers"]).is_empty() && spec_finalized {
            let grace_left = res.kind == "Pod"
                && get_str(&new, &["metadata", "deletionTimestamp"]).and_then(crate::foundation::sim::parse_rfc3339).is_some_and(|t| t > self.now);
            if !grace_left {
                return self.remove(c, res, &key, &new);
            }
        }
        match self.store_write(&key, new, false) {
            Ok(stored) => {
                self.trace.writes += 1;
                let rv = api::resource_version(&stored).to_string();
                record!(self, c, Flow::Etcd, "etcd", "ok", &rv, format!("stored {} at resourceVersion {rv}", key.display()));
                self.log(c, 200, None);
                Ok(stored)
            }
            Err(e) => self.fail_write(c, e, Status::optimistic_lock(res, &req.name)),
        }
    }
}

/// A resourceVersion in the body (always, for a PUT) must be the stored one.
fn check_preconditions(res: &ResourceInfo, req: &Request, body: &Value, new: &Value, current: &Object) -> Staged<()> {
    let want_rv = if matches!(req.verb, Verb::Update) || get(body, &["metadata", "resourceVersion"]).is_some() {
        get_str(new, &["metadata", "resourceVersion"]).unwrap_or("")
    } else {
        ""
    };
    if !want_rv.is_empty() && want_rv != api::resource_version(current) {
        return Err(("etcd", Status::optimistic_lock(res, &req.name)));
    }
    Ok(())
}

/// The strategy's `PrepareForUpdate`: immutable metadata kept, and the split between the
/// main resource (which keeps the stored status) and its `status` and `finalize`
/// subresources (which keep everything else).
fn prepare_for_update(res: &ResourceInfo, req: &Request, body: &Value, current: &Object, new: &mut Value, now: Millis) {
    let meta_old = current.get("metadata").cloned().unwrap_or(json!({}));
    let m = api::entry(new, &["metadata"]);
    for k in ["uid", "creationTimestamp", "name", "namespace", "generation", "deletionTimestamp", "deletionGracePeriodSeconds"] {
        match meta_old.get(k) {
            Some(v) => {
                m.insert(k, v.clone());
            }
            None => {
                m.remove(k);
            }
        }
    }
    api::set(new, &["apiVersion"], json!(res.api_version()));
    api::set(new, &["kind"], json!(res.kind));
    match req.subresource.as_str() {
        "finalize" => {
            let fins = get(new, &["spec", "finalizers"]).cloned().unwrap_or(json!([]));
            let mut n = (**current).clone();
            api::set(&mut n, &["spec", "finalizers"], fins);
            *new = n;
        }
        // `new` was built from the stored object: spec and labels in the body are ignored,
        // as the status strategy does. The Deployment status strategy keeps the body's
        // annotations (the controller records the revision that way).
        "status" if res.kind == "Deployment" && matches!(req.verb, Verb::Update) => {
            if let Some(a) = get(body, &["metadata", "annotations"]) {
                api::set(new, &["metadata", "annotations"], a.clone());
            }
        }
        "status" => {}
        // The ephemeral containers strategy takes only `spec.ephemeralContainers` from the
        // request and keeps the rest of the stored pod.
        "ephemeralcontainers" if res.kind == "Pod" => {
            let list = get(new, &["spec", "ephemeralContainers"]).cloned();
            let mut n = (**current).clone();
            match list {
                Some(l) => api::set(&mut n, &["spec", "ephemeralContainers"], l),
                None => {
                    if let Some(spec) = n.get_mut("spec").and_then(Value::as_object_mut) {
                        spec.remove("ephemeralContainers");
                    }
                }
            }
            *new = n;
        }
        // The namespace strategy keeps `spec.finalizers` (only `finalize` changes them) and
        // the status.
        "" if res.kind == "Namespace" => {
            let fins = get(current, &["spec", "finalizers"]).cloned().unwrap_or(json!([]));
            api::set(new, &["spec", "finalizers"], fins);
            match current.get("status") {
                Some(s) => api::set(new, &["status"], s.clone()),
                None => {
                    if let Some(m) = new.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
        }
        sub if res.kind == certificates::KIND => certificates::prepare_for_update(sub, current, new, &rfc3339(now)),
        _ if has_status_subresource(res.kind) => match current.get("status") {
            Some(s) => api::set(new, &["status"], s.clone()),
            None => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("status");
                }
            }
        },
        _ => {}
    }
}

/// Finalizers may not be added to an object that is being deleted.
fn check_finalizers_while_deleting(res: &ResourceInfo, name: &str, current: &Object, new: &Value) -> Staged<()> {
    if !api::is_deleting(current) {
        return Ok(());
    }
    let old_f: BTreeSet<&str> = api::get_array(current, &["metadata", "finalizers"]).iter().filter_map(Value::as_str).collect_tree();
    let added: Vec<String> =
        api::get_array(new, &["metadata", "finalizers"]).iter().filter_map(Value::as_str).filter(|f| !old_f.contains(f)).map(|f| format!("{f:?}")).collect();
    if added.is_empty() {
        return Ok(());
    }
    let e = crate::foundation::status::FieldError::forbidden(
        "metadata.finalizers",
        format!("no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}", added.join(", ")),
    );
    Err(("validation", Status::invalid(res, name, &[e])))
}

/// The PersistentVolume status strategy stamps a phase change the client did not stamp
/// itself (out of line: crates/split keeps a first visit's download to what it runs).
#[inline(never)]
fn stamp_phase_transition(current: &Value, new: &mut Value, now: Millis) {
    let (old_phase, new_phase) = (get(current, &["status", "phase"]), get(new, &["status", "phase"]));
    let (old_t, new_t) = (get(current, &["status", "lastPhaseTransitionTime"]).cloned(), get(new, &["status", "lastPhaseTransitionTime"]).cloned());
    if old_phase == new_phase && new_t.is_none() {
        if let Some(t) = old_t {
            api::set(new, &["status", "lastPhaseTransitionTime"], t);
        }
    } else if old_phase != new_phase && (new_t.is_none() || new_t == old_t) {
        api::set(new, &["status", "lastPhaseTransitionTime"], json!(rfc3339(now)));
    }
}

/// A DaemonSet's template generation follows its template (`PrepareForUpdate`).
#[inline(never)]
fn template_generation(current: &Value, new: &mut Value) {
    let old_gen: i64 = api::annotation(current, super::create::TEMPLATE_GENERATION).and_then(|g| g.parse().ok()).unwrap_or(1);
    let changed = get(new, &["spec", "template"]) != get(current, &["spec", "template"]);
    let generation = if changed { old_gen + 1 } else { old_gen };
    api::set(new, &["metadata", "annotations", super::create::TEMPLATE_GENERATION], json!(generation.to_string()));
}
