//! The `kubeloop` command's parts: `serve` (the Kubernetes HTTP API in front of a
//! cluster) and `sweep`, and what the commands share. The binary is `main.rs`; the fuzz
//! targets reach `serve`'s request path through [`serve::api::route`].

pub mod serve;
pub mod sweep;

/// Each command: its synopsis and what it does, for `kubeloop help` and `kubeloop COMMAND --help`.
pub const COMMANDS: [(&str, &str, &str); 5] = [
    (
        "run",
        "kubeloop run FILE... [--seed N] [--for DURATION] [--output text|json]",
        "applies the manifests and Scenario steps in FILEs and prints the trace of every
        request and loop, from `kubectl apply` to Ready pods. Without --for, the run ends
        when nothing is left to do (at most 1h of simulated time).",
    ),
    (
        "kubectl",
        "kubeloop kubectl FILE [--at DURATION] [--as USER] [--seed N] -- COMMAND...",
        "builds the sandbox the page would from FILE (its objects applied, its Scenario
        steps scheduled), runs it to DURATION (default: until quiet) and runs one kubectl
        command line as USER (default admin), printing what the page's terminal prints.",
    ),
    (
        "serve",
        "kubeloop serve [FILE...] [--addr 127.0.0.1:PORT] [--speed N] [--kubeconfig PATH] [--seed N]",
        "runs the cluster in wall-clock time (times --speed) behind the Kubernetes HTTP API
        on --addr (default 127.0.0.1:6443) and writes a kubeconfig (default
        ./kubeloop.kubeconfig) with a context per user, so that the real kubectl, the
        Python client or kube-rs can drive it.",
    ),
    (
        "bench",
        "kubeloop bench --nodes N --pods M [--seed N]",
        "applies one Deployment of M replicas to N nodes, runs until every pod is Ready
        and prints wall time, API writes per second and peak memory as JSON.",
    ),
    (
        "sweep",
        "kubeloop sweep N [--from SEED] [--for DURATION] [--jobs N] [--out DIR] [--hashes] | kubeloop sweep --check FILE | --print SEED [--for DURATION]",
        "generates N random scenarios from seeds SEED.. (default 1): workloads of every kind,
        some subtly invalid, hand edits, scaling, rollouts, deletions with each cascade,
        drains and node, API server, etcd, controller and storage outages. Each runs for
        DURATION (default 1h, the last 20m quiet) with the invariants checked after every
        task and convergence checked at the end. A failure prints its seed and writes a
        minimized scenario to DIR (default target/sweep) that --check replays. --hashes
        prints one line per seed, its run's fingerprint or its failure (the page's
        kubeloopSweep prints the same); --print writes a seed's scenario without running it.",
    ),
];

/// `kubeloop help`: every command's synopsis, then what each does.
pub fn usage() -> String {
    let mut s = String::from("kubeloop: a Kubernetes control-plane sandbox\n\nUsage:\n");
    for (_, synopsis, _) in COMMANDS {
        s.push_str(&format!("  {synopsis}\n"));
    }
    s.push_str("  kubeloop help [COMMAND]\n");
    for (name, _, what) in COMMANDS {
        s.push_str(&format!("\n{name:<8}{what}"));
    }
    s
}

/// `kubeloop COMMAND --help`: that command's synopsis and what it does.
pub fn command_usage(command: &str) -> String {
    COMMANDS.iter().find(|c| c.0 == command).map_or_else(usage, |(name, synopsis, what)| format!("Usage:\n  {synopsis}\n\n{name:<8}{what}"))
}

/// The value of `--name VALUE` or `--name=VALUE`.
pub fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().enumerate().find_map(
        |(i, a)| {
            if a == name {
                args.get(i + 1).map(String::as_str)
            } else {
                a.strip_prefix(name).and_then(|r| r.strip_prefix('='))
            }
        },
    )
}

/// The arguments that are neither flags nor flag values.
pub fn positional(args: &[String]) -> Vec<&str> {
    let mut out = Vec::new();
    let mut skip = false;
    for a in args {
        if skip {
            skip = false;
            continue;
        }
        if a.starts_with("--") || a == "-o" {
            skip = !a.contains('=');
            continue;
        }
        out.push(a.as_str());
    }
    out
}

/// The OpenAPI schemas with descriptions, for `kubectl explain` (in the page they are
/// fetched when first needed).
pub fn install_api_docs() {
    if let Ok(doc) = serde_json::from_str(include_str!("../data/openapi.json")) {
        kubeloop_core::kubectl::explain::install(doc);
    }
}
