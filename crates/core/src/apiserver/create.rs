//! `POST`: a new object through the create path of `k8s.io/apiserver/pkg/endpoints/handlers/create.go`
//! and the generic registry's `Create` — decode, mutating admission, name generation,
//! validation, validating admission, the kind's `PrepareForCreate` and allocators, etcd.

use super::*;

impl ApiServer {
    pub(super) fn create(
        &mut self,
        c: &mut Ctx,
        user: &UserInfo,
        res: &ResourceInfo,
        rid: ResourceId,
        ns: &str,
        req: &Request,
        body: Option<Value>,
    ) -> Result<Object, Status> {
        match self.admit_create(c, user, res, rid, ns, req, body) {
            Ok(obj) => self.persist_create(c, res, rid, ns, req, obj),
            Err((stage, s)) => self.fail(c, stage, s),
        }
    }

    /// Every stage before storage; the object as it will be stored.
    fn admit_create(
        &mut self,
        c: &mut Ctx,
        user: &UserInfo,
        res: &ResourceInfo,
        rid: ResourceId,
        ns: &str,
        req: &Request,
        body: Option<Value>,
    ) -> Staged<Value> {
        let mut obj = self.decode_create(res, ns, req, body)?;
        let admission_name = match api::name(&obj) {
            "" => get_str(&obj, &["metadata", "generateName"]).unwrap_or("").to_string(),
            n => n.to_string(),
        };
        // The field manager's record is of the object as the request made it.
        let requested = if req.field_manager.is_empty() { None } else { Some(obj.clone()) };
        self.admit_mutating(c, res, "CREATE", ns, &admission_name, user, &mut obj, None, req.dry_run)?;
        // Name generation follows mutating admission (`BeforeCreate`).
        self.generate_name(res, rid, ns, &mut obj)?;
        let name = api::name(&obj).to_string();
        c.object = if !self.trace.enabled {
            String::new()
        } else if ns.is_empty() {
            format!("{}/{}", res.kind, name)
        } else {
            format!("{}/{}/{}", res.kind, ns, name)
        };
        if res.kind == certificates::KIND {
            certificates::prepare_for_create(&mut obj, user);
        }
        let mut errs = validation::validate(res.kind, res.namespaced, &obj);
        if res.kind == certificates::KIND {
            errs.extend(certificates::validate(&obj, None, ""));
        }
        // `ValidatePodCreate`: ephemeral containers are added to a running pod only.
        if res.kind == "Pod" && !api::get_array(&obj, &["spec", "ephemeralContainers"]).is_empty() {
            errs.push(crate::foundation::status::FieldError::forbidden("spec.ephemeralContainers", "cannot be set on create"));
        }
        self.admit_validating(c, res, "CREATE", "", ns, &name, user, &errs, &obj, None, req.dry_run)?;
        if self.store.get_by(rid, ns, &name).is_some() {
            return Err(("etcd", Status::already_exists(res, &name)));
        }
        self.prepare_for_create(res, &mut obj)?;
        if let Some(requested) = requested.filter(|_| !matches!(req.verb, Verb::Patch(PatchType::Apply { .. }))) {
            managed::track_update(None, &requested, &mut obj, &req.field_manager, "", &res.api_version(), res.kind, self.now);
        }
        Ok(obj)
    }

    /// Strict decoding against the schema, the request's namespace, and the served
    /// apiVersion and kind.
    fn decode_create(&mut self, res: &ResourceInfo, ns: &str, req: &Request, body: Option<Value>) -> Staged<Value> {
        let Some(mut obj) = body else {
            return Err(("decode", Status::bad_request("the body of the request was empty")));
        };
        self.decode(res, &mut obj, req.protobuf, req.field_validation).map_err(|s| ("schema", s))?;
        let body_ns = api::namespace(&obj).to_string();
        if res.namespaced {
            if !body_ns.is_empty() && body_ns != ns {
                return Err(("decode", Status::bad_request("the namespace of the provided object does not match the namespace sent on the request")));
            }
            api::set(&mut obj, &["metadata", "namespace"], json!(ns));
        } else if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("namespace");
        }
        api::set(&mut obj, &["apiVersion"], json!(res.api_version()));
        api::set(&mut obj, &["kind"], json!(res.kind));
        Ok(obj)
    }

    /// `metadata.generateName` plus five random characters, retried on a clash as the
    /// registry does (`names.SimpleNameGenerator`).
    fn generate_name(&mut self, res: &ResourceInfo, rid: ResourceId, ns: &str, obj: &mut Value) -> Staged<()> {
        if !api::name(obj).is_empty() {
            return Ok(());
        }
        let Some(base) = get_str(obj, &["metadata", "generateName"]).map(str::to_string) else { return Ok(()) };
        let base: String = base.chars().take(58).collect();
        for _ in 0..8 {
            let candidate = format!("{base}{}", self.rng.name_suffix(5));
            if self.store.get_by(rid, ns, &candidate).is_none() {
                api::set(obj, &["metadata", "name"], json!(candidate));
                return Ok(());
            }
        }
        let mut s = Status::already_exists(res, &base);
        s.message.push_str(", the server was not able to generate a unique name for the object");
        Err(("etcd", s))
    }

    /// The registry strategy's `PrepareForCreate`: system metadata, a Pod's first status,
    /// a Service's addresses, no status on workloads.
    fn prepare_for_create(&mut self, res: &ResourceInfo, obj: &mut Value) -> Staged<()> {
        let uid = self.rng.uuid();
        let meta = api::entry(obj, &["metadata"]);
        meta.insert("uid", json!(uid));
        meta.insert("creationTimestamp", json!(rfc3339(self.now)));
        meta.remove("resourceVersion");
        meta.remove("deletionTimestamp");
        meta.remove("managedFields");
        if has_generation(res.kind) {
            meta.insert("generation", json!(1));
        } else {
            meta.remove("generation");
        }
        match res.kind {
            "Pod" => {
                let qos = defaults::qos_class(obj.get("spec").unwrap_or(&Value::Null));
                api::set(obj, &["status"], json!({"phase": "Pending", "qosClass": qos}));
            }
            "Service" => self.allocate_service(obj).map_err(|s| ("validation", s))?,
            // The namespace strategy: Active on create, and the `kubernetes` finalizer the
            // namespace controller removes once the namespace is empty.
            "Namespace" => {
                api::set(obj, &["status"], json!({"phase": "Active"}));
                let fins = api::get_array(obj, &["spec", "finalizers"]).to_vec();
                if !fins.iter().any(|f| f.as_str() == Some("kubernetes")) {
                    let mut fins = fins;
                    fins.push(json!("kubernetes"));
                    api::set(obj, &["spec", "finalizers"], json!(fins));
                }
            }
            "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet" => {
                if let Some(m) = obj.as_object_mut() {
                    m.remove("status");
                }
                // A DaemonSet's template generation starts at 1 (apps/v1 carries it in an
                // annotation); its pods are labelled with it.
                if res.kind == "DaemonSet" {
                    api::set(obj, &["metadata", "annotations", TEMPLATE_GENERATION], json!("1"));
                }
            }
            // The Job strategy: no status, and unless `manualSelector`, the generated selector
            // and template labels (`generateSelector`). The Job's own labels, when it has
            // none, are the template's (`SetDefaults_Job`, applied again on every read).
            "Job" => {
                if let Some(m) = obj.as_object_mut() {
                    m.remove("status");
                }
                if api::get_bool(obj, &["spec", "manualSelector"]) != Some(true) {
                    let job_name = api::name(obj).to_string();
                    let labels = api::entry(obj, &["spec", "template", "metadata", "labels"]);
                    for (k, v) in [
                        ("job-name", &job_name),
                        ("batch.kubernetes.io/job-name", &job_name),
                        ("controller-uid", &uid),
                        ("batch.kubernetes.io/controller-uid", &uid),
                    ] {
                        if !labels.contains_key(k) {
                            labels.insert(k, json!(v));
                        }
                    }
                    let sel = api::entry(obj, &["spec", "selector", "matchLabels"]);
                    if !sel.contains_key("batch.kubernetes.io/controller-uid") {
                        sel.insert("batch.kubernetes.io/controller-uid", json!(uid));
                    }
                }
                if api::labels(obj).is_none_or(|l| l.is_empty()) {
                    if let Some(l) =
                        api::get(obj, &["spec", "template", "metadata", "labels"]).filter(|l| l.as_object().is_some_and(|m| !m.is_empty())).cloned()
                    {
                        api::set(obj, &["metadata", "labels"], l);
                    }
                }
            }
            "CronJob" => {
                if let Some(m) = obj.as_object_mut() {
                    m.remove("status");
                }
            }
            // The strategies clear status; the claim's reads back defaulted to Pending, the
            // volume's is set Pending with its first transition time
            // (`PersistentVolumeLastPhaseTransitionTime`).
            "PersistentVolumeClaim" => api::set(obj, &["status"], json!({"phase": "Pending"})),
            "PersistentVolume" => api::set(obj, &["status"], json!({"phase": "Pending", "lastPhaseTransitionTime": rfc3339(self.now)})),
            _ => {}
        }
        Ok(())
    }

    fn persist_create(&mut self, c: &Ctx, res: &ResourceInfo, rid: ResourceId, ns: &str, req: &Request, obj: Value) -> Result<Object, Status> {
        let note = if self.unsimulated.contains(&rid) {
            Some(format!("kubeloop stores {} {} but simulates no controller for it", res.api_version(), res.kind))
        } else {
            (res.kind == certificates::KIND).then(|| certificates::NOT_SIMULATED.to_string())
        };
        if let Some(note) = note {
            record!(self, c, Flow::Etcd, "not-simulated", "warning", "", note.clone());
            self.warnings.push(note);
        }
        if req.dry_run {
            record!(self, c, Flow::Etcd, "etcd", "ok", "", "dry run: not persisted".into());
            self.log(c, 201, None);
            return Ok(Object::new(obj));
        }
        let name = api::name(&obj).to_string();
        let key = ObjectKey::new(rid, ns, &name);
        match self.store_write(&key, obj, true) {
            Ok(stored) => {
                self.trace.writes += 1;
                let rv = api::resource_version(&stored).to_string();
                record!(self, c, Flow::Etcd, "etcd", "ok", &rv, format!("stored {} at resourceVersion {rv}", key.display()));
                self.log(c, 201, None);
                Ok(stored)
            }
            Err(e) => self.fail_write(c, e, Status::already_exists(res, &name)),
        }
    }
}

/// The apps/v1 annotation that holds a DaemonSet's template generation.
pub(super) const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";
