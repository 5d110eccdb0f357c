//! The kube-controller-manager loops kubeloop simulates, one file per controller.

pub mod deployment;
pub mod disruption;
pub mod endpointslice;
pub mod garbagecollector;
pub mod namespace;
pub mod nodelifecycle;
pub mod replicaset;
