//! The simulated image registry: what the container runtime can pull and how the
//! resulting containers behave.
//!
//! Known: a catalogue of common public images (nginx, busybox, redis, postgres, ...),
//! anything under `registry.k8s.io/`, the Google sample registries the Kubernetes docs
//! use, and anything under `registry.example/`, plus the images a scenario declares with
//! their behaviour. Anything else fails to pull with the error a real registry gives.

use crate::foundation::sim::Millis;
use std::collections::BTreeMap;

/// What an image's userland is, which decides its shell and the wording of its tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// busybox and alpine: `sh` is busybox ash, the tools are busybox applets.
    Busybox,
    /// Debian-based official images: `sh` is dash, GNU coreutils, bash.
    Debian,
    /// An image kubeloop does not know the insides of: its programs are its server.
    Opaque,
}

/// The long-running program an image ships (nginx, redis-server, ...).
#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    /// Command names that start it (`nginx`, `docker-entrypoint.sh`, ...).
    pub programs: Vec<String>,
    /// Ports it listens on; empty: whatever port is asked (an opaque image).
    pub ports: Vec<u16>,
    /// Resident memory in bytes.
    pub memory: u64,
    /// Where its HTTP documents live, if it serves files.
    pub web_root: Option<String>,
}

/// How a pulled image behaves once started.
#[derive(Debug, Clone, PartialEq)]
pub struct Behaviour {
    pub family: Family,
    /// The image config's `Entrypoint` and `Cmd`.
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    pub server: Option<Server>,
    /// Programs its userland lacks (`curl` in busybox, `wget` in Debian slim images).
    pub lacks: Vec<String>,
    /// Programs only this image carries (`perl`, `redis-cli`, `stress`).
    pub programs: Vec<String>,
    /// HTTP, TCP and gRPC probes fail from this long after the container starts.
    pub unhealthy_after_ms: Option<Millis>,
    /// Compressed size in bytes (Pulled events print it).
    pub size: u64,
    /// Time the pull takes, excluding waiting for earlier pulls.
    pub pull_ms: Millis,
    /// Exits with code 1 this long after starting.
    pub crash_after_ms: Option<Millis>,
    /// Readiness probes never pass.
    pub never_ready: bool,
    /// Readiness probes pass only this long after the container starts.
    pub ready_after_ms: Millis,
    /// Ignores SIGTERM: stopping takes the whole grace period.
    pub ignores_sigterm: bool,
    /// Lines the container writes to stdout when it starts.
    pub logs: Vec<String>,
    /// CPU time, in microseconds, its server spends on one HTTP request.
    pub request_cpu_us: u64,
    /// The body its server answers to every request when it serves no files.
    pub reply: Option<String>,
    /// CPU and memory a scenario says its containers use besides what they do.
    pub load: Option<Load>,
    /// The image config's `User` (empty: root), None when kubeloop does not know it.
    pub user: Option<String>,
}

/// A scenario's load for an image (`images: [{name, cpu: {from, to, at}, memory}]`): CPU
/// in millicores, `from` until `at` (simulated time since the run began), `to` after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Load {
    pub cpu_from: u64,
    pub cpu_to: u64,
    pub at: Millis,
    /// Working set in bytes.
    pub memory: Option<u64>,
}

impl Load {
    /// CPU time in microseconds used between `from` and `to`, at most `cap` millicores.
    pub fn cpu_us(&self, from: Millis, to: Millis, cap: u64) -> u64 {
        let span = |a: Millis, b: Millis| b.saturating_sub(a);
        let before = span(from, to.min(self.at));
        let after = span(from.max(self.at), to);
        self.cpu_from.min(cap) * before + self.cpu_to.min(cap) * after
    }
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            family: Family::Opaque,
            entrypoint: vec![],
            cmd: vec![],
            server: Some(Server { programs: vec![], ports: vec![], memory: 20 << 20, web_root: None }),
            lacks: vec![],
            programs: vec![],
            unhealthy_after_ms: None,
            size: 20_000_000,
            pull_ms: 1500,
            crash_after_ms: None,
            never_ready: false,
            ready_after_ms: 0,
            ignores_sigterm: false,
            logs: vec![],
            request_cpu_us: 500,
            reply: None,
            load: None,
            user: None,
        }
    }
}

/// A fully qualified reference: `docker.io/library/nginx:1.25`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reference {
    pub registry: String,
    pub repository: String,
    pub tag: String,
    pub digest: Option<String>,
}

impl Reference {
    /// Parse an image as containerd normalises it (`nginx` -> `docker.io/library/nginx:latest`).
    pub fn parse(image: &str) -> Option<Reference> {
        let image = image.trim();
        if image.is_empty() || image.chars().any(|c| c.is_whitespace() || c.is_ascii_uppercase() && !image.contains('@')) {
            return None;
        }
        let (name, digest) = match image.split_once('@') {
            Some((n, d)) => (n, Some(d.to_string())),
            None => (image, None),
        };
        let (first, rest) = match name.split_once('/') {
            Some((f, r)) if f.contains('.') || f.contains(':') || f == "localhost" => (f.to_string(), r.to_string()),
            _ => ("docker.io".to_string(), name.to_string()),
        };
        let (repo, tag) = {
            let last_slash = rest.rfind('/').map(|i| i + 1).unwrap_or(0);
            match rest[last_slash..].split_once(':') {
                Some((_, t)) => (rest[..last_slash + rest[last_slash..].find(':').unwrap_or(0)].to_string(), t.to_string()),
                None => (rest.clone(), "latest".to_string()),
            }
        };
        let repo = if first == "docker.io" && !repo.contains('/') { format!("library/{repo}") } else { repo };
        if repo.is_empty() || tag.is_empty() {
            return None;
        }
        Some(Reference { registry: first, repository: repo, tag, digest })
    }
    pub fn full(&self) -> String {
        format!("{}/{}:{}", self.registry, self.repository, self.tag)
    }
    /// A stable digest for this reference.
    pub fn digest(&self) -> String {
        if let Some(d) = &self.digest {
            return d.clone();
        }
        let mut h: u64 = 0xcbf29ce484222325;
        let mut out = String::from("sha256:");
        for round in 0..4u64 {
            for b in self.full().bytes().chain(round.to_le_bytes()) {
                h ^= b as u64;
                h = h.wrapping_mul(0x100000001b3);
            }
            out.push_str(&format!("{h:016x}"));
        }
        out
    }
}

/// Catalogue entry: repository, known major versions (empty: any tag), size, userland,
/// `Entrypoint` and `Cmd`, server (programs, ports, MiB of memory, web root), what it lacks.
struct Known {
    repo: &'static str,
    majors: &'static [&'static str],
    size: u64,
    family: Family,
    entrypoint: &'static [&'static str],
    cmd: &'static [&'static str],
    server: Option<KnownServer>,
    lacks: &'static [&'static str],
}

/// Programs that start it, ports, MiB of memory, web root.
type KnownServer = (&'static [&'static str], &'static [u16], u64, Option<&'static str>);

const ENTRY: &[&str] = &["docker-entrypoint.sh"];
const SHELL_IMAGE_LACKS: &[&str] = &["curl", "bash"];
const DEBIAN_LACKS: &[&str] = &["wget", "nslookup", "ps"];

const CATALOGUE: &[Known] = &[
    Known {
        repo: "docker.io/library/nginx",
        majors: &["1"],
        size: 72_300_000,
        family: Family::Debian,
        entrypoint: &["/docker-entrypoint.sh"],
        cmd: &["nginx", "-g", "daemon off;"],
        server: Some((&["nginx", "docker-entrypoint.sh", "/docker-entrypoint.sh"], &[80], 8, Some("/usr/share/nginx/html"))),
        lacks: &["wget", "nslookup", "ps"],
    },
    Known {
        repo: "docker.io/library/busybox",
        majors: &["1"],
        size: 2_150_000,
        family: Family::Busybox,
        entrypoint: &[],
        cmd: &["sh"],
        server: None,
        lacks: SHELL_IMAGE_LACKS,
    },
    Known {
        repo: "registry.k8s.io/busybox",
        majors: &[],
        size: 1_150_000,
        family: Family::Busybox,
        entrypoint: &[],
        cmd: &["sh"],
        server: None,
        lacks: SHELL_IMAGE_LACKS,
    },
    Known {
        repo: "k8s.gcr.io/busybox",
        majors: &[],
        size: 1_150_000,
        family: Family::Busybox,
        entrypoint: &[],
        cmd: &["sh"],
        server: None,
        lacks: SHELL_IMAGE_LACKS,
    },
    Known {
        repo: "docker.io/library/alpine",
        majors: &["3"],
        size: 3_640_000,
        family: Family::Busybox,
        entrypoint: &[],
        cmd: &["/bin/sh"],
        server: None,
        lacks: SHELL_IMAGE_LACKS,
    },
    Known {
        repo: "docker.io/library/bash",
        majors: &["4", "5"],
        size: 6_300_000,
        family: Family::Busybox,
        entrypoint: ENTRY,
        cmd: &["bash"],
        server: None,
        lacks: &["curl"],
    },
    Known {
        repo: "docker.io/polinux/stress",
        majors: &[],
        size: 4_000_000,
        family: Family::Busybox,
        entrypoint: &[],
        cmd: &["stress"],
        server: None,
        lacks: SHELL_IMAGE_LACKS,
    },
    Known {
        repo: "docker.io/library/ubuntu",
        majors: &["20.04", "22.04", "24.04", "jammy", "noble", "focal"],
        size: 29_700_000,
        family: Family::Debian,
        entrypoint: &[],
        cmd: &["/bin/bash"],
        server: None,
        lacks: &["wget", "curl", "nslookup", "ps"],
    },
    Known {
        repo: "docker.io/library/debian",
        majors: &["11", "12", "13", "bookworm", "bullseye", "trixie"],
        size: 48_500_000,
        family: Family::Debian,
        entrypoint: &[],
        cmd: &["bash"],
        server: None,
        lacks: &["wget", "curl", "nslookup", "ps"],
    },
    Known {
        repo: "docker.io/library/fedora",
        majors: &["39", "40", "41", "42", "43"],
        size: 60_000_000,
        family: Family::Debian,
        entrypoint: &[],
        cmd: &["/bin/bash"],
        server: None,
        lacks: &["wget", "nslookup"],
    },
    Known {
        repo: "docker.io/library/redis",
        majors: &["5", "6", "7", "8"],
        size: 45_100_000,
        family: Family::Debian,
        entrypoint: ENTRY,
        cmd: &["redis-server"],
        server: Some((&["redis-server", "docker-entrypoint.sh"], &[6379], 4, None)),
        lacks: DEBIAN_LACKS,
    },
    Known {
        repo: "docker.io/library/postgres",
        majors: &["12", "13", "14", "15", "16", "17", "18"],
        size: 158_000_000,
        family: Family::Debian,
        entrypoint: ENTRY,
        cmd: &["postgres"],
        server: Some((&["postgres", "docker-entrypoint.sh"], &[5432], 30, None)),
        lacks: DEBIAN_LACKS,
    },
    Known {
        repo: "docker.io/library/mysql",
        majors: &["5", "8", "9"],
        size: 172_000_000,
        family: Family::Debian,
        entrypoint: ENTRY,
        cmd: &["mysqld"],
        server: Some((&["mysqld", "docker-entrypoint.sh"], &[3306, 33060], 360, None)),
        lacks: DEBIAN_LACKS,
    },
    Known {
        repo: "docker.io/library/httpd",
        majors: &["2"],
        size: 58_900_000,
        family: Family::Debian,
        entrypoint: &[],
        cmd: &["httpd-foreground"],
        server: Some((&["httpd-foreground", "httpd"], &[80], 10, Some("/usr/local/apache2/htdocs"))),
        lacks: DEBIAN_LACKS,
    },
    Known {
        repo: "docker.io/library/memcached",
        majors: &["1"],
        size: 30_600_000,
        family: Family::Debian,
        entrypoint: ENTRY,
        cmd: &["memcached"],
        server: Some((&["memcached", "docker-entrypoint.sh"], &[11211], 2, None)),
        lacks: DEBIAN_LACKS,
    },
    Known {
        repo: "docker.io/library/mongo",
        majors: &["5", "6", "7", "8"],
        size: 250_000_000,
        family: Family::Debian,
        entrypoint: ENTRY,
        cmd: &["mongod"],
        server: Some((&["mongod", "docker-entrypoint.sh"], &[27017], 150, None)),
        lacks: DEBIAN_LACKS,
    },
    Known {
        repo: "docker.io/library/rabbitmq",
        majors: &["3", "4"],
        size: 95_000_000,
        family: Family::Debian,
        entrypoint: ENTRY,
        cmd: &["rabbitmq-server"],
        server: Some((&["rabbitmq-server", "docker-entrypoint.sh"], &[5672, 4369, 25672], 120, None)),
        lacks: DEBIAN_LACKS,
    },
    Known {
        repo: "docker.io/library/wordpress",
        majors: &["4", "5", "6"],
        size: 250_000_000,
        family: Family::Debian,
        entrypoint: ENTRY,
        cmd: &["apache2-foreground"],
        server: Some((&["apache2-foreground", "docker-entrypoint.sh"], &[80], 60, Some("/var/www/html"))),
        lacks: DEBIAN_LACKS,
    },
    Known {
        repo: "docker.io/library/python",
        majors: &["3"],
        size: 370_000_000,
        family: Family::Debian,
        entrypoint: &[],
        cmd: &["python3"],
        server: None,
        lacks: &["nslookup"],
    },
    Known {
        repo: "docker.io/library/node",
        majors: &["18", "20", "22", "24"],
        size: 390_000_000,
        family: Family::Debian,
        entrypoint: ENTRY,
        cmd: &["node"],
        server: None,
        lacks: &["nslookup"],
    },
    Known {
        repo: "docker.io/library/golang",
        majors: &["1"],
        size: 300_000_000,
        family: Family::Debian,
        entrypoint: &[],
        cmd: &["bash"],
        server: None,
        lacks: &["nslookup"],
    },
    Known {
        repo: "docker.io/library/perl",
        majors: &["5"],
        size: 330_000_000,
        family: Family::Debian,
        entrypoint: &[],
        cmd: &["perl", "-de0"],
        server: None,
        lacks: &["nslookup"],
    },
    Known {
        repo: "docker.io/library/cassandra",
        majors: &["3", "4", "5"],
        size: 150_000_000,
        family: Family::Debian,
        entrypoint: ENTRY,
        cmd: &["cassandra", "-f"],
        server: Some((&["cassandra", "docker-entrypoint.sh"], &[9042, 7000, 7001, 7199], 700, None)),
        lacks: DEBIAN_LACKS,
    },
    Known {
        repo: "docker.io/library/zookeeper",
        majors: &["3"],
        size: 130_000_000,
        family: Family::Debian,
        entrypoint: ENTRY,
        cmd: &["zkServer.sh", "start-foreground"],
        server: Some((&["zkServer.sh", "docker-entrypoint.sh"], &[2181, 2888, 3888, 8080], 200, None)),
        lacks: DEBIAN_LACKS,
    },
];

/// Programs an image carries beyond the common tools.
fn image_programs(repo: &str) -> &'static [&'static str] {
    match repo {
        "docker.io/library/nginx" => &["nginx", "perl"],
        "docker.io/library/redis" => &["redis-cli", "perl"],
        "docker.io/library/mysql" => &["mysql", "mysqladmin", "perl"],
        "docker.io/library/postgres" => &["pg_isready", "perl"],
        "docker.io/library/perl" => &["perl"],
        "docker.io/library/python" => &["python", "python3", "perl"],
        "docker.io/library/node" => &["node", "perl"],
        "docker.io/polinux/stress" => &["stress"],
        "docker.io/library/debian" | "docker.io/library/ubuntu" | "docker.io/library/golang" => &["perl"],
        _ => &[],
    }
}

fn tag_ok(tag: &str, majors: &[&str]) -> bool {
    if majors.is_empty() || ["latest", "stable", "alpine", "mainline", "slim", "bookworm"].contains(&tag) {
        return true;
    }
    let ok_chars = tag.chars().all(|c| c.is_ascii_alphanumeric() || ".-_".contains(c));
    ok_chars && majors.iter().any(|m| tag == *m || tag.starts_with(&format!("{m}.")) || tag.starts_with(&format!("{m}-")))
}

/// The outcome of a pull.
#[derive(Debug, Clone, PartialEq)]
pub enum Pull {
    Ok {
        behaviour: Box<Behaviour>,
        digest: String,
    },
    /// The CRI error text (`rpc error: code = NotFound desc = ...`).
    Err(String),
    /// The reference cannot be parsed (`InvalidImageName`).
    Invalid(String),
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Registry {
    /// Images a scenario declares, by the reference as written and as normalised.
    pub declared: BTreeMap<String, Behaviour>,
    /// Images a scenario declares as absent from their registry.
    pub missing: std::collections::BTreeSet<String>,
    /// Loads a scenario sets on images, by normalised reference.
    pub loads: BTreeMap<String, Load>,
}

impl Registry {
    pub fn declare(&mut self, image: &str, b: Behaviour) {
        if let Some(r) = Reference::parse(image) {
            self.declared.insert(r.full(), b.clone());
        }
        self.declared.insert(image.to_string(), b);
    }

    /// A scenario's load for an image, whatever else it does.
    pub fn load(&mut self, image: &str, l: Load) {
        let key = Reference::parse(image).map(|r| r.full()).unwrap_or_else(|| image.to_string());
        self.loads.insert(key, l);
    }

    /// What pulling `image` gives, with the scenario's load for it.
    pub fn pull(&self, image: &str) -> Pull {
        let key = Reference::parse(image).map(|r| r.full()).unwrap_or_else(|| image.to_string());
        match (self.pull_image(image), self.loads.get(&key)) {
            (Pull::Ok { mut behaviour, digest }, Some(l)) => {
                behaviour.load = Some(*l);
                Pull::Ok { behaviour, digest }
            }
            (p, _) => p,
        }
    }

    fn pull_image(&self, image: &str) -> Pull {
        let Some(r) = Reference::parse(image) else {
            return Pull::Invalid(format!("Failed to apply default image tag {image:?}: couldn't parse image name {image:?}: invalid reference format"));
        };
        let full = r.full();
        if self.missing.contains(image) || self.missing.contains(&full) {
            return Pull::Err(format!(
                "rpc error: code = NotFound desc = failed to pull and unpack image {full:?}: failed to resolve reference {full:?}: {full}: not found"
            ));
        }
        if let Some(b) = self.declared.get(image).or_else(|| self.declared.get(&full)) {
            return Pull::Ok { behaviour: Box::new(b.clone()), digest: r.digest() };
        }
        let repo_path = format!("{}/{}", r.registry, r.repository);
        if let Some(k) = CATALOGUE.iter().find(|k| k.repo == repo_path) {
            if tag_ok(&r.tag, k.majors) {
                let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
                let b = Behaviour {
                    family: k.family,
                    entrypoint: strings(k.entrypoint),
                    cmd: strings(k.cmd),
                    server: k.server.map(|(programs, ports, mib, root)| Server {
                        programs: strings(programs),
                        ports: ports.to_vec(),
                        memory: mib << 20,
                        web_root: root.map(str::to_string),
                    }),
                    lacks: strings(k.lacks),
                    programs: image_programs(&repo_path).iter().map(|s| s.to_string()).collect(),
                    size: k.size,
                    pull_ms: 500 + k.size / 25_000,
                    logs: default_logs(&repo_path),
                    user: Some(image_user(&repo_path).into()),
                    ..Behaviour::default()
                };
                return Pull::Ok { behaviour: Box::new(b), digest: r.digest() };
            }
            return Pull::Err(format!(
                "rpc error: code = NotFound desc = failed to pull and unpack image {full:?}: failed to resolve reference {full:?}: {full}: not found"
            ));
        }
        if let Some(p) = bootcamp(&r) {
            return p;
        }
        let trusted = ["registry.k8s.io", "k8s.gcr.io", "gcr.io", "us.gcr.io", "us-docker.pkg.dev", "registry.example", "quay.io"];
        if trusted.contains(&r.registry.as_str()) {
            let mut b = Behaviour { size: 24_000_000, pull_ms: 1200, logs: vec![], ..Behaviour::default() };
            // The docs' liveness demo: `/healthz` answers 200 for ten seconds, then 500.
            if r.repository == "liveness" || r.repository.ends_with("/liveness") {
                b.unhealthy_after_ms = Some(10_000);
            }
            // The docs' HorizontalPodAutoscaler walkthrough: php-apache answering "OK!" on
            // port 80 after a million square roots, about 7 ms of CPU a request.
            if r.repository == "hpa-example" || r.repository.ends_with("/hpa-example") {
                b.family = Family::Debian;
                b.entrypoint = vec!["docker-php-entrypoint".into()];
                b.cmd = vec!["apache2-foreground".into()];
                b.server = Some(Server {
                    programs: vec!["apache2-foreground".into(), "docker-php-entrypoint".into()],
                    ports: vec![80],
                    memory: 11 << 20,
                    web_root: None,
                });
                b.lacks = vec!["wget".into(), "nslookup".into(), "ps".into()];
                b.reply = Some("OK!".into());
                b.request_cpu_us = 7_000;
            }
            return Pull::Ok { behaviour: Box::new(b), digest: r.digest() };
        }
        if r.registry == "docker.io" {
            return Pull::Err(format!(
                "rpc error: code = Unknown desc = failed to pull and unpack image {full:?}: failed to resolve reference {full:?}: pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed"
            ));
        }
        let host = &r.registry;
        Pull::Err(format!(
            "rpc error: code = Unknown desc = failed to pull and unpack image {full:?}: failed to resolve reference {full:?}: failed to do request: Head \"https://{host}/v2/{}/manifests/{}\": dial tcp: lookup {host}: no such host",
            r.repository, r.tag
        ))
    }
}

/// The "Learn Kubernetes Basics" tutorial's app: a Node.js server on port 8080 that names
/// the pod it runs in and its version (`gcr.io/google-samples/kubernetes-bootcamp:v1`, and
/// `docker.io/jocatalin/kubernetes-bootcamp:v2` for the rolling update). Other tags do not
/// exist (the tutorial's `v10` shows a failed update).
fn bootcamp(r: &Reference) -> Option<Pull> {
    let version = match (r.registry.as_str(), r.repository.as_str()) {
        ("gcr.io", "google-samples/kubernetes-bootcamp") => "v1",
        ("docker.io", "jocatalin/kubernetes-bootcamp") => "v2",
        _ => return None,
    };
    let full = r.full();
    if r.tag != version {
        return Some(Pull::Err(format!(
            "rpc error: code = NotFound desc = failed to pull and unpack image {full:?}: failed to resolve reference {full:?}: {full}: not found"
        )));
    }
    let b = Behaviour {
        family: Family::Debian,
        entrypoint: vec![],
        cmd: vec!["/bin/sh".into(), "-c".into(), "node server.js".into()],
        server: Some(Server { programs: vec!["node".into(), "/bin/sh".into()], ports: vec![8080], memory: 20 << 20, web_root: None }),
        lacks: DEBIAN_LACKS.iter().map(|s| s.to_string()).collect(),
        size: 80_000_000,
        pull_ms: 500 + 80_000_000 / 25_000,
        logs: vec!["Kubernetes Bootcamp App Started At: {js-time} | Running On:  {hostname} ".into()],
        reply: Some(format!("Hello Kubernetes bootcamp! | Running on: {{hostname}} | v={}\n", &version[1..])),
        user: Some(String::new()),
        ..Behaviour::default()
    };
    Some(Pull::Ok { behaviour: Box::new(b), digest: r.digest() })
}

/// The `User` of a catalogued image's config: memcached runs as `memcache`; the others
/// start as root (some drop to a user of their own with `gosu` in their entrypoint).
fn image_user(repo: &str) -> &'static str {
    match repo {
        "docker.io/library/memcached" => "memcache",
        _ => "",
    }
}

/// What an image's process prints when it starts; `{nginx-time}`, `{redis-time}` and
/// `{js-time}` are the start time in those programs' formats and `{hostname}` the pod's,
/// filled in by the kubelet.
fn default_logs(repo: &str) -> Vec<String> {
    match repo {
        "docker.io/library/nginx" => vec![
            "/docker-entrypoint.sh: /docker-entrypoint.d/ is not empty, will attempt to perform configuration".into(),
            "/docker-entrypoint.sh: Looking for shell scripts in /docker-entrypoint.d/".into(),
            "/docker-entrypoint.sh: Configuration complete; ready for start up".into(),
            "{nginx-time} [notice] 1#1: start worker processes".into(),
        ],
        "docker.io/library/redis" => vec!["1:M {redis-time} * Ready to accept connections tcp".into()],
        "docker.io/library/postgres" => vec!["LOG:  database system is ready to accept connections".into()],
        _ => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_normalise_like_containerd() {
        assert_eq!(Reference::parse("nginx").unwrap().full(), "docker.io/library/nginx:latest");
        assert_eq!(Reference::parse("nginx:1.25").unwrap().full(), "docker.io/library/nginx:1.25");
        assert_eq!(Reference::parse("registry.k8s.io/pause:3.10").unwrap().full(), "registry.k8s.io/pause:3.10");
        assert_eq!(Reference::parse("localhost:5000/app").unwrap().full(), "localhost:5000/app:latest");
        assert_eq!(Reference::parse("bitnami/redis:7").unwrap().full(), "docker.io/bitnami/redis:7");
        assert!(Reference::parse("Nginx").is_none());
    }

    #[test]
    fn pulls_succeed_or_fail_as_a_registry_would() {
        let r = Registry::default();
        assert!(matches!(r.pull("nginx:1.14.2"), Pull::Ok { .. }));
        assert!(matches!(r.pull("registry.example/checkout:1.4.2"), Pull::Ok { .. }));
        match r.pull("nginxx:1.0") {
            Pull::Err(e) => assert!(e.contains("pull access denied"), "{e}"),
            other => panic!("{other:?}"),
        }
        match r.pull("nginx:9.9") {
            Pull::Err(e) => assert!(e.ends_with("docker.io/library/nginx:9.9: not found"), "{e}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(r.pull("Bad Image"), Pull::Invalid(_)));
    }
}
