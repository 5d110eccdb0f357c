//! `kubeloop sweep`: the seed sweep over many seeds, on every core, with each failure
//! minimized and written out as a scenario file that replays it.

use crate::{command_usage, flag, positional};
use kubeloop_core::cluster::sweep::{self, Plan, Report, Violation};
use kubeloop_core::foundation::sim::{parse_duration, Millis, MAX_RUN};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Run a scenario's text under the invariants, a panic counting as a broken invariant.
fn checked(text: &str, end: Millis) -> Result<Report, Violation> {
    match std::panic::catch_unwind(|| sweep::run(text, end)) {
        Ok(result) => result,
        Err(payload) => {
            let message = payload.downcast_ref::<String>().cloned().or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
            Err(Violation { invariant: "no panic", t: 0, message })
        }
    }
}

fn number(args: &[String], name: &str, default: u64) -> Result<u64, String> {
    match flag(args, name) {
        None => Ok(default),
        Some(s) => s.parse().map_err(|_| format!("{name} must be a non-negative integer")),
    }
}

pub fn sweep(args: &[String]) -> ExitCode {
    match sweep_inner(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}\n\n{}", command_usage("sweep"));
            ExitCode::from(2)
        }
    }
}

fn sweep_inner(args: &[String]) -> Result<ExitCode, String> {
    let end = match flag(args, "--for").map(parse_duration) {
        None => sweep::DEFAULT_DURATION,
        Some(Some(d)) if d <= MAX_RUN && d > sweep::SETTLE => d,
        Some(_) => return Err(format!("--for needs a duration longer than the {}m of quiet the sweep ends with, at most 24h", sweep::SETTLE / 60_000)),
    };
    // Panics are reported with their seed; the default hook's message would interleave.
    std::panic::set_hook(Box::new(|_| {}));
    if let Some(seed) = flag(args, "--print") {
        let seed = seed.parse::<u64>().map_err(|_| "--print needs a seed".to_string())?;
        print!("{}", sweep::generate(seed, end).render());
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(file) = flag(args, "--check") {
        let text = std::fs::read_to_string(file).map_err(|e| format!("cannot read {file}: {e}"))?;
        return Ok(match checked(&text, end) {
            Ok(r) => {
                println!("{file}: every invariant held ({} tasks, {} checks, {} requests, fingerprint {:016x})", r.tasks, r.checks, r.requests, r.fingerprint);
                ExitCode::SUCCESS
            }
            Err(v) => {
                println!("{file}: {v}");
                ExitCode::FAILURE
            }
        });
    }
    let hashes = args.iter().any(|a| a == "--hashes");
    let args: Vec<String> = args.iter().filter(|a| *a != "--hashes").cloned().collect();
    let args = &args[..];
    let count = match positional(args).first() {
        Some(n) => n.parse::<u64>().map_err(|_| format!("the number of seeds must be a non-negative integer, not {n:?}"))?,
        None => return Err("kubeloop sweep needs the number of seeds".into()),
    };
    let from = number(args, "--from", 1)?;
    let jobs = number(args, "--jobs", std::thread::available_parallelism().map_or(1, |n| n.get() as u64))?.max(1);
    let out = flag(args, "--out").unwrap_or("target/sweep").to_string();
    let started = std::time::Instant::now();
    let next = AtomicU64::new(from);
    let results: Mutex<BTreeMap<u64, Result<Report, Violation>>> = Mutex::new(BTreeMap::new());
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if seed >= from + count {
                    break;
                }
                let result = checked(&sweep::generate(seed, end).render(), end);
                if let Err(v) = &result {
                    eprintln!("seed {seed}: {v}");
                }
                if let Ok(mut r) = results.lock() {
                    r.insert(seed, result);
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_default();
    let (mut tasks, mut checks, mut requests) = (0, 0, 0);
    let mut failures = Vec::new();
    for (seed, result) in &results {
        if hashes {
            println!("{}", sweep::outcome_line(*seed, result));
        }
        match result {
            Ok(r) => {
                tasks += r.tasks;
                checks += r.checks;
                requests += r.requests;
            }
            Err(v) => failures.push((*seed, v.clone())),
        }
    }
    let wall = started.elapsed().as_secs_f64();
    println!(
        "swept {count} seeds ({from}..{}) for {} each: {tasks} tasks, {requests} requests, {checks} invariant checks, {} failed, in {wall:.1}s on {jobs} threads",
        from + count.saturating_sub(1),
        kubeloop_core::foundation::sim::go_duration(end),
        failures.len()
    );
    if failures.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {out}: {e}"))?;
    for (seed, v) in &failures {
        let plan = sweep::generate(*seed, end);
        let small: Plan = sweep::minimize(&plan, v, |p| checked(&p.render(), end).err());
        let last = checked(&small.render(), end).err().unwrap_or_else(|| v.clone());
        let path = format!("{out}/sweep-{seed}.yaml");
        let text = format!("# {last}\n{}", small.render());
        std::fs::write(&path, text).map_err(|e| format!("cannot write {path}: {e}"))?;
        println!(
            "seed {seed}: {last}\n  minimized from {} to {} steps: {path}\n  replay: kubeloop sweep --check {path} --for {}s",
            plan.steps.len(),
            small.steps.len(),
            end / 1000
        );
    }
    Ok(ExitCode::FAILURE)
}
