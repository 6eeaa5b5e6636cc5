//! The user model measured on text written for it by hand, in two halves (`slots.tsv`,
//! `changes.txt`: what each holds and how it was written is at their top). Each half's
//! figures are printed; the dev half is held to a floor. To see them:
//!
//! `cargo test --release -p mnemo-daemon --lib usermodel::sets -- --nocapture`

use std::collections::BTreeMap;
use std::sync::Arc;

use mnemo_protocol::belief::{BeliefType, USER};

use super::UserModel;
use crate::config::UserModelConfig;
use crate::embed::{EmbedService, Embedder};
use crate::store::beliefs::BeliefRecord;
use crate::store::MemoryRecord;
use crate::understand::beliefs::{extract, observed, Signal};
use crate::understand::entities::fold;

const SLOTS: &str = include_str!("slots.tsv");
const CHANGES: &str = include_str!("changes.txt");

/// A value lower case, without the punctuation around it and a leading article.
fn norm(v: &str) -> String {
    let v = v
        .trim()
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    let v = v.replace('’', "'");
    for article in ["a ", "an ", "the "] {
        if let Some(rest) = v.strip_prefix(article) {
            return rest.to_string();
        }
    }
    v
}

/// One slot value a sentence states.
#[derive(Debug, Clone)]
struct Expected {
    subject: String,
    slot: String,
    value: String,
    negated: bool,
}

fn expected(field: &str) -> Vec<Expected> {
    if field.trim() == "-" {
        return Vec::new();
    }
    field
        .split('|')
        .map(|item| {
            let item = item.trim();
            let (subject, rest) = match item.split_once(':') {
                Some((s, r)) if !s.contains('=') => (s.to_string(), r),
                _ => (USER.to_string(), item),
            };
            let (slot, value) = rest.split_once('=').expect("slot=value");
            let (value, negated) = match value.strip_prefix('!') {
                Some(v) => (v, true),
                None => (value, false),
            };
            Expected {
                subject,
                slot: slot.to_string(),
                value: value.to_string(),
                negated,
            }
        })
        .collect()
}

/// The slot a signal fills, as the set names slots.
fn slot_of(s: &Signal) -> String {
    if s.kind == BeliefType::Preference {
        if s.predicate.starts_with("favorite ") {
            return s.predicate.clone();
        }
        return match s.object.as_str() {
            "dislike" | "avoid" | "never" => "dislikes".into(),
            _ => "likes".into(),
        };
    }
    s.predicate.clone()
}

fn contains_either(a: &str, b: &str) -> bool {
    let (a, b) = (norm(a), norm(b));
    !a.is_empty() && !b.is_empty() && (a.contains(&b) || b.contains(&a))
}

fn fills(s: &Signal, e: &Expected) -> bool {
    if fold(&s.subject) != fold(&e.subject) || slot_of(s) != e.slot {
        return false;
    }
    match e.slot.as_str() {
        "likes" | "dislikes" => contains_either(&s.predicate, &e.value),
        _ if e.slot.starts_with("favorite ") => norm(&s.object) == norm(&e.value),
        "goal" | "does" => s.negated == e.negated && contains_either(&s.object, &e.value),
        "relation" => norm(&s.object).starts_with(&norm(&e.value)),
        _ => s.negated == e.negated && norm(&s.object) == norm(&e.value),
    }
}

#[derive(Default, Debug, Clone, Copy)]
struct Counts {
    right: usize,
    wrong: usize,
    missed: usize,
}

impl Counts {
    fn precision(&self) -> f64 {
        self.right as f64 / (self.right + self.wrong).max(1) as f64
    }
    fn recall(&self) -> f64 {
        self.right as f64 / (self.right + self.missed).max(1) as f64
    }
}

/// Per half, per slot: right, wrong and missed values; and what went wrong, for reading.
fn score_slots() -> BTreeMap<String, (BTreeMap<String, Counts>, Vec<String>)> {
    let mut out: BTreeMap<String, (BTreeMap<String, Counts>, Vec<String>)> = BTreeMap::new();
    let lines = SLOTS
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty());
    let named: Vec<String> = SLOTS
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split('\t').nth(2))
        .flat_map(expected)
        .map(|e| e.slot)
        .collect();
    for line in lines {
        let mut cols = line.split('\t');
        let (half, text, want) = (
            cols.next().unwrap(),
            cols.next().unwrap(),
            cols.next().unwrap_or("-"),
        );
        let want = expected(want);
        let got: Vec<Signal> = extract(text, 0)
            .into_iter()
            .filter(|s| named.contains(&slot_of(s)) && !observed::is_observed(&s.predicate))
            .collect();
        let (by_slot, notes) = out.entry(half.to_string()).or_default();
        for s in &got {
            let ok = want.iter().any(|e| fills(s, e));
            let c = by_slot.entry(slot_of(s)).or_default();
            if ok {
                c.right += 1;
            } else {
                c.wrong += 1;
                notes.push(format!(
                    "wrong  {text:?}: {} {} {}",
                    s.subject, s.predicate, s.object
                ));
            }
        }
        for e in &want {
            if !got.iter().any(|s| fills(s, e)) {
                by_slot.entry(e.slot.clone()).or_default().missed += 1;
                notes.push(format!("missed {text:?}: {:?}", e));
            }
        }
    }
    out
}

fn total(by_slot: &BTreeMap<String, Counts>) -> Counts {
    by_slot.values().fold(Counts::default(), |t, c| Counts {
        right: t.right + c.right,
        wrong: t.wrong + c.wrong,
        missed: t.missed + c.missed,
    })
}

#[test]
fn extraction_by_slot() {
    let scored = score_slots();
    for (half, (by_slot, notes)) in &scored {
        let all = total(by_slot);
        println!(
            "slots, {half} half: precision {:.3} recall {:.3} ({} right, {} wrong, {} missed)",
            all.precision(),
            all.recall(),
            all.right,
            all.wrong,
            all.missed
        );
        for (slot, c) in by_slot {
            println!(
                "  {slot:<16} precision {:.2} recall {:.2}  ({}/{}/{})",
                c.precision(),
                c.recall(),
                c.right,
                c.wrong,
                c.missed
            );
        }
        if half == "dev" {
            for n in notes {
                println!("  {n}");
            }
        }
    }
    let dev = total(&scored["dev"].0);
    assert!(
        dev.precision() >= 0.9 && dev.recall() >= 0.85,
        "dev half: {dev:?}"
    );
}

/// One step of a life-change sequence: a line the person adds, and what must hold after it.
struct Step {
    line: String,
    checks: Vec<String>,
}

struct Sequence {
    name: String,
    half: String,
    steps: Vec<Step>,
}

fn sequences() -> Vec<Sequence> {
    let mut out: Vec<Sequence> = Vec::new();
    for line in CHANGES.lines() {
        if let Some(head) = line.strip_prefix("## ") {
            let (name, half) = head.rsplit_once(' ').expect("name [half]");
            out.push(Sequence {
                name: name.to_string(),
                half: half.trim_matches(['[', ']']).to_string(),
                steps: Vec::new(),
            });
        } else if let Some(said) = line.strip_prefix("> ") {
            let seq = out.last_mut().expect("a sequence before its lines");
            seq.steps.push(Step {
                line: said.to_string(),
                checks: Vec::new(),
            });
        } else if !line.starts_with('#') && !line.trim().is_empty() {
            let seq = out.last_mut().expect("a sequence before its checks");
            seq.steps
                .last_mut()
                .expect("a line before its checks")
                .checks
                .push(line.to_string());
        }
    }
    out
}

/// Whether `check` holds of the person's current beliefs; `None` when it does, else why not.
fn holds(check: &str, held: &[BeliefRecord]) -> Option<String> {
    let current: Vec<&BeliefRecord> = held.iter().filter(|b| b.valid_to.is_none()).collect();
    let user = |b: &&&BeliefRecord| b.subject == USER;
    let (op, rest) = check.split_once(' ').unwrap_or((check, ""));
    let (slot, value) = rest.split_once(' ').unwrap_or((rest, ""));
    let values = |slot: &str| -> Vec<String> {
        current
            .iter()
            .filter(user)
            .filter(|b| b.predicate == slot && !b.negated)
            .map(|b| norm(&b.object))
            .collect()
    };
    // Whole words: "dislikes running" does not say "likes running".
    let has = |statement: &str, words: &str| {
        let padded = format!(
            " {} ",
            statement
                .to_lowercase()
                .replace(|c: char| !c.is_alphanumeric() && c != '\'', " ")
        );
        // A word's start is its start ("smoke" is said by "smokes", "likes" not by "dislikes").
        padded.contains(&format!(" {}", words.to_lowercase()))
    };
    let says = |words: &str| current.iter().any(|b| has(&b.statement, words));
    let ok = match op {
        "=" if value.is_empty() => values(slot).is_empty(),
        "=" => values(slot) == vec![norm(value)],
        "+" => values(slot).contains(&norm(value)),
        "-" => !values(slot).contains(&norm(value)),
        "~" => says(rest),
        "!~" => !says(rest),
        _ => panic!("unknown check {check:?}"),
    };
    (!ok).then(|| {
        let shown: Vec<String> = current.iter().map(|b| b.statement.clone()).collect();
        format!("{check:?} fails; current: {shown:?}")
    })
}

fn record(i: usize, text: &str, dim: usize) -> MemoryRecord {
    const DAY: i64 = 86_400_000_000;
    let mut r = crate::store::schema::tests::record(&format!("m{i}"), text, dim);
    let at = 1_700_000_000_000_000 + i as i64 * DAY;
    (r.created_at, r.valid_from, r.occurred_at) = (at, at, Some(at));
    r.metadata = "{}".into();
    r.is_summary = false;
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn life_changes() {
    let Some(model) = crate::embed::test_model() else {
        return;
    };
    let model: Arc<dyn Embedder> = Arc::new(model);
    let mut by_half: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut failures: Vec<String> = Vec::new();
    for seq in sequences() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::test_store(dir.path()).await;
        let embed = EmbedService::start(model.clone(), 8, 1).unwrap();
        let usermodel = UserModel::new(store, embed, &UserModelConfig::default());
        for (i, step) in seq.steps.iter().enumerate() {
            usermodel
                .observe(&[record(i, &step.line, 4)])
                .await
                .unwrap();
            usermodel.embed_missing().await.unwrap();
            let held = usermodel.matching(|_| true);
            let wrong: Vec<String> = step.checks.iter().filter_map(|c| holds(c, &held)).collect();
            let tally = by_half.entry(seq.half.clone()).or_default();
            tally.1 += 1;
            if wrong.is_empty() {
                tally.0 += 1;
            } else {
                failures.push(format!(
                    "[{}] {} after {:?}: {}",
                    seq.half,
                    seq.name,
                    step.line,
                    wrong.join("; ")
                ));
            }
        }
    }
    for (half, (right, all)) in &by_half {
        println!(
            "life changes, {half} half: {right} of {all} steps right ({:.3})",
            *right as f64 / *all as f64
        );
    }
    for f in failures.iter().filter(|f| f.starts_with("[dev]")) {
        println!("  {f}");
    }
    let (right, all) = by_half["dev"];
    assert!(
        right as f64 / all as f64 >= 0.95,
        "dev half: {right} of {all}"
    );
}
