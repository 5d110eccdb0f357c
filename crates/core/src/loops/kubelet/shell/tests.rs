//! The shell against a test container: scripts, expansions, files, network tools,
//! signals and memory limits, each with what the real shell prints.

use super::fs::{Mount, Tree, View};
use super::*;
use std::collections::BTreeSet;

/// A container for the shell's tests: an emptyDir at /cache, a read-only ConfigMap at
/// /etc/config, one Service `web` with ready endpoints and one `empty` without.
struct Box_ {
    now: Millis,
    root: Tree,
    volumes: Vec<Tree>,
    ro: Vec<bool>,
    mounts: Vec<Mount>,
    logs: Vec<String>,
    alive: BTreeSet<String>,
    limit: Option<u64>,
}

impl Box_ {
    fn new() -> Box_ {
        let mut root = Tree::default();
        for d in ["/tmp", "/etc", "/bin", "/var/log"] {
            root.dirs.insert(d.into());
        }
        Box_ {
            now: 0,
            root,
            volumes: vec![Tree::default(), Tree::with_files([("game.properties".to_string(), "lives=3\n".to_string())])],
            ro: vec![false, true],
            mounts: vec![
                Mount { path: "/cache".into(), volume: 0, sub_path: String::new(), read_only: false },
                Mount { path: "/etc/config".into(), volume: 1, sub_path: String::new(), read_only: true },
            ],
            logs: vec![],
            alive: BTreeSet::new(),
            limit: None,
        }
    }
    fn view(&mut self) -> View<'_> {
        View { volumes: &mut self.volumes, volume_read_only: &self.ro, mounts: &self.mounts, root: &mut self.root }
    }
}

impl Host for Box_ {
    fn now(&self) -> Millis {
        self.now
    }
    fn hostname(&self) -> String {
        "web-0".into()
    }
    fn read(&self, path: &str) -> Result<String, FsError> {
        let mut volumes = self.volumes.clone();
        let mut root = self.root.clone();
        View { volumes: &mut volumes, volume_read_only: &self.ro, mounts: &self.mounts, root: &mut root }.read(path)
    }
    fn write(&mut self, path: &str, data: &str, append: bool) -> Result<(), FsError> {
        self.view().write(path, data, append)
    }
    fn remove(&mut self, path: &str, recursive: bool) -> Result<(), FsError> {
        self.view().remove(path, recursive)
    }
    fn mkdir(&mut self, path: &str, parents: bool) -> Result<(), FsError> {
        self.view().mkdir(path, parents)
    }
    fn list(&self, path: &str) -> Result<Vec<(String, bool)>, FsError> {
        let mut volumes = self.volumes.clone();
        let mut root = self.root.clone();
        View { volumes: &mut volumes, volume_read_only: &self.ro, mounts: &self.mounts, root: &mut root }.list(path)
    }
    fn kind(&self, path: &str) -> Option<bool> {
        let mut volumes = self.volumes.clone();
        let mut root = self.root.clone();
        View { volumes: &mut volumes, volume_read_only: &self.ro, mounts: &self.mounts, root: &mut root }.kind(path)
    }
    fn resolve(&self, name: &str) -> Option<(String, String)> {
        match name.split('.').next() {
            Some("web") => Some(("web.default.svc.cluster.local".into(), "10.96.0.20".into())),
            Some("empty") => Some(("empty.default.svc.cluster.local".into(), "10.96.0.21".into())),
            _ => None,
        }
    }
    fn http(&self, _host: &str, addr: &str, _port: u16, _path: &str) -> Result<(u16, String), String> {
        if addr == "10.96.0.20" {
            Ok((200, "<h1>hello</h1>\n".into()))
        } else {
            Err("Connection refused".into())
        }
    }
    fn daemon(&self, argv: &[String]) -> Option<Daemon> {
        (argv[0] == "nginx").then(|| Daemon {
            name: "nginx".into(),
            lines: vec!["start worker processes".into()],
            ports: vec![80],
            memory: 1 << 20,
            handles_sigterm: true,
        })
    }
    fn opaque(&self, _name: &str) -> bool {
        false
    }
    fn has(&self, name: &str) -> bool {
        name != "bash"
    }
    fn signal(&mut self, name: &str, signal: i32) -> bool {
        let hit = self.alive.contains(name);
        if hit && signal != 0 {
            self.alive.remove(name);
        }
        hit
    }
    fn log(&mut self, line: String) {
        self.logs.push(line);
    }
    fn memory_limit(&self) -> Option<u64> {
        self.limit
    }
}

fn sh(script: &str) -> Process {
    Process::new(
        compile(script).expect("parses"),
        "sh",
        vec![],
        &[("HOME".into(), "/root".into()), ("JOB_COMPLETION_INDEX".into(), "2".into())],
        Flavour::Busybox,
    )
}

/// Run to the end, advancing the box's clock through sleeps.
fn run(script: &str) -> (i32, Vec<String>, Millis) {
    let mut b = Box_::new();
    let mut p = sh(script);
    for _ in 0..10_000 {
        match p.resume(&mut b) {
            Outcome::Exit(code) => return (code, b.logs, b.now),
            Outcome::Sleep(ms) => b.now += ms,
            other => panic!("{other:?}"),
        }
    }
    panic!("did not finish: {:?}", b.logs);
}

#[test]
fn exit_codes_and_output() {
    assert_eq!(run("echo hi; exit 1"), (1, vec!["hi".into()], 0));
    assert_eq!(run("echo \"Hello world!\" && sleep 5 && exit 42"), (42, vec!["Hello world!".into()], 5000));
    assert_eq!(run("false || echo recovered"), (0, vec!["recovered".into()], 0));
    assert_eq!(run("true && false"), (1, vec![], 0));
    assert_eq!(run("! false"), (0, vec![], 0));
    assert_eq!(run("exit 300"), (44, vec![], 0));
}

#[test]
fn unknown_commands_exit_127_in_each_shells_words() {
    assert_eq!(run("frobnicate --now"), (127, vec!["sh: frobnicate: not found".into()], 0));
    let mut b = Box_::new();
    let mut p = Process::new(compile("echo a\nfrob").unwrap(), "/bin/sh", vec![], &[], Flavour::Dash);
    assert_eq!(p.resume(&mut b), Outcome::Exit(127));
    assert_eq!(b.logs, vec!["a", "/bin/sh: 2: frob: not found"]);
    let mut b = Box_::new();
    let mut p = Process::new(compile("frob").unwrap(), "bash", vec![], &[], Flavour::Bash);
    p.resume(&mut b);
    assert_eq!(b.logs, vec!["bash: line 1: frob: command not found"]);
}

#[test]
fn loops_sleep_on_the_simulated_clock() {
    let mut b = Box_::new();
    let mut p = sh("while true; do echo \"logging\" >> /cache/logs.txt; sleep 1; done");
    for _ in 0..5 {
        match p.resume(&mut b) {
            Outcome::Sleep(1000) => b.now += 1000,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(b.volumes[0].files.get("/logs.txt").map(fs::Content::as_str), Some("logging\nlogging\nlogging\nlogging\nlogging\n"));
    // A second container follows the file.
    let mut tail = sh("tail -F /cache/logs.txt");
    assert_eq!(tail.resume(&mut b), Outcome::Sleep(1000));
    assert_eq!(b.logs.len(), 5);
    b.write("/cache/logs.txt", "logging\n", true).unwrap();
    assert_eq!(tail.resume(&mut b), Outcome::Sleep(1000));
    assert_eq!(b.logs.len(), 6);
}

#[test]
fn the_exec_liveness_script_and_its_probe() {
    let mut b = Box_::new();
    let mut p = sh("touch /tmp/healthy; sleep 30; rm -f /tmp/healthy; sleep 600");
    assert_eq!(p.resume(&mut b), Outcome::Sleep(30_000));
    let mut probe = Process::command(&["cat".into(), "/tmp/healthy".into()], &[], Flavour::Busybox);
    assert_eq!(probe.run_to_end(&mut b, OPS_PER_CALL), Outcome::Exit(0));
    b.now = 30_000;
    assert_eq!(p.resume(&mut b), Outcome::Sleep(600_000));
    let mut probe = Process::command(&["cat".into(), "/tmp/healthy".into()], &[], Flavour::Busybox);
    assert_eq!(probe.run_to_end(&mut b, OPS_PER_CALL), Outcome::Exit(1));
    assert_eq!(b.logs, vec!["cat: can't open '/tmp/healthy': No such file or directory"]);
}

#[test]
fn expansions_arrays_and_arithmetic() {
    let (code, logs, _) = run("items=(foo bar baz qux xyz)\necho ${items[$JOB_COMPLETION_INDEX]} > /cache/data.txt\ncat /cache/data.txt | rev");
    assert_eq!((code, logs), (0, vec!["zab".to_string()]));
    let (_, logs, _) = run("ordinal=2; echo server-id=$((100 + $ordinal)) ${MISSING:-default} ${#HOME} $(echo nested) `hostname`");
    assert_eq!(logs, vec!["server-id=102 default 5 nested web-0"]);
    let (_, logs, _) = run("for i in 1 2 3; do if [ $i -eq 2 ]; then continue; fi; echo n=$i; done; x=a.tar.gz; echo ${x%%.*} ${x#*.}");
    assert_eq!(logs, vec!["n=1", "n=3", "a tar.gz"]);
    let (_, logs, _) = run("f() { echo \"f got $1\"; return 3; }; f one; echo status=$?; case web-1 in web-*) echo matched;; *) echo no;; esac");
    assert_eq!(logs, vec!["f got one", "status=3", "matched"]);
    let (_, logs, _) = run("ls /etc/config/; for f in /etc/config/*; do cat $f; done");
    assert_eq!(logs, vec!["game.properties", "lives=3"]);
}

#[test]
fn errexit_files_and_read_only_volumes() {
    let (code, logs, _) = run("set -e; echo one; false; echo never");
    assert_eq!((code, logs), (1, vec!["one".to_string()]));
    let (code, logs, _) = run("echo x > /etc/config/new");
    assert_eq!((code, logs), (1, vec!["sh: can't create /etc/config/new: Read-only file system".to_string()]));
    let (code, logs, _) = run("echo x > /nope/file");
    assert_eq!((code, logs), (1, vec!["sh: can't create /nope/file: nonexistent directory".to_string()]));
    let (_, logs, _) = run("echo hidden > /dev/null; echo err 1>&2; echo both 2>&1");
    assert_eq!(logs, vec!["err", "both"]);
}

#[test]
fn network_tools_reach_services_with_ready_endpoints() {
    let (code, logs, _) = run("wget -qO- http://web");
    assert_eq!((code, logs), (0, vec!["<h1>hello</h1>".to_string()]));
    let (code, logs, _) = run("wget -q -O - http://empty:8080/x");
    assert_eq!((code, logs), (1, vec!["wget: can't connect to remote host (10.96.0.21): Connection refused".to_string()]));
    let (code, logs, _) = run("wget -qO- http://nowhere");
    assert_eq!((code, logs), (1, vec!["wget: bad address 'nowhere'".to_string()]));
    let (code, logs, _) = run("curl -s web.default.svc.cluster.local");
    assert_eq!((code, logs), (0, vec!["<h1>hello</h1>".to_string()]));
    let (code, logs, _) = run("curl nowhere");
    assert_eq!((code, logs), (6, vec!["curl: (6) Could not resolve host: nowhere".to_string()]));
    let (code, logs, _) = run("nslookup web");
    assert_eq!(code, 0);
    assert_eq!(logs, vec!["Server:\t\t10.96.0.10", "Address:\t10.96.0.10:53", "", "Name:\tweb.default.svc.cluster.local", "Address: 10.96.0.20", ""]);
}

#[test]
fn memory_beyond_the_limit_is_oom_killed() {
    let mut b = Box_::new();
    b.limit = Some(100 << 20);
    let mut p = Process::command(
        &["stress".into(), "--vm".into(), "1".into(), "--vm-bytes".into(), "150M".into(), "--vm-hang".into(), "1".into()],
        &[],
        Flavour::Busybox,
    );
    assert_eq!(p.resume(&mut b), Outcome::OomKilled);
    b.limit = Some(200 << 20);
    let mut p = Process::command(&["stress".into(), "--vm".into(), "1".into(), "--vm-bytes".into(), "150M".into()], &[], Flavour::Busybox);
    assert!(matches!(p.resume(&mut b), Outcome::Serve(_)));
}

#[test]
fn daemons_serve_and_signals_reach_them() {
    let mut b = Box_::new();
    let mut p = sh("echo starting; exec nginx -g 'daemon off;'");
    assert!(matches!(p.resume(&mut b), Outcome::Serve(d) if d.name == "nginx"));
    assert_eq!(b.logs, vec!["starting", "start worker processes"]);
    b.alive.insert("nginx".into());
    let mut stop = sh("nginx -s quit; while killall -0 nginx; do sleep 1; done; echo gone");
    assert_eq!(stop.run_to_end(&mut b, OPS_PER_CALL), Outcome::Exit(0));
    assert!(b.logs.last().is_some_and(|l| l == "gone"));
}

#[test]
fn busy_loops_yield_and_sigterm_traps_run() {
    let mut b = Box_::new();
    let mut p = sh("while true; do :; done");
    assert_eq!(p.resume(&mut b), Outcome::Sleep(BUSY_SLICE_MS));
    let mut p = sh("trap 'echo bye; exit 0' TERM; while true; do sleep 1; done");
    assert_eq!(p.resume(&mut b), Outcome::Sleep(1000));
    assert_eq!(p.sigterm(&mut b), Some(0));
    assert_eq!(b.logs, vec!["bye"]);
    let mut p = sh("sleep 100");
    p.resume(&mut b);
    assert_eq!(p.sigterm(&mut b), None);
}

#[test]
fn dates_and_pi() {
    assert_eq!(applets::date(0, None), "Thu Jan  1 00:00:00 UTC 2026");
    assert_eq!(applets::date(65_000, Some("%Y-%m-%dT%H:%M:%S")), "2026-01-01T00:01:05");
    assert_eq!(applets::pi_digits(10), "3.141592654");
    let pi = applets::pi_digits(2000);
    assert_eq!(pi.len(), 2001);
    assert!(pi.starts_with("3.14159265358979323846264338327950288419716939937510"));
    // The last digits as Python's `decimal` computes π to 2000 places.
    assert!(pi.ends_with("908658326459958133904780275901"), "{}", &pi[1970..]);
}

#[test]
fn scripts_never_panic() {
    for s in [
        "${",
        "$((1/0))",
        "echo $((",
        "a=(",
        "case x in",
        "f() {",
        "[ 1 -eq x ]",
        "echo ${x:?}",
        "for",
        "if then fi",
        "$(${#})",
        "echo \\",
        "[[ a =~ ^a$ ]] && echo ok",
    ] {
        if let Ok(prog) = compile(s) {
            let mut b = Box_::new();
            let mut p = Process::new(prog, "sh", vec![], &[], Flavour::Busybox);
            p.run_to_end(&mut b, OPS_PER_CALL);
        }
    }
}

#[test]
fn gzip_writes_a_valid_stream_that_gunzip_reads_back() {
    // The gzip member of a 21-byte input: header, one final stored block, CRC-32, size.
    let (code, logs, _) = run("echo -n 'This is a test string' | gzip");
    assert_eq!(code, 0);
    let bytes = crate::apiserver::output_bytes(&format!("{}{}", logs.join("\n"), crate::apiserver::UNTERMINATED));
    assert_eq!(&bytes[..10], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
    assert_eq!(&bytes[10..15], &[1, 21, 0, !21u8, 0xff]);
    assert_eq!(&bytes[15..36], b"This is a test string");
    // zlib.crc32(b"This is a test string")
    assert_eq!(&bytes[36..40], &0x6b4ef36du32.to_le_bytes());
    assert_eq!(&bytes[40..], &21u32.to_le_bytes());
    assert_eq!(run("echo héllo | gzip | gunzip"), (0, vec!["héllo".into()], 0));
    assert_eq!(run("echo data > /tmp/f; gzip /tmp/f; ls /tmp; zcat /tmp/f.gz; gunzip /tmp/f.gz; cat /tmp/f").1, vec!["f.gz", "data", "data"]);
    assert_eq!(run("echo plain | gunzip"), (1, vec!["gunzip: invalid magic".into()], 0));
}
