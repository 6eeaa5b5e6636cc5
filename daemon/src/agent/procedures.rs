//! Procedures learned from repeated episodes. Episodes are cut into runs of work (a session,
//! else the same place with no long pause); each run is a sequence of steps (an action on
//! its targets, repeats of one step folded into its last try). Every stretch of two to four
//! steps is tallied over all runs: run through without a failure, it counts for the
//! stretch; with one, against. A stretch that went well at least `min_support` times and
//! more often than not is a procedure; two steps whose second repeatedly failed after the
//! first are a failure pattern. Confidence is the share of runs that went as the procedure
//! says, with one imagined run each way (so it grows with every repeat and falls with every
//! failure). Pure: episodes in, procedures out; ids depend only on the steps, so a procedure
//! keeps its id as it is learned again.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use mnemo_protocol::agent::{Outcome, Procedure, ProcedureKind, ProcedureTrigger, Step};
use mnemo_protocol::time::format_micros;

use super::episode::{doing, Brief};
use crate::store::schema::content_hash;

/// Longest stretch tallied.
const MAX_STEPS: usize = 4;
/// Episodes a procedure names as learned from.
const MAX_LEARNED_FROM: usize = 20;

pub struct Settings {
    pub min_support: u64,
    pub chain_gap_us: i64,
    pub now: i64,
}

/// A step as taken: what and how it went.
struct Taken<'a> {
    step: Step,
    outcome: Outcome,
    episode: &'a Brief,
}

#[derive(Default)]
struct Tally {
    success: u64,
    failure: u64,
    episodes: Vec<(i64, String)>,
    last: i64,
}

impl Tally {
    fn count(&mut self, ok: bool, run: &[Taken]) {
        if ok {
            self.success += 1;
        } else {
            self.failure += 1;
        }
        for t in run {
            self.episodes.push((t.episode.at, t.episode.id.clone()));
        }
        self.last = self
            .last
            .max(run.last().map(|t| t.episode.at).unwrap_or_default());
    }
}

/// The runs of work of one namespace's episodes, each in time order.
fn runs<'a>(episodes: &[&'a Brief], gap_us: i64) -> Vec<Vec<&'a Brief>> {
    let mut by_run: BTreeMap<String, Vec<&Brief>> = BTreeMap::new();
    for b in episodes {
        let key = match &b.session_id {
            Some(s) => format!("session:{s}"),
            None => format!("place:{}", b.place().unwrap_or_default()),
        };
        by_run.entry(key).or_default().push(b);
    }
    let mut out = Vec::new();
    for (key, mut run) in by_run {
        run.sort_by_key(|b| b.at);
        if key.starts_with("session:") {
            out.push(run);
            continue;
        }
        // Without a session, a long pause starts another run.
        let mut current: Vec<&Brief> = Vec::new();
        for b in run {
            if current.last().is_some_and(|last| b.at - last.at > gap_us) {
                out.push(std::mem::take(&mut current));
            }
            current.push(b);
        }
        out.push(current);
    }
    out
}

/// A run as steps, repeats of one step folded into their last try.
fn steps<'a>(run: &[&'a Brief]) -> Vec<Taken<'a>> {
    let mut out: Vec<Taken> = Vec::new();
    for b in run {
        let step = Step {
            action: b.action,
            target: b.targets.join(", "),
        };
        match out.last_mut() {
            Some(last) if last.step == step => {
                last.outcome = b.outcome;
                last.episode = b;
            }
            _ => out.push(Taken {
                step,
                outcome: b.outcome,
                episode: b,
            }),
        }
    }
    out
}

/// What a namespace's episodes teach.
pub fn learn(namespace: &str, episodes: &[Arc<Brief>], s: &Settings) -> Vec<Procedure> {
    let mine: Vec<&Brief> = episodes
        .iter()
        .map(|b| b.as_ref())
        .filter(|b| b.namespace == namespace)
        .collect();
    let mut stretches: HashMap<Vec<Step>, Tally> = HashMap::new();
    let mut patterns: HashMap<Vec<Step>, Tally> = HashMap::new();
    for run in runs(&mine, s.chain_gap_us) {
        let taken = steps(&run);
        for len in 2..=MAX_STEPS.min(taken.len()) {
            for w in taken.windows(len) {
                let key: Vec<Step> = w.iter().map(|t| t.step.clone()).collect();
                let ok = w.iter().all(|t| t.outcome == Outcome::Success);
                stretches.entry(key.clone()).or_default().count(ok, w);
                if len == 2 && w[0].outcome == Outcome::Success {
                    patterns.entry(key).or_default().count(ok, w);
                }
            }
        }
    }
    let mut learned: Vec<Procedure> = stretches
        .into_iter()
        .filter(|(_, t)| t.success >= s.min_support && t.success > t.failure)
        .map(|(steps, t)| procedure(namespace, ProcedureKind::Success, steps, t, s.now))
        .collect();
    // A stretch inside a longer one that went well as often says nothing more.
    let implied: Vec<bool> = learned
        .iter()
        .map(|p| {
            learned.iter().any(|q| {
                q.steps.len() > p.steps.len()
                    && q.success_count >= p.success_count
                    && q.steps
                        .windows(p.steps.len())
                        .any(|w| w == p.steps.as_slice())
            })
        })
        .collect();
    let mut keep = implied.into_iter();
    learned.retain(|_| !keep.next().unwrap_or(false));
    learned.extend(
        patterns
            .into_iter()
            .filter(|(_, t)| t.failure >= s.min_support && t.failure > t.success)
            .map(|(steps, t)| procedure(namespace, ProcedureKind::Failure, steps, t, s.now)),
    );
    learned.sort_by(|a, b| b.confidence.total_cmp(&a.confidence).then(a.id.cmp(&b.id)));
    learned
}

fn procedure(
    namespace: &str,
    kind: ProcedureKind,
    steps: Vec<Step>,
    mut t: Tally,
    now: i64,
) -> Procedure {
    let (agree, disagree) = match kind {
        ProcedureKind::Success => (t.success, t.failure),
        ProcedureKind::Failure => (t.failure, t.success),
    };
    t.episodes.sort_by(|a, b| b.cmp(a));
    t.episodes.dedup();
    let name = steps
        .iter()
        .map(|s| doing(s.action, std::slice::from_ref(&s.target)))
        .collect::<Vec<_>>()
        .join(" → ");
    Procedure {
        id: procedure_id(namespace, kind, &steps),
        namespace: namespace.to_string(),
        kind,
        name,
        trigger: ProcedureTrigger {
            action: steps[0].action,
            target: steps[0].target.clone(),
        },
        steps,
        learned_from: t
            .episodes
            .into_iter()
            .take(MAX_LEARNED_FROM)
            .map(|(_, id)| id)
            .collect(),
        success_count: t.success,
        failure_count: t.failure,
        confidence: (agree as f32 + 1.0) / ((agree + disagree) as f32 + 2.0),
        last_used: format_micros(t.last),
        updated_at: format_micros(now),
    }
}

fn procedure_id(namespace: &str, kind: ProcedureKind, steps: &[Step]) -> String {
    let text = serde_json::to_string(&(namespace, kind, steps)).expect("plain data");
    format!("proc-{}", content_hash(&text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::book::tests::brief;
    use mnemo_protocol::agent::Action;

    const M: i64 = 60_000_000;

    fn settings() -> Settings {
        Settings {
            min_support: 2,
            chain_gap_us: 30 * M,
            now: 0,
        }
    }

    /// One run in session `s` of (action, target, outcome) steps a minute apart.
    fn run(s: &str, start: i64, steps: &[(Action, &str, Outcome)]) -> Vec<Arc<Brief>> {
        steps
            .iter()
            .enumerate()
            .map(|(i, (a, t, o))| {
                let mut b = brief(&format!("{s}-{i}"), *a, t, *o, start + i as i64 * M);
                b.session_id = Some(s.into());
                Arc::new(b)
            })
            .collect()
    }

    const OK: Outcome = Outcome::Success;
    const FAIL: Outcome = Outcome::Failure;

    fn schema_run(s: &str, last: Outcome) -> Vec<Arc<Brief>> {
        run(
            s,
            0,
            &[
                (Action::Edit, "/r/schema.sql", OK),
                (Action::Command, "make migrate", OK),
                (Action::Command, "cargo test", last),
            ],
        )
    }

    #[test]
    fn a_repeated_sequence_becomes_a_procedure_that_gains_and_loses_confidence() {
        let mut episodes = schema_run("a", OK);
        assert!(
            learn("default", &episodes, &settings()).is_empty(),
            "once is no habit"
        );
        episodes.extend(schema_run("b", OK));
        let learned = learn("default", &episodes, &settings());
        assert_eq!(
            learned.len(),
            1,
            "the stretches inside it are implied: {learned:#?}"
        );
        let p = &learned[0];
        assert_eq!(p.kind, ProcedureKind::Success);
        assert_eq!(p.steps.len(), 3);
        assert_eq!(p.trigger.target, "/r/schema.sql");
        assert_eq!(p.success_count, 2);
        let two = p.confidence;
        episodes.extend(schema_run("c", OK));
        let three = learn("default", &episodes, &settings())[0].clone();
        assert!(three.confidence > two, "{} > {two}", three.confidence);
        assert_eq!(three.id, p.id, "the same procedure, learned again");
        episodes.extend(schema_run("d", FAIL));
        let failed = learn("default", &episodes, &settings());
        let again = failed.iter().find(|q| q.id == p.id).unwrap();
        assert_eq!((again.success_count, again.failure_count), (3, 1));
        assert!(again.confidence < three.confidence);
    }

    #[test]
    fn a_step_that_keeps_failing_after_another_is_a_failure_pattern() {
        let mut episodes = Vec::new();
        for s in ["a", "b"] {
            episodes.extend(run(
                s,
                0,
                &[
                    (Action::Edit, "/r/api.proto", OK),
                    (Action::Command, "cargo build", FAIL),
                ],
            ));
        }
        let learned = learn("default", &episodes, &settings());
        let pattern = learned
            .iter()
            .find(|p| p.kind == ProcedureKind::Failure)
            .expect("a failure pattern");
        assert_eq!(pattern.failure_count, 2);
        assert!(pattern.name.contains("api.proto") && pattern.name.contains("cargo build"));
    }

    #[test]
    fn retries_of_one_step_fold_and_a_long_pause_starts_another_run() {
        let mut a = brief("1", Action::Edit, "/r/x.py", FAIL, 0);
        a.cwd = Some("/r".into());
        let mut b = brief("2", Action::Edit, "/r/x.py", OK, M);
        b.cwd = Some("/r".into());
        let mut c = brief("3", Action::Command, "pytest", OK, 2 * M);
        c.cwd = Some("/r".into());
        let mut d = brief("4", Action::Command, "git push", OK, 200 * M);
        d.cwd = Some("/r".into());
        let all = [&a, &b, &c, &d];
        let cut = runs(&all, 30 * M);
        assert_eq!(cut.len(), 2);
        let taken = steps(&cut[0]);
        assert_eq!(taken.len(), 2);
        assert_eq!(taken[0].outcome, OK, "the last try counts");
    }
}
