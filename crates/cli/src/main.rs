//! The `kubeloop` command: runs scenarios through the deterministic control plane and
//! measures it. All I/O (files, clocks, stdout) lives here, never in `kubeloop-core`.

use kubeloop_core::cluster::scenario::{add_file, Scenario};
use kubeloop_core::cluster::{bench, Cluster};
use kubeloop_core::foundation::api::{self, get_str, rid};
use kubeloop_core::foundation::sim::{parse_duration, Millis, MAX_RUN};
use kubeloop_core::foundation::value::Value;
use std::process::ExitCode;

use kubeloop_cli::{command_usage, flag, install_api_docs, positional, serve, sweep, usage, COMMANDS};

// A faster allocator for large simulations (the core itself is allocator-agnostic).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Whether a command's own arguments ask for its usage: `--help` or `-h`, before any `--`
/// (after it, in `kubeloop kubectl`, they belong to the kubectl command line).
fn wants_help(args: &[String]) -> bool {
    args.iter().take_while(|a| *a != "--").any(|a| a == "--help" || a == "-h")
}

/// Default cap of a run without `--for`.
const CAP: Millis = 3_600_000;

macro_rules! outln {
    ($buf:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($buf, $($arg)*);
    }};
}

/// Keep freed memory mapped: large simulations allocate and free object versions at a
/// high rate, and returning pages to the OS only to fault them back costs more than it saves.
/// Not for `serve`, which runs for hours: there freed memory goes back to the system, so
/// that its resident size follows what the cluster holds.
fn tune_allocator() {
    // Option numbers of mimalloc v3 (`mi_option_arena_eager_commit`, `mi_option_purge_delay`).
    const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
    const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    // SAFETY: setting allocator options has no memory-safety preconditions.
    unsafe {
        libmimalloc_sys::mi_option_set(ARENA_EAGER_COMMIT, 1);
        libmimalloc_sys::mi_option_set(PURGE_DELAY, -1);
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|c| c != "serve") {
        tune_allocator();
    }
    match args.first().map(String::as_str) {
        Some(command @ ("run" | "bench" | "kubectl" | "serve" | "sweep")) if wants_help(&args[1..]) => {
            println!("{}", command_usage(command));
            ExitCode::SUCCESS
        }
        Some("help") if args.len() > 1 && COMMANDS.iter().any(|c| c.0 == args[1]) => {
            println!("{}", command_usage(&args[1]));
            ExitCode::SUCCESS
        }
        Some("help") if args.len() > 1 => {
            eprintln!("error: unknown command {:?}\n\n{}", args[1], usage());
            ExitCode::from(2)
        }
        Some("run") => run(&args[1..]),
        Some("bench") => bench(&args[1..]),
        Some("kubectl") => kubectl(&args[1..]),
        Some("serve") => serve::serve(&args[1..]),
        Some("sweep") => sweep::sweep(&args[1..]),
        Some("help") | Some("--help") | Some("-h") | None => {
            println!("{}", usage());
            ExitCode::SUCCESS
        }
        Some("version") | Some("--version") => {
            println!("kubeloop {} (Kubernetes v1.36 behaviour)", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!("error: unknown command {other:?}\n\n{}", usage());
            ExitCode::from(2)
        }
    }
}

fn run(args: &[String]) -> ExitCode {
    let files = positional(args);
    if files.is_empty() {
        eprintln!("error: kubeloop run needs at least one FILE\n\n{}", command_usage("run"));
        return ExitCode::from(2);
    }
    let seed = match flag(args, "--seed").map(str::parse::<u64>) {
        Some(Ok(s)) => Some(s),
        Some(Err(_)) => {
            eprintln!("error: --seed must be a non-negative integer");
            return ExitCode::from(2);
        }
        None => None,
    };
    let duration = match flag(args, "--for").map(parse_duration) {
        Some(Some(d)) if d > MAX_RUN => {
            eprintln!("error: --for is longer than kubeloop simulates in one run (at most 24h)");
            return ExitCode::from(2);
        }
        Some(Some(d)) => Some(d),
        Some(None) => {
            eprintln!("error: --for needs a duration such as 90s, 5m or 1h");
            return ExitCode::from(2);
        }
        None => None,
    };
    let output = flag(args, "--output").or_else(|| flag(args, "-o")).unwrap_or("text");
    if output != "text" && output != "json" {
        eprintln!("error: --output must be text or json");
        return ExitCode::from(2);
    }
    let mut sc = Scenario::default();
    for f in &files {
        match std::fs::read_to_string(f) {
            Ok(text) => add_file(&mut sc, f, &text),
            Err(e) => {
                eprintln!("error: cannot read {f}: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if !sc.errors.is_empty() {
        for e in &sc.errors {
            eprintln!("error: {e}");
        }
        return ExitCode::FAILURE;
    }
    let config = sc.config(seed, true);
    let seed = config.seed;
    let mut cluster = Cluster::new(config);
    cluster.add_steps(sc.steps.clone());
    let end = match duration {
        Some(d) => {
            cluster.run_until(d);
            d
        }
        None => cluster.run_to_quiet(CAP),
    };
    match output {
        "json" => {
            let v = serde_json::json!({
                "scenario": sc.name,
                "seed": seed,
                "end": end,
                "objects": cluster.objects().iter().map(|o| &**o).collect::<Vec<&Value>>(),
                "trace": cluster.api.trace.records(),
                "requests": cluster.api.trace.requests(),
                "steps": cluster.outputs,
            });
            use std::io::Write;
            let _ = writeln!(std::io::stdout().lock(), "{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        }
        _ => print_text(&cluster, seed, end, &sc.name),
    }
    if sc.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn secs(t: Millis) -> String {
    format!("{}.{:03}s", t / 1000, t % 1000)
}

fn print_text(cluster: &Cluster, seed: u64, end: Millis, name: &str) {
    let mut out = String::new();
    let title = if name.is_empty() { String::new() } else { format!(" {name}") };
    outln!(out, "# kubeloop run{title} (seed {seed})");
    // Users' requests show every stage; a component's request is folded into one line
    // (its last stage), as in the seeds' walk-through.
    let records = cluster.api.trace.records();
    for (i, r) in records.iter().enumerate() {
        if let Some(req) = r.request {
            let last_of_request = records.get(i + 1).is_none_or(|n| n.request != Some(req));
            if r.component != "kubectl" && !last_of_request {
                continue;
            }
        }
        let who = if r.component == "kubectl" && !r.user.is_empty() { format!("kubectl ({})", r.user) } else { r.component.clone() };
        let rv = if r.resource_version.is_empty() { String::new() } else { format!(" rv={}", r.resource_version) };
        let result = if r.result == "ok" { String::new() } else { format!(" [{}]", r.result) };
        let stage = if r.request.is_some() && r.component != "kubectl" { "api" } else { r.stage };
        outln!(out, "{:>10}  {:<10} {:<20} {:<26} {}{rv}{result}  {}", secs(r.t), r.flow.as_str(), stage, who, r.object, r.message);
    }
    let store = &cluster.api.store;
    outln!(out, "\n# state at {}", secs(end));
    let mut deployments = vec![["NAMESPACE", "NAME", "READY", "UP-TO-DATE", "AVAILABLE"].map(String::from).to_vec()];
    for d in store.list(rid::DEPLOYMENT, None) {
        let n = |path: &[&str]| api::get_i64(d, path).unwrap_or(0).to_string();
        deployments.push(vec![
            api::namespace(d).to_string(),
            api::name(d).to_string(),
            format!("{}/{}", n(&["status", "readyReplicas"]), n(&["spec", "replicas"])),
            n(&["status", "updatedReplicas"]),
            n(&["status", "availableReplicas"]),
        ]);
    }
    if deployments.len() > 1 {
        out.push_str(&kubeloop_core::kubectl::printers::table(&deployments));
        out.push('\n');
    }
    let mut rows = vec![["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"].map(String::from).to_vec()];
    for p in store.list(rid::POD, None) {
        let row = kubeloop_core::kubectl::printers::pod_row(p, end);
        let age = get_str(p, &["metadata", "creationTimestamp"])
            .and_then(kubeloop_core::foundation::sim::parse_rfc3339)
            .map(|t| kubeloop_core::kubectl::printers::human_duration(end.saturating_sub(t)))
            .unwrap_or_default();
        let node = get_str(p, &["spec", "nodeName"]).unwrap_or("<none>").to_string();
        let ip = get_str(p, &["status", "podIP"]).unwrap_or("<none>").to_string();
        rows.push(vec![api::namespace(p).to_string(), api::name(p).to_string(), row.ready, row.status, row.restarts, age, ip, node]);
    }
    if rows.len() > 1 {
        out.push_str(&kubeloop_core::kubectl::printers::table(&rows));
    }
    let denied = cluster.api.trace.requests().iter().filter(|r| r.code >= 400).count();
    outln!(out, "{} objects, {} requests ({denied} failed), {} API writes", store.all().count(), cluster.api.trace.requests().len(), cluster.api.trace.writes);
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
}

fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok())
}

fn kubectl(args: &[String]) -> ExitCode {
    install_api_docs();
    let Some(sep) = args.iter().position(|a| a == "--") else {
        eprintln!("error: put the kubectl command after --, e.g. kubeloop kubectl examples/checkout.yaml -- get pods -o wide");
        return ExitCode::from(2);
    };
    let (opts, cmd) = (&args[..sep], &args[sep + 1..]);
    let Some(file) = opts.first().filter(|f| !f.starts_with("--")) else {
        eprintln!("error: a scenario FILE is required before --");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {file}: {e}");
            return ExitCode::from(1);
        }
    };
    let seed = flag(opts, "--seed").and_then(|v| v.parse().ok());
    let mut sb = kubeloop_core::sandbox::Sandbox::new(&text, seed);
    match flag(opts, "--at") {
        Some(d) => match parse_duration(d) {
            Some(ms) if ms > MAX_RUN => {
                eprintln!("error: --at {d:?} is later than kubeloop simulates in one run (at most 24h)");
                return ExitCode::from(2);
            }
            Some(ms) => sb.advance(ms),
            None => {
                eprintln!("error: --at {d:?} is not a duration (e.g. 30s, 2m)");
                return ExitCode::from(2);
            }
        },
        None => {
            sb.cluster.run_to_quiet(CAP);
        }
    }
    if let Some(u) = flag(opts, "--as") {
        if !sb.set_user(u) {
            eprintln!("error: unknown user {u:?} (users: {})", sb.users.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", "));
            return ExitCode::from(2);
        }
    }
    // Re-quote the words so that the command line splits back into the same arguments.
    let line: Vec<String> =
        cmd.iter()
            .map(|w| {
                if w.is_empty() || w.contains(|c: char| c.is_whitespace() || "'\"\\".contains(c)) {
                    format!("'{}'", w.replace('\'', "'\\''"))
                } else {
                    w.clone()
                }
            })
            .collect();
    // `-f PATH` reads the file here (the sandbox has no file system); `-f -` reads stdin.
    // Not `logs -f` (follow), nor a `-f` after `--`, which belongs to the container's command.
    let mut line = line.join(" ");
    let before_dashes = cmd.iter().position(|w| w == "--").unwrap_or(cmd.len());
    let follows = cmd.iter().find(|w| !w.starts_with('-')).is_some_and(|w| w == "logs");
    if let Some(i) = cmd[..before_dashes].iter().position(|w| w == "--filename" || (w == "-f" && !follows)) {
        let path = cmd.get(i + 1).map(String::as_str).unwrap_or("");
        let text = if path == "-" {
            let mut t = String::new();
            let _ = std::io::Read::read_to_string(&mut std::io::stdin(), &mut t);
            Ok(t)
        } else {
            std::fs::read_to_string(path)
        };
        match text {
            Ok(t) => {
                let words: Vec<&str> = cmd.iter().enumerate().map(|(k, w)| if k == i + 1 { "-" } else { w.as_str() }).collect();
                line = format!("{} <<KUBELOOP_FILE\n{}\nKUBELOOP_FILE\n", words.join(" "), t.trim_end());
            }
            Err(e) => {
                eprintln!("error: the path {path:?} cannot be read: {e}");
                return ExitCode::from(1);
            }
        }
    }
    let out = sb.kubectl_to_end(&line);
    let failed = out.iter().any(|l| l.starts_with("error:") || l.starts_with("Error from server"));
    // A reader that stops early (`| head`) ends the output, not the program.
    let mut stdout = std::io::stdout().lock();
    for l in out {
        if std::io::Write::write_all(&mut stdout, format!("{l}\n").as_bytes()).is_err() {
            break;
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn bench(args: &[String]) -> ExitCode {
    let nodes: usize = match flag(args, "--nodes").and_then(|v| v.parse().ok()) {
        Some(n) if n > 0 => n,
        _ => {
            eprintln!("error: --nodes N (N > 0) is required");
            return ExitCode::from(2);
        }
    };
    let pods: usize = match flag(args, "--pods").and_then(|v| v.parse().ok()) {
        Some(n) => n,
        None => {
            eprintln!("error: --pods M is required");
            return ExitCode::from(2);
        }
    };
    let seed: u64 = flag(args, "--seed").and_then(|v| v.parse().ok()).unwrap_or(1);
    let started = std::time::Instant::now();
    let mut cluster = bench::cluster(nodes, pods, seed);
    let outcome = match bench::run(&mut cluster, pods) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let wall = started.elapsed().as_secs_f64();
    let ready = outcome.ready_pods;
    let v = serde_json::json!({
        "nodes": nodes,
        "pods": pods,
        "ready_pods": ready,
        "simulated_seconds": outcome.simulated_ms as f64 / 1000.0,
        "wall_seconds": (wall * 1000.0).round() / 1000.0,
        "api_writes": outcome.api_writes,
        "wakes": outcome.wakes,
        "timers": outcome.timers,
        "api_writes_per_second": (outcome.api_writes as f64 / wall).round(),
        "peak_memory_mib": peak_rss_kib().map(|k| k / 1024),
        "etcd_quota_bytes": bench::QUOTA_BYTES,
    });
    println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    // Tearing down a large cluster's memory is not part of the run; let the OS reclaim it.
    std::mem::forget(cluster);
    if ready == pods {
        ExitCode::SUCCESS
    } else {
        eprintln!("error: only {ready} of {pods} pods became Ready");
        ExitCode::from(1)
    }
}
