//! The `kubeloop` binary as a user runs it: scenario output in both formats, byte-identical
//! reruns, clear errors for bad arguments, and the benchmark's report.

use serde_json::Value;
use std::process::Command;

fn kubeloop(args: &[&str]) -> (i32, String, String) {
    let out =
        Command::new(env!("CARGO_BIN_EXE_kubeloop")).args(args).current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).output().expect("run kubeloop");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn run_prints_the_trace_as_json_with_every_documented_field() {
    let (code, out, err) = kubeloop(&["run", "examples/checkout.yaml", "--output", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    for k in ["objects", "trace", "requests", "seed", "end"] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    let rec = &v["trace"][0];
    for k in ["t", "flow", "stage", "component", "user", "verb", "object", "resourceVersion", "result", "message"] {
        assert!(rec.get(k).is_some(), "trace record lacks {k}: {rec}");
    }
    let denied = v["requests"].as_array().unwrap().iter().find(|r| r["code"] == 422).expect("the :latest denial");
    assert_eq!(denied["status"]["reason"], "Invalid");
    assert_eq!(denied["object"], "Deployment/default/checkout-canary");
    let flows: std::collections::BTreeSet<&str> = v["trace"].as_array().unwrap().iter().filter_map(|r| r["flow"].as_str()).collect();
    for f in ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "denied"] {
        assert!(flows.contains(f), "no record for step {f}");
    }
    assert!(v["objects"].as_array().unwrap().iter().any(|o| o["kind"] == "Event"), "events are stored objects");
}

#[test]
fn the_same_seed_prints_the_same_bytes() {
    let a = kubeloop(&["run", "examples/node-failure.yaml", "-o", "json"]);
    let b = kubeloop(&["run", "examples/node-failure.yaml", "-o", "json"]);
    assert_eq!(a.0, 0);
    assert_eq!(a.1, b.1);
    let c = kubeloop(&["run", "examples/node-failure.yaml", "-o", "json", "--seed", "99"]);
    assert_ne!(a.1, c.1);
}

#[test]
fn text_output_and_for_duration() {
    let (code, out, _) = kubeloop(&["run", "examples/hand-scale.yaml", "--for", "20s"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("# kubeloop run hand-scale (seed 5)"));
    assert!(out.contains("# state at 20.000s"));
    assert!(!out.contains("scaled"), "the hand scale at 30s has not happened yet");
}

#[test]
fn bad_arguments_say_what_is_wrong() {
    let (code, _, err) = kubeloop(&["run"]);
    assert_eq!(code, 2);
    assert!(err.contains("needs at least one FILE"));
    let (code, _, err) = kubeloop(&["run", "examples/checkout.yaml", "--for", "soon"]);
    assert_eq!(code, 2);
    assert!(err.contains("--for needs a duration"));
    let (code, _, err) = kubeloop(&["run", "no-such-file.yaml"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read no-such-file.yaml"));
    let (code, _, err) = kubeloop(&["frobnicate"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown command"));
    // Numbers that would run for ever or exhaust the machine are refused up front.
    let (code, _, err) = kubeloop(&["run", "examples/checkout.yaml", "--for", "999999999999h"]);
    assert_eq!(code, 2);
    assert!(err.contains("--for is longer than kubeloop simulates in one run (at most 24h)"), "{err}");
    let (code, _, err) = kubeloop(&["serve", "--speed", "1e300", "--addr", "127.0.0.1:0"]);
    assert_eq!(code, 2);
    assert!(err.contains("--speed must be a number above 0 and at most 1000"), "{err}");
    let (code, _, err) = kubeloop(&["kubectl", "examples/checkout.yaml", "--at", "48h", "--", "get", "pods"]);
    assert_eq!(code, 2);
    assert!(err.contains("later than kubeloop simulates in one run"), "{err}");
}

#[test]
fn a_scenario_error_stops_the_run() {
    let dir = std::env::temp_dir().join(format!("kubeloop-cli-bad-scenario-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.yaml");
    std::fs::write(&file, "apiVersion: kubeloop.dev/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - at: soon\n    kubectl: get pods\n").unwrap();
    let (code, out, err) = kubeloop(&["run", file.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("invalid duration"), "{err}");
    assert!(out.is_empty(), "nothing runs after a Scenario error: {out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bench_reports_its_measurements() {
    let (code, out, err) = kubeloop(&["bench", "--nodes", "10", "--pods", "60"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["ready_pods"], 60);
    assert!(v["wall_seconds"].as_f64().unwrap() > 0.0);
    // Per pod at least its create, its binding, two status writes and the four events of
    // its start (Scheduled, Pulled, Created, Started).
    assert!(v["api_writes"].as_u64().unwrap() >= 60 * 8, "{out}");
    assert!(v["peak_memory_mib"].as_u64().is_some());
}

#[test]
fn kubectl_runs_one_command_against_a_scenario() {
    let (code, out, err) = kubeloop(&["kubectl", "web/checkout.yaml", "--", "get", "deployments", "-A"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<Vec<&str>> = out.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines[0], ["NAMESPACE", "NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]);
    assert_eq!(&lines[1][..5], ["default", "checkout", "2/2", "2", "2"]);
    assert_eq!(&lines[2][..5], ["policy", "team-policy", "1/1", "1", "1"]);
    let (code, out, _) = kubeloop(&["kubectl", "web/checkout.yaml", "--as", "ajay", "--", "auth", "can-i", "delete", "nodes"]);
    assert_eq!((code, out.as_str()), (0, "no\n"));
    let (code, out, _) = kubeloop(&["kubectl", "web/checkout.yaml", "--at", "0s", "--", "get", "pods", "nope"]);
    assert_eq!((code, out.as_str()), (1, "Error from server (NotFound): pods \"nope\" not found\n"));
    let (code, _, err) = kubeloop(&["kubectl", "web/checkout.yaml", "get", "pods"]);
    assert_eq!(code, 2);
    assert!(err.contains("after --"), "{err}");
}

/// `kubeloop` that must end within 20 s: a `--help` that started a server instead fails
/// here rather than hanging the suite.
fn kubeloop_ends(args: &[&str]) -> (i32, String, String) {
    use std::io::Read as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubeloop"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run kubeloop");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait for kubeloop") {
            break status.code().unwrap_or(-1);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("kubeloop {args:?} did not end");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let (mut out, mut err) = (String::new(), String::new());
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    (code, out, err)
}

#[test]
fn every_command_prints_its_usage_for_help_and_exits_0() {
    for command in ["serve", "run", "bench", "kubectl"] {
        for help in ["--help", "-h"] {
            // With other arguments too: the help is asked for, not a server or a run.
            for args in [vec![command, help], vec![command, "examples/checkout.yaml", "--addr", "127.0.0.1:0", help]] {
                let (code, out, err) = kubeloop_ends(&args);
                assert_eq!(code, 0, "{args:?}: {err}");
                assert!(out.starts_with(&format!("Usage:\n  kubeloop {command} ")), "{args:?}: {out}");
                assert!(out.contains(&format!("\n{command:<8}")), "{args:?} says what {command} does: {out}");
                assert!(!out.contains("serving the Kubernetes API") && err.is_empty(), "{args:?}: {out}{err}");
            }
        }
        let (help_code, help_out, _) = kubeloop_ends(&["help", command]);
        let (code, out, _) = kubeloop_ends(&[command, "--help"]);
        assert_eq!((help_code, help_out), (code, out), "kubeloop help {command}");
    }
    let (code, _, err) = kubeloop_ends(&["help", "frobnicate"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown command \"frobnicate\""), "{err}");
    // After `--`, `--help` belongs to the kubectl command line.
    let (code, out, err) = kubeloop_ends(&["kubectl", "examples/checkout.yaml", "--", "get", "pods", "--help"]);
    assert!(!out.starts_with("Usage:\n  kubeloop"), "{code} {out}{err}");
}
