//! "Why this value?": each field of an object names the write that set it.

use kubeloop_core::foundation::api::rid;
use kubeloop_core::sandbox::why::{why, FieldWhy};
use kubeloop_core::sandbox::Sandbox;

const APP: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
";

fn field<'a>(all: &'a [FieldWhy], path: &str) -> &'a FieldWhy {
    all.iter().find(|f| f.path == path).unwrap_or_else(|| panic!("no field {path} in {:?}", all.iter().map(|f| &f.path).collect::<Vec<_>>()))
}

#[test]
fn each_field_names_its_writer_and_stage() {
    let mut sb = Sandbox::new(APP, Some(1));
    sb.advance(20_000);
    sb.apply(&APP.replace("replicas: 2", "replicas: 3"));
    sb.advance(20_000);
    let store = &sb.cluster.api.store;
    let dep = store.get_by(rid::DEPLOYMENT, "default", "web").unwrap().clone();
    let all = why(&sb, &dep);
    let replicas = field(&all, "spec.replicas");
    assert_eq!((replicas.value.as_str(), replicas.writer.as_str()), ("3", "kubectl (admin)"));
    assert_eq!(replicas.how, "your manifest (kubectl apply sent it)");
    assert!(replicas.exact && replicas.t == 20_000, "{replicas:?}");
    let record = sb.cluster.api.trace.record(replicas.record.unwrap()).unwrap().clone();
    assert_eq!(record.resource_version, replicas.revision.to_string());
    // Set at creation by defaulting, and never changed since.
    let pull = field(&all, "spec.template.spec.containers[0].imagePullPolicy");
    assert_eq!(pull.value, "IfNotPresent");
    assert!(pull.how.starts_with("defaulting: the API server filled it in"), "{}", pull.how);
    assert_eq!(pull.t, 0);
    let available = field(&all, "status.availableReplicas");
    assert_eq!(available.writer, "deployment-controller");
    assert!(available.how.starts_with("deployment-controller reported it in the object's status"), "{}", available.how);
    // A pod's node was set by the scheduler's binding.
    let pod = store.list(rid::POD, Some("default")).next().unwrap().clone();
    let node = field(&why(&sb, &pod), "spec.nodeName").clone();
    assert_eq!(node.writer, "default-scheduler");
    assert!(node.how.contains("BINDING"), "{}", node.how);
    let ip = field(&why(&sb, &pod), "status.podIP").clone();
    assert_eq!(ip.writer, "kubelet");
}

#[test]
fn past_the_compacted_history_the_manager_is_named() {
    let mut sb = Sandbox::new(APP, Some(1));
    sb.advance(20_000);
    let rev = sb.cluster.api.store.revision();
    sb.etcdctl(&format!("compact {rev}"));
    sb.advance(1_000);
    let dep = sb.cluster.api.store.get_by(rid::DEPLOYMENT, "default", "web").unwrap().clone();
    let all = why(&sb, &dep);
    let image = field(&all, "spec.template.spec.containers[0].image");
    assert!(!image.exact, "{image:?}");
    assert_eq!(image.writer, "kubectl-client-side-apply");
    assert!(image.how.contains("per managedFields (Update at 2026-01-01T00:00:00Z"), "{}", image.how);
}

#[test]
fn a_deployments_journey_holds_what_it_caused_and_nothing_else() {
    use kubeloop_core::sandbox::journey::{object_of, Journey};
    let other = APP.replace("name: web", "name: other").replace("app: web", "app: other");
    let text =
        format!("{APP}---\n{other}---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector: {{app: web}}\n  ports:\n  - port: 80\n");
    let mut sb = Sandbox::new(&text, Some(1));
    sb.advance(30_000);
    // A rollout: the old ReplicaSet's pods are deleted, and stay in the journey.
    sb.apply(&text.replacen("image: nginx:1.27", "image: nginx:1.28", 1));
    sb.advance(60_000);
    let mut j = Journey::new("Deployment/default/web");
    let records = j.records(&sb.cluster.api.store, sb.cluster.api.trace.records());
    let objects: std::collections::BTreeSet<&str> = records.iter().map(|(_, r)| object_of(&r.object)).collect();
    let kinds = |k: &str| objects.iter().filter(|o| o.starts_with(k)).count();
    assert_eq!(kinds("ReplicaSet/default/web-"), 2, "{objects:?}");
    assert_eq!(kinds("Pod/default/web-"), 4, "{objects:?}");
    assert!(objects.contains("Service/default/web") && objects.iter().any(|o| o.starts_with("EndpointSlice/default/web-")), "{objects:?}");
    assert!(!objects.iter().any(|o| o.contains("other")), "{objects:?}");
    for stage in ["bind", "sync", "start", "ready"] {
        assert!(records.iter().any(|(_, r)| r.stage == stage), "no {stage} record in the journey");
    }
    // The same journey from a fresh pass over the trace.
    let mut again = Journey::new("Deployment/default/web");
    assert_eq!(again.records(&sb.cluster.api.store, sb.cluster.api.trace.records()).len(), records.len());
}

#[test]
fn a_long_run_keeps_the_latest_records_and_says_when_a_write_is_older() {
    use kubeloop_core::sandbox::PAGE_TRACE_WINDOW;
    let mut sb = Sandbox::new(APP, Some(1));
    sb.advance(20_000);
    // Three simulated hours of heartbeats: more records than the page keeps.
    sb.advance(3 * 3_600_000);
    let trace = &sb.cluster.api.trace;
    assert!(trace.records_base() > 0, "{} records in all", trace.records_end());
    assert!(trace.records().len() >= PAGE_TRACE_WINDOW && trace.records().len() <= PAGE_TRACE_WINDOW + PAGE_TRACE_WINDOW / 4);
    assert!(trace.requests().len() <= PAGE_TRACE_WINDOW + PAGE_TRACE_WINDOW / 4);
    // Requests keep their numbers: a kept record's request is the same request.
    let r = trace.records().iter().rev().find(|r| r.request.is_some()).unwrap();
    let req = &trace.requests()[r.request.unwrap() - trace.requests_base()];
    assert_eq!((req.verb.as_str(), req.object.as_str()), (r.verb.as_str(), r.object.as_str()));
    // spec.replicas was written at the start, long before the window and the compacted
    // history: "why" names no record and falls back on managedFields, saying so.
    let dep = sb.cluster.api.store.get_by(rid::DEPLOYMENT, "default", "web").unwrap().clone();
    let all = why(&sb, &dep);
    let replicas = field(&all, "spec.replicas");
    assert_eq!(replicas.record, None, "{replicas:?}");
    assert!(replicas.how.starts_with("its manager, per managedFields") && replicas.how.contains("older history is compacted"), "{}", replicas.how);
    // A new write points at its record by its number in the whole run.
    sb.apply(&APP.replace("replicas: 2", "replicas: 4"));
    sb.advance(20_000);
    let dep = sb.cluster.api.store.get_by(rid::DEPLOYMENT, "default", "web").unwrap().clone();
    let all = why(&sb, &dep);
    let replicas = field(&all, "spec.replicas");
    let i = replicas.record.expect("the write's record is kept");
    assert!(i >= sb.cluster.api.trace.records_base(), "{i}");
    assert_eq!(sb.cluster.api.trace.record(i).unwrap().resource_version, replicas.revision.to_string());
    assert_eq!(replicas.how, "your manifest (kubectl apply sent it)");
}
