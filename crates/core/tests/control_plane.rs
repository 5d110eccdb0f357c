//! The control plane under outage: a short etcd outage (under the leader-election renew
//! deadline) leaves the controllers running; when etcd returns, the watch cache starts
//! again at etcd's revision, and their watches from older resourceVersions get 410 Gone
//! and relist, shown at step 5. The 5-minute compaction is shown there too.

// Tests build their fixtures in memory; the determinism lint guards the library itself.
#![allow(clippy::disallowed_methods)]

use kubeloop_core::apiserver::trace::Flow;
use kubeloop_core::apiserver::Credentials;
use kubeloop_core::cluster::{Action, Cluster, Config, Fault};

fn act(c: &mut Cluster, a: Action) -> Vec<String> {
    c.act(Credentials::Token("admin-token".into()), a).output
}

const WEB: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: nginx:1.27}]}\n";

#[test]
fn a_short_etcd_outage_ends_watches_and_the_controllers_relist() {
    let mut c = Cluster::new(Config::default());
    act(&mut c, Action::Apply { text: WEB.into(), file: "web.yaml".into() });
    c.run_until(20_000);
    act(&mut c, Action::Fault(Fault::EtcdDown));
    assert_eq!(
        act(&mut c, Action::Kubectl("get pods".into())),
        ["Error from server (Timeout): Timeout: request did not complete within requested timeout - context deadline exceeded"]
    );
    c.run_until(25_000);
    act(&mut c, Action::Fault(Fault::EtcdUp));
    // A write that wakes the Deployment controller, whose watch is now too old.
    act(&mut c, Action::Kubectl("scale deployment web --replicas=3".into()));
    c.run_until(30_000);
    let relists: Vec<String> = c
        .api
        .trace
        .records()
        .iter()
        .filter(|r| r.t >= 25_000 && r.flow == Flow::Etcd && r.stage == "watch" && r.result == "relist")
        .map(|r| r.message.clone())
        .collect();
    assert!(
        relists.iter().any(|m| m.starts_with("410 Gone from the watch cache (too old resource version: ") && m.ends_with("relisted Deployments")),
        "{relists:?}"
    );
    assert!(!c.api.trace.records().iter().any(|r| r.stage == "leader-election"), "5 s is under the renew deadline: nobody restarts");
    c.run_until(700_000);
    assert!(c.api.trace.records().iter().any(|r| r.flow == Flow::Etcd && r.stage == "compact" && r.t == 600_000));
}

#[test]
fn what_the_flow_control_model_leaves_out_is_said_when_it_is_written() {
    let mut c = Cluster::new(Config::default());
    let pl = "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\nmetadata: {name: batch}\nspec:\n  type: Limited\n  limited:\n    nominalConcurrencyShares: 10\n    lendablePercent: 50\n    limitResponse: {type: Reject}\n";
    let out = act(&mut c, Action::Apply { text: pl.into(), file: "pl.yaml".into() });
    assert!(
        out.iter().any(|l| l.starts_with("Warning: kubeloop does not simulate borrowing between priority levels: prioritylevelconfiguration \"batch\"")),
        "{out:?}"
    );
    let fs = "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: health}\nspec:\n  priorityLevelConfiguration: {name: batch}\n  rules:\n  - subjects: [{kind: Group, group: {name: system:authenticated}}]\n    nonResourceRules: [{verbs: [get], nonResourceURLs: [/healthz]}]\n";
    let out = act(&mut c, Action::Apply { text: fs.into(), file: "fs.yaml".into() });
    assert!(
        out.iter().any(|l| l.contains("kubeloop does not classify non-resource requests: the nonResourceRules of flowschema \"health\" match nothing")),
        "{out:?}"
    );
    // A level without borrowing says nothing.
    let out = act(&mut c, Action::Apply { text: pl.replace("lendablePercent: 50", "lendablePercent: 0").replace("batch", "quiet"), file: "pl2.yaml".into() });
    assert!(!out.iter().any(|l| l.starts_with("Warning")), "{out:?}");
}

/// When the API server returns, the kubelets do not all write at that instant: each
/// node's lease is renewed at its own next 10-second tick, so the renewals after the
/// outage spread over the following ten seconds.
#[test]
fn after_an_api_server_outage_the_leases_renew_at_their_own_ticks() {
    let mut c = Cluster::new(Config::default());
    c.run_until(20_000);
    act(&mut c, Action::Fault(Fault::ApiServerDown));
    c.run_until(33_500);
    act(&mut c, Action::Fault(Fault::ApiServerUp));
    c.run_until(45_000);
    let renewals: Vec<(u64, String)> = c
        .api
        .trace
        .requests()
        .iter()
        .filter(|r| r.t >= 33_500 && r.verb == "update" && r.object.starts_with("Lease/kube-node-lease/") && r.code == 200)
        .map(|r| (r.t, r.object.clone()))
        .collect();
    // Each node's first renewal after the outage.
    let mut first: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    for (t, o) in &renewals {
        first.entry(o.as_str()).or_insert(*t);
    }
    assert_eq!(first.len(), 4, "every node renews: {renewals:?}");
    assert!(first.values().all(|t| *t > 33_500 && *t <= 43_500), "within the next tick: {first:?}");
    let times: std::collections::BTreeSet<u64> = first.values().copied().collect();
    assert_eq!(times.len(), 4, "at different moments: {first:?}");
}

/// After a short API server outage (under the renew deadline) the controllers' watches
/// are broken: a change made the moment it is back is seen at their informers' first
/// relist that finds it, 800 ms, 1.6 s, 3.2 s … after the break (reflector back-off).
#[test]
fn after_a_short_api_server_outage_the_controllers_see_changes_at_their_relist() {
    let mut c = Cluster::new(Config::default());
    act(&mut c, Action::Apply { text: WEB.into(), file: "web.yaml".into() });
    c.run_until(20_000);
    act(&mut c, Action::Fault(Fault::ApiServerDown));
    c.run_until(25_000);
    act(&mut c, Action::Fault(Fault::ApiServerUp));
    assert_eq!(act(&mut c, Action::Kubectl("scale deployment web --replicas=3".into())), ["deployment.apps/web scaled"]);
    c.run_until(30_000);
    let scaled: Vec<u64> =
        c.api.trace.records().iter().filter(|r| r.t >= 25_000 && r.component == "deployment-controller" && r.stage == "scale").map(|r| r.t).collect();
    // 20 s + 0.8 + 1.6 + 3.2 = 25.6 s: the first attempt after 25 s.
    assert!(!scaled.is_empty() && scaled[0] >= 25_600 && scaled[0] < 25_700, "{scaled:?}");
    assert_eq!(kubeloop_core::cluster::resume_after_outage(20_000, 25_000), 25_600);
    assert_eq!(kubeloop_core::cluster::resume_after_outage(20_000, 21_000), 22_400);
    // Past the renew deadline: the restarted process's next 2 s leader-election retry.
    assert_eq!(kubeloop_core::cluster::resume_after_outage(20_000, 35_500), 36_000);
}
