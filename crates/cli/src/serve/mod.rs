//! `kubeloop serve`: the engine behind a Kubernetes API that real clients can use.
//!
//! The cluster runs in wall-clock time (scaled by `--speed`) on its own thread, which
//! advances the simulation toward "now" in short slices and runs requests in arrival
//! order. Connections are served by hyper on a small tokio runtime (`front.rs`); each
//! request is handed to the cluster thread as a closure. Watch streams wait on a condition
//! variable that the cluster thread signals whenever the store's revision moves. The core
//! stays deterministic and single-threaded; the clock and the threads live only here.

mod api;
mod discovery;
mod front;
mod gojson;
mod http;
mod portforward;
mod protobuf;
mod spdy;
mod watch;

use kubeloop_core::cluster::scenario::{add_file, Scenario};
use kubeloop_core::cluster::{Cluster, Config, Step};
use kubeloop_core::foundation::sim::Millis;
use kubeloop_core::foundation::status::Status;
use std::io::Write;
use std::net::TcpListener;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The fastest the clock may run: at 1000x a simulated day passes in under 90 s, already
/// more than a cluster of any size simulates in that time.
const MAX_SPEED: f64 = 1000.0;
/// The longest the cluster thread simulates before it serves the requests waiting: when
/// the simulation has more to do than the clock allows, it falls behind instead of
/// keeping clients waiting.
const SIMULATION_SLICE: Duration = Duration::from_millis(20);

/// Work for the cluster thread: a closure run with the cluster, its answer sent back.
type Job = Box<dyn FnOnce(&mut Cluster) + Send>;

pub struct Shared {
    jobs: mpsc::Sender<Job>,
    /// The store's revision, updated and signalled by the cluster thread on every change.
    revision: Mutex<u64>,
    changed: Condvar,
    /// `host:port` clients reach the server at.
    address: String,
    /// Whether the simulated API server is down (a scenario's `apiserverDown`): the port
    /// is then closed, so that clients meet a refused connection as they would.
    down: AtomicBool,
}

impl Shared {
    /// Run `f` on the cluster thread and wait for its answer. A panic there is answered
    /// with a 500 and the cluster thread carries on with the next request.
    pub fn with<R: Send + 'static>(&self, f: impl FnOnce(&mut Cluster) -> R + Send + 'static) -> Result<R, Status> {
        let (tx, rx) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |c| {
            let _ = tx.send(f(c));
        });
        let sent = self.jobs.send(job);
        if sent.is_err() {
            return Err(Status::new(503, "ServiceUnavailable", "the cluster has stopped"));
        }
        rx.recv().map_err(|_| Status::internal("the request could not be served (a kubeloop bug); the server is still running"))
    }

    /// Wait until the store's revision passes `seen`, or `timeout`; returns the revision.
    pub fn wait_change(&self, seen: u64, timeout: Duration) -> u64 {
        let g = self.revision.lock().unwrap_or_else(|e| e.into_inner());
        let (g, _) = self.changed.wait_timeout_while(g, timeout, |r| *r <= seen).unwrap_or_else(|e| e.into_inner());
        *g
    }

    pub fn api_down(&self) -> bool {
        self.down.load(Ordering::SeqCst)
    }

    fn publish(&self, revision: u64) {
        let mut g = self.revision.lock().unwrap_or_else(|e| e.into_inner());
        if *g != revision {
            *g = revision;
            self.changed.notify_all();
        }
    }
}

/// The cluster's own thread: it owns the cluster (whose loops and CEL engine stay on one
/// thread, as in the page), runs requests in arrival order and keeps simulated time level
/// with the wall clock, scaled by `speed`.
fn cluster_thread(config: Config, steps: Vec<Step>, jobs: mpsc::Receiver<Job>, shared: Arc<Shared>, speed: f64) {
    let mut cluster = Cluster::new(config);
    cluster.add_steps(steps);
    let start = Instant::now();
    let tick = Duration::from_millis(10);
    let mut next_tick = Instant::now();
    let mut behind_since: Option<Instant> = None;
    let mut reported = Instant::now();
    loop {
        let wait = next_tick.saturating_duration_since(Instant::now());
        let first = match jobs.recv_timeout(wait) {
            Ok(job) => Some(job),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        };
        // Every request waiting is served before the simulation runs on.
        for job in first.into_iter().chain(std::iter::from_fn(|| jobs.try_recv().ok())) {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&mut cluster)));
            shared.publish(cluster.api.store.revision());
        }
        if Instant::now() >= next_tick {
            let target = (start.elapsed().as_secs_f64() * 1000.0 * speed) as Millis;
            let deadline = Instant::now() + SIMULATION_SLICE;
            let caught_up =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cluster.run_until_within(target, || Instant::now() < deadline))).unwrap_or(true);
            behind_since = if caught_up { None } else { behind_since.or(Some(Instant::now())) };
            if let Some(since) = behind_since {
                if since.elapsed() > Duration::from_secs(5) && reported.elapsed() > Duration::from_secs(30) {
                    reported = Instant::now();
                    let behind = target.saturating_sub(cluster.now) / 1000;
                    eprintln!(
                        "kubeloop: the simulation is running {behind}s behind the clock (more work than --speed {speed} allows); requests are still served"
                    );
                }
            }
            next_tick = Instant::now() + tick;
        }
        shared.publish(cluster.api.store.revision());
        shared.down.store(cluster.api.down_since.is_some(), Ordering::SeqCst);
    }
}

/// The serving certificate and the CA that signed it (a fresh pair per run, kept in
/// memory): client-go sends bearer tokens only over TLS, so the API is served over HTTPS
/// and the kubeconfig carries the CA.
struct Tls {
    config: Arc<rustls::ServerConfig>,
    ca_pem: String,
}

fn tls(host: &str) -> Result<Tls, String> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose};
    let err = |e: rcgen::Error| e.to_string();
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "kubeloop-ca");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::CrlSign];
    let ca_key = KeyPair::generate().map_err(err)?;
    let ca_cert = ca.self_signed(&ca_key).map_err(err)?;
    let mut names = vec!["localhost".to_string(), "127.0.0.1".to_string(), "kubernetes".into(), "kubernetes.default.svc".into()];
    if !names.iter().any(|n| n == host) {
        names.push(host.to_string());
    }
    let mut leaf = CertificateParams::new(names).map_err(err)?;
    leaf.distinguished_name.push(DnType::CommonName, "kube-apiserver");
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    let leaf_key = KeyPair::generate().map_err(err)?;
    let leaf_cert = leaf.signed_by(&leaf_key, &ca_cert, &ca_key).map_err(err)?;
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(vec![leaf_cert.der().clone()], key)
        .map_err(|e| e.to_string())?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Tls { config: Arc::new(config), ca_pem: ca_cert.pem() })
}

/// A fresh admin token per start: 32 hex digits from the operating system's randomness.
fn random_token() -> std::io::Result<String> {
    use std::io::Read as _;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Write the kubeconfig readable by its owner only (it holds the admin token).
fn write_private(path: &str, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    use std::os::unix::fs::PermissionsExt as _;
    let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)?;
    // An existing file keeps its mode on open: narrow it too.
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    f.write_all(text.as_bytes())
}

fn kubeconfig(address: &str, ca_pem: &str, admin_token: &str, users: &[(String, String, Vec<String>)]) -> String {
    use base64::Engine as _;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let mut s = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kubeloop\n  cluster:\n    certificate-authority-data: {ca}\n    server: https://{address}\ncontexts:\n- name: kubeloop\n  context:\n    cluster: kubeloop\n    user: admin\n    namespace: default\n"
    );
    for (name, _, _) in users {
        s.push_str(&format!("- name: {name}@kubeloop\n  context:\n    cluster: kubeloop\n    user: {name}\n    namespace: default\n"));
    }
    s.push_str(&format!("current-context: kubeloop\nusers:\n- name: admin\n  user:\n    token: {admin_token}\n"));
    for (name, token, _) in users {
        s.push_str(&format!("- name: {name}\n  user:\n    token: {token:?}\n"));
    }
    s.push_str("preferences: {}\n");
    s
}

pub fn serve(args: &[String]) -> ExitCode {
    crate::install_api_docs();
    let flag = |name: &str| crate::flag(args, name);
    let addr = flag("--addr").unwrap_or("127.0.0.1:6443").to_string();
    let speed = match flag("--speed").map(str::parse::<f64>) {
        None => 1.0,
        Some(Ok(s)) if s > 0.0 && s <= MAX_SPEED => s,
        Some(_) => {
            eprintln!("error: --speed must be a number above 0 and at most {MAX_SPEED}\n\n{}", crate::command_usage("serve"));
            return ExitCode::from(2);
        }
    };
    let seed = match flag("--seed").map(str::parse::<u64>) {
        None => None,
        Some(Ok(s)) => Some(s),
        Some(Err(_)) => {
            eprintln!("error: --seed must be a non-negative integer\n\n{}", crate::command_usage("serve"));
            return ExitCode::from(2);
        }
    };
    let kubeconfig_path = flag("--kubeconfig").unwrap_or("kubeloop.kubeconfig").to_string();
    let mut sc = Scenario::default();
    for f in crate::positional(args) {
        match std::fs::read_to_string(f) {
            Ok(text) => add_file(&mut sc, f, &text),
            Err(e) => {
                eprintln!("error: cannot read {f}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if !sc.errors.is_empty() {
        for e in &sc.errors {
            eprintln!("{e}");
        }
        return ExitCode::FAILURE;
    }
    let listener = match TcpListener::bind(&addr) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: cannot listen on {addr}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let address = listener.local_addr().map(|a| a.to_string()).unwrap_or(addr);
    // Simulated time 0 is now, so that timestamps read as current to clients.
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
    kubeloop_core::foundation::sim::set_epoch(now);
    let mut config: Config = sc.config(seed, false);
    config.admin_token = match random_token() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot make an admin token: {e}");
            return ExitCode::FAILURE;
        }
    };
    let users = config.users.clone();
    let host = address.rsplit_once(':').map(|(h, _)| h.trim_matches(['[', ']'])).unwrap_or("127.0.0.1");
    let tls = match tls(host) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot make a serving certificate: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = write_private(&kubeconfig_path, &kubeconfig(&address, &tls.ca_pem, &config.admin_token, &users)) {
        eprintln!("error: cannot write {kubeconfig_path}: {e}");
        return ExitCode::FAILURE;
    }
    let (tx, rx) = mpsc::channel();
    let shared = Arc::new(Shared { jobs: tx, revision: Mutex::new(0), changed: Condvar::new(), address: address.clone(), down: AtomicBool::new(false) });
    // Nothing here may fail the server: whoever started it may have stopped reading.
    let mut out = std::io::stdout();
    let _ = writeln!(out, "kubeloop is serving the Kubernetes API on https://{address} (speed {speed}x)");
    let _ = writeln!(
        out,
        "kubeconfig written to {kubeconfig_path}; contexts: kubeloop (admin){}",
        users.iter().map(|u| format!(", {}@kubeloop", u.0)).collect::<String>()
    );
    let _ = writeln!(out, "try: kubectl --kubeconfig {kubeconfig_path} get nodes");
    let _ = out.flush();
    let for_cluster = Arc::clone(&shared);
    let steps = sc.steps.clone();
    std::thread::spawn(move || cluster_thread(config, steps, rx, for_cluster, speed));
    if let Err(e) = front::run(listener, tls.config, shared) {
        eprintln!("error: cannot serve: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// `serve`'s request path without sockets or TLS, for the fuzz targets and the API layer's
/// tests: a cluster thread as `serve` has, whose clock stands still, and the API layer's
/// `route` in front of it.
pub struct Harness {
    shared: Arc<Shared>,
}

thread_local! {
    /// The cluster each [`Harness::answer`] starts from (on the cluster thread).
    static BASE: std::cell::RefCell<Option<Cluster>> = const { std::cell::RefCell::new(None) };
}

impl Harness {
    /// A cluster thread serving the cluster `make` builds (on that thread: a cluster stays on
    /// one thread).
    pub fn new(make: fn() -> Cluster) -> Harness {
        let (tx, rx) = mpsc::channel::<Job>();
        let shared =
            Arc::new(Shared { jobs: tx, revision: Mutex::new(0), changed: Condvar::new(), address: "127.0.0.1:6443".into(), down: AtomicBool::new(false) });
        let weak = Arc::downgrade(&shared);
        std::thread::spawn(move || {
            let base = make();
            let mut cluster = base.clone();
            BASE.with(|b| *b.borrow_mut() = Some(base));
            for job in rx {
                job(&mut cluster);
                if let Some(s) = weak.upgrade() {
                    s.publish(cluster.api.store.revision());
                }
            }
        });
        Harness { shared }
    }

    /// Answer one request (`target` is `/path?query`) from a fresh copy of the cluster, so
    /// that the answer depends on this request alone: the response's status code, or `None`
    /// for a reply that streams or upgrades to a WebSocket (not run further).
    pub fn answer(&self, method: &str, target: &str, headers: Vec<(String, String)>, body: Vec<u8>) -> Option<u16> {
        let _ = self.shared.with(|c| {
            if let Some(base) = BASE.with(|b| b.borrow().clone()) {
                *c = base;
            }
        });
        match api::route(&self.shared, &http::Request::new(method, target, headers, body)) {
            api::Reply::Whole(r) => Some(r.code),
            _ => None,
        }
    }
}

/// A `Shared` whose cluster thread serves requests on a default cluster whose clock stands
/// still, for the API layer's tests (admin token `admin-token`).
#[cfg(test)]
pub(crate) fn standing_cluster() -> Arc<Shared> {
    Harness::new(|| Cluster::new(Config::default())).shared
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_harness_answers_each_request_from_the_same_cluster() {
        let h = super::Harness::new(|| super::Cluster::new(super::Config::default()));
        let admin = || vec![("Authorization".to_string(), "Bearer admin-token".to_string()), ("Content-Type".to_string(), "application/json".to_string())];
        let cm = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#.to_vec();
        // Each create meets a cluster without the ConfigMap: neither is a 409.
        assert_eq!(h.answer("POST", "/api/v1/namespaces/default/configmaps", admin(), cm.clone()), Some(201));
        assert_eq!(h.answer("POST", "/api/v1/namespaces/default/configmaps", admin(), cm), Some(201));
        assert_eq!(h.answer("GET", "/api/v1/namespaces/default/configmaps/a", admin(), vec![]), Some(404));
        assert_eq!(h.answer("GET", "/api/v1/namespaces/default/configmaps", vec![], vec![]), Some(401));
        assert_eq!(h.answer("GET", "/api/v1/namespaces/default/configmaps?watch=true", admin(), vec![]), None);
    }

    #[test]
    fn the_admin_token_is_random_and_the_kubeconfig_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let (a, b) = (super::random_token().unwrap(), super::random_token().unwrap());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        let path = std::env::temp_dir().join(format!("kubeloop-test-{a}.kubeconfig"));
        let p = path.to_str().unwrap();
        std::fs::write(p, "old").unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o644)).unwrap();
        super::write_private(p, "new").unwrap();
        assert_eq!(std::fs::metadata(p).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(p).unwrap(), "new");
        std::fs::remove_file(p).unwrap();
    }

    #[test]
    fn kubeconfig_has_a_context_per_user() {
        let k = super::kubeconfig("127.0.0.1:1234", "PEM", "0123abcd", &[("ajay".into(), "t1".into(), vec![])]);
        assert!(k.contains("- name: admin\n  user:\n    token: 0123abcd\n"));
        assert!(k.contains("server: https://127.0.0.1:1234"));
        assert!(k.contains("certificate-authority-data: UEVN\n"));
        assert!(k.contains("current-context: kubeloop\n"));
        assert!(k.contains("- name: ajay@kubeloop\n  context:\n    cluster: kubeloop\n    user: ajay\n"));
        assert!(k.contains("- name: ajay\n  user:\n    token: \"t1\"\n"));
    }
}
