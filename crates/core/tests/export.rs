//! Export to kind: the script matches the simulated nodes and carries the manifests.

#![allow(clippy::disallowed_methods)]

use kubeloop_core::sandbox::export::{kind_script, manifests};
use kubeloop_core::sandbox::lessons;
use kubeloop_core::sandbox::Sandbox;

#[test]
fn the_script_makes_the_simulated_nodes_and_applies_the_manifests() {
    let lesson = lessons::load().unwrap().into_iter().find(|l| l.id == "e1-scheduling-untolerated-taint").unwrap();
    let sb = Sandbox::new(&lesson.text, None);
    let script = kind_script(&sb);
    // The nodes: the control plane first, then the workers by name, as kind names them.
    for line in [
        "#   kubeloop-control-plane: the sandbox's control-plane",
        "#   kubeloop-worker: the sandbox's gpu-1",
        "#   kubeloop-worker3: the sandbox's node-b",
        "- role: control-plane\n  labels:\n    topology.kubernetes.io/zone: \"zone-a\"\n- role: worker",
        "    accelerator: \"nvidia\"",
        "kubectl taint nodes kubeloop-worker nvidia.com/gpu=present:NoSchedule --overwrite\n",
        "kind create cluster --config kind-kubeloop.yaml\n",
        "kubectl apply -f kubeloop-manifests.yaml\n",
    ] {
        assert!(script.contains(line), "no {line:?} in\n{script}");
    }
    // The control plane's own taint is kind's to set.
    assert!(!script.contains("taint nodes kubeloop-control-plane"), "{script}");
    // The manifests are the editor's, without the Scenario document.
    let m = manifests(&sb.text);
    assert!(!m.contains("kind: Scenario") && m.contains("kind: Deployment") && m.contains("name: trainer"), "{m}");
    assert!(script.contains(&m));
    let docs = kubeloop_core::foundation::manifest::parse(&m);
    assert_eq!(docs.len(), 1);
    assert!(docs[0].diagnostics.is_empty());
    // And it is a valid shell script.
    let dir = std::env::temp_dir().join("kubeloop-export-test.sh");
    std::fs::write(&dir, &script).unwrap();
    let out = std::process::Command::new("sh").arg("-n").arg(&dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn what_only_kubeloop_simulates_is_said() {
    let lesson = lessons::load().unwrap().into_iter().find(|l| l.id == "f2-webhook-down-blocks-deploys").unwrap();
    let script = kind_script(&Sandbox::new(&lesson.text, None));
    assert!(script.contains("# Images from registry.example are kubeloop's stand-ins"), "{script}");
    assert!(script.contains("# Webhooks with kubeloop.dev/allow-if have simulated backends"), "{script}");
}
