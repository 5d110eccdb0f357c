//! Exec sessions with stdin: an interactive shell runs each command line as it comes and
//! keeps its state; other commands read stdin as a stream (`cat` copies it as it comes,
//! `read` waits for a whole line, `wc` for the end).

use kubeloop_core::apiserver::{Credentials, ExecInput, ExecProgress};
use kubeloop_core::cluster::{Action, Cluster, Config};

fn busybox() -> Cluster {
    let mut c = Cluster::new(Config::default());
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: box\nspec:\n  containers:\n  - name: box\n    image: busybox\n    command: [sh, -c, 'while true; do date; sleep 5; done']\n";
    c.act(Credentials::Token("admin-token".into()), Action::Apply { text: pod.into(), file: "pod.yaml".into() });
    c.run_to_quiet(60_000);
    c
}

fn start(c: &mut Cluster, argv: &[&str]) -> (u64, ExecProgress) {
    let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
    let container = c.exec_check(Credentials::Token("admin-token".into()), "default", "box", None, &argv).expect("allowed");
    let id = c.next_session_id();
    let p = c.exec_session("default", "box", id, ExecInput::Start { container: &container, argv: &argv }).expect("started");
    (id, p)
}

fn stdin(c: &mut Cluster, id: u64, text: &str) -> ExecProgress {
    c.exec_session("default", "box", id, ExecInput::Stdin(text)).expect("fed")
}

fn out(lines: &[(u8, &str)]) -> Vec<(u8, String)> {
    lines.iter().map(|(s, l)| (*s, l.to_string())).collect()
}

#[test]
fn an_interactive_shell_runs_each_line_as_it_comes_and_keeps_its_state() {
    let mut c = busybox();
    let (id, first) = start(&mut c, &["/bin/sh"]);
    assert_eq!(first, ExecProgress::default());
    assert_eq!(stdin(&mut c, id, "echo test string 1\n").lines, out(&[(1, "test string 1")]));
    assert_eq!(stdin(&mut c, id, "echo test string 2 >&2\n").lines, out(&[(2, "test string 2")]));
    // A line in two pieces runs once it is whole; a variable and a directory carry over.
    assert_eq!(stdin(&mut c, id, "x=fi").lines, vec![]);
    assert_eq!(stdin(&mut c, id, "ve; cd /tmp\n").lines, vec![]);
    assert_eq!(stdin(&mut c, id, "echo $x; pwd\n").lines, out(&[(1, "five"), (1, "/tmp")]));
    // A compound command spans lines.
    assert_eq!(stdin(&mut c, id, "if true; then\n").lines, vec![]);
    assert_eq!(stdin(&mut c, id, "echo inside\nfi\n").lines, out(&[(1, "inside")]));
    // A syntax error is said and the shell goes on.
    let bad = stdin(&mut c, id, "fi\n");
    assert!(bad.lines[0].0 == 2 && bad.lines[0].1.contains("syntax error"), "{bad:?}");
    assert_eq!(bad.exit, None);
    let end = stdin(&mut c, id, "exit 3\n");
    assert_eq!(end.exit, Some(3));
    assert!(c.exec_session("default", "box", id, ExecInput::Stdin("echo gone\n")).is_err());
}

#[test]
fn the_end_of_stdin_ends_a_shell_with_its_last_status() {
    let mut c = busybox();
    let (id, _) = start(&mut c, &["sh"]);
    assert_eq!(stdin(&mut c, id, "false\n").exit, None);
    assert_eq!(c.exec_session("default", "box", id, ExecInput::Eof).unwrap().exit, Some(1));
}

#[test]
fn commands_read_stdin_as_a_stream() {
    let mut c = busybox();
    // cat copies what comes as it comes, and ends with stdin.
    let (id, first) = start(&mut c, &["/bin/sh", "-c", "cat"]);
    assert_eq!(first, ExecProgress::default());
    assert_eq!(stdin(&mut c, id, "test-close\n").lines, out(&[(1, "test-close")]));
    assert_eq!(stdin(&mut c, id, "again\n").lines, out(&[(1, "again")]));
    assert_eq!(c.exec_session("default", "box", id, ExecInput::Eof).unwrap().exit, Some(0));
    // read waits for a whole line.
    let (id, _) = start(&mut c, &["sh", "-c", "read a; echo got $a"]);
    assert_eq!(stdin(&mut c, id, "hel").lines, vec![]);
    let p = stdin(&mut c, id, "lo\n");
    assert_eq!((p.lines, p.exit), (out(&[(1, "got hello")]), Some(0)));
    // wc needs all of it.
    let (id, _) = start(&mut c, &["wc", "-l"]);
    assert_eq!(stdin(&mut c, id, "a\nb\n").lines, vec![]);
    let p = c.exec_session("default", "box", id, ExecInput::Eof).unwrap();
    assert_eq!(p.exit, Some(0));
    assert_eq!(p.lines.len(), 1);
    assert_eq!(p.lines[0].1.trim(), "2");
    // A client that goes away ends the session.
    let (id, _) = start(&mut c, &["cat"]);
    assert_eq!(c.exec_session("default", "box", id, ExecInput::End).unwrap().exit, Some(137));
    assert!(c.exec_session("default", "box", id, ExecInput::Eof).is_err());
}

#[test]
fn a_shells_command_that_reads_stdin_is_told_it_gets_none() {
    let mut c = busybox();
    let (id, _) = start(&mut c, &["sh"]);
    let p = stdin(&mut c, id, "cat\n");
    assert_eq!(p.exit, None);
    assert!(p.lines.iter().any(|(s, l)| *s == 2 && l == kubeloop_core::loops::kubelet::session::NO_STDIN), "{p:?}");
    // A command that reads nothing says nothing more.
    assert_eq!(stdin(&mut c, id, "echo ok\n").lines, out(&[(1, "ok")]));
}

#[test]
fn an_unfinished_command_line_is_held_up_to_its_limit() {
    let mut c = busybox();
    let (id, _) = start(&mut c, &["sh"]);
    // An unterminated quote, then line after line: held, each line parsed once.
    assert_eq!(stdin(&mut c, id, "echo 'open\n").lines, vec![]);
    let line = "x".repeat(1023) + "\n";
    // 11 + 64 × 1024 bytes passes the 64 KiB limit at the 64th line, not before.
    for _ in 0..63 {
        assert_eq!(stdin(&mut c, id, &line).lines, vec![]);
    }
    let said = stdin(&mut c, id, &line).lines;
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].1.contains("passed 65536 bytes and was dropped"), "{said:?}");
    // The shell goes on with what comes next.
    assert_eq!(stdin(&mut c, id, "echo after\n").lines, out(&[(1, "after")]));
}

#[test]
fn kubectl_exec_with_a_here_document_feeds_it_as_stdin_and_ends_it() {
    let mut c = busybox();
    let mut kubectl = |line: &str| c.act(Credentials::Token("admin-token".into()), Action::Kubectl(line.into())).output;
    assert_eq!(kubectl("exec -i box -- sh <<EOF\necho hello\nx=3; echo $x\nexit 4\nEOF"), ["hello", "3", "command terminated with exit code 4"]);
    assert_eq!(kubectl("exec -i box -- wc -l <<EOF\na\nb\nEOF"), ["2"]);
    // A here-document is not a terminal.
    assert_eq!(kubectl("exec -it box -- sh <<EOF\necho hi\nEOF"), ["Unable to use a TTY - input is not a terminal or the right kind of file", "hi"]);
    // Outside the page, nothing can be typed after it: stdin ends at once.
    assert_eq!(kubectl("exec -it box -- sh"), Vec::<String>::new());
    assert!(c.attached.is_none());
}

#[test]
fn the_pages_terminal_attaches_to_a_shell_until_it_exits() {
    use kubeloop_core::sandbox::Sandbox;
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: box\nspec:\n  containers:\n  - name: box\n    image: busybox\n    command: [sh, -c, 'sleep 3600']\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: web\n    image: nginx:1.27\n";
    let mut sb = Sandbox::new(pod, None);
    sb.advance(60_000);
    assert_eq!(sb.kubectl("exec -it box -- sh"), Vec::<String>::new());
    // busybox's ash prompts with its directory, as root.
    assert_eq!(sb.cluster.prompt().as_deref(), Some("/ # "));
    assert_eq!(sb.stdin(Some("cd /tmp; echo $HOSTNAME")), ["box"]);
    assert_eq!(sb.cluster.prompt().as_deref(), Some("/tmp # "));
    assert_eq!(sb.stdin(Some("exit 3")), ["command terminated with exit code 3"]);
    assert_eq!(sb.cluster.prompt(), None);
    // Without -t there is no prompt; Ctrl+D ends what reads stdin.
    assert_eq!(sb.kubectl("exec -i box -- cat"), Vec::<String>::new());
    assert_eq!(sb.cluster.prompt().as_deref(), Some(""));
    assert_eq!(sb.stdin(Some("copied")), ["copied"]);
    assert_eq!(sb.stdin(None), Vec::<String>::new());
    assert!(sb.cluster.attached.is_none());
    // nginx's image has bash: its prompt names the host.
    sb.kubectl("exec -it web -- bash");
    assert_eq!(sb.cluster.prompt().as_deref(), Some("root@web:/# "));
    assert_eq!(sb.stdin(Some("cd; pwd")), ["/root"]);
    assert_eq!(sb.cluster.prompt().as_deref(), Some("root@web:~# "));
    // A share link replays what was typed: the same session, still attached.
    let replayed = Sandbox::open(&sb.share()).expect("the link opens");
    assert_eq!(replayed.cluster.prompt().as_deref(), Some("root@web:~# "));
    // `kubeloop kubectl` (nothing typed after it) ends an attached command's input.
    let mut once = Sandbox::new(pod, None);
    once.advance(60_000);
    assert_eq!(once.kubectl_to_end("exec -it box -- sh"), Vec::<String>::new());
    assert!(once.cluster.attached.is_none());
}

#[test]
fn kubectl_run_it_attaches_to_the_pods_shell_and_rm_deletes_it_after() {
    use kubeloop_core::foundation::api::rid;
    use kubeloop_core::sandbox::Sandbox;
    let mut sb = Sandbox::new("", None);
    // kubectl prints nothing until the pod runs and is ready; then it attaches.
    assert_eq!(sb.kubectl("run box -it --rm --restart=Never --image=busybox:1.36 -- sh"), Vec::<String>::new());
    let pod = sb.cluster.api.store.get_by(rid::POD, "default", "box").expect("the pod is created").clone();
    assert_eq!(pod["spec"]["containers"][0]["stdin"], true);
    assert_eq!(pod["spec"]["containers"][0]["stdinOnce"], true);
    assert_eq!(pod["spec"]["containers"][0]["tty"], true);
    sb.advance_within(60_000, || true);
    let printed: Vec<String> = std::mem::take(&mut sb.cluster.printed);
    assert_eq!(
        printed,
        [
            "All commands and output from this session will be recorded in container logs, including credentials and sensitive information passed through the command prompt.",
            "If you don't see a command prompt, try pressing enter."
        ]
    );
    // The container's own shell: its prompt, its state from line to line.
    assert_eq!(sb.cluster.prompt().as_deref(), Some("/ # "));
    assert_eq!(sb.stdin(Some("cd /tmp; echo hello > note; cat note")), ["hello"]);
    assert_eq!(sb.cluster.prompt().as_deref(), Some("/tmp # "));
    // What the shell wrote is the container's output, in its log too.
    assert_eq!(sb.kubectl("logs box"), ["hello"]);
    // Its exit ends the container; the pod (restartPolicy Never) fails; --rm deletes it.
    assert_eq!(sb.stdin(Some("exit 3")), Vec::<String>::new());
    assert_eq!(sb.cluster.prompt(), None);
    sb.advance(30_000);
    let printed: Vec<String> = std::mem::take(&mut sb.cluster.printed);
    assert_eq!(
        printed,
        [
            "Session ended, resume using 'kubectl attach box -c box -n default -i -t' command",
            "pod \"box\" deleted from default namespace",
            "pod default/box terminated (Error)"
        ]
    );
    sb.advance(60_000);
    assert!(sb.cluster.api.store.get_by(rid::POD, "default", "box").is_none(), "the pod is gone");
    assert!(sb.kubectl("attach -i box")[0].contains("NotFound"), "and nothing of it is left to attach to");
}

#[test]
fn kubectl_attach_reaches_the_shell_a_container_runs_on_its_stdin() {
    use kubeloop_core::sandbox::Sandbox;
    let pods = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: box\nspec:\n  containers:\n  - name: shell\n    image: busybox:1.36\n    command: [sh]\n    stdin: true\n    tty: true\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: web\n    image: nginx:1.27\n";
    let mut sb = Sandbox::new(pods, None);
    sb.advance(60_000);
    // Its shell waits on its stdin: the container stays Running.
    assert!(sb.kubectl("get pod box")[1].contains("Running"), "{:?}", sb.kubectl("get pod box"));
    assert_eq!(
        sb.kubectl("attach -it box"),
        [
            "All commands and output from this session will be recorded in container logs, including credentials and sensitive information passed through the command prompt.",
            "If you don't see a command prompt, try pressing enter."
        ]
    );
    assert_eq!(sb.cluster.prompt().as_deref(), Some("/ # "));
    assert_eq!(sb.stdin(Some("echo $HOSTNAME")), ["box"]);
    // Ctrl+D ends the shell, and so the container (restarted: restartPolicy Always).
    assert_eq!(sb.stdin(None), ["Session ended, resume using 'kubectl attach box -c shell -n default -i -t' command"]);
    sb.advance(30_000);
    let pod = sb.cluster.api.store.get_by(kubeloop_core::foundation::api::rid::POD, "default", "box").unwrap().clone();
    assert_eq!(pod["status"]["containerStatuses"][0]["restartCount"], 1, "{}", pod["status"]);
    // A container whose process reads no shell commands from stdin: the kubelet says so.
    let out = sb.kubectl("attach -i web");
    assert!(out.last().unwrap().starts_with("error: kubeloop attaches only to a container whose command is a shell reading stdin"), "{out:?}");
    assert!(sb.cluster.attached.is_none());
    assert_eq!(sb.kubectl("attach"), ["error: at least 1 argument is required for attach"]);
    // Outside the page, a here-document is the input.
    assert_eq!(sb.kubectl("attach -i box -q <<EOF\necho from a here-document\nEOF"), ["from a here-document"]);
}

#[test]
fn kubectl_debug_adds_an_ephemeral_container_and_attaches_to_it() {
    use kubeloop_core::foundation::api::rid;
    use kubeloop_core::sandbox::Sandbox;
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: web\n    image: nginx:1.27\n";
    let mut sb = Sandbox::new(pod, None);
    sb.advance(60_000);
    let out = sb.kubectl("debug -it web --image=busybox:1.36 --target=web");
    assert_eq!(
        out[0],
        "--profile=legacy is deprecated and planned to be removed in v1.39. It is recommended to specify other profile, for example \"--profile=general\"."
    );
    assert_eq!(
        out[1],
        "Targeting container \"web\". If you don't see processes from this container it may be because the container runtime doesn't support this feature."
    );
    let name = out[2].strip_prefix("Defaulting debug container name to ").and_then(|n| n.strip_suffix('.')).expect("a debugger name").to_string();
    assert!(name.starts_with("debugger-") && name.len() == 14, "{name}");
    let p = sb.cluster.api.store.get_by(rid::POD, "default", "web").unwrap().clone();
    let ec = &p["spec"]["ephemeralContainers"][0];
    assert_eq!(ec["name"], name.as_str());
    assert_eq!(ec["targetContainerName"], "web");
    assert_eq!(ec["stdin"], true);
    assert_eq!(ec["imagePullPolicy"], "IfNotPresent", "defaulted as a container's");
    sb.advance_within(60_000, || true);
    let printed = std::mem::take(&mut sb.cluster.printed);
    assert_eq!(printed.last().map(String::as_str), Some("If you don't see a command prompt, try pressing enter."), "{printed:?}");
    assert_eq!(sb.cluster.prompt().as_deref(), Some("/ # "));
    assert_eq!(sb.stdin(Some("echo $HOSTNAME")), ["web"]);
    assert_eq!(sb.stdin(Some("exit")), Vec::<String>::new());
    sb.advance(10_000);
    let printed = std::mem::take(&mut sb.cluster.printed);
    assert_eq!(
        printed,
        [format!("Session ended, the ephemeral container will not be restarted but may be reattached using 'kubectl attach web -c {name} -n default -i -t' if it is still running")]
    );
    // It ended and stays ended; the pod runs on, Ready.
    sb.advance(60_000);
    let p = sb.cluster.api.store.get_by(rid::POD, "default", "web").unwrap().clone();
    let st = &p["status"]["ephemeralContainerStatuses"][0];
    assert_eq!(st["name"], name.as_str());
    assert_eq!(st["state"]["terminated"]["exitCode"], 0, "{st}");
    assert_eq!(st["restartCount"], 0);
    assert!(kubeloop_core::foundation::pod::pod_is_ready(&p));
    assert_eq!(p["status"]["phase"], "Running");
    // An ephemeral container may not be removed, nor be set on create.
    let remove = kubeloop_core::apiserver::Request::patch(
        rid::POD,
        "default",
        "web",
        kubeloop_core::apiserver::PatchType::Json,
        kubeloop_core::json!([{"op": "remove", "path": "/spec/ephemeralContainers/0"}]),
        kubeloop_core::apiserver::Credentials::Token("admin-token".into()),
    )
    .with_sub("ephemeralcontainers");
    let refused = sb.cluster.request(remove).expect_err("refused");
    assert!(refused.message.contains("existing ephemeral containers") && refused.message.contains("may not be removed"), "{}", refused.message);
    assert_eq!(
        sb.kubectl("patch pod web --subresource=ephemeralcontainers -p '{}'"),
        ["error: invalid subresource value: \"ephemeralcontainers\". Must be one of [status scale resize]"]
    );
    let made = sb.kubectl("apply -f - <<EOF\napiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n  - {name: a, image: nginx}\n  ephemeralContainers:\n  - {name: b, image: busybox}\nEOF");
    assert!(made[0].contains("spec.ephemeralContainers: Forbidden: cannot be set on create"), "{made:?}");
    // node/NAME: a pod on that node in its namespaces, the host's root at /host.
    let node = sb.cluster.api.store.list(rid::NODE, None).next().map(|n| kubeloop_core::foundation::api::name(n).to_string()).unwrap();
    let out = sb.kubectl(&format!("debug node/{node} --image=busybox:1.36 --profile=general -- sleep 3600"));
    assert!(
        out[0].starts_with(&format!("Creating debugging pod node-debugger-{node}-")) && out[0].ends_with(&format!(" with container debugger on node {node}.")),
        "{out:?}"
    );
    let dbg =
        sb.cluster.api.store.list(rid::POD, Some("default")).find(|p| kubeloop_core::foundation::api::name(p).starts_with("node-debugger-")).unwrap().clone();
    assert_eq!(dbg["spec"]["hostPID"], true);
    assert_eq!(dbg["spec"]["nodeName"], node.as_str());
    assert_eq!(dbg["spec"]["volumes"][0]["hostPath"]["path"], "/");
    // --copy-to: a copy without the labels, with a debug container.
    let out = sb.kubectl("debug web --copy-to=web-copy --image=busybox:1.36 --profile=general -- sleep 3600");
    assert!(out[0].starts_with("Defaulting debug container name to debugger-"), "{out:?}");
    let copy = sb.cluster.api.store.get_by(rid::POD, "default", "web-copy").expect("the copy exists").clone();
    assert_eq!(copy["spec"]["containers"].as_array().map(Vec::len), Some(2));
    assert!(copy["spec"]["ephemeralContainers"].is_null());
    assert_eq!(copy["spec"]["shareProcessNamespace"], true);
    assert_eq!(sb.kubectl("debug web"), ["error: you must specify --image when not using --copy-to.", "See 'kubectl debug -h' for help and examples"]);
}

#[test]
fn kubectl_logs_follow_prints_what_the_container_writes_until_it_ends() {
    use kubeloop_core::kubectl::Follow;
    use kubeloop_core::sandbox::Sandbox;
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ticker\nspec:\n  restartPolicy: Never\n  containers:\n  - name: t\n    image: busybox:1.36\n    command: [sh, -c, 'for i in 1 2 3 4 5 6; do echo tick $i; sleep 2; done']\n";
    let mut sb = Sandbox::new(pod, None);
    sb.advance(4_000);
    let (out, follow) = sb.kubectl_watching("logs -f ticker");
    let Some(Follow::Logs(mut f)) = follow else { panic!("logs -f follows: {out:?}") };
    assert!(!out.is_empty() && out.len() < 6, "{out:?}");
    let mut all = out.clone();
    for _ in 0..20 {
        sb.advance(1_000);
        let (lines, done) = f.poll(&sb.cluster.api, sb.cluster.kubelet());
        all.extend(lines);
        if done {
            break;
        }
    }
    assert_eq!(all, (1..=6).map(|i| format!("tick {i}")).collect::<Vec<_>>(), "each line once, in order, until the container ended");
    // Without -f it prints what there is and is over.
    assert!(sb.kubectl_watching("logs ticker").1.is_none());
    // `attach` without -i: the notes, then only what the container writes from then on.
    let mut sb = Sandbox::new(pod, None);
    sb.advance(5_000);
    let (out, follow) = sb.kubectl_watching("attach ticker");
    let Some(Follow::Logs(mut f)) = follow else { panic!("attach follows: {out:?}") };
    assert_eq!(out[1], "If you don't see a command prompt, try pressing enter.");
    let all = followed(&mut sb, &mut f, 20);
    assert_eq!(all, (4..=6).map(|i| format!("tick {i}")).collect::<Vec<_>>());
}

/// What a followed log prints, second by second of simulated time, until it is over or
/// `secs` have passed.
fn followed(sb: &mut kubeloop_core::sandbox::Sandbox, f: &mut kubeloop_core::kubectl::LogFollow, secs: usize) -> Vec<String> {
    let mut all = Vec::new();
    for _ in 0..secs {
        sb.advance(1_000);
        let (lines, done) = f.poll(&sb.cluster.api, sb.cluster.kubelet());
        all.extend(lines);
        if done {
            break;
        }
    }
    all
}

#[test]
fn kubectl_logs_follow_of_a_selector_and_all_containers_interleaves_the_streams() {
    use kubeloop_core::kubectl::Follow;
    use kubeloop_core::sandbox::Sandbox;
    let pod = |name: &str, start: u32| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  labels: {{app: tick}}\nspec:\n  restartPolicy: Never\n  containers:\n  - name: a\n    image: busybox:1.36\n    command: [sh, -c, 'sleep {start}; for i in 1 2 3; do echo {name} a $i; sleep 4; done']\n  - name: b\n    image: busybox:1.36\n    command: [sh, -c, 'sleep {}; for i in 1 2 3; do echo {name} b $i; sleep 4; done']\n",
            start + 1
        )
    };
    let mut sb = Sandbox::new(&format!("{}---\n{}", pod("one", 10), pod("two", 12)), None);
    sb.advance(5_000);
    let (out, follow) = sb.kubectl_watching("logs -f -l app=tick --all-containers --prefix");
    let Some(Follow::Logs(mut f)) = follow else { panic!("logs -f -l follows: {out:?}") };
    assert!(out.is_empty(), "nothing written yet: {out:?}");
    let all = followed(&mut sb, &mut f, 60);
    // Four streams, each line once, in the order written (a's second before b's).
    let want: Vec<String> =
        (1..=3).flat_map(|i| [("one", "a"), ("one", "b"), ("two", "a"), ("two", "b")].map(|(p, c)| format!("[pod/{p}/{c}] {p} {c} {i}"))).collect();
    assert_eq!(all, want);
    // More streams than kubectl follows at once (--max-log-requests, 5).
    let many = (0..3).map(|i| pod(&format!("p{i}"), 1)).collect::<Vec<_>>().join("---\n");
    let mut sb = Sandbox::new(&many, None);
    sb.advance(5_000);
    let (out, follow) = sb.kubectl_watching("logs -f -l app=tick --all-containers");
    assert!(follow.is_none());
    assert_eq!(out, ["error: you are attempting to follow 6 log streams, but maximum allowed concurrency is 5, use --max-log-requests to increase the limit"]);
}

#[test]
fn tar_in_a_container_archives_and_extracts_as_kubectl_cp_runs_it() {
    let mut c = busybox();
    let out = c.act(
        Credentials::Token("admin-token".into()),
        Action::Kubectl(
            "exec box -- sh -c 'mkdir -p /d/e; printf \"one\\ntwo\\n\" > /d/e/f; tar cf - /d | tar xmf - -C /tmp; cat /tmp/d/e/f; tar cf - /d | tar tf -'"
                .into(),
        ),
    );
    assert_eq!(out.output, ["tar: Removing leading `/' from member names", "one", "two", "tar: Removing leading `/' from member names", "d/", "d/e/", "d/e/f"]);
    // An archive is 512-byte blocks: a header, the data padded, two empty blocks.
    let out = c
        .exec_request(Credentials::Token("admin-token".into()), "default", "box", None, &["sh".into(), "-c".into(), "echo hi > /x; cd /; tar cf - x".into()])
        .unwrap();
    let bytes: Vec<u8> = out.0.iter().flat_map(|(_, l)| kubeloop_core::apiserver::output_bytes(l)).collect();
    assert_eq!(bytes.len(), 512 * 4, "header, one data block, two end blocks");
    assert_eq!(&bytes[257..262], b"ustar");
    assert_eq!(&bytes[512..515], b"hi\n");
}

/// `runAsNonRoot`: the kubelet refuses an image that runs as root (CreateContainerConfigError
/// with `verifyRunAsNonRoot`'s words), starts one given a non-root `runAsUser`, and says
/// where it cannot know the image's user.
#[test]
fn run_as_non_root_is_enforced_by_the_kubelet() {
    use kubeloop_core::sandbox::Sandbox;
    let pod = |name: &str, image: &str, sc: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  securityContext: {sc}\n  containers:\n  - name: c\n    image: {image}\n    command: [sleep, '3600']\n")
    };
    let text = [
        pod("root", "busybox:1.36", "{runAsNonRoot: true}"),
        pod("user", "busybox:1.36", "{runAsNonRoot: true, runAsUser: 1000}"),
        pod("zero", "busybox:1.36", "{runAsNonRoot: true, runAsUser: 0}"),
        pod("named", "memcached:1.6", "{runAsNonRoot: true}"),
        pod("unknown", "registry.k8s.io/pause:3.10", "{runAsNonRoot: true}"),
    ]
    .join("---\n");
    let mut sb = Sandbox::new(&text, None);
    sb.advance(30_000);
    let waiting = |name: &str| {
        let p = sb.cluster.api.store.get_by(kubeloop_core::foundation::api::rid::POD, "default", name).unwrap();
        let s = &p["status"]["containerStatuses"][0]["state"];
        (s["waiting"]["reason"].as_str().unwrap_or("").to_string(), s["waiting"]["message"].as_str().unwrap_or("").to_string(), s["running"].is_object())
    };
    let (reason, message, _) = waiting("root");
    assert_eq!(reason, "CreateContainerConfigError");
    assert!(message.starts_with("container has runAsNonRoot and image will run as root (pod: \"root_default("), "{message}");
    assert!(waiting("user").2, "a non-root runAsUser runs");
    assert!(waiting("zero").1.starts_with("container's runAsUser breaks non-root policy"), "{:?}", waiting("zero"));
    assert!(waiting("named").1.contains("image has non-numeric user (memcache), cannot verify user is non-root"), "{:?}", waiting("named"));
    assert!(waiting("unknown").2, "an image kubeloop does not know runs");
    let said = sb.cluster.api.trace.records().iter().any(|r| r.message.contains("kubeloop does not know the user image registry.k8s.io/pause:3.10 runs as"));
    assert!(said, "the unknown image's unchecked user is said in the trace");
}
