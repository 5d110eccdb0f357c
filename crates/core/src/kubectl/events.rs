//! `kubectl events`: a namespace's events, oldest first, with `--for`, `--types`, `-A`
//! and `--no-headers` (`k8s.io/kubectl/pkg/cmd/events`).

use super::Flags;
use crate::apiserver::{ApiServer, Credentials, Request, Verb};
use crate::foundation::api::{self, get_array, get_str, resource_for_name, rid, RESOURCES};
use crate::foundation::sim::{parse_rfc3339, Millis};
use crate::foundation::sort::Sort;
use crate::foundation::value::Value;
use crate::kubectl::printers::{human_duration, table};

/// When an event was first seen (`eventTime`, else `firstTimestamp`).
fn first_seen(e: &Value) -> Option<Millis> {
    get_str(e, &["eventTime"]).and_then(parse_rfc3339).or_else(|| get_str(e, &["firstTimestamp"]).and_then(parse_rfc3339))
}

/// When an event was last seen, for sorting (`series.lastObservedTime`, `lastTimestamp`,
/// `eventTime`).
fn last_seen(e: &Value) -> Option<Millis> {
    get_str(e, &["series", "lastObservedTime"])
        .and_then(parse_rfc3339)
        .or_else(|| get_str(e, &["lastTimestamp"]).and_then(parse_rfc3339))
        .or_else(|| get_str(e, &["eventTime"]).and_then(parse_rfc3339))
}

/// The LAST SEEN column: `5s`, or `5s (x3 over 2m)` for a repeated event.
fn last_seen_column(e: &Value, now: Millis) -> String {
    let age = |t: Option<Millis>| t.map_or_else(|| "<unknown>".to_string(), |t| human_duration(now.saturating_sub(t)));
    let first = first_seen(e);
    if let Some(series) = e.get("series").filter(|s| s.is_object()) {
        let last = get_str(series, &["lastObservedTime"]).and_then(parse_rfc3339);
        return format!("{} (x{} over {})", age(last), series["count"].as_i64().unwrap_or(0), age(first));
    }
    let count = e["count"].as_i64().unwrap_or(0);
    if count > 1 {
        let last = get_str(e, &["lastTimestamp"]).and_then(parse_rfc3339);
        return format!("{} (x{count} over {})", age(last), age(first));
    }
    age(first)
}

pub(super) fn events(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    if let Some(o) = f.get("--output") {
        return vec![format!("error: kubeloop's kubectl events prints its table only (not -o {o}); kubectl get events -o {o} prints the objects")];
    }
    if f.get("--watch").is_some() || f.values.iter().any(|(k, _)| k == "-w") || f.positional.iter().any(|p| p == "-w") {
        return vec!["error: kubeloop's kubectl events does not watch; kubectl get events --watch does".into()];
    }
    let types: Vec<String> = match f.get("--types") {
        Some(t) => {
            let ts: Vec<String> = t.split(',').filter(|s| !s.is_empty()).map(str::to_ascii_lowercase).collect();
            if ts.iter().any(|t| t != "normal" && t != "warning") {
                return vec!["error: valid --types are Normal or Warning".into()];
            }
            ts
        }
        None => vec![],
    };
    let target = match f.get("--for") {
        Some(spec) => {
            let Some((ty, name)) = spec.split_once('/') else { return vec!["error: --for must be in resource/name form".into()] };
            if name.contains('/') {
                return vec!["error: arguments in resource/name form may not have more than one slash".into()];
            }
            let Some(r) = resource_for_name(ty) else { return vec![format!("error: the server doesn't have a resource type \"{ty}\"")] };
            Some((RESOURCES[r].kind, RESOURCES[r].api_version(), name.to_string()))
        }
        None => None,
    };
    let ns = if f.all_namespaces { "" } else { ns };
    let list = match api.handle(Request::new(Verb::List, rid::EVENT, ns, "", creds.clone())) {
        Ok(l) => l,
        Err(s) => return vec![s.kubectl_message(None, "")],
    };
    let mut items: Vec<&Value> = get_array(&list, &["items"])
        .iter()
        .filter(|e| {
            target.as_ref().is_none_or(|(kind, av, name)| {
                get_str(e, &["involvedObject", "kind"]) == Some(kind)
                    && get_str(e, &["involvedObject", "name"]) == Some(name.as_str())
                    && get_str(e, &["involvedObject", "apiVersion"]) == Some(av.as_str())
            })
        })
        .filter(|e| types.is_empty() || types.contains(&get_str(e, &["type"]).unwrap_or("").to_ascii_lowercase()))
        .collect();
    if items.is_empty() {
        return vec![if f.all_namespaces { "No events found.".to_string() } else { format!("No events found in {ns} namespace.") }];
    }
    items.sort_stable_by_cached_key(|e| last_seen(e));
    let mut rows = Vec::new();
    if f.get("--no-headers") != Some("true") {
        let mut h: Vec<String> = ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"].map(String::from).to_vec();
        if f.all_namespaces {
            h.insert(0, "NAMESPACE".into());
        }
        rows.push(h);
    }
    for e in items {
        let mut row = vec![
            last_seen_column(e, api.now),
            get_str(e, &["type"]).unwrap_or("").to_string(),
            get_str(e, &["reason"]).unwrap_or("").to_string(),
            format!("{}/{}", get_str(e, &["involvedObject", "kind"]).unwrap_or(""), get_str(e, &["involvedObject", "name"]).unwrap_or("")),
            get_str(e, &["message"]).unwrap_or("").trim().to_string(),
        ];
        if f.all_namespaces {
            row.insert(0, api::namespace(e).to_string());
        }
        rows.push(row);
    }
    table(&rows).lines().map(str::to_string).collect()
}
