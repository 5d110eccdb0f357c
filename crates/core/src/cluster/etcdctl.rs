//! `etcdctl`, etcd's own client, for the maintenance a full database needs (etcd's
//! `op-guide/maintenance`: space quota, compaction, defragmentation, alarms). It talks to
//! etcd directly, not through the API server, as an operator on the control-plane node
//! does: `endpoint status`, `compact REV`, `defrag`, `alarm list`, `alarm disarm`. Output
//! follows etcdctl's simple printer (`etcdctl/ctlv3/command/printer.go`).

use crate::apiserver::store::Store;

/// The single member's ID (a member started with etcd's default name and cluster token).
const MEMBER_ID: u64 = 0x8e9e_05c5_2164_694d;
const CLUSTER_ID: u64 = 0xcdf8_1819_4e3a_8c32;
const ENDPOINT: &str = "127.0.0.1:2379";
/// The etcd release Kubernetes 1.36 is built and tested with.
const VERSION: &str = "3.6.6";

/// go-humanize's `Bytes`: SI units, one decimal below ten.
pub fn humanize_bytes(n: u64) -> String {
    if n < 10 {
        return format!("{n} B");
    }
    let units = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
    let e = ((n as f64).ln() / 1000f64.ln()).floor() as usize;
    let e = e.min(units.len() - 1);
    let val = ((n as f64) / 1000f64.powi(e as i32) * 10.0 + 0.5).floor() / 10.0;
    if val < 10.0 {
        format!("{val:.1} {}", units[e])
    } else {
        format!("{val:.0} {}", units[e])
    }
}

fn alarm_line() -> String {
    format!("memberID:{MEMBER_ID} alarm:NOSPACE ")
}

/// Run one etcdctl command line (without `etcdctl`) against the store.
pub fn run(store: &mut Store, line: &str) -> Vec<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["endpoint", "status", rest @ ..] => {
            let format = match rest {
                [] | ["-w" | "--write-out", "simple"] | ["--write-out=simple"] => "simple",
                ["-w" | "--write-out", "json"] | ["--write-out=json"] => "json",
                _ => return vec![format!("Error: kubeloop's etcdctl prints endpoint status as simple or json (got {:?})", rest.join(" "))],
            };
            if format == "json" {
                // The StatusResponse as etcdctl's JSON printer writes it (Go field order).
                let errors = if store.space.alarm { format!(",\"errors\":[\"{}\"]", alarm_line()) } else { String::new() };
                return vec![format!(
                    "[{{\"Endpoint\":\"{ENDPOINT}\",\"Status\":{{\"header\":{{\"cluster_id\":{CLUSTER_ID},\"member_id\":{MEMBER_ID},\"revision\":{rev},\"raft_term\":2}},\"version\":\"{VERSION}\",\"dbSize\":{size},\"leader\":{MEMBER_ID},\"raftIndex\":{rev},\"raftTerm\":2,\"raftAppliedIndex\":{rev}{errors},\"dbSizeInUse\":{in_use}}}}}]",
                    rev = store.revision(),
                    size = store.space.db_size,
                    in_use = store.bytes_in_use()
                )];
            }
            let errors = if store.space.alarm { alarm_line() } else { String::new() };
            vec![format!(
                "{ENDPOINT}, {MEMBER_ID:x}, {VERSION}, {}, true, false, 2, {rev}, {rev}, {errors}",
                humanize_bytes(store.space.db_size),
                rev = store.revision()
            )]
        }
        ["compact", rev] => match rev.parse::<u64>() {
            Err(_) => vec![format!("Error: bad revision {rev:?}")],
            Ok(r) if r > store.revision() => vec!["Error: etcdserver: mvcc: required revision is a future revision".into()],
            Ok(r) if r <= store.compacted_revision() => vec!["Error: etcdserver: mvcc: required revision has been compacted".into()],
            Ok(r) => {
                store.compact(r);
                vec![format!("compacted revision {r}")]
            }
        },
        ["compact"] | ["compact", ..] => vec!["Error: compact command needs 1 argument.".into()],
        ["defrag", ..] => {
            store.defragment();
            vec![format!("Finished defragmenting etcd member[{ENDPOINT}]")]
        }
        ["alarm", "list"] => store.space.alarm.then(alarm_line).into_iter().collect(),
        ["alarm", "disarm"] => store.disarm().then(alarm_line).into_iter().collect(),
        _ => vec![format!("Error: kubeloop's etcdctl runs endpoint status, compact REVISION, defrag, alarm list and alarm disarm (got {line:?})")],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_as_go_humanize_prints_them() {
        assert_eq!(humanize_bytes(0), "0 B");
        assert_eq!(humanize_bytes(999), "999 B");
        assert_eq!(humanize_bytes(25_000), "25 kB");
        assert_eq!(humanize_bytes(8_388_608), "8.4 MB");
        assert_eq!(humanize_bytes(2 << 30), "2.1 GB");
    }

    #[test]
    fn maintenance_frees_a_full_database() {
        let mut s = Store::default();
        s.space.alarm = true;
        let status = run(&mut s, "endpoint status");
        assert_eq!(status, ["127.0.0.1:2379, 8e9e05c52164694d, 3.6.6, 0 B, true, false, 2, 1, 1, memberID:10276657743932975437 alarm:NOSPACE "]);
        assert_eq!(run(&mut s, "alarm list"), ["memberID:10276657743932975437 alarm:NOSPACE "]);
        assert_eq!(
            run(&mut s, "endpoint status -w json"),
            ["[{\"Endpoint\":\"127.0.0.1:2379\",\"Status\":{\"header\":{\"cluster_id\":14841639068965178418,\"member_id\":10276657743932975437,\"revision\":1,\"raft_term\":2},\"version\":\"3.6.6\",\"dbSize\":0,\"leader\":10276657743932975437,\"raftIndex\":1,\"raftTerm\":2,\"raftAppliedIndex\":1,\"errors\":[\"memberID:10276657743932975437 alarm:NOSPACE \"],\"dbSizeInUse\":0}}]"]
        );
        assert_eq!(run(&mut s, "compact 5"), ["Error: etcdserver: mvcc: required revision is a future revision"]);
        assert_eq!(run(&mut s, "compact 1"), ["compacted revision 1"]);
        assert_eq!(run(&mut s, "compact 1"), ["Error: etcdserver: mvcc: required revision has been compacted"]);
        assert_eq!(run(&mut s, "compact"), ["Error: compact command needs 1 argument."]);
        assert_eq!(run(&mut s, "defrag"), ["Finished defragmenting etcd member[127.0.0.1:2379]"]);
        assert_eq!(run(&mut s, "alarm disarm"), ["memberID:10276657743932975437 alarm:NOSPACE "]);
        assert!(run(&mut s, "alarm list").is_empty());
        assert!(run(&mut s, "snapshot save x")[0].starts_with("Error: kubeloop's etcdctl runs"));
    }
}
