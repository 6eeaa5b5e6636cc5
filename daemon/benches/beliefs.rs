//! Belief extraction scored on labelled sentences written apart from the rules
//! (`beliefs-heldout.tsv`, and `beliefs-heldout-2.tsv` written after the first set's misses
//! were fixed): precision and recall by belief type for each, and sentences per second.
//! `cargo bench --workspace --bench beliefs`. Prints figures; asserts nothing.

use std::collections::BTreeMap;
use std::time::Instant;

use mnemo_daemon::understand::beliefs::extract;

/// `subject|predicate|object|type`, `!` before a negated object; compared in lower case.
type Key = (String, String, String, bool, String);

/// When the sentences are taken as said (µs since the epoch): relative times resolve against it.
const SAID_AT: i64 = 1_700_000_000_000_000;

fn key(line: &str) -> Key {
    let p: Vec<&str> = line.trim().split('|').collect();
    let (object, negated) = match p[2].strip_prefix('!') {
        Some(o) => (o, true),
        None => (p[2], false),
    };
    (
        p[0].to_lowercase(),
        p[1].to_lowercase(),
        object.to_lowercase(),
        negated,
        p[3].to_string(),
    )
}

fn main() {
    let mut all = Vec::new();
    for set in ["beliefs-heldout.tsv", "beliefs-heldout-2.tsv"] {
        let path = format!("{}/benches/{set}", env!("CARGO_MANIFEST_DIR"));
        all.extend(score(&path));
        println!();
    }
    let rounds = 200;
    let started = Instant::now();
    for _ in 0..rounds {
        for s in &all {
            std::hint::black_box(extract(s, SAID_AT));
        }
    }
    let per_sec = (rounds * all.len()) as f64 / started.elapsed().as_secs_f64();
    println!("extraction speed: {per_sec:.0} sentences/s on one core");
}

/// Prints precision and recall by type on one labelled set; answers its sentences.
fn score(path: &str) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("the held-out sentences");
    // type -> (true positives, predicted, expected)
    let mut by_type: BTreeMap<String, (u32, u32, u32)> = BTreeMap::new();
    let mut sentences = Vec::new();
    let mut misses = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let (sentence, labels) = line.split_once('\t').unwrap_or((line, ""));
        sentences.push(sentence.to_string());
        let expected: Vec<Key> = labels
            .split(" ; ")
            .filter(|l| !l.trim().is_empty())
            .map(key)
            .collect();
        let got: Vec<Key> = extract(sentence, SAID_AT)
            .into_iter()
            .map(|s| {
                (
                    s.subject.to_lowercase(),
                    s.predicate.to_lowercase(),
                    s.object.to_lowercase(),
                    s.negated,
                    s.kind.as_str().to_string(),
                )
            })
            .collect();
        for g in &got {
            let e = by_type.entry(g.4.clone()).or_default();
            e.1 += 1;
            if expected.contains(g) {
                e.0 += 1;
            }
        }
        for x in &expected {
            by_type.entry(x.4.clone()).or_default().2 += 1;
        }
        if got != expected {
            misses.push(format!(
                "  {sentence}\n    want {expected:?}\n    got  {got:?}"
            ));
        }
    }
    println!(
        "belief extraction on {} held-out sentences ({path})",
        sentences.len()
    );
    println!(
        "{:<12} {:>9} {:>9} {:>6} {:>6}",
        "type", "precision", "recall", "found", "truth"
    );
    let (mut tp, mut pred, mut truth) = (0, 0, 0);
    for (kind, (t, p, e)) in &by_type {
        let ratio = |a: u32, b: u32| {
            if b == 0 {
                "-".to_string()
            } else {
                format!("{:.2}", a as f32 / b as f32)
            }
        };
        println!(
            "{kind:<12} {:>9} {:>9} {p:>6} {e:>6}",
            ratio(*t, *p),
            ratio(*t, *e)
        );
        (tp, pred, truth) = (tp + t, pred + p, truth + e);
    }
    println!(
        "{:<12} {:>9.2} {:>9.2} {pred:>6} {truth:>6}",
        "all",
        tp as f32 / pred.max(1) as f32,
        tp as f32 / truth.max(1) as f32
    );
    println!("sentences that differ:\n{}", misses.join("\n"));
    sentences
}
