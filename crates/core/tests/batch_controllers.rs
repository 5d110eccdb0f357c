//! The Job, CronJob and TTL-after-finished controllers against what Kubernetes does with
//! the website's Job examples: statuses, conditions, pods, events and logs.

// Tests build their fixtures in memory; the determinism lint guards the library itself.
#![allow(clippy::disallowed_methods)]

use kubeloop_core::apiserver::{Credentials, PatchType, Request};
use kubeloop_core::cluster::{Action, Cluster, Config};
use kubeloop_core::foundation::api::{self, get_array, get_i64, get_str, rid};
use kubeloop_core::foundation::sim::parse_rfc3339;
use kubeloop_core::foundation::value::{json, Value};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/corpus/kubernetes-website-examples/");

fn admin() -> Credentials {
    Credentials::Token("admin-token".into())
}

fn apply(c: &mut Cluster, text: &str) -> Vec<String> {
    c.act(admin(), Action::Apply { text: text.into(), file: "test.yaml".into() }).output
}

fn corpus(path: &str) -> String {
    std::fs::read_to_string(format!("{CORPUS}{path}")).unwrap()
}

fn kubectl(c: &mut Cluster, line: &str) -> Vec<String> {
    c.act(admin(), Action::Kubectl(line.to_string())).output
}

fn job(c: &Cluster, name: &str) -> Value {
    (**c.api.store.get_by(rid::JOB, "default", name).unwrap_or_else(|| panic!("job {name}"))).clone()
}

fn pods_of(c: &Cluster, job: &str) -> Vec<Value> {
    c.api.store.list(rid::POD, None).filter(|p| api::label(p, "job-name") == Some(job)).map(|p| (**p).clone()).collect()
}

/// The Job's conditions as `Type/Reason/Message`.
fn conditions(j: &Value) -> Vec<String> {
    get_array(j, &["status", "conditions"])
        .iter()
        .map(|c| format!("{}/{}/{}", get_str(c, &["type"]).unwrap_or(""), get_str(c, &["reason"]).unwrap_or(""), get_str(c, &["message"]).unwrap_or("")))
        .collect()
}

fn events(c: &Cluster, kind: &str, name: &str) -> Vec<String> {
    let mut ev: Vec<(String, String)> = c
        .api
        .store
        .list(rid::EVENT, None)
        .filter(|e| get_str(e, &["involvedObject", "kind"]) == Some(kind) && get_str(e, &["involvedObject", "name"]) == Some(name))
        .map(|e| {
            (
                get_str(e, &["firstTimestamp"]).unwrap_or("").to_string(),
                format!("{} {}", get_str(e, &["reason"]).unwrap_or(""), get_str(e, &["message"]).unwrap_or("")),
            )
        })
        .collect();
    ev.sort();
    ev.into_iter().map(|(_, m)| m).collect()
}

/// How many times an event with this reason was recorded for a CronJob (aggregated).
fn event_count(c: &Cluster, cronjob: &str, reason: &str) -> i64 {
    c.api
        .store
        .list(rid::EVENT, None)
        .filter(|e| get_str(e, &["involvedObject", "name"]) == Some(cronjob) && get_str(e, &["reason"]) == Some(reason))
        .map(|e| get_i64(e, &["count"]).unwrap_or(1))
        .sum()
}

fn has_finalizer(p: &Value) -> bool {
    get_array(p, &["metadata", "finalizers"]).iter().any(|f| f.as_str() == Some("batch.kubernetes.io/job-tracking"))
}

#[test]
fn the_pi_job_computes_its_digits_and_completes() {
    let mut c = Cluster::new(Config::default());
    assert_eq!(apply(&mut c, &corpus("controllers/job.yaml")), vec!["job.batch/pi created"]);
    let j = job(&c, "pi");
    let uid = api::uid(&j).to_string();
    // The strategy generated the selector and the template's labels.
    assert_eq!(j["spec"]["selector"], json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}));
    assert_eq!(j["spec"]["template"]["metadata"]["labels"]["job-name"], "pi");
    assert_eq!(j["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/job-name"], "pi");
    assert_eq!(j["spec"]["template"]["metadata"]["labels"]["controller-uid"], uid.as_str());
    assert_eq!((j["spec"]["completions"].clone(), j["spec"]["parallelism"].clone(), j["spec"]["backoffLimit"].clone()), (json!(1), json!(1), json!(4)));
    assert_eq!(j["spec"]["podReplacementPolicy"], "TerminatingOrFailed");
    c.run_to_quiet(600_000);
    let j = job(&c, "pi");
    assert_eq!(
        conditions(&j),
        vec![
            "SuccessCriteriaMet/CompletionsReached/Reached expected number of succeeded pods",
            "Complete/CompletionsReached/Reached expected number of succeeded pods"
        ]
    );
    assert_eq!(j["status"]["succeeded"], 1);
    assert_eq!(j["status"]["ready"], 0);
    assert_eq!(j["status"]["terminating"], 0);
    assert_eq!(j["status"]["uncountedTerminatedPods"], json!({}));
    assert!(j["status"].get("active").is_none() && j["status"].get("failed").is_none(), "{}", j["status"]);
    let start = parse_rfc3339(get_str(&j, &["status", "startTime"]).unwrap()).unwrap();
    let done = parse_rfc3339(get_str(&j, &["status", "completionTime"]).unwrap()).unwrap();
    assert!(done > start);
    let pods = pods_of(&c, "pi");
    assert_eq!(pods.len(), 1);
    let pod = &pods[0];
    assert!(api::name(pod).starts_with("pi-") && api::name(pod).len() == 8, "{}", api::name(pod));
    assert_eq!(get_str(pod, &["status", "phase"]), Some("Succeeded"));
    assert!(!has_finalizer(pod), "the tracking finalizer is removed once counted");
    assert_eq!(api::controller_ref(pod).and_then(|r| get_str(r, &["uid"])), Some(uid.as_str()));
    let pod_name = api::name(pod).to_string();
    assert_eq!(events(&c, "Job", "pi"), vec![format!("SuccessfulCreate Created pod: {pod_name}"), "Completed Job completed".to_string()]);
    let logs = kubectl(&mut c, "logs job/pi");
    assert!(logs.first().is_some_and(|l| l.starts_with("3.14159265358979323846")), "{logs:?}");
    assert_eq!(kubectl(&mut c, &format!("logs {pod_name}")), logs);
    let trace: Vec<&str> = c.api.trace.records().iter().filter(|r| r.component == "job-controller").map(|r| r.message.as_str()).collect();
    assert!(trace.contains(&format!("Job/default/pi has 0 active, 0 succeeded of 1 completions: created {pod_name} (nodeName empty)").as_str()), "{trace:?}");
    assert!(trace.contains(&"Job/default/pi: all 1 completions succeeded: Complete"), "{trace:?}");
}

fn failing_job(name: &str, extra: &str, script: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\nspec:\n{extra}  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: main\n        image: busybox\n        command: [\"sh\", \"-c\", {script:?}]\n"
    )
}

#[test]
fn failures_back_off_then_exceed_the_backoff_limit() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &failing_job("flaky", "  backoffLimit: 2\n", "echo trying; exit 3"));
    c.run_to_quiet(3_600_000);
    let j = job(&c, "flaky");
    assert_eq!(
        conditions(&j),
        vec![
            "FailureTarget/BackoffLimitExceeded/Job has reached the specified backoff limit",
            "Failed/BackoffLimitExceeded/Job has reached the specified backoff limit"
        ]
    );
    assert_eq!(j["status"]["failed"], 3);
    assert!(j["status"].get("completionTime").is_none());
    let mut pods = pods_of(&c, "flaky");
    assert_eq!(pods.len(), 3, "backoffLimit 2 allows 3 attempts");
    assert!(pods.iter().all(|p| get_str(p, &["status", "phase"]) == Some("Failed") && !has_finalizer(p)));
    pods.sort_by_key(|p| parse_rfc3339(get_str(p, &["metadata", "creationTimestamp"]).unwrap()).unwrap());
    let created: Vec<u64> = pods.iter().map(|p| parse_rfc3339(get_str(p, &["metadata", "creationTimestamp"]).unwrap()).unwrap()).collect();
    // The replacement waits 10 s after the first failure, 20 s after the second.
    assert!(created[1] - created[0] >= 10_000 && created[1] - created[0] < 20_000, "{created:?}");
    assert!(created[2] - created[1] >= 20_000 && created[2] - created[1] < 40_000, "{created:?}");
    let ev = events(&c, "Job", "flaky");
    assert_eq!(ev.iter().filter(|e| e.starts_with("SuccessfulCreate Created pod: flaky-")).count(), 3);
    assert_eq!(ev.last().map(String::as_str), Some("BackoffLimitExceeded Job has reached the specified backoff limit"));
}

#[test]
fn the_pod_failure_policy_example_fails_the_job_on_exit_code_42() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &corpus("controllers/job-pod-failure-policy-example.yaml"));
    let j = job(&c, "job-pod-failure-policy-example");
    assert_eq!(j["spec"]["podReplacementPolicy"], "Failed", "a pod failure policy defaults it to Failed");
    assert_eq!(j["spec"]["podFailurePolicy"]["rules"][1]["onPodConditions"][0]["status"], "True");
    c.run_to_quiet(600_000);
    let j = job(&c, "job-pod-failure-policy-example");
    let conds = conditions(&j);
    assert_eq!(conds.len(), 2, "{conds:?}");
    assert!(conds[0].starts_with("FailureTarget/PodFailurePolicy/Container main for pod default/job-pod-failure-policy-example-"), "{conds:?}");
    assert!(conds[0].ends_with(" failed with exit code 42 matching FailJob rule at index 0"), "{conds:?}");
    assert_eq!(conds[1].replacen("Failed/", "FailureTarget/", 1), conds[0]);
    // Three pods ran in parallel and all exited 42; none was replaced.
    let pods = pods_of(&c, "job-pod-failure-policy-example");
    assert_eq!(pods.len(), 3);
    assert_eq!(j["status"]["failed"], 3);
    assert_eq!(j["status"]["terminating"], 0);
    let ev = events(&c, "Job", "job-pod-failure-policy-example");
    assert!(ev.last().is_some_and(|e| e.starts_with("PodFailurePolicy Container main for pod default/")), "{ev:?}");
}

/// The website's per-index example with its Python program written in sh (kubeloop runs
/// shell scripts, not Python): even indexes fail, odd ones succeed.
#[test]
fn backoff_limit_per_index_marks_failed_indexes() {
    let text = corpus("controllers/job-backoff-limit-per-index-example.yaml");
    let sh = text
        .replace("image: python", "image: busybox")
        .replace(
            "        - python3\n        - -c\n        - |\n          import os, sys\n          print(\"Hello world\")\n          if int(os.environ.get(\"JOB_COMPLETION_INDEX\")) % 2 == 0:\n            sys.exit(1)",
            "        - sh\n        - -c\n        - |\n          echo Hello world\n          if [ $((JOB_COMPLETION_INDEX % 2)) -eq 0 ]; then exit 1; fi",
        );
    assert_ne!(sh, text);
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &sh);
    assert_eq!(job(&c, "job-backoff-limit-per-index-example")["spec"]["backoffLimit"], 2147483647);
    c.run_to_quiet(3_600_000);
    let j = job(&c, "job-backoff-limit-per-index-example");
    assert_eq!(j["status"]["completedIndexes"], "1,3,5,7,9");
    assert_eq!(j["status"]["failedIndexes"], "0,2,4,6,8");
    assert_eq!(j["status"]["succeeded"], 5);
    assert_eq!(j["status"]["failed"], 10, "each even index failed twice");
    assert_eq!(conditions(&j), vec!["FailureTarget/FailedIndexes/Job has failed indexes", "Failed/FailedIndexes/Job has failed indexes"]);
    let pods = pods_of(&c, "job-backoff-limit-per-index-example");
    assert_eq!(pods.len(), 15);
    for p in &pods {
        let ix = api::annotation(p, "batch.kubernetes.io/job-completion-index").unwrap();
        assert_eq!(api::label(p, "batch.kubernetes.io/job-completion-index"), Some(ix));
        assert!(api::name(p).starts_with(&format!("job-backoff-limit-per-index-example-{ix}-")));
        assert_eq!(get_str(p, &["spec", "hostname"]), Some(format!("job-backoff-limit-per-index-example-{ix}").as_str()));
        let retries = api::annotation(p, "batch.kubernetes.io/job-index-failure-count").unwrap();
        assert!(retries == "0" || (retries == "1" && ix.parse::<i64>().unwrap() % 2 == 0), "{ix} {retries}");
    }
    let first = pods.iter().find(|p| api::annotation(p, "batch.kubernetes.io/job-completion-index") == Some("3")).unwrap();
    assert_eq!(kubectl(&mut c, &format!("logs {}", api::name(first))), vec!["Hello world"]);
    assert_eq!(events(&c, "Job", "job-backoff-limit-per-index-example").last().map(String::as_str), Some("FailedIndexes Job has failed indexes"));
}

/// The success-policy example, its Python program written in sh: index 2 succeeds,
/// which the rule `succeededIndexes: 0,2-3, succeededCount: 1` accepts.
#[test]
fn a_success_policy_completes_the_job_early() {
    let text = corpus("controllers/job-success-policy.yaml");
    let sh = text.replace("image: python", "image: busybox").replace(
        "          - python3\n          - -c\n          - |\n            import os, sys\n            if os.environ.get(\"JOB_COMPLETION_INDEX\") == \"2\":\n              sys.exit(0)\n            else:\n              sys.exit(1)",
        "          - sh\n          - -c\n          - |\n            if [ \"$JOB_COMPLETION_INDEX\" = 2 ]; then exit 0; fi\n            sleep 30; exit 1",
    );
    assert_ne!(sh, text);
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &sh);
    c.run_to_quiet(600_000);
    let j = job(&c, "job-success");
    assert_eq!(conditions(&j), vec!["SuccessCriteriaMet/SuccessPolicy/Matched rules at index 0", "Complete/SuccessPolicy/Matched rules at index 0"]);
    assert_eq!(j["status"]["completedIndexes"], "2");
    assert_eq!(j["status"]["succeeded"], 1);
    // The other nine were deleted when the policy was met; still running then, they are
    // counted neither as succeeded nor as failed.
    assert!(j["status"].get("failed").is_none(), "{}", j["status"]);
    assert_eq!(pods_of(&c, "job-success").len(), 1, "the deleted pods are gone once their finalizers were removed");
    assert_eq!(events(&c, "Job", "job-success").iter().filter(|e| e.starts_with("SuccessfulDelete Deleted pod: job-success-")).count(), 9);
}

#[test]
fn a_sidecar_does_not_keep_the_job_running() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &corpus("application/job/job-sidecar.yaml"));
    c.run_to_quiet(600_000);
    let j = job(&c, "myjob");
    assert_eq!(conditions(&j).last().map(String::as_str), Some("Complete/CompletionsReached/Reached expected number of succeeded pods"));
    let pods = pods_of(&c, "myjob");
    assert_eq!(pods.len(), 1);
    assert_eq!(get_str(&pods[0], &["status", "phase"]), Some("Succeeded"));
}

#[test]
fn an_indexed_job_gives_each_pod_its_index() {
    let mut c = Cluster::new(Config::default());
    apply(
        &mut c,
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: idx\nspec:\n  completions: 5\n  parallelism: 2\n  completionMode: Indexed\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: c\n        image: busybox\n        command: [\"sh\", \"-c\", \"echo index $JOB_COMPLETION_INDEX on $(hostname)\"]\n",
    );
    c.run_to_quiet(600_000);
    let j = job(&c, "idx");
    assert_eq!(j["status"]["completedIndexes"], "0-4");
    assert_eq!(j["status"]["succeeded"], 5);
    let pods = pods_of(&c, "idx");
    assert_eq!(pods.len(), 5);
    let p3 = pods.iter().find(|p| api::name(p).starts_with("idx-3-")).unwrap();
    assert_eq!(kubectl(&mut c, &format!("logs {}", api::name(p3))), vec!["index 3 on idx-3"]);
    let env = &p3["spec"]["containers"][0]["env"][0];
    assert_eq!(env["name"], "JOB_COMPLETION_INDEX");
    assert_eq!(env["valueFrom"]["fieldRef"]["fieldPath"], "metadata.labels['batch.kubernetes.io/job-completion-index']");
    // At most two ran at once.
    let creates: Vec<u64> = c.api.trace.records().iter().filter(|r| r.component == "job-controller" && r.stage == "create-pod").map(|r| r.t).collect();
    assert_eq!(creates.len(), 5);
    assert_eq!(creates.iter().filter(|&&t| t == creates[0]).count(), 2);
}

#[test]
fn the_active_deadline_fails_a_running_job() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &failing_job("slow", "  activeDeadlineSeconds: 20\n", "sleep 300"));
    c.run_to_quiet(600_000);
    let j = job(&c, "slow");
    assert_eq!(
        conditions(&j),
        vec![
            "FailureTarget/DeadlineExceeded/Job was active longer than specified deadline",
            "Failed/DeadlineExceeded/Job was active longer than specified deadline"
        ]
    );
    let start = parse_rfc3339(get_str(&j, &["status", "startTime"]).unwrap()).unwrap();
    let target = parse_rfc3339(get_str(&j["status"]["conditions"][0], &["lastTransitionTime"]).unwrap()).unwrap();
    assert!((20_000..22_000).contains(&(target - start)), "{start} {target}");
    let ev = events(&c, "Job", "slow");
    assert!(ev.iter().any(|e| e.starts_with("SuccessfulDelete Deleted pod: slow-")), "{ev:?}");
    assert_eq!(ev.last().map(String::as_str), Some("DeadlineExceeded Job was active longer than specified deadline"));
    assert_eq!(j["status"]["failed"], 1);
}

#[test]
fn a_suspended_job_waits_and_resumes() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &failing_job("later", "  suspend: true\n", "echo done"));
    c.run_to_quiet(60_000);
    let j = job(&c, "later");
    assert_eq!(conditions(&j), vec!["Suspended/JobSuspended/Job suspended"]);
    assert!(j["status"].get("startTime").is_none());
    assert!(pods_of(&c, "later").is_empty());
    c.request(Request::patch(rid::JOB, "default", "later", PatchType::Merge, json!({"spec": {"suspend": false}}), admin())).unwrap();
    c.run_to_quiet(600_000);
    let j = job(&c, "later");
    assert_eq!(conditions(&j)[0], "Suspended/JobResumed/Job resumed");
    assert_eq!(get_str(&j["status"]["conditions"][0], &["status"]), Some("False"));
    assert_eq!(conditions(&j).last().map(String::as_str), Some("Complete/CompletionsReached/Reached expected number of succeeded pods"));
    let ev = events(&c, "Job", "later");
    assert_eq!(ev[0], "Suspended Job suspended");
    assert_eq!(ev[1], "Resumed Job resumed");
}

#[test]
fn ttl_after_finished_deletes_the_job_and_its_pods() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &failing_job("short", "  ttlSecondsAfterFinished: 30\n", "echo bye"));
    c.run_to_quiet(600_000);
    assert!(c.api.store.get_by(rid::JOB, "default", "short").is_none(), "deleted after its TTL");
    assert!(pods_of(&c, "short").is_empty(), "its pods went first (foreground)");
    let done = c.api.trace.records().iter().find(|r| r.component == "job-controller" && r.stage == "job-finished").map(|r| r.t).expect("the job finished");
    let deleted = c
        .api
        .trace
        .records()
        .iter()
        .find(|r| r.component == "ttl-after-finished-controller" && r.stage == "delete-job")
        .expect("the TTL controller deleted it");
    assert!(deleted.t >= done + 29_000 && deleted.t <= done + 31_000, "{done} {}", deleted.t);
    assert!(deleted.message.contains("ttlSecondsAfterFinished=30"), "{}", deleted.message);
}

// ---------------------------------------------------------------------------------------
// CronJobs

const MINUTE: u64 = 60_000;

fn cronjob(name: &str, spec_extra: &str, script: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: {name}\nspec:\n  schedule: \"*/1 * * * *\"\n{spec_extra}  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: OnFailure\n          containers:\n          - name: main\n            image: busybox\n            command: [\"sh\", \"-c\", {script:?}]\n"
    )
}

fn jobs_of(c: &Cluster, cj: &str) -> Vec<Value> {
    c.api.store.list(rid::JOB, None).filter(|j| api::controller_ref(j).and_then(|r| get_str(r, &["name"])) == Some(cj)).map(|j| (**j).clone()).collect()
}

fn cronjob_obj(c: &Cluster, name: &str) -> Value {
    (**c.api.store.get_by(rid::CRONJOB, "default", name).unwrap()).clone()
}

#[test]
fn the_website_cronjob_runs_every_minute_and_keeps_three_successes() {
    let mut c = Cluster::new(Config::default());
    let text = corpus("application/job/cronjob.yaml");
    let out = apply(&mut c, &text);
    assert!(out[0].contains("no matches for kind \"CronJob\" in version \"batch/v1beta1\""), "{out:?}");
    let v1 = text.replace("batch/v1beta1", "batch/v1");
    assert_eq!(apply(&mut c, &v1), vec!["cronjob.batch/hello created"]);
    let cj = cronjob_obj(&c, "hello");
    assert_eq!(cj["spec"]["concurrencyPolicy"], "Allow");
    assert_eq!((cj["spec"]["successfulJobsHistoryLimit"].clone(), cj["spec"]["failedJobsHistoryLimit"].clone()), (json!(3), json!(1)));
    assert_eq!(cj["spec"]["suspend"], false);
    // Nothing is due yet: the run is quiet at once, the next minute is periodic work.
    c.run_to_quiet(600_000);
    assert!(jobs_of(&c, "hello").is_empty());
    c.run_until(6 * MINUTE + 30_000);
    let jobs = jobs_of(&c, "hello");
    let names: Vec<&str> = jobs.iter().map(api::name).collect();
    let base = 1_767_225_600 / 60; // minutes since the Unix epoch at 2026-01-01T00:00Z
    let want: Vec<String> = (4..=6).map(|m| format!("hello-{}", base + m)).collect();
    assert_eq!(names, want.iter().map(String::as_str).collect::<Vec<_>>(), "three successful Jobs kept");
    assert_eq!(api::annotation(&jobs[2], "batch.kubernetes.io/cronjob-scheduled-timestamp"), Some("2026-01-01T00:06:00Z"));
    assert!(jobs.iter().all(|j| kubeloop_core::loops::controllers::job::finished_type(j) == Some("Complete")));
    let cj = cronjob_obj(&c, "hello");
    assert_eq!(cj["status"]["lastScheduleTime"], "2026-01-01T00:06:00Z");
    assert!(get_str(&cj, &["status", "lastSuccessfulTime"]).is_some_and(|t| t.starts_with("2026-01-01T00:06:")), "{}", cj["status"]);
    assert!(cj["status"].get("active").is_none());
    let ev = events(&c, "CronJob", "hello");
    assert!(ev.contains(&format!("SuccessfulCreate Created job hello-{}", base + 1)), "{ev:?}");
    assert!(ev.contains(&format!("SawCompletedJob Saw completed job: hello-{}, status: Complete", base + 1)), "{ev:?}");
    assert!(ev.contains(&format!("SuccessfulDelete Deleted job hello-{}", base + 1)), "{ev:?}");
    let logs = kubectl(&mut c, &format!("logs job/hello-{}", base + 6));
    assert_eq!(logs.last().map(String::as_str), Some("Hello from the Kubernetes cluster"), "{logs:?}");
    let trace: Vec<&str> =
        c.api.trace.records().iter().filter(|r| r.component == "cronjob-controller" && r.stage == "create-job").map(|r| r.message.as_str()).collect();
    assert_eq!(trace[0], format!("CronJob/default/hello schedule \"*/1 * * * *\" was due at 2026-01-01T00:01:00Z: created Job hello-{}", base + 1));
}

fn active_count(c: &Cluster, cj: &str) -> usize {
    jobs_of(c, cj).iter().filter(|j| kubeloop_core::loops::controllers::job::finished_type(j).is_none()).count()
}

#[test]
fn concurrency_policies_allow_forbid_and_replace() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &cronjob("allow", "", "sleep 150"));
    apply(&mut c, &cronjob("forbid", "  concurrencyPolicy: Forbid\n", "sleep 150"));
    apply(&mut c, &cronjob("replace", "  concurrencyPolicy: Replace\n", "sleep 150"));
    c.run_until(4 * MINUTE + 30_000);
    // Allow: the 00:01, 00:02, 00:03 and 00:04 runs; the first finished at about 00:03:3x.
    assert_eq!(jobs_of(&c, "allow").len(), 4);
    assert_eq!(active_count(&c, "allow"), 3);
    assert_eq!(get_array(&cronjob_obj(&c, "allow"), &["status", "active"]).len(), 3);
    // Forbid: 00:02 and 00:03 were skipped while 00:01 ran; when it finished, the most
    // recent missed time (00:03) started at once, late; 00:04 was skipped for it.
    let jobs = jobs_of(&c, "forbid");
    assert_eq!(jobs.len(), 2);
    assert_eq!(api::annotation(&jobs[1], "batch.kubernetes.io/cronjob-scheduled-timestamp"), Some("2026-01-01T00:03:00Z"));
    let late = parse_rfc3339(get_str(&jobs[1], &["metadata", "creationTimestamp"]).unwrap()).unwrap();
    let first_done = parse_rfc3339(get_str(&jobs[0], &["status", "completionTime"]).unwrap()).unwrap();
    assert!(late >= first_done && late < first_done + 2_000, "{late} {first_done}");
    assert_eq!(event_count(&c, "forbid", "JobAlreadyActive"), 3);
    // Replace: each run deleted the one before it.
    let ev = events(&c, "CronJob", "replace");
    assert_eq!(ev.iter().filter(|e| e.starts_with("SuccessfulDelete Deleted job replace-")).count(), 3, "{ev:?}");
    assert!(active_count(&c, "replace") <= 1);
    assert_eq!(get_array(&cronjob_obj(&c, "replace"), &["status", "active"]).len(), 1);
}

#[test]
fn failed_history_and_suspension() {
    let mut c = Cluster::new(Config::default());
    apply(
        &mut c,
        &cronjob("broken", "  suspend: true\n", "exit 1")
            .replace("restartPolicy: OnFailure", "restartPolicy: Never")
            .replace("    spec:\n      template:", "    spec:\n      backoffLimit: 0\n      template:"),
    );
    c.run_until(5 * MINUTE);
    assert!(jobs_of(&c, "broken").is_empty(), "suspended");
    c.request(Request::patch(rid::CRONJOB, "default", "broken", PatchType::Merge, json!({"spec": {"suspend": false}}), admin())).unwrap();
    c.run_until(5 * MINUTE + 30_000);
    // Only the most recent missed time runs, not one per missed minute.
    let jobs = jobs_of(&c, "broken");
    assert_eq!(jobs.len(), 1);
    assert_eq!(api::annotation(&jobs[0], "batch.kubernetes.io/cronjob-scheduled-timestamp"), Some("2026-01-01T00:05:00Z"));
    c.run_until(8 * MINUTE + 30_000);
    let jobs = jobs_of(&c, "broken");
    assert_eq!(jobs.len(), 1, "failedJobsHistoryLimit 1");
    assert_eq!(kubeloop_core::loops::controllers::job::finished_type(&jobs[0]), Some("Failed"));
    assert!(get_str(&cronjob_obj(&c, "broken"), &["status", "lastSuccessfulTime"]).is_none());
}

#[test]
fn a_starting_deadline_skips_runs_too_late_to_start() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &cronjob("late", "  startingDeadlineSeconds: 10\n", "true"));
    c.run_until(2 * MINUTE + 30_000);
    assert_eq!(jobs_of(&c, "late").len(), 2);
    // The controller is down past the 00:03 run's deadline.
    c.act(admin(), Action::Fault(kubeloop_core::cluster::Fault::ControllerDown("cronjob-controller".into())));
    c.run_until(3 * MINUTE + 30_000);
    c.act(admin(), Action::Fault(kubeloop_core::cluster::Fault::ControllerUp("cronjob-controller".into())));
    c.run_until(3 * MINUTE + 40_000);
    assert_eq!(jobs_of(&c, "late").len(), 2, "00:03 was missed by more than 10 s");
    c.run_until(4 * MINUTE + 30_000);
    assert_eq!(jobs_of(&c, "late").len(), 3);
}

#[test]
fn time_zones_kubeloop_cannot_compute_are_reported_not_replaced_by_utc() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &cronjob("ny", "  timeZone: America/New_York\n", "true"));
    apply(&mut c, &cronjob("east", "  timeZone: Etc/GMT-1\n", "true").replace("*/1 * * * *", "2 1 * * *"));
    c.run_until(3 * MINUTE);
    assert!(jobs_of(&c, "ny").is_empty());
    let ev = events(&c, "CronJob", "ny");
    assert!(
        ev[0].starts_with("UnknownTimeZone invalid timeZone: \"America/New_York\": unknown time zone America/New_York (kubeloop carries no time zone database"),
        "{ev:?}"
    );
    // 01:02 one hour east of Greenwich is 00:02 UTC.
    let jobs = jobs_of(&c, "east");
    assert_eq!(jobs.len(), 1);
    assert_eq!(api::annotation(&jobs[0], "batch.kubernetes.io/cronjob-scheduled-timestamp"), Some("2026-01-01T01:02:00+01:00"));
    let out = apply(&mut c, &cronjob("bad", "  timeZone: Local\n", "true"));
    assert!(out[0].contains("spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone"), "{out:?}");
}

#[test]
fn job_validation_rejects_what_the_api_rejects() {
    let mut c = Cluster::new(Config::default());
    let out = apply(&mut c, &failing_job("bad", "", "true").replace("restartPolicy: Never", "restartPolicy: Always"));
    assert!(out[0].contains("spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\""), "{out:?}");
    let out = apply(&mut c, &failing_job("bad", "  completionMode: Indexed\n  parallelism: 2\n", "true"));
    assert!(out[0].contains("spec.completions: Required value: when completion mode is Indexed"), "{out:?}");
    // With neither set, completions and parallelism default to 1, which Indexed accepts.
    assert_eq!(apply(&mut c, &failing_job("one", "  completionMode: Indexed\n", "true")), vec!["job.batch/one created"]);
    let out = apply(&mut c, &cronjob("nosched", "", "true").replace("  schedule: \"*/1 * * * *\"\n", ""));
    assert!(out[0].contains("spec.schedule: Required value"), "{out:?}");
    let out = apply(&mut c, &cronjob("tz", "  timeZone: UTC\n", "true").replace("*/1 * * * *", "TZ=UTC */1 * * * *"));
    assert!(out[0].contains("cannot use TZ or CRON_TZ in schedule, use timeZone field instead"), "{out:?}");
}

#[test]
fn a_jobs_template_is_immutable_unless_it_is_suspended_and_never_started() {
    let mut c = Cluster::new(Config::default());
    assert_eq!(apply(&mut c, &failing_job("once", "", "echo one")), vec!["job.batch/once created"]);
    let out = apply(&mut c, &failing_job("once", "", "echo two"));
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(out[0].contains("Job.batch \"once\" is invalid: spec.template: Invalid value: core.PodTemplateSpec{...}: field is immutable"), "{out:?}");
    let out = apply(&mut c, &failing_job("once", "  completions: 3\n", "echo one"));
    assert!(out[0].contains("spec.completions: Invalid value: 3: field is immutable"), "{out:?}");
    let out = apply(&mut c, &failing_job("once", "  completionMode: Indexed\n", "echo one"));
    assert!(out[0].contains("spec.completionMode: Invalid value: \"Indexed\": field is immutable"), "{out:?}");
    // Parallelism, like suspend, may change.
    assert_eq!(apply(&mut c, &failing_job("once", "  parallelism: 2\n", "echo one")), vec!["job.batch/once configured"]);
    // A suspended Job that never ran may take new scheduling directives and labels, not a
    // new command.
    let held = |extra: &str, script: &str| failing_job("held", &format!("  suspend: true\n{extra}"), script);
    assert_eq!(apply(&mut c, &held("", "echo one")), vec!["job.batch/held created"]);
    c.run_until(c.now + 5_000);
    let moved = held("", "echo one").replace("      restartPolicy: Never\n", "      restartPolicy: Never\n      nodeSelector:\n        disk: ssd\n");
    assert_eq!(apply(&mut c, &moved), vec!["job.batch/held configured"]);
    assert_eq!(job(&c, "held")["spec"]["template"]["spec"]["nodeSelector"]["disk"], "ssd");
    let out =
        apply(&mut c, &held("", "echo two").replace("      restartPolicy: Never\n", "      restartPolicy: Never\n      nodeSelector:\n        disk: ssd\n"));
    assert!(out[0].contains("spec.template: Invalid value: core.PodTemplateSpec{...}: field is immutable"), "{out:?}");
}

#[test]
fn an_int64_deadline_neither_overflows_nor_fails_the_job() {
    let mut c = Cluster::new(Config::default());
    let text = failing_job("long", "  activeDeadlineSeconds: 9223372036854775807\n", "sleep 5");
    assert_eq!(apply(&mut c, &text), vec!["job.batch/long created"]);
    let text = cronjob("late", "  startingDeadlineSeconds: 9223372036854775807\n", "true");
    assert_eq!(apply(&mut c, &text), vec!["cronjob.batch/late created"]);
    c.run_until(2 * MINUTE);
    assert_eq!(
        conditions(&job(&c, "long")),
        vec![
            "SuccessCriteriaMet/CompletionsReached/Reached expected number of succeeded pods",
            "Complete/CompletionsReached/Reached expected number of succeeded pods"
        ]
    );
    assert!(!jobs_of(&c, "late").is_empty(), "the huge starting deadline lets the run start");
}

#[test]
fn during_the_failure_back_off_the_job_reports_no_active_pods_as_upstream_does() {
    let mut c = Cluster::new(Config::default());
    let text = failing_job(
        "pair",
        "  completions: 2\n  parallelism: 2\n  completionMode: Indexed\n",
        "if [ $JOB_COMPLETION_INDEX -eq 0 ]; then exit 1; fi; sleep 120",
    );
    assert_eq!(apply(&mut c, &text), vec!["job.batch/pair created"]);
    // Let index 0 fail once and the back-off start (10 s); index 1 still runs.
    let mut seen_failed = false;
    for _ in 0..200 {
        c.run_until(c.now + 100);
        if job(&c, "pair")["status"]["failed"] == 1 {
            seen_failed = true;
            break;
        }
    }
    assert!(seen_failed);
    c.run_until(c.now + 2_000);
    let running = pods_of(&c, "pair").iter().filter(|p| get_str(p, &["status", "phase"]) == Some("Running")).count();
    assert_eq!(running, 1, "index 1 still runs");
    let j = job(&c, "pair");
    assert!(j["status"].get("active").is_none(), "active is 0 (omitted) during the back-off: {}", j["status"]);
    // After the back-off the replacement for index 0 is made.
    c.run_until(c.now + 15_000);
    assert_eq!(pods_of(&c, "pair").len(), 3);
}
