//! The real kubectl against `kubeloop serve`: the seeds' scenario, the website's
//! manifests, and the commands a person types, each checked for what kubectl prints. The
//! same commands through the page's terminal (`POST /kubeloop/v1/kubectl`, the one
//! implementation of the in-page terminal) must print the same text.
//!
//! Needs the real kubectl: `/usr/bin/kubectl`, or the path in `$KUBECTL`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn kubectl_binary() -> PathBuf {
    let p = std::env::var_os("KUBECTL").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/usr/bin/kubectl"));
    assert!(p.exists(), "the compatibility suite needs the real kubectl at {} (set $KUBECTL to use another)", p.display());
    p
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

struct Server {
    child: Child,
    dir: PathBuf,
    kubeconfig: PathBuf,
    kubectl: PathBuf,
}

impl Server {
    fn start(name: &str, args: &[&str]) -> Server {
        // One directory per server: tests that start the same scenario run side by side.
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("kubeloop-compat-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let kubeconfig = dir.join("kubeconfig");
        let mut child = Command::new(env!("CARGO_BIN_EXE_kubeloop"))
            .arg("serve")
            .args(args)
            .args(["--addr", "127.0.0.1:0", "--kubeconfig"])
            .arg(&kubeconfig)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("kubeloop serve starts");
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        assert!(first.contains("serving the Kubernetes API on https://127.0.0.1:"), "{first}");
        Server { child, dir, kubeconfig, kubectl: kubectl_binary() }
    }

    fn run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut cmd = Command::new(&self.kubectl);
        cmd.env("KUBECONFIG", &self.kubeconfig).env("HOME", &self.dir).args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
        let mut child = cmd.spawn().expect("kubectl runs");
        if let Some(text) = stdin {
            child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        }
        child.wait_with_output().unwrap()
    }

    /// kubectl's stdout; the command must succeed.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args, None);
        let (o, e) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "kubectl {args:?} failed:\n{o}\n{e}");
        o.into_owned()
    }

    /// What kubectl wrote to stderr, then to stdout, as a terminal shows it; it must succeed.
    fn combined(&self, args: &[&str]) -> String {
        let out = self.run(args, None);
        assert!(out.status.success(), "kubectl {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
        format!("{}{}", String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout))
    }

    /// kubectl's stderr; the command must fail.
    fn fails(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.run(args, stdin);
        assert!(!out.status.success(), "kubectl {args:?} should fail:\n{}", String::from_utf8_lossy(&out.stdout));
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// The same command line through the page's terminal, as the admin.
    fn terminal(&self, line: &str) -> String {
        let file = self.dir.join("line.txt");
        std::fs::write(&file, line).unwrap();
        self.ok(&["create", "--raw", "/kubeloop/v1/kubectl", "-f", file.to_str().unwrap()])
    }

    /// Wait until `check` holds for kubectl's output, or fail after `secs`.
    fn until(&self, args: &[&str], secs: u64, check: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let out = self.run(args, None);
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            if out.status.success() && check(&text) {
                return text;
            }
            assert!(start.elapsed() < Duration::from_secs(secs), "kubectl {args:?} never matched:\n{text}{}", String::from_utf8_lossy(&out.stderr));
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Ages move between two commands; compare everything else. An age's width moves the
/// columns after it (`59s` and `2m5s`), so an age and the AGE header are followed by one
/// space.
fn without_ages(text: &str) -> String {
    let is_age = |t: &str| {
        t == "AGE"
            || (t.chars().next().is_some_and(|c| c.is_ascii_digit())
                && t.chars().all(|c| c.is_ascii_digit() || "smhdy".contains(c))
                && t.ends_with(|c: char| "smhdy".contains(c)))
    };
    text.split('\n')
        .map(|line| {
            let mut out = String::new();
            let mut rest = line;
            while !rest.is_empty() {
                let word_end = rest.find(' ').unwrap_or(rest.len());
                let (word, after) = rest.split_at(word_end);
                let gap_end = after.find(|c| c != ' ').unwrap_or(after.len());
                let (gap, next) = after.split_at(gap_end);
                // A repeated event's `(xN over 4s)` ends its age with the parenthesis.
                let closed = word.strip_suffix(')').is_some_and(is_age);
                if closed || is_age(word) {
                    out.push_str(if closed { "AGE)" } else { "AGE" });
                    if !gap.is_empty() {
                        out.push(' ');
                    }
                } else {
                    out.push_str(word);
                    out.push_str(gap);
                }
                rest = next;
            }
            out
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn checkout() -> Server {
    Server::start("checkout", &[root().join("web/checkout.yaml").to_str().unwrap()])
}

#[test]
fn seeds_scenario_through_the_real_kubectl() {
    let s = checkout();
    let nodes = s.until(&["get", "nodes"], 20, |o| o.matches(" Ready ").count() == 4);
    assert!(nodes.starts_with("NAME            STATUS   ROLES           AGE"), "{nodes}");
    // The checkout Deployment of the scenario rolls out.
    let status = s.ok(&["rollout", "status", "deployment/checkout", "--timeout=60s"]);
    assert!(status.contains("deployment \"checkout\" successfully rolled out"), "{status}");
    let pods = s.until(&["get", "pods", "-l", "app=checkout"], 20, |o| o.matches("Running").count() == 2);
    assert!(pods.starts_with("NAME "), "{pods}");
    // One printer, two fronts: the page's terminal prints what kubectl prints.
    for cmd in ["get pods -A -o wide", "get deployments -o wide", "get services", "get nodes --show-labels", "get replicasets -l app=checkout"] {
        let args: Vec<&str> = cmd.split(' ').collect();
        assert_eq!(without_ages(&s.ok(&args)), without_ages(&s.terminal(cmd)), "{cmd}");
    }
    let real = s.ok(&["describe", "deployment", "checkout"]);
    let ours = s.terminal("describe deployment checkout");
    assert_eq!(without_ages(&real), without_ages(&ours));
    // kubectl 1.35 added the field path to describe's event messages; this kubectl is older.
    let pod = s.ok(&["get", "pods", "-l", "app=checkout", "-o", "name"]).lines().next().unwrap().to_string();
    let real = s.ok(&["describe", &pod]);
    let ours = s.terminal(&format!("describe {pod}")).replace("spec.containers{checkout}: ", "");
    assert_eq!(without_ages(&real), without_ages(&ours));
    // YAML and JSON as kubectl writes them (go-yaml's quoting, folding and key order).
    s.ok(&[
        "annotate",
        "deployment",
        "checkout",
        "note=a long note that goes past the eighty columns of go-yaml's emitter: so it folds, and: it is quoted",
        "empty=",
        "yes=yes",
    ]);
    for cmd in [
        "get deployment checkout -o yaml",
        "get pods -l app=checkout -o yaml",
        "get service checkout -o json",
        "get nodes node-a -o yaml",
        "get deployment checkout -o yaml --show-managed-fields",
    ] {
        let args: Vec<&str> = cmd.split(' ').collect();
        assert_eq!(s.ok(&args), s.terminal(cmd), "{cmd}");
    }
    for what in ["service checkout", "node node-a", "node control-plane", "replicasets -l app=checkout"] {
        let args: Vec<&str> = std::iter::once("describe").chain(what.split(' ')).collect();
        assert_eq!(without_ages(&s.ok(&args)), without_ages(&s.terminal(&format!("describe {what}"))), "describe {what}");
    }
    for cmd in [
        "logs deployment/checkout",
        "logs deployment/team-policy -n policy",
        "rollout history deployment/checkout",
        "get events --field-selector reason=Scheduled",
    ] {
        let args: Vec<&str> = cmd.split(' ').collect();
        assert_eq!(without_ages(&s.combined(&args)), without_ages(&s.terminal(cmd)), "{cmd}");
    }
    // A restricted user: RBAC answers as it does in the page.
    assert_eq!(s.run(&["--context", "ajay@kubeloop", "auth", "can-i", "delete", "pods"], None).stdout, b"no\n");
    assert_eq!(s.ok(&["--context", "ajay@kubeloop", "auth", "can-i", "create", "deployments"]), "yes\n");
    assert_eq!(s.ok(&["auth", "can-i", "create", "deployments", "--as", "ajay", "--as-group", "payments"]), "yes\n");
    let denied = s.fails(&["--context", "ajay@kubeloop", "get", "pods", "-n", "policy"], None);
    assert_eq!(
        denied,
        "Error from server (Forbidden): pods is forbidden: User \"ajay\" cannot list resource \"pods\" in API group \"\" in the namespace \"policy\"\n"
    );
    // The no-latest policy denies a :latest image with the real message.
    let manifest = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bad, labels: {team: payments}}\nspec:\n  selector: {matchLabels: {app: bad}}\n  template:\n    metadata: {labels: {app: bad, team: payments}}\n    spec: {containers: [{name: c, image: \"nginx:latest\"}]}\n";
    let err = s.fails(&["apply", "-f", "-"], Some(manifest));
    assert!(
        err.contains(
            "ValidatingAdmissionPolicy 'no-latest-tag' with binding 'no-latest-tag-binding' denied request: images must not use the mutable :latest tag"
        ),
        "{err}"
    );
    assert!(s.fails(&["get", "deployment", "bad"], None).contains("deployments.apps \"bad\" not found"));
    // The webhook from inside the cluster denies a Deployment without a team label.
    let err = s.fails(&["create", "deployment", "noteam", "--image=nginx:1.25"], None);
    assert!(err.contains("admission webhook \"team.policy.example.com\" denied the request"), "{err}");
    let explain = s.ok(&["explain", "deployment.spec.strategy"]);
    assert!(explain.contains("FIELD: strategy <DeploymentStrategy>") && explain.contains("Can be \"Recreate\" or \"RollingUpdate\""), "{explain}");
    for what in [
        "deployment.spec.strategy",
        "deployment",
        "pods.spec.containers.ports",
        "svc.spec.ports.port",
        "deploy.spec.replicas",
        "pods.metadata.labels",
        "nodes --recursive",
    ] {
        let args: Vec<&str> = std::iter::once("explain").chain(what.split(' ')).collect();
        assert_eq!(s.ok(&args), s.terminal(&format!("explain {what}")), "explain {what}");
    }
    assert_eq!(s.ok(&["config", "current-context"]), "kubeloop\n");
    let resources = s.ok(&["api-resources"]);
    assert!(resources.contains("deployments                         deploy       apps/v1"), "{resources}");
}

#[test]
fn seeds_manifests_through_kubectl_apply() {
    // The seeds' example without its Scenario document (kubeloop's own set-up), applied by
    // the real kubectl to an empty cluster: RBAC, a policy, a webhook served from inside the
    // cluster, and the checkout Deployment behind them.
    let s = Server::start("seeds", &[]);
    let text = std::fs::read_to_string(root().join("web/checkout.yaml")).unwrap();
    let manifests: Vec<&str> = text.split("\n---\n").filter(|d| !d.contains("kind: Scenario")).collect();
    let out = s.run(&["apply", "-f", "-"], Some(&manifests.join("\n---\n")));
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{printed}{}", String::from_utf8_lossy(&out.stderr));
    for want in [
        "role.rbac.authorization.k8s.io/deployer created",
        "rolebinding.rbac.authorization.k8s.io/payments-deployer created",
        "validatingadmissionpolicy.admissionregistration.k8s.io/no-latest-tag created",
        "validatingadmissionpolicybinding.admissionregistration.k8s.io/no-latest-tag-binding created",
        "deployment.apps/checkout created",
        "service/checkout created",
        "namespace/policy created",
        "deployment.apps/team-policy created",
        "validatingwebhookconfiguration.admissionregistration.k8s.io/team-policy created",
    ] {
        assert!(printed.contains(want), "missing {want:?} in\n{printed}");
    }
    assert!(s.ok(&["rollout", "status", "deployment/checkout", "--timeout=60s"]).contains("successfully rolled out"));
    assert!(s.ok(&["rollout", "status", "deployment/team-policy", "-n", "policy", "--timeout=60s"]).contains("successfully rolled out"));
    let again = s.run(&["apply", "-f", "-"], Some(&manifests.join("\n---\n")));
    assert!(String::from_utf8_lossy(&again.stdout).lines().all(|l| l.ends_with(" unchanged")), "{}", String::from_utf8_lossy(&again.stdout));
    // Once the webhook's backend runs, it answers for the namespace it guards.
    let err = s.fails(&["create", "deployment", "noteam", "--image=nginx:1.25"], None);
    assert!(err.contains("deployments in default must carry a team label"), "{err}");
}

#[test]
fn website_manifests_scale_watch_and_delete() {
    let s = Server::start("nginx", &[]);
    let file = root().join("tests/corpus/kubernetes-website-examples/controllers/nginx-deployment.yaml");
    assert_eq!(s.ok(&["apply", "-f", file.to_str().unwrap()]), "deployment.apps/nginx-deployment created\n");
    assert!(s.ok(&["rollout", "status", "deployment/nginx-deployment", "--timeout=60s"]).contains("successfully rolled out"));
    assert_eq!(s.ok(&["apply", "-f", file.to_str().unwrap()]), "deployment.apps/nginx-deployment unchanged\n");
    // diff: a dry run of the apply, printed as `diff -u`; the terminal takes the manifest as
    // a here-document. Only the temporary paths and times in the headers differ.
    let changed = std::fs::read_to_string(&file).unwrap().replace("nginx:1.14.2", "nginx:1.16.1").replace("replicas: 3", "replicas: 4");
    let real = s.run(&["diff", "-f", "-"], Some(&changed));
    assert_eq!(real.status.code(), Some(1));
    let headers = |t: &str| {
        t.lines().filter(|l| !l.starts_with("diff -u") && !l.starts_with("--- ") && !l.starts_with("+++ ")).map(|l| format!("{l}\n")).collect::<String>()
    };
    let ours = s.terminal(&format!("diff -f - <<EOF\n{changed}EOF"));
    assert_eq!(headers(&String::from_utf8_lossy(&real.stdout)), headers(&ours));
    assert!(ours.contains("-  replicas: 3\n+  replicas: 4\n"), "{ours}");
    let applied = s.terminal(&format!("apply -f - <<EOF\n{changed}EOF"));
    assert_eq!(applied, "deployment.apps/nginx-deployment configured\n");
    assert_eq!(s.run(&["diff", "-f", "-"], Some(&changed)).status.code(), Some(0), "nothing left to change");
    assert!(s.ok(&["rollout", "status", "deployment/nginx-deployment", "--timeout=60s"]).contains("successfully rolled out"));
    // `get -w` streams the rows as the ReplicaSet scales down.
    let mut watch =
        Command::new(&s.kubectl).env("KUBECONFIG", &s.kubeconfig).args(["get", "pods", "-w"]).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(s.ok(&["scale", "deployment/nginx-deployment", "--replicas=1"]), "deployment.apps/nginx-deployment scaled\n");
    s.until(&["get", "pods"], 30, |o| o.lines().count() == 2);
    std::thread::sleep(Duration::from_millis(500));
    let _ = watch.kill();
    let streamed = String::from_utf8_lossy(&watch.wait_with_output().unwrap().stdout).into_owned();
    assert!(streamed.lines().next().unwrap().starts_with("NAME"), "{streamed}");
    assert!(streamed.lines().filter(|l| l.contains("Terminating")).count() >= 2, "{streamed}");
    // exec runs in the nginx container: its document root holds the image's pages.
    let pod = s.ok(&["get", "pods", "-o", "name"]).lines().next().unwrap().to_string();
    assert_eq!(s.ok(&["exec", &pod, "--", "ls", "/usr/share/nginx/html"]), "50x.html\nindex.html\n");
    // Logs are what the simulated nginx wrote.
    let logs = s.ok(&["logs", "deployment/nginx-deployment"]);
    assert!(logs.contains("/docker-entrypoint.sh: Configuration complete; ready for start up"), "{logs}");
    // Cascades: orphan leaves the ReplicaSet, foreground removes it after its pods.
    assert_eq!(s.ok(&["delete", "deployment", "nginx-deployment", "--cascade=orphan"]), "deployment.apps \"nginx-deployment\" deleted\n");
    let rs = s.ok(&["get", "rs", "-o", "name"]);
    assert!(rs.starts_with("replicaset.apps/nginx-deployment-"), "{rs}");
    for one in rs.lines() {
        assert!(s.ok(&["delete", one, "--cascade=foreground"]).contains("deleted"));
    }
    s.until(&["get", "pods,rs", "-o", "name"], 60, |o| o.trim().is_empty());
    // Background is the default and removes the dependents too.
    s.ok(&["create", "deployment", "web", "--image=nginx:1.25", "--replicas=2"]);
    s.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    assert!(s.ok(&["delete", "deployment", "web", "--cascade=background"]).contains("deleted"));
    s.until(&["get", "pods,rs", "-o", "name"], 60, |o| o.trim().is_empty());
}

#[test]
fn typed_clients_apply_and_maintenance() {
    let s = Server::start("typed", &[]);
    // Typed clients send protobuf: create, auth, whoami, drain's evictions.
    assert_eq!(s.ok(&["create", "deployment", "web", "--image=nginx:1.25", "--replicas=3"]), "deployment.apps/web created\n");
    assert_eq!(s.ok(&["create", "namespace", "team-a"]), "namespace/team-a created\n");
    assert_eq!(s.ok(&["create", "configmap", "cfg", "--from-literal=a=b"]), "configmap/cfg created\n");
    assert_eq!(s.ok(&["auth", "can-i", "create", "deployments"]), "yes\n");
    assert!(s.ok(&["auth", "whoami"]).contains("Username    admin"));
    let yaml = s.ok(&["get", "deployment", "web", "-o", "yaml"]);
    assert!(yaml.contains("      - image: nginx:1.25\n        imagePullPolicy: IfNotPresent\n        name: nginx\n"), "{yaml}");
    assert!(!yaml.contains("paused: false") && !yaml.contains("stdin: false"), "zero values of plain fields stay omitted:\n{yaml}");
    s.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    // Rollouts.
    assert_eq!(s.ok(&["set", "image", "deployment/web", "nginx=nginx:1.26"]), "deployment.apps/web image updated\n");
    s.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    let history = s.ok(&["rollout", "history", "deployment/web"]);
    assert!(history.contains("REVISION  CHANGE-CAUSE\n1         <none>\n2         <none>"), "{history}");
    assert_eq!(s.ok(&["rollout", "undo", "deployment/web"]), "deployment.apps/web rolled back\n");
    assert_eq!(s.ok(&["rollout", "pause", "deployment/web"]), "deployment.apps/web paused\n");
    assert_eq!(s.ok(&["rollout", "resume", "deployment/web"]), "deployment.apps/web resumed\n");
    assert_eq!(s.ok(&["rollout", "restart", "deployment/web"]), "deployment.apps/web restarted\n");
    s.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    assert_eq!(s.ok(&["label", "deployment", "web", "tier=front"]), "deployment.apps/web labeled\n");
    assert_eq!(s.ok(&["annotate", "deployment", "web", "note=hi"]), "deployment.apps/web annotated\n");
    // Nodes: taints, cordon and a drain that evicts through a disruption budget.
    assert_eq!(s.ok(&["taint", "nodes", "node-b", "dedicated=x:NoSchedule"]), "node/node-b tainted\n");
    assert_eq!(s.ok(&["taint", "nodes", "node-b", "dedicated-"]), "node/node-b untainted\n");
    assert_eq!(s.ok(&["cordon", "node-a"]), "node/node-a cordoned\n");
    assert_eq!(s.ok(&["uncordon", "node-a"]), "node/node-a uncordoned\n");
    s.ok(&["create", "pdb", "web", "--selector=app=web", "--max-unavailable=1"]);
    let node = s.ok(&["get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].spec.nodeName}"]);
    let drained = s.ok(&["drain", &node, "--ignore-daemonsets", "--timeout=60s"]);
    assert!(drained.contains(&format!("node/{node} drained")), "{drained}");
    s.until(&["get", "pods", "-l", "app=web", "-o", "wide"], 60, |o| o.matches("Running").count() == 3 && !o.contains(&node));
    // Server-side apply: a conflict with the manager that scaled, then forced.
    let manifest = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: ssa}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: ssa}}\n  template:\n    metadata: {labels: {app: ssa}}\n    spec: {containers: [{name: c, image: \"nginx:1.25\"}]}\n";
    let out = s.run(&["apply", "--server-side", "-f", "-"], Some(manifest));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "deployment.apps/ssa serverside-applied\n");
    s.ok(&["scale", "deployment/ssa", "--replicas=4"]);
    let conflict = s.fails(&["apply", "--server-side", "-f", "-"], Some(manifest));
    assert!(
        conflict.contains("Apply failed with 1 conflict: conflict with \"kubectl\" with subresource \"scale\" using apps/v1: .spec.replicas"),
        "{conflict}"
    );
    assert_eq!(s.terminal(&format!("apply --server-side -f - <<EOF\n{manifest}EOF")).trim_end(), conflict.trim_end(), "the terminal's conflict");
    let out = s.run(&["apply", "--server-side", "--force-conflicts", "-f", "-"], Some(manifest));
    assert!(out.status.success());
    assert_eq!(s.ok(&["get", "deployment", "ssa", "-o", "jsonpath={.spec.replicas}"]), "2");
    // Client-side apply, then server-side apply of a changed value: kubectl's server-side
    // apply takes over the fields its client-side apply held, with no conflict, and keeps
    // the last-applied annotation in step.
    let csa = manifest.replace("name: ssa}", "name: csa, annotations: {note: a}}").replace("app: ssa", "app: csa").replace("replicas: 2", "replicas: 0");
    let out = s.run(&["apply", "-f", "-"], Some(&csa));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "deployment.apps/csa created\n");
    let changed = csa.replace("note: a", "note: b");
    let out = s.run(&["apply", "--server-side", "-f", "-"], Some(&changed));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "deployment.apps/csa serverside-applied\n", "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(s.ok(&["get", "deployment", "csa", "-o", "jsonpath={.metadata.annotations.note}"]), "b");
    let managers = s.ok(&["get", "deployment", "csa", "--show-managed-fields", "-o", "jsonpath={.metadata.managedFields[*].manager}"]);
    assert!(managers.split(' ').any(|m| m == "kubectl"), "{managers}");
    let last = s.ok(&["get", "deployment", "csa", "-o", "jsonpath={.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}"]);
    assert!(last.contains("\"note\":\"b\""), "{last}");
    // And the terminal does the same.
    let ours = s.terminal(&format!("apply -f - <<EOF\n{}EOF", csa.replace("name: csa,", "name: csa2,").replace("app: csa", "app: csa2")));
    assert_eq!(ours.trim(), "deployment.apps/csa2 created");
    let ours = s.terminal(&format!("apply --server-side -f - <<EOF\n{}EOF", changed.replace("name: csa,", "name: csa2,").replace("app: csa", "app: csa2")));
    assert_eq!(ours.trim(), "deployment.apps/csa2 serverside-applied");
    // diff: a server-side dry run, exit code 1 when something would change.
    let changed = manifest.replace("nginx:1.25", "nginx:1.26");
    let out = s.run(&["diff", "-f", "-"], Some(&changed));
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("+      - image: nginx:1.26"));
    assert_eq!(s.ok(&["get", "deployment", "ssa", "-o", "jsonpath={.spec.template.spec.containers[0].image}"]), "nginx:1.25");
    // The page's `create` builds what kubectl's generators build.
    for (kind, args) in [
        ("deployment", "--image=nginx:1.25 --replicas=2 --port=80"),
        ("configmap", "--from-literal=a=b --from-literal=c=d"),
        ("serviceaccount", ""),
        ("role", "--verb=get,list --resource=pods,deployments.apps"),
        ("clusterrole", "--verb=get --resource=nodes"),
        ("rolebinding", "--role=gen-role-real --user=ajay --group=payments"),
        ("clusterrolebinding", "--clusterrole=view --serviceaccount=default:builder"),
        ("poddisruptionbudget", "--selector=app=web --min-available=1"),
        ("quota", "--hard=pods=10,cpu=2"),
        ("job", "--image=busybox:1.36"),
    ] {
        let real_name = format!("gen-{kind}-real");
        let ours_name = format!("gen-{kind}-ours");
        let mut real: Vec<&str> = vec!["create", kind, &real_name];
        real.extend(args.split(' ').filter(|a| !a.is_empty()));
        s.ok(&real);
        let line = format!("create {kind} {ours_name} {args}");
        assert!(s.terminal(&line).contains(" created"), "{line}");
        let strip = |name: &str| {
            let y = s.ok(&["get", kind, name, "-o", "yaml"]);
            y.lines()
                .filter(|l| {
                    // A Job's generated selector and labels carry its uid, at any depth.
                    let uid_label = ["controller-uid:", "batch.kubernetes.io/controller-uid:"].iter().any(|p| l.trim_start().starts_with(p));
                    !uid_label && !["  creationTimestamp:", "  resourceVersion:", "  uid:", "  generation:"].iter().any(|p| l.starts_with(p))
                })
                .collect::<Vec<_>>()
                .join("\n")
                .replace(name, "NAME")
        };
        let (a, b) = (strip(&real_name), strip(&ours_name));
        // Only the spec is compared for workloads; their status moves on its own.
        let spec = |t: &str| t.split("\nstatus:").next().unwrap_or("").to_string();
        assert_eq!(spec(&a), spec(&b), "create {kind}");
    }
    for (real, ours) in [
        ("secret generic gen-secret-real --from-literal=k=v", "secret generic gen-secret-ours --from-literal=k=v"),
        ("service nodeport gen-svc-real --tcp=80:8080", "service nodeport gen-svc-ours --tcp=80:8080"),
    ] {
        let mut args = vec!["create"];
        args.extend(real.split(' '));
        s.ok(&args);

        assert!(s.terminal(&format!("create {ours}")).contains(" created"), "{ours}");
    }
    let secret = s.ok(&["get", "secret", "gen-secret-ours", "-o", "jsonpath={.data.k} {.type}"]);
    assert_eq!(secret, s.ok(&["get", "secret", "gen-secret-real", "-o", "jsonpath={.data.k} {.type}"]));
    let ports = |n: &str| {
        s.ok(&["get", "svc", n, "-o", "jsonpath={.spec.type} {.spec.ports[0].name} {.spec.ports[0].port} {.spec.ports[0].targetPort} {.spec.selector}"])
    };
    assert_eq!(ports("gen-svc-ours"), ports("gen-svc-real").replace("gen-svc-real", "gen-svc-ours"));
    // Field validation: kubectl's strict default names the unknown field; `warn` drops it
    // with a warning, `false` (Ignore) silently.
    let typo = manifest.replace("replicas: 2", "replica: 2").replace("name: ssa", "name: typo");
    let err = s.fails(&["apply", "-f", "-"], Some(&typo));
    assert!(err.contains("unknown field \"spec.replica\""), "{err}");
    let out = s.run(&["apply", "--validate=warn", "-f", "-"], Some(&typo));
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "Warning: unknown field \"spec.replica\"\n");
    let out = s.run(&["apply", "--validate=false", "-f", "-"], Some(&typo.replace("name: typo", "name: typo2")));
    assert!(out.status.success() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    // Status and binding subresources, and a SubjectAccessReview, as raw API calls.
    // The quotas made above (`cpu=2`) now hold: a pod must say how much CPU it requests.
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: manual}\nspec: {schedulerName: none, containers: [{name: c, image: \"nginx:1.25\", resources: {requests: {cpu: 100m}}}]}\n";
    let out = s.run(&["apply", "-f", "-"], Some(pod));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let binding = s.dir.join("binding.json");
    std::fs::write(&binding, r#"{"apiVersion":"v1","kind":"Binding","metadata":{"name":"manual"},"target":{"kind":"Node","name":"node-b"}}"#).unwrap();
    s.ok(&["create", "--raw", "/api/v1/namespaces/default/pods/manual/binding", "-f", binding.to_str().unwrap()]);
    assert_eq!(s.ok(&["get", "pod", "manual", "-o", "jsonpath={.spec.nodeName}"]), "node-b");
    // No load-balancer controller runs here: the status written through the subresource
    // stays, and kubectl shows it as the EXTERNAL-IP.
    s.ok(&["create", "service", "loadbalancer", "lb", "--tcp=80:8080"]);
    assert!(s.ok(&["get", "service", "lb"]).contains("<pending>"));
    s.ok(&["patch", "service", "lb", "--subresource=status", "--type=merge", "-p", r#"{"status":{"loadBalancer":{"ingress":[{"ip":"203.0.113.7"}]}}}"#]);
    assert_eq!(s.ok(&["get", "service", "lb", "-o", "jsonpath={.status.loadBalancer.ingress[0].ip}"]), "203.0.113.7");
    assert_eq!(without_ages(&s.ok(&["get", "service", "lb", "-o", "wide"])), without_ages(&s.terminal("get service lb -o wide")));
    assert!(s.ok(&["get", "service", "lb"]).contains("203.0.113.7"));
    let sar = s.dir.join("sar.json");
    std::fs::write(&sar, r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"ajay","resourceAttributes":{"verb":"delete","resource":"nodes"}}}"#).unwrap();
    assert!(s.ok(&["create", "--raw", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "-f", sar.to_str().unwrap()]).contains(r#""allowed":false"#));
}

#[test]
fn exec_and_logs_through_the_real_kubectl() {
    let s = Server::start("exec", &[]);
    let manifest = "apiVersion: v1\nkind: Pod\nmetadata: {name: box}\nspec:\n  containers:\n  - name: box\n    image: busybox:1.36\n    command: [\"sh\", \"-c\", \"echo starting; i=0; while true; do i=$((i+1)); echo tick $i; sleep 1; done\"]\n";
    assert!(s.run(&["apply", "-f", "-"], Some(manifest)).status.success());
    s.until(&["get", "pod", "box", "-o", "jsonpath={.status.phase}"], 60, |o| o == "Running");
    // kubectl exec over WebSocket (v5.channel.k8s.io): output, then the exit code.
    let cmd = ["exec", "box", "--", "sh", "-c", "echo hello; hostname; exit 3"];
    let out = s.run(&cmd, None);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\nbox\n");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "command terminated with exit code 3\n");
    assert_eq!(out.status.code(), Some(3));
    // The page's terminal prints the same.
    assert_eq!(s.terminal("exec box -- sh -c 'echo hello; hostname; exit 3'"), "hello\nbox\ncommand terminated with exit code 3\n");
    // stderr comes back on its own stream.
    let out = s.run(&["exec", "box", "--", "sh", "-c", "echo out; cat /nope; echo more"], None);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "out\nmore\n");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "cat: can't open '/nope': No such file or directory\n");
    // Files the container wrote are there for the next exec.
    assert_eq!(s.ok(&["exec", "box", "--", "sh", "-c", "echo saved > /tmp/note"]), "");
    assert_eq!(s.ok(&["exec", "-i", "box", "-c", "box", "--", "cat", "/tmp/note"]), "saved\n");
    // The API server's refusals, and the runtime's.
    assert_eq!(s.fails(&["exec", "box", "-c", "nope", "--", "ls"], None), "Error from server (BadRequest): container nope is not valid for pod box\n");
    let missing = s.fails(&["exec", "box", "--", "nope"], None);
    assert!(
        missing.starts_with("error: Internal error occurred: error executing command in container: failed to exec in container: failed to start exec "),
        "{missing}"
    );
    assert!(
        missing.ends_with(
            "OCI runtime exec failed: exec failed: unable to start container process: exec: \"nope\": executable file not found in $PATH: unknown\n"
        ),
        "{missing}"
    );
    // With stdin, a shell runs each command line it reads, keeping its variables; its
    // `exit` is the command's exit code. Other commands read stdin as a stream.
    let out = s.run(&["exec", "-i", "box", "--", "sh"], Some("echo hello\nx=3; echo $x\nexit 4\n"));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\n3\n");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "command terminated with exit code 4\n");
    assert_eq!(out.status.code(), Some(4));
    let out = s.run(&["exec", "-i", "box", "--", "wc", "-l"], Some("a\nb\n"));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "2");
    assert!(out.status.success());
    // The terminal's stdin is a here-document (the page's terminal also stays attached,
    // line by line): the same output; a command with nothing to read ends at once.
    assert_eq!(s.terminal("exec -i box -- sh <<EOF\necho hello\nx=3; echo $x\nexit 4\nEOF"), "hello\n3\ncommand terminated with exit code 4\n");
    let out = s.run(&["exec", "-it", "box", "--", "sh"], Some("echo hi\n"));
    assert_eq!(
        format!("{}{}", String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout)),
        s.terminal("exec -it box -- sh <<EOF\necho hi\nEOF")
    );
    assert_eq!(s.terminal("exec -it box -- sh"), "");
    // kubectl run -i attaches to the new pod's shell once it runs (pods/attach over the
    // same WebSocket channels); --rm deletes it when the shell is done.
    let out = s.run(&["run", "-i", "--rm", "--restart=Never", "once", "--image=busybox:1.36", "--", "sh"], Some("echo hi from stdin\nexit 0\n"));
    let (o, e) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{o}\n{e}");
    assert!(e.contains("If you don't see a command prompt, try pressing enter."), "{e}");
    assert!(o.starts_with("hi from stdin\n") && o.contains("pod \"once\" deleted"), "{o}");
    assert!(s.fails(&["get", "pod", "once"], None).contains("NotFound"));
    // The terminal's run -i takes a here-document as the shell's input.
    s.terminal("run -i --rm --restart=Never twice --image=busybox:1.36 -- sh <<EOF\necho hi\nEOF");
    s.until(&["get", "pods"], 30, |o| !o.contains("twice"));
    // kubectl logs reads what the program wrote, as the terminal does.
    let logs = s.until(&["logs", "box"], 30, |o| o.contains("tick 3\n"));
    assert!(logs.starts_with("starting\ntick 1\ntick 2\ntick 3\n"), "{logs}");
    assert!(s.terminal("logs box").starts_with("starting\ntick 1\ntick 2\ntick 3\n"));
    assert_eq!(s.ok(&["logs", "box", "--tail=1"]).lines().count(), 1);
    // kubectl cp runs tar in the container: out of it, and into it.
    let local = s.dir.join("hostname");
    let out = s.run(&["cp", "box:/etc/hostname", local.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "kubectl keeps tar's stderr to itself");
    assert_eq!(std::fs::read_to_string(&local).unwrap(), "box\n");
    let note = s.dir.join("note.txt");
    std::fs::write(&note, "copied in\nsecond line\n").unwrap();
    let out = s.run(&["cp", note.to_str().unwrap(), "box:/tmp/note.txt"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(s.ok(&["exec", "box", "--", "cat", "/tmp/note.txt"]), "copied in\nsecond line\n");
    assert!(s.terminal("cp box:/etc/hostname x").starts_with("error: kubectl cp copies between your machine and a container"));
    // kubectl debug adds an ephemeral container (pods/ephemeralcontainers) and attaches to
    // it once it runs; it is never restarted; describe lists it, as the terminal's does.
    let out = s.run(&["debug", "-i", "box", "--image=busybox:1.36", "--target=box", "-c", "dbg", "--", "sh"], Some("echo hi from the debugger\nexit\n"));
    let (o, e) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{o}\n{e}");
    assert!(o.contains("hi from the debugger"), "{o}\n{e}");
    let state = s.until(&["get", "pod", "box", "-o", "jsonpath={.status.ephemeralContainerStatuses[0].state}"], 30, |o| o.contains("terminated"));
    assert!(state.contains("\"exitCode\":0"), "{state}");
    let described = s.ok(&["describe", "pod", "box"]);
    assert!(described.contains("Ephemeral Containers:\n  dbg:\n"), "{described}");
    // Events are left out: kubectl 1.34+ prefixes each message with its field path.
    let before_events = |t: &str| t.split("Events:").next().unwrap_or("").to_string();
    assert_eq!(before_events(&described), before_events(&s.terminal("describe pod box")));
    // A name already taken by a regular container is refused by the API server; one taken
    // by an ephemeral container leaves the pod as it is.
    let refused = s.fails(&["debug", "box", "--image=busybox:1.36", "-c", "box"], None);
    let mine = s.terminal("debug box --image=busybox:1.36 -c box");
    let last = |t: &str| t.lines().last().unwrap_or("").to_string();
    assert_eq!(last(&refused), last(&mine));
    assert!(last(&mine).contains("Duplicate value: \"box\""), "{mine}");
    let again = s.run(&["debug", "box", "--image=busybox:1.36", "-c", "dbg"], None);
    assert!(again.status.success());
    assert_eq!(s.terminal("debug box --image=busybox:1.36 -c dbg").lines().count(), 1);
}

const WORKLOADS: &str = "apiVersion: v1
kind: Service
metadata: {name: nginx}
spec:
  clusterIP: None
  selector: {app: nginx}
  ports: [{port: 80, name: web}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: nginx
  replicas: 2
  selector: {matchLabels: {app: nginx}}
  template:
    metadata: {labels: {app: nginx}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports: [{containerPort: 80, name: web}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {name: agent}}
  template:
    metadata: {labels: {name: agent}}
    spec:
      tolerations: [{key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}]
      containers:
      - name: agent
        image: busybox:1.36
        command: [sh, -c, 'while true; do sleep 30; done']
---
apiVersion: batch/v1
kind: Job
metadata: {name: count}
spec:
  completions: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: count
        image: busybox:1.36
        command: [sh, -c, 'seq 3']
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: '0 3 * * *'
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: report
            image: busybox:1.36
            command: [sh, -c, date]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: nginx}}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: legacy}
spec:
  replicas: 1
  template:
    metadata: {labels: {app: legacy}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
";

#[test]
fn workload_kinds_print_and_describe_as_the_real_kubectl_does() {
    // At --speed above 1 the simulated timestamps run ahead of kubectl's clock (ages print
    // `<invalid>`), so this runs at the wall clock's pace.
    let s = Server::start("workloads", &[]);
    let out = s.run(&["apply", "-f", "-"], Some(WORKLOADS));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    s.until(&["get", "statefulset", "web", "-o", "jsonpath={.status.readyReplicas}"], 90, |o| o == "2");
    s.until(&["get", "job", "count", "-o", "jsonpath={.status.succeeded}"], 90, |o| o == "2");
    s.until(&["get", "daemonset", "agent", "-o", "jsonpath={.status.numberReady}"], 90, |o| o == "4");
    s.until(&["get", "pdb", "web", "-o", "jsonpath={.status.disruptionsAllowed}"], 90, |o| o == "1");
    for cmd in [
        "get statefulsets",
        "get statefulsets -o wide",
        "get daemonsets -o wide",
        "get jobs -o wide",
        "get cronjobs -o wide",
        "get pdb",
        "get rc -o wide",
        "get controllerrevisions",
        "get statefulsets,daemonsets,jobs",
    ] {
        let args: Vec<&str> = cmd.split(' ').collect();
        assert_eq!(without_ages(&s.ok(&args)), without_ages(&s.terminal(cmd)), "{cmd}");
    }
    // describe is printed by kubectl itself from the objects: the closest comparison.
    // This kubectl (1.32) is older than the 1.36 kubeloop prints: it does not name ports
    // (`80/TCP (web)`), its DaemonSet describer has no `Namespace:` line and its CronJob
    // describer no `Time Zone:` line. The events
    // table's widths follow ages that moved between the two commands, so its rows are
    // compared word by word.
    let normal = |text: &str| {
        let text = without_ages(text).replace(" (web)", "");
        let (head, events) = text.split_once("\nEvents:").unwrap_or((&text, ""));
        let events: Vec<String> = events.lines().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
        format!("{head}\nEvents:{}", events.join("\n")).trim_end().to_string()
    };
    for what in ["statefulset web", "daemonset agent", "job count", "cronjob nightly", "pdb web", "rc legacy"] {
        let args: Vec<&str> = std::iter::once("describe").chain(what.split(' ')).collect();
        let mut ours = s.terminal(&format!("describe {what}"));
        if what.starts_with("daemonset") {
            ours = ours.replacen("Namespace:      default\n", "", 1);
        }
        if what.starts_with("cronjob") {
            ours = ours.lines().filter(|l| !l.starts_with("Time Zone:")).map(|l| format!("{l}\n")).collect();
        }
        assert_eq!(normal(&s.ok(&args)), normal(&ours), "describe {what}");
    }
}

const STORAGE: &str = "apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: resizable}
provisioner: disk.csi.kubeloop.dev
volumeBindingMode: Immediate
allowVolumeExpansion: true
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: grow}
spec:
  storageClassName: resizable
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: task-pv-volume, labels: {type: local}}
spec:
  storageClassName: manual
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /mnt/data}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: task-pv-claim}
spec:
  storageClassName: manual
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 3Gi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: app}
spec:
  containers:
  - name: app
    image: nginx:1.27
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: data}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop2}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop2}
";

#[test]
fn storage_and_namespace_deletion_print_as_the_real_kubectl_does() {
    let s = Server::start("storage", &[]);
    let out = s.run(&["apply", "-f", "-"], Some(STORAGE));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    s.until(&["get", "pvc", "data", "-o", "jsonpath={.status.phase}"], 90, |o| o == "Bound");
    s.until(&["get", "pvc", "task-pv-claim", "-o", "jsonpath={.status.phase}"], 90, |o| o == "Bound");
    s.until(&["get", "pod", "app", "-o", "jsonpath={.status.phase}"], 90, |o| o == "Running");
    // An age that crosses a digit boundary between the two commands (9s, 10s) widens its
    // column: cells are compared, each table's alignment by the printers' own tests.
    let cells = |text: &str| -> Vec<Vec<String>> { without_ages(text).lines().map(|l| l.split_whitespace().map(str::to_string).collect()).collect() };
    for cmd in [
        "get pv",
        "get pvc",
        "get sc",
        "get pv,pvc,sc",
        "get pvc -o wide",
        "get volumeattachments",
        "get csidrivers",
        "get ns",
        "get apiservices",
        "get flowschemas",
        "get prioritylevelconfigurations",
    ] {
        let args: Vec<&str> = cmd.split(' ').collect();
        assert_eq!(cells(&s.ok(&args)), cells(&s.terminal(cmd)), "{cmd}");
    }
    // The events table's widths follow ages that moved between the two commands, and so
    // does a repeated event's `(xN over AGE)`.
    let normal = |text: &str| {
        let text = without_ages(text);
        let (head, events) = text.split_once("\nEvents:").unwrap_or((&text, ""));
        let events: Vec<String> = events
            .lines()
            .map(|l| {
                let words: Vec<&str> = l.split_whitespace().collect();
                words.iter().enumerate().map(|(i, w)| if i > 0 && words[i - 1] == "over" { "AGE)" } else { w }).collect::<Vec<_>>().join(" ")
            })
            .collect();
        format!("{head}\nEvents:{}", events.join("\n")).trim_end().to_string()
    };
    for what in ["pvc task-pv-claim", "pvc data", "sc standard"] {
        let args: Vec<&str> = std::iter::once("describe").chain(what.split(' ')).collect();
        assert_eq!(normal(&s.ok(&args)), normal(&s.terminal(&format!("describe {what}"))), "describe {what}");
    }
    // API Priority and Fairness's dump, through the real kubectl's --raw and the terminal's.
    let first = |text: &str| -> Vec<String> { text.lines().map(|l| l.split(',').next().unwrap_or("").trim().to_string()).collect() };
    let path = "/debug/api_priority_and_fairness/dump_priority_levels";
    assert_eq!(first(&s.ok(&["get", "--raw", path])), first(&s.terminal(&format!("get --raw {path}"))));
    assert!(s.ok(&["get", "--raw", path]).contains("workload-low,"));
    // A claim grown while no pod mounts it: the disk is larger, the claim waits for a
    // node to grow its file system, with its resize conditions.
    s.until(&["get", "pvc", "grow", "-o", "jsonpath={.status.phase}"], 90, |o| o == "Bound");
    let patched = s.ok(&["patch", "pvc", "grow", "-p", r#"{"spec":{"resources":{"requests":{"storage":"3Gi"}}}}"#]);
    assert_eq!(patched.trim(), "persistentvolumeclaim/grow patched");
    s.until(&["get", "pvc", "grow", "-o", "jsonpath={.status.allocatedResourceStatuses.storage}"], 90, |o| o == "NodeResizePending");
    for cmd in ["get pvc grow", "get pv"] {
        let args: Vec<&str> = cmd.split(' ').collect();
        assert_eq!(cells(&s.ok(&args)), cells(&s.terminal(cmd)), "{cmd}");
    }
    let described = s.ok(&["describe", "pvc", "grow"]);
    assert!(described.contains("\nConditions:\n") && described.contains("FileSystemResizePending"), "{described}");
    assert_eq!(normal(&described), normal(&s.terminal("describe pvc grow")), "describe pvc grow");
    // Deleting a namespace: what each prints, then the namespace Terminating, then gone.
    let theirs = s.ok(&["delete", "ns", "shop", "--wait=false"]);
    let ours = s.terminal("delete ns shop2 --wait=false");
    assert_eq!(theirs.replace("shop", "NS"), ours.replace("shop2", "NS"));
    s.until(&["get", "ns", "shop", "shop2", "-o", "jsonpath={.items[*].status.phase}"], 30, |o| o == "Terminating Terminating" || o.is_empty());
    s.until(&["get", "ns", "-o", "name"], 90, |o| !o.contains("namespace/shop"));
    for ns in ["shop", "shop2"] {
        assert_eq!(s.fails(&["get", "ns", ns], None).trim(), s.terminal(&format!("get ns {ns}")).trim());
    }
}

/// An outage of the API server in a scenario closes `serve`'s port: the real kubectl's
/// connection is refused, with its own words, and a watch open at the time ends; when the
/// API server is back the same address answers again.
#[test]
fn an_api_server_outage_refuses_the_real_kubectls_connection() {
    let dir = std::env::temp_dir().join(format!("kubeloop-outage-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = dir.join("outage.yaml");
    let text = "apiVersion: kubeloop.dev/v1alpha1\nkind: Scenario\nmetadata:\n  name: outage\nspec:\n  steps:\n  - at: 4s\n    fault: apiserverDown\n  - at: 12s\n    fault: apiserverUp\n";
    std::fs::write(&scenario, text).unwrap();
    let s = Server::start("outage", &[scenario.to_str().unwrap()]);
    assert!(s.ok(&["get", "nodes"]).contains("control-plane"));
    let mut watch = Command::new(&s.kubectl)
        .env("KUBECONFIG", &s.kubeconfig)
        .env("HOME", &s.dir)
        .args(["get", "nodes", "--watch"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    // A request in flight when the port closes fails on its own terms (a body cut short);
    // the next one is refused.
    let refused = loop {
        let out = s.run(&["get", "nodes"], None);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        if !out.status.success() && err.contains("was refused") {
            break err;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "the API server never went down");
        std::thread::sleep(Duration::from_millis(200));
    };
    let address = std::fs::read_to_string(&s.kubeconfig).unwrap().lines().find_map(|l| l.trim().strip_prefix("server: https://").map(str::to_string)).unwrap();
    assert_eq!(refused.trim(), format!("The connection to the server {address} was refused - did you specify the right host or port?"));
    let ended = loop {
        if let Some(status) = watch.try_wait().unwrap() {
            break status;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "the watch outlived the API server");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(ended.code().is_some());
    s.until(&["get", "nodes"], 30, |o| o.contains("control-plane"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Objects over the size limits, refused with the same words by the real kubectl and the
/// terminal: a client-side apply's annotation over 256 KiB, a ConfigMap over 1 MiB, and
/// (server-side, so no annotation) an object over etcd's 1.5 MiB.
#[test]
fn size_limits_print_as_the_real_kubectl_does() {
    let s = Server::start("limits", &[]);
    let cm = |name: &str, kib: usize| format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  blob: {}\n", "x".repeat(kib * 1024));
    let pod = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: big\nspec:\n  containers:\n  - name: c\n    image: nginx\n    env:\n    - name: BLOB\n      value: {}\n",
        "x".repeat(1600 * 1024)
    );
    for (name, text, flags) in [("annotations", cm("dashboards", 300), ""), ("data", cm("large", 1100), "--server-side "), ("etcd", pod, "--server-side ")] {
        let file = s.dir.join(format!("{name}.yaml"));
        std::fs::write(&file, &text).unwrap();
        let mut args = vec!["apply"];
        args.extend(flags.split_whitespace());
        args.extend(["-f", file.to_str().unwrap()]);
        let theirs = s.fails(&args, None);
        let ours = s.terminal(&format!("apply {flags}-f - <<EOF\n{text}EOF"));
        assert_eq!(theirs.trim(), ours.trim(), "{name}");
    }
}

#[test]
fn ages_are_masked_with_the_gaps_they_move() {
    // The same row printed 5 s apart: the ages' widths move the columns after them.
    let a = "NAME    STATUS     COMPLETIONS   DURATION   AGE   CONTAINERS\ncount   Complete   2/2           5s         59s   count\n";
    let b = "NAME    STATUS     COMPLETIONS   DURATION   AGE    CONTAINERS\ncount   Complete   2/2           5s         2m4s   count\n";
    assert_eq!(without_ages(a), without_ages(b));
    // What is not an age still counts, spaces included.
    assert_ne!(without_ages("web   1/1   Running"), without_ages("web   1/1  Running"));
    assert_ne!(without_ages("count   Complete   AGE"), without_ages("count   Failed   AGE"));
}

#[test]
fn tutorial_commands_run_expose_events_and_cluster_info_print_as_the_real_kubectl_does() {
    let s = checkout();
    s.until(&["get", "deployment", "checkout", "-o", "jsonpath={.status.availableReplicas}"], 60, |o| o == "2");
    // Generated manifests. This kubectl (1.32) still writes `creationTimestamp: null` into
    // a generated object's metadata; from 1.34 the field is omitted when zero.
    let generated = |text: String| text.replace("  creationTimestamp: null\n", "");
    for cmd in [
        "run x --image=nginx --dry-run=client -o yaml",
        "run web --image=nginx:1.27 --port=80 --env=MODE=demo --env=LEVEL=2 -l app=web,tier=front --restart=Never --image-pull-policy=IfNotPresent --dry-run=client -o yaml",
        "run once --image=busybox --restart=OnFailure --annotations=team=payments --privileged --dry-run=client -o yaml",
        "run x --image=nginx -n kube-system --dry-run=client -o yaml",
        "run x --image=nginx --dry-run=client -o name",
        "run x --image=nginx --dry-run=client",
        "expose deployment checkout --name=co2 --port=8080 --target-port=80 --dry-run=client -o yaml",
        "expose deployment/checkout --name=co3 --type=NodePort --dry-run=client -o yaml",
        "expose service checkout --name=co4 --port=81 --protocol=UDP --session-affinity=ClientIP --dry-run=client -o yaml",
        "expose deployment checkout --name=co5 --port=80 --dry-run=client",
    ] {
        let args: Vec<&str> = cmd.split(' ').collect();
        assert_eq!(generated(s.ok(&args)), s.terminal(cmd), "{cmd}");
    }
    // The generators of kubectl create, as manifests. In 1.32 a nested object's metadata
    // holds only `creationTimestamp: null`; from 1.34 it prints as `metadata: {}`.
    let nested = |text: String| {
        let lines: Vec<&str> = text.lines().collect();
        let mut out: Vec<String> = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            if l.trim() == "creationTimestamp: null" {
                let indent = l.len() - l.trim_start().len();
                let next_indent = lines.get(i + 1).map_or(0, |n| n.len() - n.trim_start().len());
                if next_indent < indent {
                    if let Some(prev) = out.last_mut() {
                        prev.push_str(" {}");
                    }
                }
                continue;
            }
            out.push(l.to_string());
        }
        out.join("\n") + "\n"
    };
    for cmd in [
        "create deployment x --image=nginx --dry-run=client -o yaml",
        "create deployment web --image=nginx:1.27 --replicas=3 --port=80 -n kube-system --dry-run=client -o yaml",
        "create job once --image=busybox --dry-run=client -o yaml",
        "create cronjob tick --image=busybox --schedule=@hourly --dry-run=client -o yaml",
        "create configmap settings --from-literal=mode=demo --from-literal=level=2 --dry-run=client -o yaml",
        "create secret generic creds --from-literal=password=s3cret --dry-run=client -o yaml",
        "create namespace dev --dry-run=client -o yaml",
        "create serviceaccount builder --dry-run=client -o yaml",
        "create service clusterip front --tcp=80:8080 --dry-run=client -o yaml",
        "create priorityclass high --value=1000 --description=important --dry-run=client -o yaml",
        "create quota small --hard=pods=4 --dry-run=client -o yaml",
        "create deployment x --image=nginx --dry-run=client",
        "create namespace dev --dry-run=server",
        "create ingress simple --rule=foo.com/bar=svc1:8080,tls=my-cert --dry-run=client -o yaml",
        "create ingress catch-all --class=otheringress --rule=/path=svc:port --dry-run=client -o yaml",
        "create ingress multipath --class=default --rule=foo.com/=svc:port --rule=foo.com/admin/=svcadmin:portadmin --dry-run=client -o yaml",
        "create ingress ingtls --class=default --rule=foo.com/=svc:https,tls --rule=foo.com/path/subpath*=othersvc:8080 --dry-run=client -o yaml",
        "create ing ingdefault --class=default --default-backend=defaultsvc:http --rule=foo.com/*=svc:8080,tls=secret1 --annotation=a=b --dry-run=client -o yaml",
    ] {
        let args: Vec<&str> = cmd.split(' ').collect();
        assert_eq!(nested(s.ok(&args)), s.terminal(cmd), "{cmd}");
    }
    // A server-side dry run returns the object as the API server would store it.
    let unstamped = |t: String| t.lines().filter(|l| !l.starts_with("  uid: ") && !l.starts_with("  creationTimestamp: ")).collect::<Vec<_>>().join("\n");
    let cmd = "create ingress web -n kube-system --rule=web.example/*=checkout:80 --dry-run=server -o yaml";
    assert_eq!(unstamped(s.ok(&cmd.split(' ').collect::<Vec<_>>())), unstamped(s.terminal(cmd)), "{cmd}");
    assert_eq!(s.ok(&["create", "ingress", "web-a", "--rule=web.example/*=checkout:80,tls"]), "ingress.networking.k8s.io/web-a created\n");
    assert_eq!(s.terminal("create ingress web-b --rule=web.example/*=checkout:80,tls"), "ingress.networking.k8s.io/web-b created\n");
    let stored = |name: &str| s.ok(&["get", "ingress", name, "-o", "jsonpath={.spec}{.status}"]);
    assert_eq!(stored("web-a"), stored("web-b"));
    assert_eq!(without_ages(&s.ok(&["get", "ingress"])), without_ages(&s.terminal("get ingress")));
    // JSON of a generated object: kubectl writes a typed object's fields in Go's struct
    // order, kubeloop's terminal in key order; the values are the same.
    let cmd = "run once --image=busybox --restart=OnFailure --annotations=team=payments --privileged --dry-run=client -o json";
    let mut real: serde_json::Value = serde_json::from_str(&s.ok(&cmd.split(' ').collect::<Vec<_>>())).unwrap();
    real["metadata"].as_object_mut().unwrap().remove("creationTimestamp");
    assert_eq!(real, serde_json::from_str::<serde_json::Value>(&s.terminal(cmd)).unwrap(), "{cmd}");
    // A command in a container: the words after `--` are its arguments, or with --command
    // its command.
    for (argv, line) in [
        (
            vec!["run", "sh", "--image=busybox", "--dry-run=client", "-o", "yaml", "--", "sh", "-c", "echo hi"],
            "run sh --image=busybox --dry-run=client -o yaml -- sh -c 'echo hi'",
        ),
        (
            vec!["run", "sh", "--image=busybox", "--command", "--dry-run=client", "-o", "yaml", "--", "sleep", "3600"],
            "run sh --image=busybox --command --dry-run=client -o yaml -- sleep 3600",
        ),
    ] {
        assert_eq!(generated(s.ok(&argv)), s.terminal(line), "{line}");
    }
    // Real writes, one through each front; the objects and lines differ only in their names.
    assert_eq!(s.ok(&["run", "real-a", "--image=nginx", "--port=80", "-l", "app=real-a"]), "pod/real-a created\n");
    assert_eq!(s.terminal("run real-b --image=nginx --port=80 -l app=real-b"), "pod/real-b created\n");
    assert_eq!(s.ok(&["expose", "pod", "real-a"]), "service/real-a exposed\n");
    assert_eq!(s.terminal("expose pod real-b"), "service/real-b exposed\n");
    let spec = |name: &str| s.ok(&["get", "service", name, "-o", "jsonpath={.spec.ports}{.spec.selector}{.metadata.labels}"]).replace(name, "NAME");
    assert_eq!(spec("real-a"), spec("real-b"));
    let pod = |name: &str| {
        s.ok(&[
            "get",
            "pod",
            name,
            "-o",
            "jsonpath={.spec.containers[0].name}{.spec.containers[0].image}{.spec.containers[0].ports}{.spec.restartPolicy}{.metadata.labels}",
        ])
        .replace(name, "NAME")
    };
    assert_eq!(pod("real-a"), pod("real-b"));
    // set env and set resources patch the pod template, from either front.
    assert_eq!(s.ok(&["set", "env", "deployment/checkout", "MODE=demo", "LEVEL=2"]), "deployment.apps/checkout env updated\n");
    assert_eq!(s.terminal("set env deployment/checkout COLOUR=blue -c checkout"), "deployment.apps/checkout env updated\n");
    assert_eq!(s.ok(&["set", "env", "deployment/checkout", "--list"]), s.terminal("set env deployment/checkout --list"));
    assert_eq!(s.terminal("set env deployment/checkout LEVEL-"), "deployment.apps/checkout env updated\n");
    assert_eq!(s.ok(&["set", "env", "deployment", "checkout", "--list"]), s.terminal("set env deployment checkout --list"));
    assert!(!s.ok(&["set", "env", "deployment/checkout", "--list"]).contains("LEVEL="));
    assert_eq!(
        s.ok(&["set", "resources", "deployment", "checkout", "-c=checkout", "--limits=cpu=300m,memory=256Mi"]),
        "deployment.apps/checkout resource requirements updated\n"
    );
    assert_eq!(s.terminal("set resources deployment/checkout --requests=cpu=150m"), "deployment.apps/checkout resource requirements updated\n");
    assert_eq!(
        s.ok(&["get", "deployment", "checkout", "-o", "jsonpath={.spec.template.spec.containers[0].resources}"]),
        r#"{"limits":{"cpu":"300m","memory":"256Mi"},"requests":{"cpu":"150m","memory":"256Mi"}}"#
    );
    // Nothing to change is no write and no line; no update at all is an error.
    assert_eq!(s.ok(&["set", "env", "deployment/checkout", "MODE=demo"]), "");
    assert_eq!(s.terminal("set env deployment/checkout MODE=demo"), "");
    assert_eq!(s.fails(&["set", "resources", "deployment/checkout"], None), s.terminal("set resources deployment/checkout"));
    // replace writes the whole object; --force deletes it and creates it again.
    let cm = |name: &str, v: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {{v: \"{v}\"}}\n");
    let piped = |args: &[&str], text: &str| {
        let out = s.run(args, Some(text));
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    };
    for (name, front) in [("rep-a", "real"), ("rep-b", "terminal")] {
        let lines = |args: &str, text: &str| {
            if front == "real" {
                piped(&args.split(' ').collect::<Vec<_>>(), text)
            } else {
                s.terminal(&format!("{args} <<EOF\n{text}EOF"))
            }
        };
        assert_eq!(lines("create -f -", &cm(name, "1")), format!("configmap/{name} created\n"));
        assert_eq!(lines("replace -f -", &cm(name, "2")), format!("configmap/{name} replaced\n"));
        assert_eq!(lines("replace --force -f -", &cm(name, "3")), format!("configmap \"{name}\" deleted\nconfigmap/{name} replaced\n"));
        assert_eq!(s.ok(&["get", "configmap", name, "-o", "jsonpath={.data.v}"]), "3");
    }
    assert_eq!(piped(&["replace", "-f", "-"], &cm("missing", "1")), s.terminal(&format!("replace -f - <<EOF\n{}EOF", cm("missing", "1"))));
    // Errors, word for word (kubectl writes them to stderr).
    for cmd in [
        "run --image=nginx",
        "run x --image=Nginx",
        "run x --image=nginx --rm",
        "run x --image=nginx --restart=Sometimes",
        "run x --image=nginx --env=FOO",
        "run x --image=nginx --expose",
        "run real-a --image=nginx",
        "run x --image=nginx --dry-run=maybe",
        "expose deployment checkout",
        "expose deployment",
        "expose statefulset web",
        "expose configmap kube-root-ca.crt",
        "events --types=Bad",
        "events --for checkout",
    ] {
        let args: Vec<&str> = cmd.split(' ').collect();
        assert_eq!(s.fails(&args, None), s.terminal(cmd), "{cmd}");
    }
    // What the cluster says of itself: the control plane's address is the server's own.
    let server = std::fs::read_to_string(&s.kubeconfig).unwrap().lines().find_map(|l| l.trim().strip_prefix("server: ").map(str::to_string)).unwrap();
    assert_eq!(s.ok(&["cluster-info"]).replace(&server, "https://127.0.0.1:6443"), s.terminal("cluster-info"));
    assert_eq!(s.ok(&["api-versions"]), s.terminal("api-versions"));
    // The terminal's kubeconfig is the one kubeloop serve writes: a context per user.
    for cmd in ["config get-contexts", "config current-context", "config get-users", "config get-clusters"] {
        let args: Vec<&str> = cmd.split(' ').collect();
        assert_eq!(s.ok(&args), s.terminal(cmd), "{cmd}");
    }
    assert_eq!(s.ok(&["config", "view"]).replace(&server, "https://127.0.0.1:6443"), s.terminal("config view"));
    let server_line = |t: &str| t.lines().find(|l| l.starts_with("Server Version:")).map(str::to_string);
    assert_eq!(server_line(&s.ok(&["version"])), server_line(&s.terminal("version")));
    assert!(s.terminal("version --client").starts_with("Client Version: v1.36.0\nKustomize Version: "));
    // kubectl events for one object, by type, and for a namespace with none (once real-a's
    // container has started, so that both commands see the same events).
    s.until(&["events", "--for", "pod/real-a"], 60, |o| o.contains("Container started"));
    // The rollouts that set env and set resources began must be over, or a scaling event
    // may land between the two reads.
    s.until(
        &[
            "get",
            "deployment",
            "checkout",
            "-o",
            "jsonpath={.metadata.generation} {.status.observedGeneration} {.status.replicas} {.status.updatedReplicas} {.status.availableReplicas}",
        ],
        60,
        |o| {
            let f: Vec<&str> = o.split(' ').collect();
            f.len() == 5 && f[0] == f[1] && f[2..].iter().all(|n| *n == "2")
        },
    );
    for cmd in ["events --for deployment/checkout", "events --for pod/real-a --types=Normal", "events -n kube-public", "events --types=Warning -n kube-system"]
    {
        let args: Vec<&str> = cmd.split(' ').collect();
        assert_eq!(without_ages(&s.combined(&args)), without_ages(&s.terminal(cmd)), "{cmd}");
    }
    // kubectl wait, on conditions already met (the real kubectl watches; the terminal polls
    // the simulation), and its errors.
    s.until(&["get", "pods", "-l", "app=checkout", "-o", "jsonpath={.items[*].status.phase}"], 60, |o| o == "Running Running");
    for cmd in [
        "wait --for=condition=Available deployment/checkout --timeout=5s",
        "wait --for=condition=Ready pod -l app=checkout",
        "wait --for=condition=ready=true pods -l app=checkout --timeout=10s",
        "wait --for=jsonpath={.status.phase}=Running pod -l app=checkout",
        "wait --for=jsonpath={.spec.replicas} deployment/checkout",
        "wait --for=delete pod/no-such-pod",
        "wait --for=create deployment/checkout",
    ] {
        let args: Vec<&str> = cmd.split(' ').collect();
        assert_eq!(s.ok(&args), s.terminal(cmd), "{cmd}");
    }
    for cmd in ["wait --for=ready pod/real-a", "wait --for=condition=Ready pod/no-such-pod", "wait --for=condition=Ready pod -l app=nothing-has-this"] {
        let args: Vec<&str> = cmd.split(' ').collect();
        assert_eq!(s.fails(&args, None), s.terminal(cmd), "{cmd}");
    }
}

/// The newest versioned kubectl beside the one found (`kubectl.1.33` next to Google Cloud
/// SDK's dispatcher, which words flag errors itself, `Error:` where kubectl writes
/// `error:`), else that one.
fn undispatched_kubectl() -> PathBuf {
    let found = std::fs::canonicalize(kubectl_binary()).unwrap();
    let dir = found.parent().unwrap().to_path_buf();
    let newest = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_prefix("kubectl.1.")).and_then(|v| v.parse::<u32>().ok()))
        .max();
    newest.map_or(found, |v| dir.join(format!("kubectl.1.{v}")))
}

#[test]
fn flags_print_and_fail_as_the_real_kubectls_do() {
    let mut s = checkout();
    s.until(&["get", "deployment", "checkout", "-o", "jsonpath={.status.availableReplicas}"], 60, |o| o == "2");
    // Flags kubectl does not know, or that lack or mistype their value: kubectl's error and
    // the command's usage hint, word for word.
    let served = std::mem::replace(&mut s.kubectl, undispatched_kubectl());
    for line in [
        "get pods --foo",
        "get pods -x",
        "get pods -n",
        "get pods --ignore-not-found=maybe",
        "get pods -w=maybe",
        "rollout status --foo deployment/checkout",
        "rollout -n default history --foo",
        "create deployment web --image=nginx --tcp=80",
        "create deploy web --image=nginx --tcp=80",
        "logs --foo=3 x",
        "scale deployment checkout --replicas",
        "describe pods --field-selector=status.phase=Pending",
        "exec checkout -x -- ls",
        "get pods -o custom-columns=NAME",
        "get pods -o custom-columns=NAME:{.metadata.name",
        "logs x -l app=y",
        "create ingress bad --rule=foo",
        "create ingress none",
        "create ingress bad --rule=a/b=c:d --annotation=x",
        "create ingress bad --default-backend=a:b:c",
        "logs",
    ] {
        let args: Vec<&str> = line.split(' ').collect();
        let real = s.fails(&args, None);
        assert_eq!(s.terminal(line).trim_end(), real.trim_end(), "{line}");
    }
    // kubectl's own list of commands, as 1.36 prints it: `wait` lost its "Experimental:"
    // in 1.34 and `kuberc` joined the other commands in 1.34 (this kubectl is 1.33).
    let theirs = s.ok(&["--help"]).replace("Experimental: Wait", "Wait").replace(
        "  config          Modify kubeconfig files\n",
        "  config          Modify kubeconfig files\n  kuberc          Manage kuberc configuration files\n",
    );
    for line in ["--help", "help", "-h"] {
        assert_eq!(s.terminal(line).trim_end(), theirs.trim_end(), "{line}");
    }
    s.kubectl = served;
    // --ignore-not-found prints nothing for what is not there; --no-headers drops the header
    // and sizes the columns to the rows.
    for line in [
        "get pods nope --ignore-not-found",
        "get pods -l app=nope --ignore-not-found",
        "get pods -l app=nope --ignore-not-found -o yaml",
        "get deployments --no-headers",
        "get deployments,services --no-headers",
        "get pods -A --no-headers=false -l app=checkout -o wide",
        "get pods -o custom-columns=NAME:.metadata.name,IMAGES:.spec.containers[*].image,NODE:spec.nodeName",
        "get deployment checkout -o custom-columns=NAME:{.metadata.name},REPLICAS:.spec.replicas,LABELS:.metadata.labels,SELECTOR:.spec.selector,NOPE:.status.nope",
        "get pods --no-headers -o custom-columns=NAME:.metadata.name,READY:.status.containerStatuses[0].ready",
        "get pods -L app -L pod-template-hash,x/y",
        "get deploy --show-kind --show-labels -L app",
        "get pods -A -L app --no-headers",
        "get nodes -L topology.kubernetes.io/zone",
    ] {
        let args: Vec<&str> = line.split(' ').collect();
        assert_eq!(without_ages(&s.combined(&args)), without_ages(&s.terminal(line)), "{line}");
    }
}

#[test]
fn drain_refuses_and_warns_as_the_real_kubectl_does() {
    let s = Server::start("drain", &[]);
    let manifest = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: logger}\nspec:\n  selector: {matchLabels: {app: logger}}\n  template:\n    metadata: {labels: {app: logger}}\n    spec:\n      containers: [{name: c, image: busybox, command: [sleep, \"3600\"]}]\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: scratch}\nspec:\n  nodeName: node-b\n  containers: [{name: c, image: nginx}]\n  volumes: [{name: s, emptyDir: {}}]\n";
    assert!(s.run(&["apply", "-f", "-"], Some(manifest)).status.success());
    s.until(&["get", "pods", "-o", "wide"], 60, |o| o.matches("Running").count() == 4);
    // A DaemonSet's pod, and a pod with an emptyDir and no controller: drain cordons and stops.
    let real = s.run(&["drain", "node-b"], None);
    assert!(!real.status.success());
    let real = format!("{}{}", String::from_utf8_lossy(&real.stdout), String::from_utf8_lossy(&real.stderr));
    assert!(real.contains("cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"), "{real}");
    s.ok(&["uncordon", "node-b"]);
    assert_eq!(drain_errors_in_order(&s.terminal("drain node-b")), drain_errors_in_order(&real));
    s.ok(&["uncordon", "node-b"]);
    // With every override, the DaemonSet's pod stays and the rest go, with drain's warnings.
    let ours = s.terminal("drain node-b --ignore-daemonsets --delete-emptydir-data --force");
    assert!(ours.contains("Warning: ignoring DaemonSet-managed Pods: default/logger-"), "{ours}");
    assert!(ours.contains("deleting Pods that declare no controller: default/scratch"), "{ours}");
    assert!(ours.contains("pod/scratch evicted") && ours.trim_end().ends_with("node/node-b drained"), "{ours}");
    assert!(!ours.contains("evicting pod default/logger-"), "{ours}");
}

/// kubectl's drain gathers its refusals in a Go map (`PodDeleteList.errors` in
/// `pkg/drain/filters.go`), so their order changes from run to run; the terminal keeps the
/// filters' order. This puts both in one order: the aggregate's items and the lines after it.
fn drain_errors_in_order(out: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut tail: Vec<&str> = Vec::new();
    for line in out.trim_end().lines() {
        if let (Some(open), Some(close)) = (line.find("due to error: ["), line.rfind("], continuing")) {
            let inner = &line[open + "due to error: [".len()..close];
            let mut parts: Vec<String> = inner.split(", cannot delete ").map(|p| p.trim_start_matches("cannot delete ").to_string()).collect();
            parts.sort();
            lines.push(format!("{}[{}]{}", &line[..open + "due to error: ".len()], parts.join(" | "), &line[close + 1..]));
        } else if line.starts_with("cannot delete ") {
            tail.push(line);
        } else {
            lines.push(line.to_string());
        }
    }
    tail.sort();
    lines.extend(tail.into_iter().map(str::to_string));
    lines.join("\n")
}

#[test]
fn logs_of_several_containers_and_pods_print_as_the_real_kubectl_does() {
    let s = Server::start("logs", &[]);
    let pod = |n: u32| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: pair-{n}, labels: {{app: pair}}}}\nspec:\n  initContainers:\n  - {{name: setup, image: busybox:1.36, command: [sh, -c, 'echo set up {n}']}}\n  containers:\n  - {{name: main, image: busybox:1.36, command: [sh, -c, 'echo main {n} says hi; echo main {n} again; sleep 3600']}}\n  - {{name: side, image: busybox:1.36, command: [sh, -c, 'echo side {n} here; sleep 3600']}}\n"
        )
    };
    assert!(s.run(&["apply", "-f", "-"], Some(&format!("{}---\n{}", pod(1), pod(2)))).status.success());
    s.until(&["get", "pods", "-l", "app=pair"], 60, |o| o.matches("Running").count() == 2);
    s.until(&["logs", "pair-2", "-c", "side"], 30, |o| o == "side 2 here\n");
    // One container: the default (with kubectl's note, which names the init containers)
    // or the one -c names.
    for line in ["logs pair-1", "logs pair-1 -c side --prefix", "logs pair-1 -c setup"] {
        let args: Vec<&str> = line.split(' ').collect();
        assert_eq!(s.combined(&args), s.terminal(line), "{line}");
    }
    // Several containers or pods: kubectl reads their streams from a Go map, in no fixed
    // order (the terminal reads init containers, then containers, pods by name), so
    // compare the lines.
    let sorted = |t: String| {
        let mut l: Vec<String> = t.lines().map(str::to_string).collect();
        l.sort();
        l
    };
    for line in [
        "logs pair-1 --all-containers",
        "logs pair-1 --all-containers --prefix",
        "logs pair-1 --all-containers --tail=1",
        "logs -l app=pair",
        "logs -l app=pair --all-containers --prefix",
        "logs -l app=pair -c side",
        "logs -l app=nope",
    ] {
        let args: Vec<&str> = line.split(' ').collect();
        assert_eq!(sorted(s.combined(&args)), sorted(s.terminal(line)), "{line}");
    }
}

#[test]
fn set_serviceaccount_subject_and_selector_as_the_real_kubectl_does() {
    let mut s = Server::start("set", &[]);
    s.kubectl = undispatched_kubectl();
    // Two of each object: the real kubectl changes the first, the terminal the second.
    for suffix in ["", "2"] {
        s.ok(&["create", "deployment", &format!("web{suffix}"), "--image=nginx"]);
        s.ok(&["create", "rolebinding", &format!("rb{suffix}"), "--role=view", "--user=bob"]);
        s.ok(&["create", "service", "clusterip", &format!("sel{suffix}"), "--tcp=80"]);
    }
    let second = |line: &str| line.replace("web", "web2").replace(" rb", " rb2").replace("service sel", "service sel2");
    let first = |out: String| out.replace("web2", "web").replace("rb2", "rb").replace("sel2", "sel");
    for line in [
        "set serviceaccount deployment web builder",
        "set sa deployment/web builder",
        "set subject rolebinding rb --user=alice --serviceaccount=default:builder",
        "set subject rolebinding rb --user=alice",
        "set selector service sel app=x,tier=y",
        "set selector service sel app=z",
    ] {
        let args: Vec<&str> = line.split(' ').collect();
        assert_eq!(s.combined(&args), first(s.terminal(&second(line))), "{line}");
    }
    for line in [
        "set serviceaccount deployment web",
        "set serviceaccount",
        "set subject rolebinding rb",
        "set subject deployment web --user=x",
        "set subject rolebinding rb --serviceaccount=builder",
        "set selector service sel",
        "set selector deployment web app=q",
    ] {
        let args: Vec<&str> = line.split(' ').collect();
        assert_eq!(s.fails(&args, None), s.terminal(line), "{line}");
    }
    for (what, path, want) in [
        ("deployment/web", "{.spec.template.spec.serviceAccountName}", "builder"),
        ("rolebinding/rb", "{.subjects[*].name}", "bob alice builder"),
        ("service/sel", "{.spec.selector}", "{\"app\":\"z\"}"),
    ] {
        for obj in [what.to_string(), format!("{what}2")] {
            assert_eq!(s.ok(&["get", &obj, "-o", &format!("jsonpath={path}")]), want, "{obj}");
        }
    }
}

#[test]
fn apply_prune_deletes_what_the_file_no_longer_holds_as_the_real_kubectl_does() {
    let mut s = Server::start("prune", &[]);
    s.kubectl = undispatched_kubectl();
    let objects = |suffix: &str, with_config: bool| {
        let mut text = format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web{suffix}, labels: {{app: demo{suffix}}}}}\nspec:\n  selector: {{matchLabels: {{app: demo{suffix}}}}}\n  template:\n    metadata: {{labels: {{app: demo{suffix}}}}}\n    spec: {{containers: [{{name: c, image: nginx}}]}}\n");
        if with_config {
            text += &format!("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cfg{suffix}, labels: {{app: demo{suffix}}}}}\ndata: {{a: b}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: other{suffix}, labels: {{app: else{suffix}}}}}\ndata: {{a: b}}\n");
        }
        text
    };
    // kubectl's klog warning carries the time and a thread id: compared apart.
    let warning = "prune.go:71] Deprecated: kubectl apply will no longer prune non-namespaced resources by default";
    let unlogged = |t: String| {
        let (logged, rest): (Vec<&str>, Vec<&str>) = t.lines().partition(|l| l.starts_with('W') && l.contains("prune.go:71]"));
        assert!(logged.iter().all(|l| l.contains(warning)), "{logged:?}");
        rest.iter().map(|l| format!("{l}\n")).collect::<String>() + if logged.is_empty() { "" } else { "(warned)\n" }
    };
    // The real kubectl prunes its objects; the terminal the same objects under other names.
    let real = |text: &str, flags: &[&str]| {
        let mut args = vec!["apply", "-f", "-"];
        args.extend_from_slice(flags);
        let out = s.run(&args, Some(text));
        unlogged(format!("{}{}", String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout)))
    };
    let ours = |text: &str, flags: &str| unlogged(s.terminal(&format!("apply -f - {flags} <<EOF\n{text}EOF")).replace('2', ""));
    for (with_config, flags) in [(true, "--prune -l app=demo"), (false, "--prune -l app=demo"), (true, "-l app=demo")] {
        let args: Vec<&str> = flags.split(' ').collect();
        let suffixed = flags.replace("demo", "demo2");
        let (theirs, mine) = (real(&objects("", with_config), &args), ours(&objects("2", with_config), &suffixed));
        assert_eq!(theirs, mine, "{flags}");
        if !with_config {
            assert!(mine.contains("configmap/cfg pruned\n(warned)"), "{mine}");
        }
    }
    // The ConfigMap the selector does not pick was never applied, by either.
    for name in ["other", "other2"] {
        assert!(s.fails(&["get", "configmap", name], None).contains("NotFound"), "{name}");
    }
    // What the last apply recorded, read back.
    for line in ["apply view-last-applied configmap/cfg", "apply view-last-applied configmap cfg -o json", "apply view-last-applied deployments -l app=demo"] {
        let args: Vec<&str> = line.split(' ').collect();
        assert_eq!(s.ok(&args), s.terminal(line), "{line}");
    }
    for line in ["apply view-last-applied configmap/nope", "apply view-last-applied", "apply view-last-applied cm/cfg -o wide"] {
        let args: Vec<&str> = line.split(' ').collect();
        assert_eq!(s.fails(&args, None), s.terminal(line), "{line}");
    }
    for flags in ["--prune", "--prune --all -l app=demo"] {
        let args: Vec<&str> = flags.split(' ').collect();
        assert_eq!(real(&objects("", false), &args).trim_end(), ours(&objects("2", false), flags).trim_end(), "{flags}");
    }
}

#[test]
fn tokens_whoami_and_impersonation_answer_as_the_real_kubectl_does() {
    let mut s = Server::start("tokens", &[]);
    // The versioned binary: the dispatcher capitalises the errors it passes on.
    s.kubectl = undispatched_kubectl();
    s.ok(&["create", "serviceaccount", "robot"]);
    let both = |s: &Server, line: &str| {
        let args: Vec<&str> = line.split(' ').collect();
        let out = s.run(&args, None);
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    };
    for line in [
        "auth whoami",
        "auth whoami -o yaml",
        "auth whoami -o json",
        "auth whoami -o name",
        "auth whoami -o wide",
        "auth whoami --as=ajay --as-group=dev --as-group=ops",
        "auth whoami --as=system:serviceaccount:shop:web",
        "auth can-i list pods --as=system:serviceaccount:default:robot",
        "get pods --as=nobody",
        "get pods --as-group=dev",
        "create token robot --duration=1m",
        "create token nope",
        "create token robot --duration=1.5s",
        "create token robot --duration=10",
        "create token robot --duration=-1h",
        "create token robot --duration=5x",
        "create token robot --audience=",
        "create token robot --bound-object-name=x",
        "create token robot --bound-object-kind=Deployment --bound-object-name=x",
        "create token robot --bound-object-kind=Pod",
        "create token robot --bound-object-kind=Pod --bound-object-name=nope",
        "create token robot --bound-object-kind=Secret --bound-object-name=nope",
        "create token robot -o name",
        "create token robot -o wide",
        "create token",
        "create token a b",
    ] {
        assert_eq!(both(&s, line).trim_end(), s.terminal(line).trim_end(), "{line}");
    }
    // A token the real kubectl asked for authenticates the terminal's commands, and the
    // terminal's the real kubectl's, as the account.
    let issued = s.ok(&["create", "token", "robot", "--duration=10m"]);
    let claims = issued.split('.').nth(1).unwrap();
    let claims: serde_json::Value = serde_json::from_slice(&base64_url(claims)).unwrap();
    assert_eq!(claims["sub"], "system:serviceaccount:default:robot");
    assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), 600);
    let theirs = s.terminal("create token robot").trim_end().to_string();
    for token in [issued.trim_end(), theirs.as_str()] {
        for line in [format!("get pods --token={token}"), format!("auth whoami --token={token}")] {
            assert_eq!(both(&s, &line).trim_end(), s.terminal(&line).trim_end(), "{line}");
        }
    }
    let forbidden = both(&s, &format!("get pods --token={theirs}"));
    assert!(forbidden.contains("User \"system:serviceaccount:default:robot\" cannot list resource \"pods\""), "{forbidden}");
    // Once the account is gone, its tokens are not accepted.
    s.ok(&["delete", "serviceaccount", "robot"]);
    let line = format!("get pods --token={theirs}");
    assert_eq!(both(&s, &line).trim_end(), "error: You must be logged in to the server (Unauthorized)");
    assert_eq!(s.terminal(&line).trim_end(), "error: You must be logged in to the server (Unauthorized)");
}

/// base64url without padding, as JWTs carry their parts.
fn base64_url(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).unwrap()
}

#[test]
fn go_templates_print_as_the_real_kubectls_do() {
    let s = checkout();
    s.ok(&["create", "secret", "generic", "s", "--from-literal=password=hunter2"]);
    s.until(&["get", "deploy", "checkout", "-o", "jsonpath={.status.readyReplicas}/{.spec.replicas}"], 60, |o| o.split_once('/').is_some_and(|(a, b)| a == b));
    s.until(&["get", "pods"], 60, |o| o.lines().skip(1).all(|l| l.contains("Running")));
    // (the command, the template): the real kubectl gets the template as one word, the
    // terminal in single quotes.
    for (cmd, t) in [
        ("get pods", r#"{{range .items}}{{.metadata.name}}{{"\n"}}{{end}}"#),
        ("get pods", r#"{{range .items}}{{if eq .status.phase "Running"}}{{printf "%-30s %s\n" .metadata.name .status.phase}}{{end}}{{end}}"#),
        ("get deploy checkout", r#"{{.spec.replicas}} {{.metadata.labels}} {{printf "%d" .spec.replicas}} {{len .spec.template.spec.containers}}"#),
        ("get deploy checkout", r#"{{range $k, $v := .metadata.labels}}{{$k}}={{$v}};{{end}}"#),
        ("get secret s", r#"{{.data.password | base64decode}}"#),
        ("get deploy", r#"{{len .items}} {{with index .items 0}}{{.spec.replicas}}{{end}} {{(index .items 0).metadata.name}}"#),
        (
            "get nodes",
            r#"{{range .items}}{{.metadata.name}}{{"\t"}}{{range .status.addresses}}{{if eq .type "InternalIP"}}{{.address}}{{end}}{{end}}{{"\n"}}{{end}}"#,
        ),
        ("get pods", r#"{{range .items}}{{range .status.containerStatuses}}{{.restartCount}} {{.ready}} {{.state}}{{end}}{{"\n"}}{{end}}"#),
        ("get deploy checkout", r#"{{- /* c */ -}} {{ .kind }} {{ printf "%q %v %t %5d|%-5d|%x" .metadata.name .spec.selector true 42 7 255 }}"#),
        ("get deploy checkout", r#"{{println "a" 1 2}}{{print "a" 1 2 "b"}}{{js "<x>"}}{{urlquery "a b&c"}}"#),
        ("get deploy checkout", r#"{{and 1 0}} {{or 0 "" "x"}} {{not .nope}} {{eq .kind "Deployment" "Pod"}} {{ne 1 2}} {{le 2 2}} {{lt "a" "b"}}"#),
        ("get deploy checkout", "{{.spec.nope.x}}"),
        // Mistakes: kubectl's parse errors, and its dump of what the template was given.
        ("get deploy checkout", "{{.spec"),
        ("get deploy checkout", "{{nope}}"),
        ("get deploy checkout", "{{if gt .spec.replicas 1.0}}many{{else}}one{{end}}"),
        ("get deploy checkout", "{{.metadata.creationTimestamp.x}}"),
        ("get deploy", "{{index .items 5}}"),
    ] {
        let mut args: Vec<String> = cmd.split(' ').map(str::to_string).collect();
        args.push(format!("-o=go-template={t}"));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = s.run(&args, None);
        let real = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(s.terminal(&format!("{cmd} -o go-template='{t}'")).trim_end(), real.trim_end(), "{t}");
    }
    // Another context's user (and its namespace), and a context there is not.
    for line in ["auth whoami --context=ajay@kubeloop", "get pods --context=ajay@kubeloop", "get pods --context=nope"] {
        let args: Vec<&str> = line.split(' ').collect();
        let out = s.run(&args, None);
        let real = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        // kubectl asks for a username on a terminal before it gives up on a missing context.
        let real = real.trim_start_matches("Please enter Username: ");
        assert_eq!(s.terminal(line).trim_end(), real.trim_end(), "{line}");
    }
    // The template by --template, and its other name.
    let t = "{{range .items}}{{.metadata.name}} {{end}}";
    let real = s.ok(&["get", "pods", "-o", "template", "--template", t]);
    assert_eq!(s.terminal(&format!("get pods -o go-template --template '{t}'")).trim_end(), real.trim_end());
    assert_eq!(s.terminal("get pods -o go-template").trim_end(), "error: template format specified but no template given");
}

#[test]
fn logs_since_and_timestamps_and_impersonated_logs_and_exec_match_the_real_kubectl() {
    let mut s = Server::start("since", &[]);
    s.kubectl = undispatched_kubectl();
    s.ok(&["run", "ticker", "--image=busybox:1.36", "--", "sh", "-c", "echo one; sleep 3; echo two; sleep 3600"]);
    s.until(&["logs", "ticker"], 60, |o| o == "one\ntwo\n");
    let stamped = s.ok(&["logs", "ticker", "--timestamps"]);
    // The runtime's timestamps: nine fraction digits, three seconds apart.
    let times: Vec<&str> = stamped.lines().map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(times.len(), 2, "{stamped}");
    assert!(times.iter().all(|t| t.len() == 30 && t.ends_with("000000Z")), "{stamped}");
    // A moment between the two lines: only the second is since then.
    let between = format!("{}Z", &times[1][..19]);
    let mut lines = vec![
        "logs ticker --timestamps".to_string(),
        "logs ticker --since=1h --timestamps --prefix".into(),
        format!("logs ticker --since-time={between}"),
        "logs ticker --since-time=2020-01-01T00:00:00Z".into(),
        "logs ticker --since=0".into(),
        "logs ticker --since=x".into(),
        "logs ticker --since=-1s".into(),
        "logs ticker --since=1h --since-time=2026-01-01T00:00:00Z".into(),
        "logs ticker --since-time=bad".into(),
        "logs ticker --as=nobody".into(),
        "logs ticker --as-group=x".into(),
        "exec ticker --as=nobody -- echo hi".into(),
        "exec ticker --as=ajay --as-group=system:masters -- echo hi".into(),
    ];
    lines.push(format!("logs ticker --since-time={between} --timestamps"));
    for line in &lines {
        let args: Vec<&str> = line.split(' ').collect();
        let out = s.run(&args, None);
        let real = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(s.terminal(line).trim_end(), real.trim_end(), "{line}");
    }
    assert_eq!(s.terminal(&format!("logs ticker --since-time={between}")).trim_end(), "two");
}

#[test]
fn edit_patches_and_reopens_as_the_real_kubectl_does() {
    let mut s = Server::start("edit", &[]);
    s.kubectl = undispatched_kubectl();
    // Two of each: the real kubectl edits the first, the terminal the second.
    for name in ["web", "web2"] {
        s.ok(&["create", "deployment", name, "--image=nginx:1.27"]);
    }
    // The editor kubectl opens: a script that edits the file the first time it is opened
    // and keeps a copy of it the second time (after the server refused the change).
    let editor = |sed: &str| {
        let script = s.dir.join("editor.sh");
        let reopened = s.dir.join("reopened.yaml");
        let _ = std::fs::remove_file(&reopened);
        let _ = std::fs::remove_file(s.dir.join("opened-once"));
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nif [ -e {d}/opened-once ]; then cp \"$1\" {r}; rm {d}/opened-once; else sed -i '{sed}' \"$1\"; touch {d}/opened-once; fi\n",
                d = s.dir.display(),
                r = reopened.display()
            ),
        )
        .unwrap();
        std::process::Command::new("chmod").arg("+x").arg(&script).status().unwrap();
        (script, reopened)
    };
    let real_edit = |args: &[&str], sed: &str| {
        let (script, reopened) = editor(sed);
        let mut cmd = Command::new(&s.kubectl);
        cmd.env("KUBECONFIG", &s.kubeconfig).env("HOME", &s.dir).env("KUBE_EDITOR", &script).args(args);
        let out = cmd.output().unwrap();
        let printed = format!("{}{}", String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout));
        (printed, std::fs::read_to_string(reopened).ok())
    };
    // The terminal's edit: the file as kubectl opens it, changed as the script changes it.
    let terminal_edit = |args: &str, sed: (&str, &str)| {
        let file = format!("{}{}", kubeloop_core::kubectl::edit::HEADER, s.ok(&["get", "deployment", "web2", "-o", "yaml"]));
        s.terminal(&format!("edit deployment/web2 {args} <<EOF\n{}EOF\n", file.replace(sed.0, sed.1)))
    };
    // A changed image: the same strategic merge patch, and `edited`.
    let (real, _) = real_edit(&["edit", "deployment/web", "--output-patch"], "s/nginx:1.27/nginx:1.28/");
    let mine = terminal_edit("--output-patch", ("nginx:1.27", "nginx:1.28"));
    assert!(real.contains("\"image\":\"nginx:1.28\""), "{real}");
    assert_eq!(real, mine.replace("web2", "web"));
    // A label replaced by another: `null` for the one removed.
    let (real, _) = real_edit(&["edit", "deployment/web", "--output-patch"], "s/^    app: web$/    tier: front/");
    let mine = terminal_edit("--output-patch", ("\n    app: web2\n", "\n    tier: front\n"));
    assert!(real.contains("\"app\":null") && real.contains("\"tier\":\"front\""), "{real}");
    assert_eq!(real, mine.replace("web2", "web"));
    // Refused: kubectl's error line, and the reasons on top of the file it opens again.
    let (real, reopened) = real_edit(&["edit", "deployment/web"], "s/^  replicas: 1$/  replicas: -1/");
    let mine = terminal_edit("", ("\n  replicas: 1\n", "\n  replicas: -1\n")).replace("web2", "web");
    assert_eq!(real.lines().next(), mine.lines().next(), "{real}\n{mine}");
    let reopened = reopened.expect("kubectl opened the file again");
    let header: Vec<&str> = reopened.lines().skip(4).take_while(|l| l.starts_with('#')).collect();
    let mine_header: Vec<String> = mine.lines().skip(1).map(str::to_string).collect();
    assert_eq!(header, mine_header, "{reopened}");
    // Nothing changed.
    let (real, _) = real_edit(&["edit", "deployment/web"], "s/nothing-matches//");
    assert_eq!(real, terminal_edit("", ("nothing-matches", "")));

    // apply set-last-applied and edit-last-applied on objects no apply made.
    for name in ["conf", "conf2"] {
        s.ok(&["create", "configmap", name, "--from-literal=a=1"]);
    }
    let manifest = |n: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {n}\ndata:\n  a: \"2\"\n");
    let real_with = |args: &[&str], stdin: &str| {
        let out = s.run(args, Some(stdin));
        format!("{}{}", String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout))
    };
    let mine_with = |line: &str, stdin: &str| s.terminal(&format!("{line} <<EOF\n{stdin}EOF\n")).replace("conf2", "conf");
    for line in ["apply set-last-applied -f -", "apply set-last-applied -f - --create-annotation", "apply set-last-applied -f -"] {
        let args: Vec<&str> = line.split(' ').collect();
        let real = real_with(&args, &manifest("conf"));
        assert_eq!(real, mine_with(line, &manifest("conf2")), "{line}");
    }
    assert_eq!(s.fails(&["apply", "set-last-applied"], None), s.terminal("apply set-last-applied"));
    assert_eq!(s.fails(&["apply", "edit-last-applied", "deployment/web"], None), s.terminal("apply edit-last-applied deployment/web"));
    let annotation = |n: &str| s.ok(&["apply", "view-last-applied", "configmap", n, "-o", "json"]).replace("conf2", "conf");
    assert_eq!(annotation("conf"), annotation("conf2"));
    let (script, _) = editor("s/\"2\"/\"3\"/");
    let mut cmd = Command::new(&s.kubectl);
    cmd.env("KUBECONFIG", &s.kubeconfig).env("HOME", &s.dir).env("KUBE_EDITOR", &script).args(["apply", "edit-last-applied", "configmap/conf"]);
    let out = cmd.output().unwrap();
    let real = format!("{}{}", String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout));
    let opened = format!("{}{}", kubeloop_core::kubectl::edit::LAST_APPLIED_HEADER, s.ok(&["apply", "view-last-applied", "configmap/conf2"]));
    assert_eq!(real, mine_with("apply edit-last-applied configmap/conf2", &opened.replace("\"2\"", "\"3\"")));
    assert_eq!(real, "configmap/conf edited\n");
    assert_eq!(annotation("conf"), annotation("conf2"));
    // kubectl completion's own errors (a shell it knows prints a script, which this
    // terminal, not being that shell, says it does not need).
    for line in ["completion", "completion foo", "completion bash zsh"] {
        let args: Vec<&str> = line.split(' ').collect();
        let out = s.run(&args, None);
        assert_eq!(String::from_utf8_lossy(&out.stderr), s.terminal(line), "{line}");
    }
}

/// The request of the Kubernetes documentation's "Issue a Certificate for a Kubernetes API
/// Client Using A CertificateSigningRequest" task (a CSR for CN=angela).
const DOCS_CSR: &str = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlJQ1ZqQ0NBVDRDQVFBd0VURVBNQTBHQTFVRUF3d0dZVzVuWld4aE1JSUJJakFOQmdrcWhraUc5dzBCQVFFRgpBQU9DQVE4QU1JSUJDZ0tDQVFFQTByczhJTHRHdTYxakx2dHhWTTJSVlRWMDNHWlJTWWw0dWluVWo4RElaWjBOCnR2MUZtRVFSd3VoaUZsOFEzcWl0Qm0wMUFSMkNJVXBGd2ZzSjZ4MXF3ckJzVkhZbGlBNVhwRVpZM3ExcGswSDQKM3Z3aGJlK1o2MVNrVHF5SVBYUUwrTWM5T1Nsbm0xb0R2N0NtSkZNMUlMRVI3QTVGZnZKOEdFRjJ6dHBoaUlFMwpub1dtdHNZb3JuT2wzc2lHQ2ZGZzR4Zmd4eW8ybmlneFNVekl1bXNnVm9PM2ttT0x1RVF6cXpkakJ3TFJXbWlECklmMXBMWnoyalVnald4UkhCM1gyWnVVV1d1T09PZnpXM01LaE8ybHEvZi9DdS8wYk83c0x0MCt3U2ZMSU91TFcKcW90blZtRmxMMytqTy82WDNDKzBERHk5aUtwbXJjVDBnWGZLemE1dHJRSURBUUFCb0FBd0RRWUpLb1pJaHZjTgpBUUVMQlFBRGdnRUJBR05WdmVIOGR4ZzNvK21VeVRkbmFjVmQ1N24zSkExdnZEU1JWREkyQTZ1eXN3ZFp1L1BVCkkwZXpZWFV0RVNnSk1IRmQycVVNMjNuNVJsSXJ3R0xuUXFISUh5VStWWHhsdnZsRnpNOVpEWllSTmU3QlJvYXgKQVlEdUI5STZXT3FYbkFvczFqRmxNUG5NbFpqdU5kSGxpT1BjTU1oNndLaTZzZFhpVStHYTJ2RUVLY01jSVUyRgpvU2djUWdMYTk0aEpacGk3ZnNMdm1OQUxoT045UHdNMGM1dVJVejV4T0dGMUtCbWRSeEgvbUNOS2JKYjFRQm1HCkkwYitEUEdaTktXTU0xMzhIQXdoV0tkNjVoVHdYOWl4V3ZHMkh4TG1WQzg0L1BHT0tWQW9FNkpsYWFHdTlQVmkKdjlOSjVaZlZrcXdCd0hKbzZXdk9xVlA3SVFjZmg3d0drWm89Ci0tLS0tRU5EIENFUlRJRklDQVRFIFJFUVVFU1QtLS0tLQo=";

fn csr_manifest(name: &str, request: &str, extra: &str) -> String {
    format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: {name}\nspec:\n  request: {request}\n  signerName: kubernetes.io/kube-apiserver-client\n  expirationSeconds: 86400\n  usages:\n  - client auth\n{extra}"
    )
}

#[test]
fn certificate_signing_requests_approve_and_deny_as_the_real_kubectl_does() {
    let mut s = Server::start("csr", &[]);
    s.kubectl = undispatched_kubectl();
    let both = |s: &Server, line: &str, stdin: Option<&str>| {
        let args: Vec<&str> = line.split(' ').collect();
        let out = s.run(&args, stdin);
        format!("{}{}", String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout))
    };
    // The documentation's request through the real kubectl, another through the terminal:
    // the same warning and line.
    let created = both(&s, "apply -f -", Some(&csr_manifest("myuser", DOCS_CSR, "")));
    assert!(created.starts_with("Warning: kubeloop records the approval"), "{created}");
    let ours = s.terminal(&format!("apply -f - <<EOF\n{}EOF", csr_manifest("theirs", DOCS_CSR, "")));
    assert_eq!(ours.trim_end(), created.replace("myuser", "theirs").trim_end());
    // Invalid requests: not PEM, not base64, bad usages, signer and duration; system:masters.
    let bad = csr_manifest("bad", "aGVsbG8K", "  - foo\n  - client auth\n").replace("86400", "60").replace("kubernetes.io/kube-apiserver-client", "example/x");
    let undecodable = csr_manifest("bad", "\"@@@\"", "");
    for manifest in [bad, undecodable] {
        let theirs = both(&s, "apply -f -", Some(&manifest));
        assert!(theirs.contains("CertificateSigningRequest"), "{theirs}");
        assert_eq!(s.terminal(&format!("apply -f - <<EOF\n{manifest}EOF")).trim_end(), theirs.trim_end());
    }
    for line in [
        "get csr",
        "get csr -o wide",
        "get certificatesigningrequests.certificates.k8s.io myuser",
        "describe csr myuser",
        "certificate approve",
        "certificate approve nope",
        "certificate approve myuser",
        "get csr myuser",
        "certificate approve myuser",
        "certificate approve myuser --force",
        "certificate deny myuser",
        "certificate deny theirs",
        "certificate approve theirs",
        "get csr",
        "describe csr theirs",
        "get csr myuser -o jsonpath={.status.conditions[0].reason}",
        "certificate approve theirs --as=jane",
        "get csr --as=jane",
    ] {
        assert_eq!(without_ages(&both(&s, line, None)).trim_end(), without_ages(&s.terminal(line)).trim_end(), "{line}");
    }
    // A user allowed to update approvals but not to approve for the signer is refused by
    // the CertificateApproval admission plugin; approving for `kubernetes.io/*` lets them.
    let rbac = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: csr-approver}\nrules:\n- apiGroups: [certificates.k8s.io]\n  resources: [certificatesigningrequests, certificatesigningrequests/approval]\n  verbs: [get, list, update]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: jane-csr}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: csr-approver}\nsubjects: [{kind: User, name: jane, apiGroup: rbac.authorization.k8s.io}]\n";
    s.run(&["apply", "-f", "-"], Some(rbac));
    s.run(&["apply", "-f", "-"], Some(&csr_manifest("third", DOCS_CSR, "")));
    let refused = both(&s, "certificate approve third --as=jane", None);
    assert_eq!(
        refused.trim_end(),
        "Error from server (Forbidden): certificatesigningrequests.certificates.k8s.io \"third\" is forbidden: user not permitted to approve requests with signerName \"kubernetes.io/kube-apiserver-client\""
    );
    assert_eq!(s.terminal("certificate approve third --as=jane").trim_end(), refused.trim_end());
    let signers = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: signer-approver}\nrules:\n- apiGroups: [certificates.k8s.io]\n  resources: [signers]\n  resourceNames: [kubernetes.io/*]\n  verbs: [approve]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: jane-signer}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: signer-approver}\nsubjects: [{kind: User, name: jane, apiGroup: rbac.authorization.k8s.io}]\n";
    s.run(&["apply", "-f", "-"], Some(signers));
    assert_eq!(both(&s, "certificate approve third --as=jane", None).trim_end(), "certificatesigningrequest.certificates.k8s.io/third approved");
    // The approval is the condition kubectl wrote, with the times the server stamped.
    let yaml = s.ok(&["get", "csr", "third", "-o", "yaml"]);
    for want in ["reason: KubectlApprove", "message: This CSR was approved by kubectl certificate approve.", "lastTransitionTime:", "username: admin"] {
        assert!(yaml.contains(want), "{want}\n{yaml}");
    }
}

#[test]
fn attach_without_stdin_streams_what_the_container_writes_next_to_the_real_kubectl() {
    let s = Server::start("attach-output", &[]);
    let manifest = "apiVersion: v1\nkind: Pod\nmetadata: {name: ticker}\nspec:\n  restartPolicy: Never\n  containers:\n  - name: t\n    image: busybox:1.36\n    command: [\"sh\", \"-c\", \"echo before; sleep 8; for i in 1 2 3; do echo tick $i; sleep 1; done\"]\n";
    assert!(s.run(&["apply", "-f", "-"], Some(manifest)).status.success());
    s.until(&["logs", "ticker"], 60, |o| o == "before\n");
    // What it wrote before the attach is not sent; the stream ends with the container.
    let out = s.run(&["attach", "ticker"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "tick 1\ntick 2\ntick 3\n");
    // A pod that has ended cannot be attached to.
    s.until(&["get", "pod", "ticker", "-o", "jsonpath={.status.phase}"], 60, |o| o == "Succeeded");
    assert_eq!(s.fails(&["attach", "ticker"], None), "error: cannot attach a container in a completed pod; current phase is Succeeded\n");
    assert_eq!(s.terminal("attach ticker"), "error: cannot attach a container in a completed pod; current phase is Succeeded\n");
}

#[test]
fn debug_profiles_make_what_the_real_kubectls_make() {
    let s = Server::start("debug-profiles", &[]);
    let manifest = "apiVersion: v1\nkind: Pod\nmetadata: {name: box, labels: {app: box}, annotations: {note: kept}}\nspec:\n  containers:\n  - name: box\n    image: busybox:1.36\n    command: [\"sleep\", \"3600\"]\n    readinessProbe: {exec: {command: [\"true\"]}}\n";
    assert!(s.run(&["apply", "-f", "-"], Some(manifest)).status.success());
    s.until(&["get", "pod", "box", "-o", "jsonpath={.status.phase}"], 60, |o| o == "Running");
    let node = s.ok(&["get", "pod", "box", "-o", "jsonpath={.spec.nodeName}"]);
    // Without the fields that name the container, the pod or the moment.
    let spec = |pod: &str| -> serde_json::Value {
        let mut v: serde_json::Value = serde_json::from_str(&s.ok(&["get", "pod", pod, "-o", "json"])).unwrap();
        let mut spec = v["spec"].take();
        for k in ["nodeName", "serviceAccountName", "serviceAccount"] {
            spec.as_object_mut().unwrap().remove(k);
        }
        json_without(&mut spec, &["name"]);
        serde_json::json!({"labels": v["metadata"]["labels"], "annotations": v["metadata"]["annotations"], "spec": spec})
    };
    for profile in ["legacy", "general", "baseline", "restricted", "netadmin", "sysadmin"] {
        // An ephemeral container: its security context.
        let theirs = format!("theirs-{profile}");
        let out = s.run(&["debug", "box", "--image=busybox:1.36", &format!("--profile={profile}"), "-c", &theirs, "--", "sleep", "100"], None);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mine = format!("mine-{profile}");
        s.terminal(&format!("debug box --image=busybox:1.36 --profile={profile} -c {mine} -- sleep 100"));
        let sc = |name: &str| s.ok(&["get", "pod", "box", "-o", &format!("jsonpath={{.spec.ephemeralContainers[?(@.name==\"{name}\")].securityContext}}")]);
        assert_eq!(sc(&theirs), sc(&mine), "{profile}: the ephemeral container's security context");
        // A copy: what is kept of the pod, and the debug container.
        let out = s.run(
            &[
                "debug",
                "box",
                "--image=busybox:1.36",
                &format!("--profile={profile}"),
                &format!("--copy-to=copy-theirs-{profile}"),
                "-c",
                "dbg",
                "--",
                "sleep",
                "100",
            ],
            None,
        );
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        s.terminal(&format!("debug box --image=busybox:1.36 --profile={profile} --copy-to=copy-mine-{profile} -c dbg -- sleep 100"));
        assert_eq!(spec(&format!("copy-theirs-{profile}")), spec(&format!("copy-mine-{profile}")), "{profile}: the copy");
        // A node: host namespaces, the host's root.
        let pods_before = s.ok(&["get", "pods", "-o", "name"]);
        let out = s.run(&["debug", &format!("node/{node}"), "--image=busybox:1.36", &format!("--profile={profile}"), "--", "sleep", "100"], None);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        s.terminal(&format!("debug node/{node} --image=busybox:1.36 --profile={profile} -- sleep 100"));
        let new: Vec<String> =
            s.ok(&["get", "pods", "-o", "name"]).lines().filter(|l| !pods_before.contains(*l)).map(|l| l.trim_start_matches("pod/").to_string()).collect();
        assert_eq!(new.len(), 2, "{new:?}");
        // kubectl 1.34 and later label the pod `app.kubernetes.io/managed-by: kubectl-debug`; the
        // kubectl here (1.33) does not.
        let node_pod = |pod: &str| {
            let mut v = spec(pod);
            v["labels"] = serde_json::Value::Null;
            v
        };
        assert_eq!(node_pod(&new[0]), node_pod(&new[1]), "{profile}: the node's debugging pod");
    }
    assert_eq!(
        s.fails(&["debug", "box", "--image=busybox:1.36", "--profile=nope"], None).trim_end(),
        s.terminal("debug box --image=busybox:1.36 --profile=nope").trim_end()
    );
}

/// Drop the given keys wherever they appear in a JSON tree.
fn json_without(v: &mut serde_json::Value, keys: &[&str]) {
    match v {
        serde_json::Value::Object(m) => {
            for k in keys {
                m.remove(*k);
            }
            m.values_mut().for_each(|x| json_without(x, keys));
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| json_without(x, keys)),
        _ => {}
    }
}

/// An HTTP GET through a forwarded local port: the response as read until the server has
/// sent its body (`Content-Length`).
fn http_get(port: u16, path: &str) -> String {
    use std::io::Read as _;
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    conn.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes()).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = conn.read(&mut buf).unwrap_or(0);
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let len = head.lines().find_map(|l| l.strip_prefix("Content-Length: ")).and_then(|v| v.trim().parse::<usize>().ok()).unwrap_or(0);
            if body.len() >= len {
                return text;
            }
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// The real `kubectl port-forward pod/web PORTS` running, its stdout (kept open: kubectl
/// goes on writing a line per connection) and the local port it chose.
fn port_forward(s: &Server, ports: &str) -> (Child, BufReader<std::process::ChildStdout>, u16) {
    let mut pf = Command::new(&s.kubectl)
        .env("KUBECONFIG", &s.kubeconfig)
        .env("HOME", &s.dir)
        .args(["port-forward", "pod/web", ports])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(pf.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let local = first.trim().strip_prefix("Forwarding from 127.0.0.1:").and_then(|r| r.split(' ').next()).and_then(|p| p.parse().ok());
    (pf, stdout, local.unwrap_or_else(|| panic!("{first}")))
}

#[test]
fn the_real_kubectls_port_forward_reaches_the_pods_server() {
    let s = Server::start("port-forward", &[]);
    let manifest = "apiVersion: v1\nkind: Pod\nmetadata: {name: web, labels: {app: web}}\nspec:\n  containers:\n  - name: nginx\n    image: nginx:1.27\n    ports: [{containerPort: 80}]\n";
    assert!(s.run(&["apply", "-f", "-"], Some(manifest)).status.success());
    s.until(&["get", "pod", "web", "-o", "jsonpath={.status.phase}"], 60, |o| o == "Running");
    // kubectl port-forward (SPDY tunneled through a WebSocket) on a port the system picks.
    let (mut pf, stdout, local) = port_forward(&s, ":80");
    // Each connection is a new pair of streams; the terminal's curl gets the same page.
    let page = http_get(local, "/");
    assert!(page.starts_with("HTTP/1.1 200 OK\r\n"), "{page}");
    let body = page.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    assert!(body.contains("<title>Welcome to nginx!</title>"), "{body}");
    let missing = http_get(local, "/nope");
    assert!(missing.starts_with("HTTP/1.1 404 Not Found\r\n"), "{missing}");
    s.terminal("port-forward pod/web 8080:80");
    // (with the line the forward prints for each connection, as kubectl's does)
    assert_eq!(s.terminal("curl -s localhost:8080/"), format!("Handling connection for 8080\n{body}"));
    let _ = pf.kill();
    let _ = pf.wait();
    drop(stdout);
    // A port nothing listens on: the kubelet's error on the error stream, as kubectl prints it.
    let (pf, stdout, local) = port_forward(&s, ":81");
    let refused = http_get(local, "/");
    assert_eq!(refused, "");
    drop(stdout);
    let out = pf.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("an error occurred forwarding") && err.contains("dial tcp4 127.0.0.1:81: connect: connection refused"), "{err}");
}
