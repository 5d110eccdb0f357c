//! The kube-controller-manager loops kubeloop simulates, one file per controller.

pub mod apiservice;
pub mod attachdetach;
pub mod autoscaler;
pub mod cronjob;
pub mod csiattacher;
pub mod daemonset;
pub mod deployment;
pub mod disruption;
pub mod endpointslice;
pub mod expand;
pub mod garbagecollector;
pub mod history;
pub mod horizontal;
pub mod job;
pub mod namespace;
pub mod nodelifecycle;
pub mod persistentvolume;
pub mod podgc;
pub mod protection;
pub mod provisioner;
pub mod replicaset;
pub mod resizer;
pub mod resourcequota;
pub mod statefulset;
pub mod ttlafterfinished;
