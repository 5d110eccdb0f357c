//! Clients that misbehave on purpose, for lessons about overload: a Scenario's `actors`.
//! Each actor is `replicas` clients (the pods of a naive controller, say) that LIST a
//! resource every `every`, without informers, as the identity they are given. Their
//! requests go through API Priority and Fairness like everyone's: enough of them fill
//! their priority level, and the level's other clients wait in its queues or get 429,
//! while other levels (the system components') do not notice.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, Request, Verb};
use crate::foundation::api::ResourceId;
use crate::foundation::sim::Millis;
use crate::loops::{req_as, Controller, Cx};

/// What a Scenario's actor does.
#[derive(Debug, Clone, PartialEq)]
pub struct ActorSpec {
    pub name: String,
    pub user: UserInfo,
    pub replicas: u32,
    /// What it lists, and in which namespace ("" for all).
    pub resource: ResourceId,
    pub namespace: String,
    pub every: Millis,
    /// When it starts.
    pub start: Millis,
}

#[derive(Clone)]
pub struct Actor {
    spec: ActorSpec,
    component: &'static str,
    started: bool,
    ok: u64,
    throttled: u64,
    forbidden: u64,
}

impl Actor {
    pub fn new(spec: &ActorSpec) -> Self {
        // Loop names are static; a scenario declares few actors.
        let component: &'static str = Box::leak(spec.name.clone().into_boxed_str());
        Actor { spec: spec.clone(), component, started: false, ok: 0, throttled: 0, forbidden: 0 }
    }

    fn list(&mut self, cx: &mut Cx, replica: u32) {
        let mut r = Request::new(Verb::List, self.spec.resource, &self.spec.namespace, "", Credentials::User(self.spec.user.clone()));
        r = req_as(r, &format!("{}-{replica}", self.spec.name), &self.spec.user);
        // A client like any user's: API Priority and Fairness may queue or refuse it.
        r.protobuf = false;
        r.internal = false;
        match cx.api.handle(r) {
            Ok(_) => self.ok += 1,
            Err(s) if s.code == 429 => self.throttled += 1,
            Err(_) => self.forbidden += 1,
        }
        // Every tenth round, say how it goes.
        if replica == 0 && (self.ok + self.throttled + self.forbidden) % (10 * u64::from(self.spec.replicas.max(1))) < u64::from(self.spec.replicas.max(1)) {
            let (ok, throttled, forbidden) = (self.ok, self.throttled, self.forbidden);
            cx.trace(
                Flow::Request,
                "actor",
                format!("Actor/{}", self.spec.name),
                "ok",
                "",
                format!("{} so far: {ok} lists answered, {throttled} refused with 429, {forbidden} refused otherwise", self.spec.name),
            );
        }
    }
}

impl Controller for Actor {
    fn name(&self) -> &'static str {
        self.component
    }
    fn user(&self) -> &UserInfo {
        &self.spec.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[]
    }
    fn run(&mut self, cx: &mut Cx) {
        if self.started {
            return;
        }
        self.started = true;
        // The replicas start a little apart, as pods do.
        for i in 0..self.spec.replicas {
            let offset = u64::from(i) * self.spec.every / u64::from(self.spec.replicas.max(1));
            cx.every(self.spec.start.saturating_sub(cx.now) + offset, format!("tick/{i}"));
        }
    }
    fn timer(&mut self, cx: &mut Cx, key: &str) {
        let Some(i) = key.strip_prefix("tick/").and_then(|i| i.parse::<u32>().ok()) else { return };
        self.list(cx, i);
        cx.every(self.spec.every, key.to_string());
    }
    /// A client is no leader: it keeps its timers (and its counts) through any restart.
    fn restart(&mut self) {}
}
