//! The simulated image registry: what the container runtime can pull and how the
//! resulting containers behave.
//!
//! Known: a catalogue of common public images (nginx, busybox, redis, postgres, ...),
//! anything under `registry.k8s.io/`, the Google sample registries the Kubernetes docs
//! use, and anything under `registry.example/`, plus the images a scenario declares with
//! their behaviour. Anything else fails to pull with the error a real registry gives.

use crate::foundation::sim::Millis;
use std::collections::BTreeMap;

/// How a pulled image behaves once started.
#[derive(Debug, Clone, PartialEq)]
pub struct Behaviour {
    /// Compressed size in bytes (Pulled events print it).
    pub size: u64,
    /// Time the pull takes, excluding waiting for earlier pulls.
    pub pull_ms: Millis,
    /// Exits with code 1 this long after starting.
    pub crash_after_ms: Option<Millis>,
    /// Exits 0 right away unless the pod gives a command (busybox, alpine, ...).
    pub needs_command: bool,
    /// Readiness probes never pass.
    pub never_ready: bool,
    /// Readiness probes pass only this long after the container starts.
    pub ready_after_ms: Millis,
    /// Ignores SIGTERM: stopping takes the whole grace period.
    pub ignores_sigterm: bool,
    /// Lines the container writes to stdout when it starts.
    pub logs: Vec<String>,
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            size: 20_000_000,
            pull_ms: 1500,
            crash_after_ms: None,
            needs_command: false,
            never_ready: false,
            ready_after_ms: 0,
            ignores_sigterm: false,
            logs: vec![],
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

/// Catalogue entry: repository, known major versions (empty: any tag), size, flags.
struct Known {
    repo: &'static str,
    majors: &'static [&'static str],
    size: u64,
    needs_command: bool,
    ignores_sigterm: bool,
}

const CATALOGUE: &[Known] = &[
    Known { repo: "docker.io/library/nginx", majors: &["1"], size: 72_300_000, needs_command: false, ignores_sigterm: false },
    Known { repo: "docker.io/library/busybox", majors: &["1"], size: 2_150_000, needs_command: true, ignores_sigterm: true },
    Known { repo: "docker.io/library/alpine", majors: &["3"], size: 3_640_000, needs_command: true, ignores_sigterm: true },
    Known {
        repo: "docker.io/library/ubuntu",
        majors: &["20.04", "22.04", "24.04", "jammy", "noble", "focal"],
        size: 29_700_000,
        needs_command: true,
        ignores_sigterm: true,
    },
    Known {
        repo: "docker.io/library/debian",
        majors: &["11", "12", "13", "bookworm", "bullseye", "trixie"],
        size: 48_500_000,
        needs_command: true,
        ignores_sigterm: true,
    },
    Known { repo: "docker.io/library/redis", majors: &["5", "6", "7", "8"], size: 45_100_000, needs_command: false, ignores_sigterm: false },
    Known {
        repo: "docker.io/library/postgres",
        majors: &["12", "13", "14", "15", "16", "17", "18"],
        size: 158_000_000,
        needs_command: false,
        ignores_sigterm: false,
    },
    Known { repo: "docker.io/library/mysql", majors: &["5", "8", "9"], size: 172_000_000, needs_command: false, ignores_sigterm: false },
    Known { repo: "docker.io/library/httpd", majors: &["2"], size: 58_900_000, needs_command: false, ignores_sigterm: false },
    Known { repo: "docker.io/library/memcached", majors: &["1"], size: 30_600_000, needs_command: false, ignores_sigterm: false },
    Known { repo: "docker.io/library/mongo", majors: &["5", "6", "7", "8"], size: 250_000_000, needs_command: false, ignores_sigterm: false },
    Known { repo: "docker.io/library/rabbitmq", majors: &["3", "4"], size: 95_000_000, needs_command: false, ignores_sigterm: false },
    Known { repo: "docker.io/library/wordpress", majors: &["4", "5", "6"], size: 250_000_000, needs_command: false, ignores_sigterm: false },
    Known { repo: "docker.io/library/python", majors: &["3"], size: 370_000_000, needs_command: true, ignores_sigterm: true },
    Known { repo: "docker.io/library/node", majors: &["18", "20", "22", "24"], size: 390_000_000, needs_command: true, ignores_sigterm: true },
    Known { repo: "docker.io/library/golang", majors: &["1"], size: 300_000_000, needs_command: true, ignores_sigterm: true },
    Known { repo: "docker.io/library/perl", majors: &["5"], size: 330_000_000, needs_command: true, ignores_sigterm: true },
    Known { repo: "docker.io/library/cassandra", majors: &["3", "4", "5"], size: 150_000_000, needs_command: false, ignores_sigterm: false },
    Known { repo: "docker.io/library/zookeeper", majors: &["3"], size: 130_000_000, needs_command: false, ignores_sigterm: false },
];

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
        behaviour: Behaviour,
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
}

impl Registry {
    pub fn declare(&mut self, image: &str, b: Behaviour) {
        if let Some(r) = Reference::parse(image) {
            self.declared.insert(r.full(), b.clone());
        }
        self.declared.insert(image.to_string(), b);
    }

    /// What pulling `image` gives.
    pub fn pull(&self, image: &str) -> Pull {
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
            return Pull::Ok { behaviour: b.clone(), digest: r.digest() };
        }
        let repo_path = format!("{}/{}", r.registry, r.repository);
        if let Some(k) = CATALOGUE.iter().find(|k| k.repo == repo_path) {
            if tag_ok(&r.tag, k.majors) {
                let b = Behaviour {
                    size: k.size,
                    pull_ms: 500 + k.size / 25_000,
                    needs_command: k.needs_command,
                    ignores_sigterm: k.ignores_sigterm,
                    logs: default_logs(&repo_path),
                    ..Behaviour::default()
                };
                return Pull::Ok { behaviour: b, digest: r.digest() };
            }
            return Pull::Err(format!(
                "rpc error: code = NotFound desc = failed to pull and unpack image {full:?}: failed to resolve reference {full:?}: {full}: not found"
            ));
        }
        let trusted = ["registry.k8s.io", "gcr.io", "us-docker.pkg.dev", "registry.example", "quay.io"];
        if r.registry == "registry.example" || (trusted.contains(&r.registry.as_str()) && r.registry != "quay.io") {
            let b = Behaviour { size: 24_000_000, pull_ms: 1200, logs: vec![], ..Behaviour::default() };
            return Pull::Ok { behaviour: b, digest: r.digest() };
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

/// What an image's process prints when it starts; `{nginx-time}` and `{redis-time}` are
/// the start time in those programs' formats, filled in by the kubelet.
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
