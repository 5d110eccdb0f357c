//! kubeloop-core: a Kubernetes control plane that runs as a deterministic simulation.
//!
//! The central decision: every actor is an API client. Users, controllers, the scheduler
//! and the kubelets all write through [`apiserver::ApiServer::handle`], the same pipeline
//! of authentication, RBAC, admission, validation and storage, and the loops only learn
//! about the world through informers over the store's watch history. Time and randomness
//! come from [`foundation::sim`], so one scenario and one seed give one byte-identical run on every
//! platform. Nothing here reads the clock, the environment, files or threads.
//!
//! The modules are the layers of the system it simulates, each using only those below it
//! (`tests/layers.rs` checks it): [`foundation`], [`apiserver`], then its two kinds of
//! client, [`loops`] and [`kubectl`], then [`cluster`], which composes them, and
//! [`sandbox`], the page's model.

#![allow(clippy::too_many_arguments)]

pub mod apiserver;
pub mod cluster;
pub mod foundation;
pub mod kubectl;
pub mod loops;
pub mod sandbox;
