//! autoscaling/v1 watches of HorizontalPodAutoscalers through `kubeloop serve` and the real
//! kubectl: the objects are stored as autoscaling/v2, and a v1 watch must stream them
//! converted, from the start or from a list's resourceVersion.
//!
//! Needs the real kubectl: `/usr/bin/kubectl`, or the path in `$KUBECTL`.

use serde_json::Value;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

struct Server {
    child: Child,
    dir: PathBuf,
    kubeconfig: PathBuf,
    kubectl: PathBuf,
}

impl Server {
    fn start() -> Server {
        let dir = std::env::temp_dir().join(format!("kubeloop-hpa-v1-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let kubeconfig = dir.join("kubeconfig");
        let mut child = Command::new(env!("CARGO_BIN_EXE_kubeloop"))
            .args(["serve", "--addr", "127.0.0.1:0", "--kubeconfig"])
            .arg(&kubeconfig)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("kubeloop serve starts");
        let mut first = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        assert!(first.contains("serving the Kubernetes API on https://127.0.0.1:"), "{first}");
        let kubectl = std::env::var_os("KUBECTL").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/usr/bin/kubectl"));
        assert!(kubectl.exists(), "this test needs the real kubectl at {} (set $KUBECTL to use another)", kubectl.display());
        Server { child, dir, kubeconfig, kubectl }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.kubectl);
        cmd.env("KUBECONFIG", &self.kubeconfig).env("HOME", &self.dir).args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd
    }

    /// kubectl's stdout; the command must succeed.
    fn ok(&self, args: &[&str]) -> String {
        let out: Output = self.command(args).output().expect("kubectl runs");
        assert!(out.status.success(), "kubectl {args:?} failed:\n{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The events of a raw watch that the server ends after its `timeoutSeconds`.
    fn watch_events(&self, path: &str) -> Vec<Value> {
        self.ok(&["get", "--raw", path]).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

const V1: &str = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers";

#[test]
fn a_v1_watch_streams_the_stored_v2_hpas_converted_to_v1() {
    let s = Server::start();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/kubernetes-website-examples/application/php-apache.yaml");
    s.ok(&["apply", "-f", manifest.to_str().unwrap()]);
    assert_eq!(
        s.ok(&["autoscale", "deployment", "php-apache", "--cpu-percent=50", "--min=1", "--max=10"]),
        "horizontalpodautoscaler.autoscaling/php-apache autoscaled\n"
    );

    // From the start: the current object, as v1.
    let events = s.watch_events(&format!("{V1}?watch=1&timeoutSeconds=2"));
    assert_eq!(events[0]["type"], "ADDED", "{events:?}");
    let hpa = &events[0]["object"];
    assert_eq!(hpa["apiVersion"], "autoscaling/v1");
    assert_eq!(hpa["metadata"]["name"], "php-apache");
    assert_eq!(hpa["spec"]["targetCPUUtilizationPercentage"], 50);
    assert_eq!(hpa["spec"]["maxReplicas"], 10);
    assert!(hpa["spec"].get("metrics").is_none(), "no v2 fields in v1: {hpa}");

    // From a v1 list's resourceVersion: a change made through v2 arrives as a v1 MODIFIED.
    let list: Value = serde_json::from_str(&s.ok(&["get", "--raw", V1])).unwrap();
    assert_eq!(list["apiVersion"], "autoscaling/v1");
    assert_eq!(list["items"][0]["spec"]["targetCPUUtilizationPercentage"], 50);
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    s.ok(&["patch", "hpa.v2.autoscaling", "php-apache", "--type=merge", "-p", r#"{"spec":{"maxReplicas":5}}"#]);
    let events = s.watch_events(&format!("{V1}?watch=1&resourceVersion={rv}&timeoutSeconds=2"));
    assert!(events.iter().all(|e| e["type"] == "MODIFIED" && e["object"]["apiVersion"] == "autoscaling/v1"), "{events:?}");
    let patched = events.iter().find(|e| e["object"]["spec"]["maxReplicas"] == 5).unwrap_or_else(|| panic!("no MODIFIED with maxReplicas 5: {events:?}"));
    assert_eq!(patched["object"]["spec"]["targetCPUUtilizationPercentage"], 50);

    // `kubectl get -w` on the v1 resource prints rows whose targets come from the metrics.
    let mut watch = s.command(&["get", "hpa.v1.autoscaling", "-w"]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let _ = watch.kill();
    let out = watch.wait_with_output().unwrap();
    let streamed = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = streamed.lines();
    assert_eq!(lines.next().unwrap_or("").split_whitespace().collect::<Vec<_>>(), ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]);
    let row: Vec<&str> = lines.next().unwrap_or_else(|| panic!("no row: {streamed}")).split_whitespace().collect();
    assert_eq!(row[..2], ["php-apache", "Deployment/php-apache"], "{streamed}");
    assert!(row[2] == "cpu:" && row[3].ends_with("/50%"), "{streamed}");
    assert_eq!(row[4..6], ["1", "5"], "{streamed}");
}
