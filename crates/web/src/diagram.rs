//! The apply-to-running-pod diagram of `seeds/004`, drawn as SVG and fed by trace records.

use kubeloop_core::apiserver::trace::{Flow, Record};
use std::collections::BTreeSet;
use yew::prelude::*;

/// A box of the diagram: its flow, title, subtitle and place.
pub struct Step {
    pub flow: Flow,
    pub title: &'static str,
    pub detail: &'static str,
    pub x: i32,
    pub y: i32,
}

const W: i32 = 150;
const H: i32 = 62;

/// Steps 1 to 11 snake across three rows; the failure paths sit below the steps they
/// leave from.
pub const STEPS: [Step; 14] = [
    Step { flow: Flow::Request, title: "1 Request", detail: "kubectl apply", x: 10, y: 10 },
    Step { flow: Flow::AuthnAuthz, title: "2 AuthN / AuthZ", detail: "user, RBAC", x: 180, y: 10 },
    Step { flow: Flow::MutatingAdmission, title: "3 Mutating admission", detail: "defaults, plugins", x: 350, y: 10 },
    Step { flow: Flow::Validation, title: "4 Validation", detail: "schema, policies, webhooks", x: 520, y: 10 },
    Step { flow: Flow::Etcd, title: "5 etcd", detail: "resourceVersion", x: 690, y: 10 },
    Step { flow: Flow::DeploymentController, title: "6 Deployment ctrl", detail: "ReplicaSets", x: 690, y: 110 },
    Step { flow: Flow::ReplicaSetController, title: "7 ReplicaSet ctrl", detail: "creates Pods", x: 520, y: 110 },
    Step { flow: Flow::Scheduler, title: "8 Scheduler", detail: "binds to a node", x: 350, y: 110 },
    Step { flow: Flow::Kubelet, title: "9 Kubelet", detail: "sees its Pod", x: 180, y: 110 },
    Step { flow: Flow::Runtime, title: "10 CRI / CNI / CSI", detail: "image, IP, volumes", x: 10, y: 110 },
    Step { flow: Flow::Ready, title: "11 Ready", detail: "probes, endpoints", x: 10, y: 210 },
    Step { flow: Flow::Denied, title: "denied", detail: "nothing written", x: 520, y: 210 },
    Step { flow: Flow::Pending, title: "pending", detail: "no feasible node", x: 350, y: 210 },
    Step { flow: Flow::NodeError, title: "node-error", detail: "pull, mount, start", x: 180, y: 210 },
];

/// What the diagram shows for one step.
#[derive(Clone, Default, PartialEq)]
pub struct Tally {
    /// Records of this step so far.
    pub records: usize,
    /// Distinct objects that passed it.
    pub objects: BTreeSet<String>,
    /// The latest record's object and message.
    pub latest: Option<(String, String)>,
    /// The component of the latest record: steps 6 and 7 are whichever controller acted.
    pub component: String,
    /// Records that arrived in the last update: the step lights up.
    pub fresh: usize,
    /// When the first record of this step was written (simulated ms).
    pub first: Option<u64>,
}

pub fn index(flow: Flow) -> usize {
    STEPS.iter().position(|s| s.flow == flow).unwrap_or(0)
}

/// Whether a record is the cluster's own background traffic rather than the effect of
/// what the person did: node heartbeats (Leases, node status) and Events. The counters
/// leave them out unless asked, so that they count the learner's objects.
pub fn background(r: &Record) -> bool {
    let kind = r.object.split('/').next().unwrap_or("");
    kind == "Lease" || kind == "Event" || (kind == "Node" && r.object.ends_with("/status"))
}

/// Fold new records into the tallies (background ones only if `all`).
pub fn tally<'a>(tallies: &mut [Tally; 14], records: impl IntoIterator<Item = &'a Record>, all: bool) {
    for t in tallies.iter_mut() {
        t.fresh = 0;
    }
    for r in records.into_iter().filter(|r| all || !background(r)) {
        let t = &mut tallies[index(r.flow)];
        t.first.get_or_insert(r.t);
        t.records += 1;
        t.fresh += 1;
        if !r.object.is_empty() {
            t.objects.insert(r.object.clone());
        }
        t.latest = Some((r.object.clone(), r.message.clone()));
        if t.component != r.component {
            t.component = r.component.clone();
        }
    }
}

/// A step's title and subtitle. Steps 6 and 7 name the controller that acted last: an
/// owner that makes or removes the next object (Deployment, CronJob, TTL, HPA, the garbage
/// collector), and the controller that creates Pods (ReplicaSet, StatefulSet, DaemonSet,
/// Job), or the garbage collector removing them.
pub fn heading(s: &Step, t: &Tally) -> (&'static str, &'static str) {
    match (s.flow, t.component.as_str()) {
        (Flow::DeploymentController, "cronjob-controller") => ("6 CronJob ctrl", "creates Jobs on schedule"),
        (Flow::DeploymentController, "ttl-after-finished-controller") => ("6 TTL ctrl", "deletes finished Jobs"),
        (Flow::DeploymentController, "horizontal-pod-autoscaler") => ("6 HPA ctrl", "scales by metrics"),
        (Flow::DeploymentController, "garbage-collector") => ("6 Garbage collector", "owners and dependents"),
        (Flow::ReplicaSetController, "pod-garbage-collector") => ("7 Pod GC", "deletes orphaned and excess Pods"),
        (Flow::ReplicaSetController, "garbage-collector") => ("7 Garbage collector", "deletes orphaned Pods"),
        (Flow::ReplicaSetController, "statefulset-controller") => ("7 StatefulSet ctrl", "creates Pods in order"),
        (Flow::ReplicaSetController, "daemon-set-controller") => ("7 DaemonSet ctrl", "a Pod per node"),
        (Flow::ReplicaSetController, "job-controller") => ("7 Job ctrl", "Pods run to completion"),
        (Flow::ReplicaSetController, "replication-controller") => ("7 Replication ctrl", "creates Pods"),
        (Flow::DeploymentController, "persistentvolume-controller") => ("6 PV controller", "binds claims to volumes"),
        (Flow::DeploymentController, "csi-provisioner") => ("6 CSI provisioner", "creates volumes"),
        (Flow::ReplicaSetController, "attachdetach-controller") => ("7 Attach/detach ctrl", "attaches volumes to nodes"),
        _ => (s.title, s.detail),
    }
}

/// The latest object, shortened to fit its box: `Pod/default/checkout-…-8f4b9`.
fn short(object: &str) -> String {
    let name = object.rsplit('/').next().unwrap_or(object);
    let kind = object.split('/').next().unwrap_or("");
    let label = if kind.is_empty() || kind == name { name.to_string() } else { format!("{kind} {name}") };
    if label.chars().count() <= 24 {
        label
    } else {
        let tail: String = label.chars().rev().take(10).collect::<Vec<_>>().into_iter().rev().collect();
        format!("{}…{tail}", label.chars().take(12).collect::<String>())
    }
}

fn arrow(x1: i32, y1: i32, x2: i32, y2: i32, class: &'static str) -> Html {
    html! { <line x1={x1.to_string()} y1={y1.to_string()} x2={x2.to_string()} y2={y2.to_string()} class={class} marker-end="url(#arrow)" /> }
}

/// Which parts of the control plane are down: the diagram shows their steps refusing
/// (red) and the loops behind them idle.
#[derive(Clone, Copy, Default, PartialEq)]
pub struct Outage {
    pub api_server: bool,
    pub etcd: bool,
}

impl Outage {
    /// A step that cannot be crossed now, and what it says instead.
    fn down(&self, flow: Flow) -> Option<&'static str> {
        let n: u8 = flow.as_str().parse().unwrap_or(0);
        match (self.api_server, self.etcd) {
            (true, _) if (1..=5).contains(&n) => Some(if n == 1 { "connection refused" } else { "API server down" }),
            (false, true) if n == 5 => Some("etcd down: timeouts"),
            _ => None,
        }
    }
    /// The loops: they keep running, but see and write nothing.
    fn idle(&self, flow: Flow) -> bool {
        let n: u8 = flow.as_str().parse().unwrap_or(0);
        (self.api_server || self.etcd) && (6..=11).contains(&n)
    }
}

/// Draw the diagram. `journey`: the tallies are one object's journey, and each step says
/// when it was first reached and in which order.
pub fn view(tallies: &[Tally; 14], selected: Option<Flow>, outage: Outage, journey: bool, on_select: Callback<Flow>) -> Html {
    let mut firsts: Vec<u64> = tallies.iter().filter_map(|t| t.first).collect();
    firsts.sort_unstable();
    let mut arrows = Vec::new();
    // Along the happy path, box to box.
    for w in STEPS[..11].windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let (x1, y1, x2, y2) = if a.y == b.y {
            if b.x > a.x {
                (a.x + W, a.y + H / 2, b.x - 2, b.y + H / 2)
            } else {
                (a.x, a.y + H / 2, b.x + W + 2, b.y + H / 2)
            }
        } else {
            (a.x + W / 2, a.y + H, b.x + W / 2, b.y - 2)
        };
        arrows.push(arrow(x1, y1, x2, y2, "edge"));
    }
    // Failure paths: validation to denied, scheduler to pending, runtime to node-error.
    // Validation's denials route through the gap between the scheduler and the ReplicaSet
    // controller, down to `denied` under the latter.
    arrows.push(html! { <polyline points="530,72 510,90 510,195 540,208" class="edge fail" fill="none" marker-end="url(#arrow)" /> });
    arrows.push(arrow(350 + W / 2, 110 + H, 350 + W / 2, 210 - 2, "edge fail"));
    arrows.push(arrow(180 + W / 2, 110 + H, 180 + W / 2, 210 - 2, "edge fail"));
    let boxes = STEPS.iter().enumerate().map(|(i, s)| {
        let t = &tallies[i];
        let failure = matches!(s.flow, Flow::Denied | Flow::Pending | Flow::NodeError);
        let mut class = classes!("step");
        if failure {
            class.push("failure");
        }
        if t.records > 0 {
            class.push("seen");
        }
        if t.fresh > 0 {
            class.push("hot");
        }
        if selected == Some(s.flow) {
            class.push("selected");
        }
        let down = outage.down(s.flow);
        if down.is_some() {
            class.push("down");
        } else if outage.idle(s.flow) {
            class.push("idle");
        }
        let flow = s.flow;
        let onclick = on_select.reform(move |_| flow);
        let on_key = on_select.clone();
        let onkeydown = Callback::from(move |e: KeyboardEvent| {
            if e.key() == "Enter" || e.key() == " " {
                e.prevent_default();
                on_key.emit(flow);
            }
        });
        let count = match (t.records, t.first) {
            (0, _) => String::new(),
            (n, Some(first)) if journey => {
                format!("#{} at {:.3} s · {n} records", firsts.iter().position(|f| *f == first).unwrap_or(0) + 1, first as f64 / 1000.0)
            }
            (n, _) => format!("{} objects · {n} records", t.objects.len()),
        };
        let (title, detail) = heading(s, t);
        let detail = down.unwrap_or(detail);
        // The box's title (its tooltip and its accessible name) holds the visible text, in
        // order (WCAG's label in name), then the latest record.
        let shown = short(t.latest.as_ref().map_or("", |(o, _)| o.as_str()));
        let label = format!(
            "{title} {detail} {}{}",
            if t.records == 0 { "nothing yet".to_string() } else { count.clone() },
            if shown.is_empty() { String::new() } else { format!(" {shown}") }
        );
        let latest = t.latest.as_ref().map(|(o, m)| if o.is_empty() { m.clone() } else { format!("{o}: {m}") }).unwrap_or_default();
        html! {
            <g class={class} {onclick} {onkeydown} tabindex="0" role="button" data-flow={s.flow.as_str()}>
                <title>{ if latest.is_empty() { label } else { format!("{label} — latest: {latest}") } }</title>
                <rect x={s.x.to_string()} y={s.y.to_string()} width={W.to_string()} height={H.to_string()} rx="6" />
                <text x={(s.x + 8).to_string()} y={(s.y + 17).to_string()} class="title">{ title }</text>
                <text x={(s.x + 8).to_string()} y={(s.y + 31).to_string()} class="detail">{ detail }</text>
                <text x={(s.x + 8).to_string()} y={(s.y + 44).to_string()} class="count">{ count }</text>
                <text x={(s.x + 8).to_string()} y={(s.y + 57).to_string()} class="latest">{ shown }</text>
            </g>
        }
    });
    html! {
        <svg class="diagram" viewBox="0 0 850 280" role="group" aria-label="The path from kubectl apply to a running pod">
            <defs>
                <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse">
                    <path d="M 0 0 L 10 5 L 0 10 z" class="arrowhead" />
                </marker>
            </defs>
            { for arrows }
            { for boxes }
        </svg>
    }
}

#[cfg(all(test, target_arch = "wasm32"))]
mod tests {
    use super::*;
    use kubeloop_core::sandbox::Sandbox;
    use wasm_bindgen_test::*;

    wasm_bindgen_test_configure!(run_in_browser);

    #[derive(Properties, PartialEq)]
    struct Props {
        tallies: [Tally; 14],
        outage: Outage,
    }

    #[function_component]
    fn Diagram(p: &Props) -> Html {
        view(&p.tallies, Some(Flow::Denied), p.outage, false, Callback::noop())
    }

    fn render(tallies: [Tally; 14]) -> web_sys::Element {
        render_with(tallies, Outage::default())
    }

    fn render_with(tallies: [Tally; 14], outage: Outage) -> web_sys::Element {
        let document = web_sys::window().unwrap().document().unwrap();
        let root = document.create_element("div").unwrap();
        document.body().unwrap().append_child(&root).unwrap();
        yew::Renderer::<Diagram>::with_root_and_props(root.clone(), Props { tallies, outage }).render();
        root
    }

    #[wasm_bindgen_test]
    async fn an_outage_turns_the_api_server_steps_red_and_the_loops_idle() {
        let root = render_with(Default::default(), Outage { api_server: true, etcd: false });
        settle().await;
        let class = |f: &str| root.query_selector(&format!("[data-flow=\"{f}\"]")).unwrap().unwrap().get_attribute("class").unwrap();
        for f in ["1", "2", "3", "4", "5"] {
            assert!(class(f).contains("down"), "step {f}: {}", class(f));
        }
        for f in ["6", "8", "9", "11"] {
            assert!(class(f).contains("idle") && !class(f).contains("down"), "step {f}: {}", class(f));
        }
        assert!(root.text_content().unwrap().contains("connection refused"));
        let etcd = render_with(Default::default(), Outage { api_server: false, etcd: true });
        settle().await;
        let c5 = etcd.query_selector("[data-flow=\"5\"]").unwrap().unwrap().get_attribute("class").unwrap();
        let c1 = etcd.query_selector("[data-flow=\"1\"]").unwrap().unwrap().get_attribute("class").unwrap();
        assert!(c5.contains("down") && !c1.contains("down"), "{c5} / {c1}");
    }

    async fn settle() {
        // Yew renders on its scheduler; give it a turn.
        let p = js_sys::Promise::new(&mut |resolve, _| {
            web_sys::window().unwrap().set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, 20).unwrap();
        });
        wasm_bindgen_futures::JsFuture::from(p).await.unwrap();
    }

    #[wasm_bindgen_test]
    async fn a_denied_apply_lights_the_denied_path_and_not_etcd_for_it() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: Bad_Name}\nspec:\n  containers: [{name: a, image: nginx}]\n";
        let sb = Sandbox::new(text, Some(1));
        let mut tallies: [Tally; 14] = Default::default();
        tally(&mut tallies, sb.cluster.api.trace.records(), false);
        let root = render(tallies);
        settle().await;
        let steps = root.query_selector_all("g.step").unwrap();
        assert_eq!(steps.length(), 14);
        let denied = root.query_selector("g.step[data-flow=\"denied\"]").unwrap().unwrap();
        let class = denied.get_attribute("class").unwrap();
        assert!(class.contains("seen") && class.contains("failure") && class.contains("selected"), "{class}");
        assert!(denied.text_content().unwrap().contains("1 objects"), "{:?}", denied.text_content());
        // Nothing was written, so etcd saw no Pod.
        let etcd = root.query_selector("g.step[data-flow=\"5\"]").unwrap().unwrap();
        assert!(!etcd.text_content().unwrap().contains("Pod/default/Bad_Name"));
        assert!(!etcd.query_selector("title").unwrap().unwrap().text_content().unwrap_or_default().contains("Bad_Name"));
    }

    #[wasm_bindgen_test]
    async fn a_deployment_passes_every_step_to_ready() {
        let text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: nginx:1.27}]\n";
        let mut sb = Sandbox::new(text, Some(1));
        sb.advance(30_000);
        let mut tallies: [Tally; 14] = Default::default();
        tally(&mut tallies, sb.cluster.api.trace.records(), false);
        let root = render(tallies);
        settle().await;
        for f in ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"] {
            let g = root.query_selector(&format!("g.step[data-flow=\"{f}\"]")).unwrap().unwrap();
            assert!(g.get_attribute("class").unwrap().contains("seen"), "step {f} not reached");
        }
        let ready = root.query_selector("g.step[data-flow=\"11\"] .count").unwrap().unwrap().text_content().unwrap();
        let objects: usize = ready.split(' ').next().unwrap().parse().unwrap();
        assert!(objects >= 2, "both pods become Ready: {ready}");
        for f in ["denied", "pending", "node-error"] {
            let g = root.query_selector(&format!("g.step[data-flow=\"{f}\"]")).unwrap().unwrap();
            assert!(!g.get_attribute("class").unwrap().contains("seen"), "{f} lit on a healthy run");
        }
        let title = root.query_selector("g.step[data-flow=\"7\"] .title").unwrap().unwrap().text_content().unwrap();
        assert_eq!(title, "7 ReplicaSet ctrl");
    }

    #[wasm_bindgen_test]
    fn heartbeats_leases_and_events_are_counted_only_when_asked() {
        let text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: nginx:1.27}]\n";
        let mut sb = Sandbox::new(text, Some(1));
        sb.advance(60_000);
        let records = sb.cluster.api.trace.records();
        let (mut mine, mut all): ([Tally; 14], [Tally; 14]) = Default::default();
        tally(&mut mine, records, false);
        tally(&mut all, records, true);
        let etcd = index(Flow::Etcd);
        assert!(all[etcd].records > mine[etcd].records, "{} vs {}", all[etcd].records, mine[etcd].records);
        assert!(mine.iter().flat_map(|t| t.objects.iter()).all(|o| !o.starts_with("Lease/") && !o.starts_with("Event/")));
        assert!(all[etcd].objects.iter().any(|o| o.starts_with("Lease/")));
        assert!(mine[etcd].objects.iter().any(|o| o.starts_with("Pod/")));
    }

    #[wasm_bindgen_test]
    async fn step_seven_names_the_controller_that_created_pods() {
        let text = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: once}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: busybox:1.36, command: [sh, -c, 'echo done']}]\n";
        let mut sb = Sandbox::new(text, Some(1));
        sb.advance(30_000);
        let mut tallies: [Tally; 14] = Default::default();
        tally(&mut tallies, sb.cluster.api.trace.records(), false);
        let root = render(tallies);
        settle().await;
        let title = root.query_selector("g.step[data-flow=\"7\"] .title").unwrap().unwrap().text_content().unwrap();
        assert_eq!(title, "7 Job ctrl");
    }
}
