//! `kubeloop serve`'s request path without sockets: any request (method and target on the
//! first line, headers up to an empty line, then the body) is answered from a copy of a
//! cluster running a Deployment, with a status code or a stream, never a panic.
#![no_main]
use kubeloop_cli::serve::Harness;
use kubeloop_core::apiserver::{Credentials, Request};
use kubeloop_core::cluster::{Cluster, Config};
use kubeloop_core::foundation::api::rid;
use kubeloop_core::foundation::manifest;
use std::sync::OnceLock;

const WEB: &str = "{\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\", \"metadata\": {\"name\": \"web\", \"namespace\": \"default\"}, \"spec\": {\"replicas\": 2, \"selector\": {\"matchLabels\": {\"app\": \"web\"}}, \"template\": {\"metadata\": {\"labels\": {\"app\": \"web\"}}, \"spec\": {\"containers\": [{\"name\": \"nginx\", \"image\": \"nginx:1.27\", \"ports\": [{\"containerPort\": 80}]}]}}}}";

fn cluster() -> Cluster {
    let mut c = Cluster::new(Config::default());
    let web = manifest::parse_value(WEB).expect("the Deployment parses");
    c.api.handle(Request::create(rid::DEPLOYMENT, "default", web, Credentials::Token("admin-token".into()))).expect("the Deployment is stored");
    // Its pods are scheduled and running.
    c.run_until(30_000);
    c
}

static HARNESS: OnceLock<Harness> = OnceLock::new();

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let harness = HARNESS.get_or_init(|| Harness::new(cluster));
    let Some(head_end) = data.windows(2).position(|w| w == b"\n\n") else { return };
    let Ok(head) = std::str::from_utf8(&data[..head_end]) else { return };
    let body = data[head_end + 2..].to_vec();
    let mut lines = head.lines();
    let Some((method, target)) = lines.next().and_then(|l| l.split_once(' ')) else { return };
    if !target.starts_with('/') {
        return;
    }
    let headers = lines.filter_map(|l| l.split_once(": ")).map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let _ = harness.answer(method, target, headers, body);
});
