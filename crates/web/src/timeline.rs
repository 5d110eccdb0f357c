//! The timeline under the header (scrub to any moment of the run; step between writes),
//! the follow bar over the diagram, the workspaces, and in the inspector "why these
//! values" and an object's history (each stored version, who wrote it, what it changed).

use super::{App, Msg};
use kubeloop_core::foundation::api::Object;
use kubeloop_core::kubectl::goyaml::to_yaml;
use web_sys::HtmlInputElement;
use yew::prelude::*;

impl App {
    /// Named workspaces: keep this session under a name, and open, rename or delete one.
    #[inline(never)]
    pub fn workspaces_view(&self, ctx: &Context<Self>) -> Html {
        let link = ctx.link();
        let names: Vec<String> = super::workspaces().keys().cloned().collect();
        let oninput = link.callback(|e: InputEvent| Msg::WsName(e.target_unchecked_into::<HtmlInputElement>().value()));
        html! {
            <details class="workspaces">
                <summary>{ format!("Workspaces ({})", names.len()) }</summary>
                <div class="ws-panel">
                    <label>{ "Name " }<input type="text" value={self.ws_name.clone()} {oninput} aria-label="workspace name" /></label>
                    <button onclick={link.callback(|_| Msg::WsKeep)}>{ "Keep this session as" }</button>
                    <ul>
                        { for names.into_iter().map(|n| {
                            let (a, b, c) = (n.clone(), n.clone(), n.clone());
                            html! { <li><span class="ws">{ &n }</span>
                                <button onclick={link.callback(move |_| Msg::WsOpen(a.clone()))}>{ "Open" }</button>
                                <button onclick={link.callback(move |_| Msg::WsRename(b.clone()))} title="rename it to the name typed above">{ "Rename" }</button>
                                <button onclick={link.callback(move |_| Msg::WsDelete(c.clone()))}>{ "Delete" }</button>
                            </li> }
                        }) }
                    </ul>
                </div>
            </details>
        }
    }

    /// Above the diagram: whose journey it shows, and the way back to everything.
    pub fn follow_bar(&self, ctx: &Context<Self>) -> Html {
        let link = ctx.link();
        match &self.follow {
            Some(j) => html! {
                <p class="follow" role="status">{ "Following " }<strong>{ &j.root }</strong>{ ": its requests and everything they set in motion, numbered in the order they happened. " }
                    <button onclick={link.callback(|_| Msg::PlayJourney)} disabled={self.playback.is_some()}>{ if self.playback.is_some() { "Playing…" } else { "▶ Play its journey" } }</button>
                    { " " }<button onclick={link.callback(|_| Msg::Follow(None))}>{ "Show everything" }</button>
                </p>
            },
            None => html! { <p class="follow">{ "Showing every object. Select one (Objects tab, or a pod) or change a workload to follow its journey." }</p> },
        }
    }

    pub fn timeline(&self, ctx: &Context<Self>) -> Html {
        let link = ctx.link();
        let now = self.sb.cluster.now;
        let end = self.live.as_ref().map_or(now, |(l, _)| l.cluster.now);
        let oninput = link.callback(|e: InputEvent| Msg::Scrub(e.target_unchecked_into::<HtmlInputElement>().value().parse().unwrap_or(0)));
        let secs = |t: u64| format!("{:.1} s", t as f64 / 1000.0);
        html! {
            <div class={classes!("timeline", self.live.is_some().then_some("past"))} role="group" aria-label="Timeline">
                <button onclick={link.callback(|_| Msg::WriteStep(-1))} title="go back to the previous write to etcd" aria-label="previous write">{ "◀" }</button>
                <input type="range" min="0" max={end.to_string()} step="100" value={now.to_string()} {oninput}
                    aria-label="Simulated time" aria-valuetext={format!("t = {}", secs(now))} />
                <button onclick={link.callback(|_| Msg::WriteStep(1))} title="go on to the next write to etcd" aria-label="next write">{ "▶" }</button>
                if self.live.is_some() {
                    <span class="when" role="status">{ format!("Viewing t = {} of {}: every pane shows the cluster as it was then. Acting here goes on from this moment.", secs(now), secs(end)) }</span>
                    <button onclick={link.callback(|_| Msg::BackToNow)}>{ "Back to now" }</button>
                } else {
                    <span class="when">{ "Timeline: drag back to see the cluster as it was at any moment of this run." }</span>
                }
            </div>
        }
    }

    /// "Why these values?": each field, and the write that set it (with a link to its record).
    #[inline(never)]
    pub fn why_view(&self, ctx: &Context<Self>, o: &Object) -> Html {
        let link = ctx.link();
        let toggle = link.callback(|_| Msg::ToggleWhy);
        if !self.why_open {
            return html! { <button class="why-toggle" onclick={toggle} aria-expanded="false">{ "Why these values? (who set each field, when, and how)" }</button> };
        }
        let rows = kubeloop_core::sandbox::why::why(&self.sb, o).into_iter().map(|f| {
            let when = if f.record.is_none() && f.t == 0 && !f.exact { String::new() } else { format!("{}{:.3} s", if f.exact { "" } else { "by " }, f.t as f64 / 1000.0) };
            let rec = f.record.map(|i| html! { <button class="link" onclick={link.callback(move |_| Msg::ShowRecord(i))} title="the write's record on the diagram">{ format!("rv {}", f.revision) }</button> });
            html! { <tr><td class="path">{ &f.path }</td><td class="val">{ &f.value }</td><td>{ &f.writer }</td><td>{ when }</td><td>{ &f.how }</td><td>{ for rec }</td></tr> }
        });
        html! {
            <div class="why" tabindex="0" aria-label="where the values came from">
                <button class="why-toggle" onclick={toggle} aria-expanded="true">{ "Hide where the values came from" }</button>
                <table>
                    <thead><tr><th>{ "field" }</th><th>{ "value" }</th><th>{ "set by" }</th><th>{ "at" }</th><th>{ "how" }</th><th>{ "write" }</th></tr></thead>
                    <tbody>{ for rows }</tbody>
                </table>
            </div>
        }
    }

    #[inline(never)]
    pub fn history(&self, ctx: &Context<Self>, o: &Object) -> Html {
        let (versions, _) = kubeloop_core::sandbox::why::versions(&self.sb, o);
        if versions.is_empty() {
            return html! { <p class="hint">{ "History: the store no longer holds older versions of this object (compacted)." }</p> };
        }
        let selected = self.diff_rv.and_then(|rv| versions.iter().position(|v| v.revision == rv));
        let rows = versions.iter().enumerate().rev().map(|(i, v)| {
            let rv = v.revision;
            let class = classes!((selected == Some(i)).then_some("selected"));
            html! {
                <li {class}><button class="link" onclick={ctx.link().callback(move |_| Msg::DiffVersion(rv))}>
                    { format!("rv {rv} · t = {:.3} s · {}{}", v.t as f64 / 1000.0, if v.writer.is_empty() { "?" } else { &v.writer }, if i == 0 { " · created (or the oldest kept)" } else if v.object.is_none() { " · deleted" } else { "" }) }
                </button></li>
            }
        });
        let diff = selected.map(|i| {
            let yaml = |v: Option<&kubeloop_core::sandbox::why::Version>| v.and_then(|v| v.object.as_ref()).map(|o| to_yaml(o)).unwrap_or_default();
            let lines = kubeloop_core::kubectl::diff::unified(&yaml(i.checked_sub(1).and_then(|j| versions.get(j))), &yaml(versions.get(i)));
            html! {
                <pre class="yaml diff" aria-label="changes of this version" tabindex="0">
                    { for lines.iter().map(|l| {
                        let class = if l.starts_with('+') { "add" } else if l.starts_with('-') { "del" } else { "" };
                        html! { <div {class}>{ l }</div> }
                    }) }
                </pre>
            }
        });
        html! {
            <div class="history">
                <h4>{ "History: each stored version (select one to see what its write changed)" }</h4>
                <ul>{ for rows }</ul>
                { for diff }
            </div>
        }
    }
}
