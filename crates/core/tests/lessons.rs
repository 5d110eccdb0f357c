//! Every lesson of the page, walked by the engine: left alone its goal stays unmet, its
//! answer's steps meet it, and a wrong choice never counts as right.

use kubeloop_core::foundation::sim::{parse_duration, Millis};
use kubeloop_core::sandbox::lessons::{self, CheckState, Lesson, Progress, Step};
use kubeloop_core::sandbox::Sandbox;

/// How often the goal is looked at while the clock runs (the page looks on every tick).
const LOOK_EVERY: Millis = 1_000;
/// How long a lesson is given after the answer's last step.
const AFTER_ANSWER: Millis = 10 * 60_000;

fn watch(l: &Lesson, sb: &mut Sandbox, p: &mut Progress, ms: Millis) -> Vec<CheckState> {
    let until = sb.cluster.now + ms;
    let mut last = l.observe(sb, p);
    while sb.cluster.now < until && p.met_at.is_none() {
        sb.advance(LOOK_EVERY.min(until - sb.cluster.now));
        last = l.observe(sb, p);
    }
    last
}

fn answer_time(l: &Lesson) -> Millis {
    l.answer.steps.iter().map(|s| if let Step::Wait(d) = s { parse_duration(d).unwrap() } else { 0 }).sum()
}

fn unmet(states: &[CheckState]) -> String {
    states.iter().filter(|c| !c.ok).map(|c| format!("  ✗ {} ({})", c.say, c.seen)).collect::<Vec<_>>().join("\n")
}

/// The lesson with its answer taken: the sandbox, the progress and the last look.
fn answered(l: &Lesson) -> (Sandbox, Progress, Vec<CheckState>) {
    let mut sb = Sandbox::new(&l.text, None);
    let mut p = Progress::default();
    assert!(sb.setup_errors.is_empty(), "lesson {}: {:?}", l.id, sb.setup_errors);
    for d in &sb.docs {
        assert!(!d.failed(), "lesson {}: the editor's {} failed at the start: {}", l.id, d.object, d.result);
    }
    for step in &l.answer.steps {
        match step {
            Step::Wait(d) => {
                watch(l, &mut sb, &mut p, parse_duration(d).unwrap());
            }
            s => {
                lessons::take_step(&mut sb, s, &mut p).unwrap_or_else(|e| panic!("lesson {}: step {s:?}: {e}", l.id));
                l.observe(&sb, &mut p);
            }
        }
    }
    let last = watch(l, &mut sb, &mut p, AFTER_ANSWER);
    (sb, p, last)
}

#[test]
fn every_lesson_parses() {
    let all = lessons::load().unwrap();
    assert!(!all.is_empty());
}

#[test]
fn left_alone_no_goal_is_met() {
    for l in lessons::load().unwrap() {
        let mut sb = Sandbox::new(&l.text, None);
        let mut p = Progress::default();
        let last = watch(&l, &mut sb, &mut p, answer_time(&l) + AFTER_ANSWER);
        assert_eq!(p.met_at, None, "lesson {} meets its goal with nothing done", l.id);
        assert!(last.iter().any(|c| !c.ok), "lesson {}", l.id);
    }
}

#[test]
fn each_answer_meets_its_goal() {
    for l in lessons::load().unwrap() {
        let (sb, p, last) = answered(&l);
        assert!(p.met_at.is_some(), "lesson {}: its answer does not meet the goal by t={} ms:\n{}", l.id, sb.cluster.now, unmet(&last));
    }
}

#[test]
fn a_wrong_choice_is_not_the_answer() {
    for l in lessons::load().unwrap().into_iter().filter(|l| !l.goal.asks.is_empty()) {
        let (sb, p, _) = answered(&l);
        for (i, ask) in l.goal.asks.iter().enumerate() {
            let right = p.chosen[i].clone();
            for c in ask.choices.iter().filter(|c| Some(*c) != right.as_ref()) {
                let mut q = p.clone();
                q.chosen[i] = Some(c.clone());
                q.met_at = None;
                let states = l.observe(&sb, &mut q);
                assert!(!states[l.goal.checks.len() + i].ok, "lesson {}: {c:?} counts as the answer to {:?}", l.id, ask.question);
                assert_eq!(q.met_at, None);
            }
        }
    }
}

#[test]
fn the_readme_lists_every_lesson() {
    let readme = include_str!("../../../README.md");
    for l in lessons::load().unwrap() {
        assert!(readme.contains(&format!("`{}`", l.id)), "README.md does not list lesson {}", l.id);
    }
}

#[test]
fn the_index_is_the_lessons_ids_groups_and_titles_in_order() {
    let all = lessons::load().unwrap();
    let from_file: Vec<(&str, lessons::Group, &str)> = all.iter().map(|l| (l.id.as_str(), l.group, l.title.as_str())).collect();
    let index: Vec<(&str, lessons::Group, &str)> = lessons::INDEX.iter().map(|e| (e.id, e.group, e.title)).collect();
    assert_eq!(index, from_file);
}
