//! What each running container uses, as the kubelet's `/metrics/resource` endpoint reports
//! it to metrics-server (cAdvisor's `container_cpu_usage_seconds_total` and
//! `container_memory_working_set_bytes`).
//!
//! CPU comes from what the container really does in the simulation: a busy loop burns one
//! [`BUSY_SLICE_MS`](super::shell::BUSY_SLICE_MS) slice of CPU each time it runs out of
//! operations, a server spends its image's `request_cpu_us` on every HTTP request it
//! answers, and a scenario may add a load per image. CFS quota caps the container at its
//! CPU limit (else at the node's allocatable CPU) in 100 ms periods, as
//! `cpu.cfs_period_us` does; demand beyond that is throttled away. Memory is the server's
//! resident size, or the shell's and what it allocated, or the scenario's figure.

use super::{CState, Ctr, Key, Kubelets};
use crate::apiserver::metrics::{ContainerStats, NodeStats, PodStats};
use crate::foundation::sim::Millis;

/// The CFS period: usage is capped per period.
pub const CFS_PERIOD_MS: Millis = 100;
/// A shell's own working set.
pub const SHELL_MEMORY: u64 = 1 << 20;

/// A container's cumulative CPU time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Meter {
    /// Microseconds used in periods that are over.
    settled_us: u64,
    /// The current period's start and the demand in it.
    period: Millis,
    demand_us: u64,
}

impl Meter {
    /// Demand `us` microseconds of CPU at `now`, with at most `cap` millicores.
    pub fn charge(&mut self, now: Millis, us: u64, cap: u64) {
        let period = now - now % CFS_PERIOD_MS;
        if period != self.period {
            self.settled_us += self.demand_us.min(cap * CFS_PERIOD_MS);
            self.period = period;
            self.demand_us = 0;
        }
        self.demand_us += us;
    }

    /// CPU time used so far, in microseconds.
    pub fn total(&self, cap: u64) -> u64 {
        self.settled_us + self.demand_us.min(cap * CFS_PERIOD_MS)
    }
}

/// Millicores from a quantity string (`500m`, `2`).
pub(super) fn milli(q: Option<&str>) -> Option<u64> {
    q.and_then(crate::foundation::quantity::parse_milli).map(|m| m.max(0) as u64)
}

impl Kubelets {
    /// The most CPU container `c` on node `ni` may use: its limit, else the node's.
    fn cpu_cap(&self, ni: usize, c: &Ctr) -> u64 {
        c.cpu_limit.unwrap_or(self.nodes[ni].cpu).max(1)
    }

    /// Charge `us` microseconds of CPU to container `i` of a pod.
    pub(super) fn charge_cpu(&mut self, now: Millis, ni: usize, key: &Key, i: usize, us: u64) {
        let Some(c) = self.nodes.get(ni).and_then(|n| n.pods.get(key)).and_then(|rt| rt.ctrs.get(i)) else { return };
        let cap = self.cpu_cap(ni, c);
        if let Some(c) = self.nodes[ni].pods.get_mut(key).and_then(|rt| rt.ctrs.get_mut(i)) {
            c.cpu.charge(now, us, cap);
        }
    }

    /// Charge each answered request to the container whose server answered it.
    pub(super) fn charge_served(&mut self, now: Millis, served: &[(String, u16)]) {
        for (ip, port) in served {
            let Some((ni, key)) = self.by_ip.get(ip).cloned() else { continue };
            let Some(rt) = self.nodes.get(ni).and_then(|n| n.pods.get(&key)) else { continue };
            let found = rt.ctrs.iter().enumerate().find_map(|(i, c)| match (&c.daemon, &c.state) {
                (Some(d), CState::Running { .. }) if d.ports.is_empty() || d.ports.contains(port) => {
                    Some((i, c.behaviour.as_ref().map(|b| b.request_cpu_us).unwrap_or(0)))
                }
                _ => None,
            });
            if let Some((i, cost)) = found {
                self.charge_cpu(now, ni, &key, i, cost);
            }
        }
    }

    /// What every node that is up reports of its running containers now.
    pub(super) fn resource_stats_at(&self, now: Millis) -> Vec<NodeStats> {
        let mut out = Vec::new();
        for (ni, n) in self.nodes.iter().enumerate() {
            if n.down {
                continue;
            }
            let mut pods = Vec::new();
            for ((ns, name), rt) in &n.pods {
                let containers: Vec<ContainerStats> = rt
                    .ctrs
                    .iter()
                    .filter_map(|c| {
                        let CState::Running { started } = c.state else { return None };
                        let cap = self.cpu_cap(ni, c);
                        let load = c.behaviour.as_ref().and_then(|b| b.load);
                        let cpu_us = c.cpu.total(cap) + load.map(|l| l.cpu_us(started, now, cap)).unwrap_or(0);
                        let own = c.proc.as_ref().map(|p| p.memory).unwrap_or(0);
                        let memory = match (load.and_then(|l| l.memory), &c.daemon) {
                            (Some(m), _) => m,
                            (None, Some(d)) => d.memory.max(own),
                            (None, None) => own + SHELL_MEMORY,
                        };
                        Some(ContainerStats { name: c.name.clone(), started, cpu_us, memory })
                    })
                    .collect();
                if !containers.is_empty() {
                    pods.push(PodStats { namespace: ns.clone(), name: name.clone(), containers });
                }
            }
            out.push(NodeStats { name: n.name.clone(), pods });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loops::kubelet::registry::Load;

    #[test]
    fn demand_beyond_the_cap_is_throttled_per_period() {
        let mut m = Meter::default();
        // A busy loop: 100 ms of CPU every 100 ms, capped at 500m.
        for t in 0..10 {
            m.charge(t * 100, 100_000, 500);
        }
        assert_eq!(m.total(500), 500_000, "half of one second");
        let mut free = Meter::default();
        for t in 0..10 {
            free.charge(t * 100, 100_000, 4000);
        }
        assert_eq!(free.total(4000), 1_000_000, "a whole core");
        // Requests of 7 ms every 10 ms: 700m of demand, 500m served.
        let mut r = Meter::default();
        for t in 0..100 {
            r.charge(t * 10, 7_000, 500);
        }
        assert_eq!(r.total(500), 500_000);
    }

    #[test]
    fn a_scenario_load_steps_at_its_time_and_is_capped() {
        let l = Load { cpu_from: 100, cpu_to: 900, at: 60_000, memory: None };
        assert_eq!(l.cpu_us(0, 60_000, 4000), 6_000_000);
        assert_eq!(l.cpu_us(50_000, 70_000, 4000), 100 * 10_000 + 900 * 10_000);
        assert_eq!(l.cpu_us(60_000, 61_000, 500), 500_000);
    }
}
