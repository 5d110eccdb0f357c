//! kubeloop-core: a Kubernetes control plane that runs as a deterministic simulation.
//!
//! The central decision: every actor is an API client. Users, controllers, the scheduler
//! and the kubelets all write through [`apiserver::ApiServer::handle`], the same pipeline
//! of authentication, RBAC, admission, validation and storage, and the loops only learn
//! about the world through informers over the store's watch history. Time and randomness
//! come from [`sim`], so one scenario and one seed give one byte-identical run on every
//! platform. Nothing here reads the clock, the environment, files or threads.

#![allow(clippy::too_many_arguments)]

pub mod admission;
pub mod api;
pub mod apiserver;
pub mod cel;
pub mod cluster;
pub mod controllers;
pub mod defaults;
pub mod describe;
pub mod diff;
pub mod events;
pub mod explain;
pub mod fields;
pub mod goyaml;
pub mod informer;
pub mod jsonpath;
pub mod kubectl;
pub mod kubelet;
pub mod labels;
pub mod managed;
pub mod manifest;
pub mod patch;
pub mod printers;
pub mod quantity;
pub mod rbac;
pub mod registry;
pub mod sandbox;
pub mod scenario;
pub mod scheduler;
pub mod schema;
pub mod sim;
pub mod status;
pub mod store;
pub mod trace;
pub mod validation;
pub mod value;
