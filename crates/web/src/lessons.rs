//! The Lessons bar and panel: the list (with the decision chart), and the open lesson with
//! its goal checked on every tick, hints one at a time, and the answer on request.

use super::{window, App, Msg};
use kubeloop_core::sandbox::lessons::{Group, Lesson, CHART, INDEX};
use std::collections::BTreeSet;
use wasm_bindgen::prelude::*;
use yew::prelude::*;

// The lessons' bodies are `lessons.yaml` beside the page (copied into `dist/` by Trunk),
// downloaded when a lesson is first opened: the list needs only `INDEX`, built in. The
// download is synchronous: it is one small file, asked for when the page has nothing to
// show until it arrives, and the paths that open a lesson (a link, the list, an embedding
// page) stay as simple as when the lessons were built in.
#[wasm_bindgen(inline_js = r#"
export function kubeloopLessonsText() {
  const where = new URL('lessons.yaml', document.baseURI).href;
  const request = new XMLHttpRequest();
  request.open('GET', where, false);
  request.overrideMimeType('text/plain; charset=utf-8');
  request.send();
  if (request.status !== 200) throw new Error(`${where}: HTTP ${request.status}`);
  return request.responseText;
}
"#)]
extern "C" {
    #[wasm_bindgen(catch, js_name = kubeloopLessonsText)]
    fn lessons_text() -> Result<String, JsValue>;
}

/// Every lesson, downloaded and read, in the order of `INDEX` (which the list was drawn
/// from), or why not.
pub fn load() -> Result<Vec<Lesson>, String> {
    let text = lessons_text().map_err(|e| js_sys::Error::from(e).message().as_string().unwrap_or_default())?;
    let all = kubeloop_core::sandbox::lessons::parse(&text)?;
    if !all.iter().map(|l| l.id.as_str()).eq(INDEX.iter().map(|e| e.id)) {
        return Err("lessons.yaml is not the one this page was built with (reload the page)".into());
    }
    Ok(all)
}

/// Where the browser keeps the ids of the lessons whose goal was met.
const DONE_KEY: &str = "kubeloop.lessons.done";

pub fn load_done() -> BTreeSet<String> {
    super::storage()
        .and_then(|s| s.get_item(DONE_KEY).ok().flatten())
        .map(|v| v.split(',').filter(|x| !x.is_empty()).map(str::to_string).collect())
        .unwrap_or_default()
}

pub fn save_done(done: &BTreeSet<String>) {
    if let Some(s) = super::storage() {
        let _ = s.set_item(DONE_KEY, &done.iter().cloned().collect::<Vec<_>>().join(","));
    }
}

/// The `lesson` parameter of the page's address.
pub fn from_query(search: &str) -> Option<String> {
    web_sys::UrlSearchParams::new_with_str(search).ok()?.get("lesson").filter(|s| !s.is_empty())
}

/// Put `lesson` in the address (or take it out), keeping the other parameters, so that a
/// reload or a bookmark opens the same lesson.
pub fn set_query(lesson: Option<&str>) {
    let l = window().location();
    let Ok(params) = web_sys::UrlSearchParams::new_with_str(&l.search().unwrap_or_default()) else { return };
    match lesson {
        Some(id) => params.set("lesson", id),
        None => params.delete("lesson"),
    }
    let q = String::from(params.to_string());
    let url = format!("{}{}", l.pathname().unwrap_or_default(), if q.is_empty() { String::new() } else { format!("?{q}") });
    let _ = window().history().and_then(|h| h.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&url)));
}

/// A paragraph with `code` in backquotes.
fn prose(text: &str) -> Html {
    html! { <>{ for text.split('\n').filter(|p| !p.trim().is_empty()).map(|p| html! { <p>{ inline(p) }</p> }) }</> }
}

fn inline(text: &str) -> Html {
    html! { <>{ for text.split('`').enumerate().map(|(i, part)| if i % 2 == 1 { html! { <code>{ part }</code> } } else { html! { part } }) }</> }
}

impl App {
    pub fn lesson(&self) -> Option<&Lesson> {
        self.lesson.and_then(|i| self.lessons.get(i))
    }

    /// Look at the open lesson's goal (after anything that may have changed the cluster).
    pub fn observe_lesson(&mut self) {
        if let Some(i) = self.lesson {
            self.observe_open_lesson(i);
        }
    }

    #[inline(never)]
    fn observe_open_lesson(&mut self, i: usize) {
        let l = &self.lessons[i];
        let before = self.progress.met_at;
        self.checks = l.observe(&self.sb, &mut self.progress);
        if before.is_none() && self.progress.met_at.is_some() {
            self.done.insert(l.id.clone());
            save_done(&self.done);
            self.notice = Some(format!("Goal met: {}", l.goal.say));
            self.post(serde_json::json!({"event": "goal", "lesson": l.id, "t": self.progress.met_at}));
        }
    }

    /// The bar under the header: the open lesson, or a way into the lessons.
    pub fn lessons_view(&self, ctx: &Context<Self>) -> Html {
        let link = ctx.link();
        let total = INDEX.len();
        let done = INDEX.iter().filter(|l| self.done.contains(l.id)).count();
        let toggle = link.callback(|_| Msg::ToggleLessons);
        html! {
            <section class="lessons" aria-label="Lessons">
                <div class="lessons-bar">
                    <button class="lessons-toggle" onclick={toggle} aria-expanded={self.lessons_open.to_string()}>{ if self.lessons_open { "Hide lessons" } else { "Lessons" } }</button>
                    <span class="progress" aria-label="lesson progress">{ format!("{done} of {total} done") }</span>
                    if self.lesson.is_none() {
                        <span class="intro">{ "New here? Each lesson opens a small cluster, asks one question, and checks your answer against the running cluster." }</span>
                        if let Some(first) = INDEX.first() {
                            <button class="link" onclick={link.callback(|_| Msg::OpenLesson(0))}>{ format!("Start with {}", first.title) }</button>
                        }
                    }
                </div>
                if self.lessons_open { { self.lesson_list(ctx) } }
                if let Some(l) = self.lesson() { { self.lesson_card(ctx, l) } }
            </section>
        }
    }

    fn lesson_button(&self, ctx: &Context<Self>, i: usize) -> Html {
        let l = &INDEX[i];
        let done = self.done.contains(l.id);
        let current = self.lesson == Some(i);
        html! {
            <li class={classes!(done.then_some("done"), current.then_some("current"))}>
                <button class="link" onclick={ctx.link().callback(move |_| Msg::OpenLesson(i))} aria-current={current.then_some("true")}>
                    { if done { "✓ " } else { "" } }{ l.title }
                </button>
            </li>
        }
    }

    #[inline(never)]
    fn lesson_list(&self, ctx: &Context<Self>) -> Html {
        let index = |id: &str| INDEX.iter().position(|l| l.id == id);
        html! {
            <div class="lesson-list">
                <div class="chart" role="group" aria-label="Where do I start?">
                    <h3>{ "Where do I start?" }</h3>
                    <ul>
                        { for CHART.iter().map(|(q, ids)| html! {
                            <li><span class="symptom">{ *q }</span>
                                <ul class="leads">{ for ids.iter().filter_map(|id| index(id)).map(|i| self.lesson_button(ctx, i)) }</ul>
                            </li>
                        }) }
                    </ul>
                </div>
                { for Group::ALL.iter().map(|g| {
                    let members: Vec<usize> = (0..INDEX.len()).filter(|i| INDEX[*i].group == *g).collect();
                    html! {
                        <div class="group">
                            <h3>{ g.title() }</h3>
                            <ul>{ for members.into_iter().map(|i| self.lesson_button(ctx, i)) }</ul>
                        </div>
                    }
                }) }
            </div>
        }
    }

    #[inline(never)]
    fn lesson_card(&self, ctx: &Context<Self>, l: &Lesson) -> Html {
        let link = ctx.link();
        let n_checks = l.goal.checks.len();
        let checks = self.checks.iter().take(n_checks).map(|c| {
            html! { <li class={classes!(if c.ok { "ok" } else { "todo" })}>{ if c.ok { "✓ " } else { "○ " } }{ &c.say }
                if !c.ok && !c.seen.is_empty() { <span class="seen">{ format!(" — now: {}", c.seen) }</span> }
            </li> }
        });
        let asks = l.goal.asks.iter().enumerate().map(|(i, a)| {
            let state = self.checks.get(n_checks + i);
            let chosen = self.progress.chosen.get(i).cloned().flatten();
            let name = format!("ask-{i}");
            html! {
                <fieldset class={classes!("ask", state.is_some_and(|s| s.ok).then_some("ok"))}>
                    <legend>{ if state.is_some_and(|s| s.ok) { "✓ " } else { "" } }{ &a.question }</legend>
                    { for a.choices.iter().map(|c| {
                        let (c2, name) = (c.clone(), name.clone());
                        html! { <label><input type="radio" name={name} checked={chosen.as_deref() == Some(c.as_str())} onchange={link.callback(move |_| Msg::Choose(i, c2.clone()))} />{ format!(" {c}") }</label> }
                    }) }
                    if let Some(s) = state.filter(|s| !s.ok && chosen.is_some()) { <span class="seen">{ &s.seen }</span> }
                </fieldset>
            }
        });
        let met = self.progress.met_at;
        html! {
            <article class="lesson" aria-labelledby="lesson-title">
                <h2 id="lesson-title">{ &l.title }</h2>
                <p class="question"><em>{ &l.question }</em></p>
                { prose(&l.story) }
                <h3>{ "Goal: " }{ &l.goal.say }</h3>
                <ul class="checks" aria-live="polite">{ for checks }</ul>
                { for asks }
                if let Some(t) = met {
                    <div class="met" role="status"><strong>{ format!("Goal met at t = {:.1} s. ", t as f64 / 1000.0) }</strong>{ inline(&l.lesson) }</div>
                }
                <div class="lesson-actions">
                    { for l.hints.iter().take(self.hints_shown).map(|h| html! { <p class="hint-text">{ "Hint: " }{ inline(h) }</p> }) }
                    if self.hints_shown < l.hints.len() {
                        <button onclick={link.callback(|_| Msg::Hint)}>{ format!("Show a hint ({} of {})", self.hints_shown + 1, l.hints.len()) }</button>
                    }
                    if self.answer_shown {
                        <div class="answer">
                            <p><strong>{ "Answer: " }</strong>{ inline(&l.answer.say) }</p>
                            <ol>{ for l.answer.steps.iter().map(|s| html! { <li><pre>{ s.describe(l) }</pre></li> }) }</ol>
                        </div>
                    } else {
                        <button onclick={link.callback(|_| Msg::ShowAnswer)}>{ "Show the answer" }</button>
                    }
                    <button onclick={link.callback(|_| Msg::RestartLesson)} title="the lesson's text and cluster as they were at the start">{ "Start the lesson again" }</button>
                    <button onclick={link.callback(|_| Msg::LeaveLesson)}>{ "Leave the lesson" }</button>
                </div>
            </article>
        }
    }
}
