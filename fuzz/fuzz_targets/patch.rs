//! Patches through the API server's whole request path: JSON merge, strategic merge,
//! JSON patch and server-side apply, of any body, on a stored Deployment; the answer is
//! the stored object or a Status, never a panic. Each input starts from a copy of the same
//! API server.
#![no_main]
use kubeloop_core::apiserver::{ApiServer, Credentials, PatchType, Request};
use kubeloop_core::cluster::{Cluster, Config};
use kubeloop_core::foundation::api::rid;
use kubeloop_core::foundation::manifest;

const WEB: &str = "{\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\", \"metadata\": {\"name\": \"web\", \"namespace\": \"default\"}, \"spec\": {\"replicas\": 2, \"selector\": {\"matchLabels\": {\"app\": \"web\"}}, \"template\": {\"metadata\": {\"labels\": {\"app\": \"web\"}}, \"spec\": {\"containers\": [{\"name\": \"nginx\", \"image\": \"nginx:1.27\", \"ports\": [{\"containerPort\": 80}]}]}}}}";

fn admin() -> Credentials {
    Credentials::Token("admin-token".into())
}

thread_local! {
    static BASE: ApiServer = {
        let mut c = Cluster::new(Config::default());
        let web = manifest::parse_value(WEB).expect("the Deployment parses");
        c.api.handle(Request::create(rid::DEPLOYMENT, "default", web, admin())).expect("the Deployment is stored");
        c.api
    };
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((first, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let Ok(body) = manifest::parse_value(text) else { return };
    let ty = match first % 5 {
        0 => PatchType::Merge,
        1 => PatchType::Strategic,
        2 => PatchType::Json,
        3 => PatchType::Apply { force: false },
        _ => PatchType::Apply { force: true },
    };
    let mut api = BASE.with(ApiServer::clone);
    let mut req = Request::patch(rid::DEPLOYMENT, "default", "web", ty, body, admin());
    req.field_manager = "fuzz".into();
    let _ = api.handle(req);
});
