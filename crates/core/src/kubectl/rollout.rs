//! `kubectl rollout status|history|undo|restart|pause|resume` for Deployments
//! (`k8s.io/kubectl/pkg/cmd/rollout`, `k8s.io/kubectl/pkg/polymorphichelpers`).

use super::*;
use crate::foundation::sort::Sort;

/// `kubectl rollout status deployment/NAME`, as `--watch=false` prints it (the page does not
/// block; run it again to see progress). Wording from `polymorphichelpers/rollout_status.go`.
pub(super) fn rollout_status(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let ts = match sub_targets(api, creds, f, ns) {
        Ok(ts) => ts,
        Err(e) => return vec![e],
    };
    let mut out = Vec::new();
    for (r, name) in ts {
        if RESOURCES[r].kind != "Deployment" {
            out.push(format!("error: no status viewer has been implemented for {}", RESOURCES[r].kind));
            continue;
        }
        let d = match fetch(api, creds, r, ns, &name) {
            Ok(o) => o,
            Err(e) => {
                out.push(e);
                continue;
            }
        };
        let int = |p: &[&str]| api::get_i64(&d, p).unwrap_or(0);
        if int(&["metadata", "generation"]) > int(&["status", "observedGeneration"]) {
            out.push("Waiting for deployment spec update to be observed...".into());
            continue;
        }
        let progressing = api::get_array(&d, &["status", "conditions"]).iter().find(|c| get_str(c, &["type"]) == Some("Progressing")).cloned();
        if progressing.as_ref().and_then(|c| get_str(c, &["reason"])) == Some("ProgressDeadlineExceeded") {
            out.push(format!("error: deployment {name:?} exceeded its progress deadline"));
            continue;
        }
        let (want, updated, replicas, available) =
            (int(&["spec", "replicas"]), int(&["status", "updatedReplicas"]), int(&["status", "replicas"]), int(&["status", "availableReplicas"]));
        out.push(if updated < want {
            format!("Waiting for deployment {name:?} rollout to finish: {updated} out of {want} new replicas have been updated...")
        } else if replicas > updated {
            format!("Waiting for deployment {name:?} rollout to finish: {} old replicas are pending termination...", replicas - updated)
        } else if available < updated {
            format!("Waiting for deployment {name:?} rollout to finish: {available} of {updated} updated replicas are available...")
        } else {
            format!("deployment {name:?} successfully rolled out")
        });
    }
    out
}

/// `kubectl rollout restart deployment/NAME`: stamps the pod template, so that the
/// Deployment controller rolls out new pods.
pub(super) fn rollout_restart(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let ts = match sub_targets(api, creds, f, ns) {
        Ok(ts) => ts,
        Err(e) => return vec![e],
    };
    let stamp = crate::foundation::sim::rfc3339(api.now);
    ts.into_iter()
        .map(|(r, name)| {
            let patch = json!({"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": stamp}}}}});
            match api.handle(Request::patch(r, ns, &name, PatchType::Strategic, patch, creds.clone())) {
                Ok(_) => format!("{}/{name} restarted", kind_prefix(r)),
                Err(s) => s.kubectl_message(None, ""),
            }
        })
        .collect()
}

/// A Deployment's ReplicaSets by revision, oldest first.
pub(super) fn revisions(api: &mut ApiServer, creds: &Credentials, ns: &str, d: &Value) -> Result<Vec<(i64, Value)>, String> {
    let list = api.handle(Request::new(Verb::List, crate::foundation::api::rid::REPLICASET, ns, "", creds.clone())).map_err(|s| s.kubectl_message(None, ""))?;
    let mut revs: Vec<(i64, Value)> = api::get_array(&list, &["items"])
        .iter()
        .filter(|x| api::controller_ref(x).and_then(|c| get_str(c, &["uid"])) == Some(api::uid(d)))
        .filter_map(|x| Some((api::annotation(x, "deployment.kubernetes.io/revision")?.parse().ok()?, x.clone())))
        .collect();
    revs.sort_stable_by_key(|(n, _)| *n);
    Ok(revs)
}

/// `kubectl rollout undo deployment/NAME [--to-revision=N]`: the Deployment's template goes
/// back to that revision's (`polymorphichelpers/rollback.go`), as a JSON patch.
pub(super) fn rollout_undo(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let to: i64 = f.get("--to-revision").and_then(|v| v.parse().ok()).unwrap_or(0);
    each_fetched(api, creds, f, ns, |api, r, name, d| {
        if api::get_bool(d, &["spec", "paused"]) == Some(true) {
            return vec!["error: you cannot rollback a paused deployment; resume it first with 'kubectl rollout resume' and try again".to_string()];
        }
        let revs = match revisions(api, creds, ns, d) {
            Ok(r) => r,
            Err(e) => return vec![e],
        };
        let target = if to == 0 {
            // The previous revision: the highest below the current one.
            match revs.len() {
                0 | 1 => return vec![format!("error: no rollout history found for deployment {name:?}")],
                n => revs[n - 2].clone(),
            }
        } else {
            match revs.iter().find(|(n, _)| *n == to) {
                Some(x) => x.clone(),
                None => return vec![format!("error: unable to find specified revision {to} in history")],
            }
        };
        let mut template = api::get(&target.1, &["spec", "template"]).cloned().unwrap_or(json!({}));
        if let Some(labels) = template.get_mut("metadata").and_then(|m| m.get_mut("labels")).and_then(Value::as_object_mut) {
            labels.remove("pod-template-hash");
        }
        if api::get(d, &["spec", "template"]) == Some(&template) {
            return vec![format!("{}/{name} skipped rollback (current template already matches revision {})", kind_prefix(r), target.0)];
        }
        let mut annotations = api::get(d, &["metadata", "annotations"]).cloned().unwrap_or(json!({}));
        for (k, v) in api::get(&target.1, &["metadata", "annotations"]).and_then(Value::as_object).into_iter().flatten() {
            if !matches!(
                k.as_str(),
                "deployment.kubernetes.io/revision"
                    | "deployment.kubernetes.io/revision-history"
                    | "deployment.kubernetes.io/desired-replicas"
                    | "deployment.kubernetes.io/max-replicas"
                    | "kubectl.kubernetes.io/last-applied-configuration"
            ) {
                annotations[k.as_str()] = v.clone();
            }
        }
        let patch =
            json!([{"op": "replace", "path": "/spec/template", "value": template}, {"op": "replace", "path": "/metadata/annotations", "value": annotations}]);
        match api.handle(Request::patch(r, ns, name, PatchType::Json, patch, creds.clone())) {
            Ok(_) => vec![format!("{}/{name} rolled back", kind_prefix(r))],
            Err(s) => vec![s.kubectl_message(None, "")],
        }
    })
}

/// `kubectl rollout pause|resume deployment/NAME`.
pub(super) fn rollout_pause(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str, pause: bool) -> Vec<String> {
    each_fetched(api, creds, f, ns, |api, r, name, d| {
        if api::get_bool(d, &["spec", "paused"]).unwrap_or(false) == pause {
            return vec![format!("error: {} {name:?} is {}", RESOURCES[r].qualified_resource(), if pause { "already paused" } else { "not paused" })];
        }
        let patch = json!({"spec": {"paused": if pause { json!(true) } else { Value::Null }}});
        match api.handle(Request::patch(r, ns, name, PatchType::Strategic, patch, creds.clone())) {
            Ok(_) => vec![format!("{}/{name} {}", kind_prefix(r), if pause { "paused" } else { "resumed" })],
            Err(s) => vec![s.kubectl_message(None, "")],
        }
    })
}

/// `kubectl rollout history deployment/NAME`: the revisions of its ReplicaSets.
pub(super) fn rollout_history(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    each_fetched(api, creds, f, ns, |api, r, name, d| {
        let revs = match revisions(api, creds, ns, d) {
            Ok(rs) => rs,
            Err(e) => return vec![e],
        };
        let mut out = vec![format!("{}/{name} ", kind_prefix(r))];
        // History is aligned with a padding of two, unlike `get`'s tables.
        let mut text = "REVISION\tCHANGE-CAUSE\n".to_string();
        for (n, x) in revs {
            text.push_str(&format!("{n}\t{}\n", api::annotation(&x, "kubernetes.io/change-cause").unwrap_or("<none>")));
        }
        out.extend(crate::kubectl::describe::tabwrite(&text).lines().map(str::to_string));
        out.push(String::new());
        out
    })
}
