//! The Kubernetes documentation's first tutorial ("Learn Kubernetes Basics": deploy, explore,
//! expose, scale, update), typed line by line as a learner types it into the terminal, and
//! `kubectl run` as tutorials use it: every line answers as kubectl does and the cluster
//! does what it says.

use kubeloop_core::apiserver::Credentials;
use kubeloop_core::cluster::{Action, Cluster, Config};
use kubeloop_core::foundation::api::rid;
use kubeloop_core::foundation::pod::pod_is_ready;

fn kubectl(c: &mut Cluster, line: &str) -> Vec<String> {
    c.act(Credentials::Token("admin-token".into()), Action::Kubectl(line.into())).output
}

#[test]
fn the_basics_tutorial_deploys_exposes_scales_and_updates() {
    let mut c = Cluster::new(Config::default());
    assert_eq!(
        kubectl(&mut c, "create deployment kubernetes-bootcamp --image=gcr.io/google-samples/kubernetes-bootcamp:v1"),
        ["deployment.apps/kubernetes-bootcamp created"]
    );
    c.run_to_quiet(120_000);
    let deployments = kubectl(&mut c, "get deployments");
    assert_eq!(deployments[0].split_whitespace().collect::<Vec<_>>(), ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]);
    assert!(deployments[1].starts_with("kubernetes-bootcamp   1/1     1            1"), "{deployments:?}");
    assert_eq!(kubectl(&mut c, "expose deployment/kubernetes-bootcamp --type=\"NodePort\" --port 8080"), ["service/kubernetes-bootcamp exposed"]);
    let svc = c.api.store.get_by(rid::SERVICE, "default", "kubernetes-bootcamp").expect("the Service exists").clone();
    assert_eq!(svc["spec"]["type"], "NodePort");
    assert_eq!(svc["spec"]["ports"][0]["port"], 8080);
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 8080);
    assert!(svc["spec"]["ports"][0]["nodePort"].as_i64().is_some_and(|p| (30000..=32767).contains(&p)), "a node port is allocated");
    assert_eq!(svc["spec"]["selector"]["app"], "kubernetes-bootcamp");
    c.run_to_quiet(120_000);
    let described = kubectl(&mut c, "describe services/kubernetes-bootcamp").join("\n");
    assert!(described.contains("Type:                     NodePort"), "{described}");
    assert!(described.contains("Endpoints:                10.244."), "the pod is behind the Service:\n{described}");
    assert_eq!(kubectl(&mut c, "scale deployments/kubernetes-bootcamp --replicas=4"), ["deployment.apps/kubernetes-bootcamp scaled"]);
    c.run_to_quiet(120_000);
    let ready = c.api.store.list(rid::POD, Some("default")).filter(|p| pod_is_ready(p)).count();
    assert_eq!(ready, 4);
    assert_eq!(
        kubectl(&mut c, "set image deployments/kubernetes-bootcamp kubernetes-bootcamp=docker.io/jocatalin/kubernetes-bootcamp:v2"),
        ["deployment.apps/kubernetes-bootcamp image updated"]
    );
    c.run_to_quiet(300_000);
    assert_eq!(kubectl(&mut c, "rollout status deployments/kubernetes-bootcamp"), ["deployment \"kubernetes-bootcamp\" successfully rolled out"]);
    let images: Vec<String> = c
        .api
        .store
        .list(rid::POD, Some("default"))
        .filter(|p| pod_is_ready(p))
        .map(|p| p["spec"]["containers"][0]["image"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(images, vec!["docker.io/jocatalin/kubernetes-bootcamp:v2"; 4]);
    // The app answers with the pod it runs in and its version, through the Service.
    let pod = c.api.store.list(rid::POD, Some("default")).find(|p| pod_is_ready(p)).map(|p| kubeloop_core::foundation::api::name(p).to_string()).unwrap();
    let answer = kubectl(&mut c, &format!("exec {pod} -- curl -s http://kubernetes-bootcamp:8080"));
    assert!(answer[0].starts_with("Hello Kubernetes bootcamp! | Running on: kubernetes-bootcamp-") && answer[0].ends_with("| v=2"), "{answer:?}");
    let logs = kubectl(&mut c, &format!("logs {pod}"));
    assert!(logs[0].starts_with("Kubernetes Bootcamp App Started At: ") && logs[0].contains(&format!("| Running On:  {pod}")), "{logs:?}");
    // An image that does not exist: the new pods cannot pull it, and the old ones keep serving.
    kubectl(&mut c, "set image deployments/kubernetes-bootcamp kubernetes-bootcamp=gcr.io/google-samples/kubernetes-bootcamp:v10");
    c.run_to_quiet(120_000);
    let pods = kubectl(&mut c, "get pods").join("\n");
    assert!(pods.contains("ImagePullBackOff") || pods.contains("ErrImagePull"), "{pods}");
    assert_eq!(c.api.store.list(rid::POD, Some("default")).filter(|p| pod_is_ready(p)).count(), 3, "maxUnavailable 25% of 4");
    assert_eq!(kubectl(&mut c, "rollout undo deployments/kubernetes-bootcamp"), ["deployment.apps/kubernetes-bootcamp rolled back"]);
    c.run_to_quiet(300_000);
    assert_eq!(kubectl(&mut c, "rollout status deployments/kubernetes-bootcamp"), ["deployment \"kubernetes-bootcamp\" successfully rolled out"]);
    let images: Vec<String> =
        c.api.store.list(rid::POD, Some("default")).map(|p| p["spec"]["containers"][0]["image"].as_str().unwrap_or("").to_string()).collect();
    assert_eq!(images, vec!["docker.io/jocatalin/kubernetes-bootcamp:v2"; 4], "back on v2");
}

#[test]
fn kubectl_run_makes_a_pod_that_runs_its_command() {
    let mut c = Cluster::new(Config::default());
    assert_eq!(kubectl(&mut c, "run hello --image=busybox --restart=Never -- sh -c 'echo hello from the pod'"), ["pod/hello created"]);
    assert_eq!(kubectl(&mut c, "run web --image=nginx --port=80 --labels=app=web,tier=front"), ["pod/web created"]);
    c.run_to_quiet(120_000);
    let hello = c.api.store.get_by(rid::POD, "default", "hello").expect("the pod exists").clone();
    assert_eq!(hello["metadata"]["labels"]["run"], "hello");
    assert_eq!(hello["spec"]["containers"][0]["args"], kubeloop_core::json!(["sh", "-c", "echo hello from the pod"]));
    assert_eq!(hello["status"]["phase"], "Succeeded", "the command ran and exited 0");
    assert_eq!(kubectl(&mut c, "logs hello"), ["hello from the pod"]);
    let web = c.api.store.get_by(rid::POD, "default", "web").expect("the pod exists").clone();
    assert!(pod_is_ready(&web));
    assert_eq!(web["spec"]["containers"][0]["ports"][0]["containerPort"], 80);
    // Dry runs change nothing; an existing name is refused by the API server.
    assert_eq!(kubectl(&mut c, "run other --image=nginx --dry-run=client"), ["pod/other created (dry run)"]);
    assert_eq!(kubectl(&mut c, "run other --image=nginx --dry-run=server"), ["pod/other created (server dry run)"]);
    assert!(c.api.store.get_by(rid::POD, "default", "other").is_none());
    assert_eq!(kubectl(&mut c, "run web --image=nginx"), ["Error from server (AlreadyExists): pods \"web\" already exists"]);
    assert_eq!(kubectl(&mut c, "expose pod web --port=80 --name=web-svc"), ["service/web-svc exposed"]);
    let svc = c.api.store.get_by(rid::SERVICE, "default", "web-svc").expect("the Service exists").clone();
    assert_eq!(svc["spec"]["selector"], kubeloop_core::json!({"app": "web", "tier": "front"}));
    // -i attaches to the container's stdin once the pod is ready: here a here-document is
    // what the shell reads; then the pod (restartPolicy Never) ends and --rm deletes it.
    assert_eq!(kubectl(&mut c, "run -i box --image=busybox --rm --restart=Never -- sh <<EOF\necho hi from stdin\nEOF"), Vec::<String>::new());
    c.run_to_quiet(120_000);
    assert_eq!(
        std::mem::take(&mut c.printed),
        [
            "All commands and output from this session will be recorded in container logs, including credentials and sensitive information passed through the command prompt.",
            "If you don't see a command prompt, try pressing enter.",
            "hi from stdin",
            "pod \"box\" deleted from default namespace"
        ]
    );
    assert!(c.api.store.get_by(rid::POD, "default", "box").is_none());
    // --attach alone would stream the container's output, which the terminal does not.
    let out = kubectl(&mut c, "run box --image=busybox --attach -- sh");
    assert!(out[0].starts_with("error: kubeloop's terminal attaches to a container's stdin"), "{out:?}");
}

#[test]
fn a_namespace_from_the_flag_or_the_context_is_where_manifests_and_commands_go() {
    let mut c = Cluster::new(Config::default());
    kubectl(&mut c, "create namespace dev");
    // The namespace's default ServiceAccount, which a pod needs, comes from a controller.
    c.run_to_quiet(60_000);
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: demo}\n";
    assert_eq!(kubectl(&mut c, &format!("apply -n dev -f - <<EOF\n{cm}EOF")), ["configmap/settings created"]);
    let stored = c.api.store.get_by(rid::CONFIGMAP, "dev", "settings").expect("applied into dev").clone();
    let last = stored["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].as_str().unwrap_or("").to_string();
    assert!(last.contains("\"namespace\":\"dev\""), "the last-applied configuration names the namespace: {last}");
    let elsewhere = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: kube-public}\n";
    assert_eq!(
        kubectl(&mut c, &format!("create -n dev -f - <<EOF\n{elsewhere}EOF")),
        ["error: the namespace from the provided object \"kube-public\" does not match the namespace \"dev\". You must pass '--namespace=kube-public' to perform this operation."]
    );
    // The context's namespace is the default of every command, and a manifest's own wins.
    assert_eq!(kubectl(&mut c, "config set-context --current --namespace=dev"), ["Context \"kubeloop\" modified."]);
    assert_eq!(kubectl(&mut c, "run web --image=nginx"), ["pod/web created"]);
    assert!(c.api.store.get_by(rid::POD, "dev", "web").is_some());
    assert_eq!(kubectl(&mut c, &format!("create -f - <<EOF\n{elsewhere}EOF")), ["configmap/other created"]);
    assert!(c.api.store.get_by(rid::CONFIGMAP, "kube-public", "other").is_some());
    c.run_to_quiet(60_000);
    let pods = kubectl(&mut c, "get pods");
    assert!(pods.len() == 2 && pods[1].starts_with("web "), "{pods:?}");
    assert!(kubectl(&mut c, "logs web")[0].starts_with("/docker-entrypoint.sh"), "logs reads the context's namespace");
    assert_eq!(kubectl(&mut c, "get pods -n default"), ["No resources found in default namespace."]);
    assert_eq!(
        kubectl(&mut c, "config get-contexts"),
        ["CURRENT   NAME       CLUSTER    AUTHINFO   NAMESPACE", "*         kubeloop   kubeloop   admin      dev"]
    );
}

/// `kubectl wait` as tutorials and scripts use it: in the terminal it follows the run and
/// ends when the condition is met or its timeout passes on the simulated clock; as a
/// scenario step, its line is printed when that happens.
#[test]
fn kubectl_wait_follows_the_run_until_met_or_timed_out() {
    use kubeloop_core::kubectl::Follow;
    use kubeloop_core::sandbox::Sandbox;
    let mut sb = Sandbox::new("", Some(1));
    assert_eq!(sb.kubectl("create deployment web --image=nginx --replicas=2"), ["deployment.apps/web created"]);
    // Not available yet: nothing printed, a wait to follow.
    let (out, follow) = sb.kubectl_watching("wait --for=condition=Available deployment/web --timeout=60s");
    assert!(out.is_empty(), "{out:?}");
    let Some(mut w @ Follow::Wait(_)) = follow else { panic!("no wait to follow") };
    let mut printed = Vec::new();
    let started = sb.cluster.now;
    while printed.is_empty() {
        sb.advance(500);
        let (lines, done) = w.poll(&sb.cluster.api, sb.cluster.kubelet());
        printed.extend(lines);
        assert_eq!(done, !printed.is_empty());
        assert!(sb.cluster.now - started < 60_000, "the Deployment never became Available");
    }
    assert_eq!(printed, ["deployment.apps/web condition met"]);
    let available = sb.cluster.api.store.get_by(rid::DEPLOYMENT, "default", "web").unwrap()["status"]["availableReplicas"].clone();
    assert_eq!(available, 2);
    // Each pod in turn; met at once, so nothing is left to follow.
    let (out, follow) = sb.kubectl_watching("wait --for=condition=Ready pod -l app=web");
    assert_eq!(out.len(), 2);
    assert!(out.iter().all(|l| l.starts_with("pod/web-") && l.ends_with(" condition met")), "{out:?}");
    assert!(follow.is_none());
    // A condition that never comes times out on the simulated clock.
    let before = sb.cluster.now;
    let out = sb.kubectl_to_end("wait --for=condition=Ready=False pod -l app=web --timeout=5s");
    assert_eq!(out.len(), 1);
    assert!(out[0].starts_with("error: timed out waiting for the condition on pods/web-"), "{out:?}");
    assert_eq!(sb.cluster.now - before, 5_000);
    // A deletion: the pod goes, with its grace period.
    let pod = out[0].rsplit('/').next().unwrap().to_string();
    assert_eq!(sb.kubectl(&format!("delete pod {pod} --wait=false")), [format!("pod \"{pod}\" deleted from default namespace")]);
    assert_eq!(sb.kubectl_to_end(&format!("wait --for=delete pod/{pod} --timeout=60s")), [format!("pod/{pod} condition met")]);
    assert!(sb.cluster.api.store.get_by(rid::POD, "default", &pod).is_none());

    // As a scenario step: the line comes when the Deployment is available, not at the step.
    let mut c = Cluster::new(Config::default());
    kubectl(&mut c, "create deployment api --image=nginx");
    let at = c.now;
    assert!(kubectl(&mut c, "wait --for=condition=Available deployment/api").is_empty());
    c.run_to_quiet(120_000);
    let done = c.outputs.iter().find(|o| o.output == ["deployment.apps/api condition met"]).expect("the wait's line is printed");
    assert!(done.t > at, "printed when met ({} ms), after the step ({at} ms)", done.t);
    assert_eq!(done.command, "kubectl wait --for=condition=Available deployment/api");
}

#[test]
fn a_pod_reaches_itself_through_its_own_service() {
    // One replica behind its Service: the pod's own request comes back to it (kube-proxy
    // lets hairpin traffic through), as the tutorial's first `curl` does.
    let mut c = Cluster::new(Config::default());
    kubectl(&mut c, "create deployment kubernetes-bootcamp --image=gcr.io/google-samples/kubernetes-bootcamp:v1");
    assert_eq!(kubectl(&mut c, "expose deployment/kubernetes-bootcamp --port 8080"), ["service/kubernetes-bootcamp exposed"]);
    c.run_to_quiet(120_000);
    let answer = kubectl(&mut c, "exec deploy/kubernetes-bootcamp -- curl -s http://kubernetes-bootcamp:8080");
    assert!(answer[0].starts_with("Hello Kubernetes bootcamp! | Running on: kubernetes-bootcamp-") && answer[0].ends_with("| v=1"), "{answer:?}");
}

#[test]
fn port_forward_opens_a_local_port_that_the_terminals_curl_reaches_until_the_pod_goes() {
    let mut c = Cluster::new(Config::default());
    kubectl(&mut c, "create deployment web --image=nginx --port=80");
    assert_eq!(kubectl(&mut c, "expose deployment web --port=8000 --target-port=80"), ["service/web exposed"]);
    // Before the Deployment has a pod, kubectl finds none.
    assert_eq!(kubectl(&mut c, "port-forward deploy/web 8080:80"), ["error: timed out waiting for the condition"]);
    kubectl(&mut c, "run lone --image=nginx");
    assert_eq!(kubectl(&mut c, "port-forward lone 80"), ["error: unable to forward port because pod is not running. Current status=Pending"]);
    c.run_to_quiet(120_000);
    assert_eq!(kubectl(&mut c, "curl localhost:8080"), ["curl: (7) Failed to connect to localhost port 8080 after 0 ms: Couldn't connect to server"]);
    // The Service's port 8000 is the pod's 80.
    assert_eq!(kubectl(&mut c, "port-forward svc/web 8080:8000"), ["Forwarding from 127.0.0.1:8080 -> 80", "Forwarding from [::1]:8080 -> 80"]);
    let page = kubectl(&mut c, "curl -s http://localhost:8080/");
    assert_eq!(page[0], "Handling connection for 8080");
    assert!(page.iter().any(|l| l == "<title>Welcome to nginx!</title>"), "{page:?}");
    let records = c.api.trace.records();
    assert!(
        records.iter().any(|r| r.stage == "portforward" && r.message.contains("GET / to port 80 of the pod: 200")),
        "the kubelet's connection is on the trace"
    );
    assert_eq!(kubectl(&mut c, "curl -sI localhost:8080/nope")[1], "HTTP/1.1 404 Not Found");
    // One port, one forward; a port the system picks; a port the Service lacks.
    assert!(kubectl(&mut c, "port-forward deploy/web 8080:80")[0].starts_with("Unable to listen on port 8080: "));
    assert_eq!(kubectl(&mut c, "port-forward deploy/web :80")[0], "Forwarding from 127.0.0.1:32768 -> 80");
    assert_eq!(kubectl(&mut c, "port-forward svc/web 9000:9000"), ["error: Service web does not have a service port 9000"]);
    // Names outside the terminal's machine do not resolve from it.
    assert_eq!(kubectl(&mut c, "curl web:8000")[0], "curl: (6) Could not resolve host: web");
    // The pod gone, so is its forward (the ReplicaSet's new pod is another pod).
    kubectl(&mut c, "delete pods -l app=web --grace-period=0 --force");
    c.run_to_quiet(120_000);
    assert_eq!(kubectl(&mut c, "curl localhost:8080"), ["curl: (7) Failed to connect to localhost port 8080 after 0 ms: Couldn't connect to server"]);
}

#[test]
fn without_a_current_context_kubectl_has_no_server_until_one_is_chosen() {
    let mut c = Cluster::new(Config::default());
    assert_eq!(kubectl(&mut c, "config set-context spare --user=admin"), ["Context \"spare\" created."]);
    assert_eq!(kubectl(&mut c, "config delete-context kubeloop")[1], "deleted context kubeloop from /root/.kube/config");
    for line in ["get pods", "logs nope", "exec nope -- ls", "port-forward nope 80"] {
        assert_eq!(kubectl(&mut c, line), ["The connection to the server localhost:8080 was refused - did you specify the right host or port?"], "{line}");
    }
    assert_eq!(kubectl(&mut c, "config use-context spare"), ["Switched to context \"spare\"."]);
    assert_eq!(kubectl(&mut c, "get pods"), ["No resources found in default namespace."]);
}

#[test]
fn kubectl_edit_patches_what_was_changed_and_reopens_what_the_server_refused() {
    use kubeloop_core::sandbox::Sandbox;
    let mut sb = Sandbox::new("", None);
    assert_eq!(sb.kubectl("create deployment web --image=nginx:1.27"), ["deployment.apps/web created"]);
    sb.advance(30_000);
    // The page opens the file kubectl's editor shows: its header, no managedFields.
    let opened = sb.edit_open("edit deployment/web").expect("the Deployment opens");
    assert!(opened.starts_with(kubeloop_core::kubectl::edit::HEADER), "{opened}");
    assert!(opened.contains("kind: Deployment") && !opened.contains("managedFields"), "{opened}");
    // Meanwhile someone else scales it: the edit changes only what the file changed.
    assert_eq!(sb.kubectl("scale deployment web --replicas=2"), ["deployment.apps/web scaled"]);
    let edited = opened.replace("image: nginx:1.27", "image: nginx:1.28");
    let (out, again) = sb.edit_save("edit deployment/web", &edited);
    assert_eq!(out, ["deployment.apps/web edited"]);
    assert_eq!(again, None);
    let d = sb.cluster.api.store.get_by(rid::DEPLOYMENT, "default", "web").unwrap().clone();
    assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.28");
    assert_eq!(d["spec"]["replicas"], 2, "the scale made after the file was opened stays");
    // Saved as opened: nothing to do. Saved empty: cancelled.
    let now = sb.edit_open("edit deploy web").unwrap();
    assert_eq!(sb.edit_save("edit deploy web", &now).0, ["Edit cancelled, no changes made."]);
    assert_eq!(sb.edit_save("edit deploy web", "# nothing\n").0, ["Edit cancelled, saved file was empty."]);
    // A change the server refuses: kubectl's error, and the file again with the reasons.
    let bad = now.replace("replicas: 2", "replicas: -1");
    let (out, again) = sb.edit_save("edit deploy web", &bad);
    assert_eq!(out[0], "error: deployments.apps \"web\" is invalid");
    assert_eq!(out[1], "# deployments.apps \"web\" was not valid:");
    assert!(out[2].starts_with("# * spec.replicas: Invalid value: -1: must be greater than or equal to 0"), "{out:?}");
    let again = again.expect("the file opens again");
    assert!(again.contains("# * spec.replicas: Invalid value: -1") && again.contains("replicas: -1"), "{again}");
    // A renamed object is refused before anything is sent.
    let renamed = now.replacen("name: web\n", "name: other\n", 1);
    let out = sb.edit_save("edit deploy web", &renamed).0;
    assert_eq!(out[1], "error: At least one of apiVersion, kind and name was changed", "{out:?}");
    // Without a saved file (a scenario step, `kubeloop kubectl`) it says how to give one.
    assert!(sb.kubectl("edit deploy/web")[0].contains("here-document"));
    assert_eq!(sb.kubectl("edit deploy/nope"), ["Error from server (NotFound): deployments.apps \"nope\" not found"]);
    // The saves are in the log as here-documents: a share link replays them.
    let link = sb.share();
    let replayed = Sandbox::open(&link).expect("the link opens");
    let d2 = replayed.cluster.api.store.get_by(rid::DEPLOYMENT, "default", "web").unwrap().clone();
    assert_eq!(d2["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.28");
}
