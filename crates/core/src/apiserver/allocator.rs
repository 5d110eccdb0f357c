//! Service addresses: ClusterIPs from the service CIDR and NodePorts from their range, as
//! the REST storage allocates them (`pkg/registry/core/service/ipallocator`, `portallocator`).

use super::*;

impl ApiServer {
    pub(super) fn allocate_service(&mut self, obj: &mut Value) -> Result<(), Status> {
        let ty = get_str(obj, &["spec", "type"]).unwrap_or("ClusterIP").to_string();
        if ty != "ExternalName" {
            let want = get_str(obj, &["spec", "clusterIP"]).unwrap_or("").to_string();
            let ip = if want == "None" {
                None
            } else if !want.is_empty() {
                let Some(ip) = parse_ip(&want).filter(|ip| (ip & !(SERVICE_SIZE - 1)) == SERVICE_NET) else {
                    return Err(Status::invalid(
                        &RESOURCES[api::rid::SERVICE],
                        api::name(obj),
                        &[crate::foundation::status::FieldError::invalid(
                            "spec.clusterIPs",
                            &json!([want]),
                            format!("failed to allocate IP {want}: the provided IP ({want}) is not in the valid range. The range of valid IPs is 10.96.0.0/16"),
                        )],
                    ));
                };
                if !self.allocated_ips.insert(ip) {
                    return Err(Status::invalid(
                        &RESOURCES[api::rid::SERVICE],
                        api::name(obj),
                        &[crate::foundation::status::FieldError::invalid(
                            "spec.clusterIPs",
                            &json!([want]),
                            format!("failed to allocate IP {want}: provided IP is already allocated"),
                        )],
                    ));
                }
                Some(ip)
            } else {
                // Dynamic allocation uses the upper band of the range.
                let lower = 256;
                let mut ip;
                loop {
                    ip = SERVICE_NET + lower + self.rng.below((SERVICE_SIZE - lower - 1) as u64) as u32;
                    if self.allocated_ips.insert(ip) {
                        break;
                    }
                }
                Some(ip)
            };
            let spec = api::entry(obj, &["spec"]);
            match ip {
                Some(ip) => {
                    spec.insert("clusterIP", json!(ip_string(ip)));
                    spec.insert("clusterIPs", json!([ip_string(ip)]));
                }
                None => {
                    spec.insert("clusterIP", json!("None"));
                    spec.insert("clusterIPs", json!(["None"]));
                }
            }
            spec.insert("ipFamilies", json!(["IPv4"]));
            spec.insert("ipFamilyPolicy", json!("SingleStack"));
        }
        if ty == "NodePort" || ty == "LoadBalancer" {
            let mut ports = obj.get("spec").and_then(|s| s.get("ports")).and_then(Value::as_array).cloned().unwrap_or_default();
            for p in &mut ports {
                if get(p, &["nodePort"]).is_none() {
                    let mut np;
                    loop {
                        np = 30000 + self.rng.below(2768) as i64;
                        if self.allocated_node_ports.insert(np) {
                            break;
                        }
                    }
                    api::set(p, &["nodePort"], json!(np));
                } else if let Some(np) = api::get_i64(p, &["nodePort"]) {
                    self.allocated_node_ports.insert(np);
                }
            }
            api::set(obj, &["spec", "ports"], json!(ports));
        }
        api::set(obj, &["status"], json!({"loadBalancer": {}}));
        Ok(())
    }

    pub(super) fn release_service(&mut self, obj: &Value) {
        if let Some(ip) = get_str(obj, &["spec", "clusterIP"]).and_then(parse_ip) {
            self.allocated_ips.remove(&ip);
        }
        for p in api::get_array(obj, &["spec", "ports"]) {
            if let Some(np) = api::get_i64(p, &["nodePort"]) {
                self.allocated_node_ports.remove(&np);
            }
        }
    }

    pub fn reserve_ip(&mut self, ip: &str) {
        if let Some(ip) = parse_ip(ip) {
            self.allocated_ips.insert(ip);
        }
    }
}

pub fn ip_string(ip: u32) -> String {
    format!("{}.{}.{}.{}", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255)
}

pub(super) fn parse_ip(s: &str) -> Option<u32> {
    let parts: Vec<u32> = s.split('.').map(|p| p.parse().ok()).collect::<Option<Vec<u32>>>()?;
    (parts.len() == 4 && parts.iter().all(|p| *p < 256)).then(|| (parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3])
}
