//! `mnemo bench understanding`: how much of what the LoCoMo authors observed about each
//! speaker, session by session, mnemo's beliefs hold. Each annotated conversation is loaded
//! into a namespace of its own; its beliefs are read back with the memories they came from.
//!
//! The match is by meaning, one belief to one observation: within a session and a person,
//! pairs are taken greedily by the cosine of their vectors (mnemod's own embedder, through
//! `system.embed`) while it is at least `--threshold`. Recall is the share of observations
//! matched; precision the share of beliefs about the session's speakers that matched one
//! (a belief true on reading that the authors did not write down counts against it: the
//! unmatched ones are printed with `--show` to be judged by a reader).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use anyhow::Context;
use mnemo_client::Client;
use mnemo_protocol::belief::{self, Belief, BeliefSource};
use mnemo_protocol::memory::{AddBatch, AddBatchParams, Filter, List, ListParams};
use mnemo_protocol::system::{Embed, EmbedParams, MAX_EMBED_TEXTS};
use serde_json::{json, Value};

use mnemo_client::locomo;

/// What `mnemo bench understanding` is asked.
pub struct UnderstandingBench<'a> {
    pub dir: &'a Path,
    pub load: bool,
    pub threshold: f32,
    pub show: usize,
}

/// One conversation's sessions: per session and speaker, the observations.
struct Annotated {
    id: String,
    speakers: [String; 2],
    /// (session, speaker) → observations.
    observed: BTreeMap<(u32, String), Vec<String>>,
    sample: Value,
}

fn read(path: &Path) -> anyhow::Result<Annotated> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let conv: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let id = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("conversation")
        .to_string();
    let speaker = |k: &str| conv[k].as_str().unwrap_or_default().to_string();
    let mut observed: BTreeMap<(u32, String), Vec<String>> = BTreeMap::new();
    for (key, by_speaker) in conv.as_object().into_iter().flatten() {
        let Some(n) = key
            .strip_prefix("session_")
            .and_then(|k| k.strip_suffix("_observation"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        for (who, facts) in by_speaker.as_object().into_iter().flatten() {
            for fact in facts.as_array().into_iter().flatten() {
                if let Some(text) = fact.get(0).and_then(Value::as_str) {
                    observed
                        .entry((n, who.clone()))
                        .or_default()
                        .push(text.to_string());
                }
            }
        }
    }
    anyhow::ensure!(
        !observed.is_empty(),
        "{} has no session_N_observation: is it an annotated LoCoMo conversation?",
        path.display()
    );
    Ok(Annotated {
        speakers: [speaker("speaker_a"), speaker("speaker_b")],
        sample: json!({ "sample_id": id, "conversation": conv }),
        id,
        observed,
    })
}

/// The namespace a conversation's turns go to for this bench.
fn namespace(id: &str) -> String {
    format!("understand-{id}")
}

/// Session number of a memory (`session_N`), by memory id, for the namespace.
async fn sessions_of(client: &mut Client, ns: &str) -> anyhow::Result<HashMap<String, u32>> {
    let mut out = HashMap::new();
    let mut cursor = None;
    loop {
        let page = client
            .call::<List>(&ListParams {
                filter: Filter {
                    namespace: Some(ns.to_string()),
                    ..Default::default()
                },
                limit: Some(1000),
                cursor,
            })
            .await?;
        for m in page.memories {
            let n = m
                .session_id
                .as_deref()
                .and_then(|s| s.strip_prefix("session_"))
                .and_then(|n| n.parse().ok());
            if let Some(n) = n {
                out.insert(m.id, n);
            }
        }
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return Ok(out),
        }
    }
}

/// Every belief read from the namespace's memories, current and past.
async fn beliefs_of(client: &mut Client, ns: &str) -> anyhow::Result<Vec<Belief>> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let page = client
            .call::<belief::List>(&belief::ListParams {
                namespace: Some(ns.to_string()),
                source: Some(BeliefSource::Extracted),
                all: true,
                limit: Some(500),
                cursor,
                ..Default::default()
            })
            .await?;
        out.extend(page.beliefs);
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return Ok(out),
        }
    }
}

async fn embed(client: &mut Client, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
    let mut out = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(MAX_EMBED_TEXTS) {
        let r = client
            .call::<Embed>(&EmbedParams {
                texts: chunk.to_vec(),
            })
            .await?;
        out.extend(r.vectors);
    }
    Ok(out)
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Pairs of (belief, observation) indices taken greedily by similarity, one to one, while
/// it is at least `threshold`.
pub fn greedy_match(similarity: &[Vec<f32>], threshold: f32) -> Vec<(usize, usize)> {
    let mut pairs: Vec<(f32, usize, usize)> = Vec::new();
    for (b, row) in similarity.iter().enumerate() {
        for (o, &s) in row.iter().enumerate() {
            if s >= threshold {
                pairs.push((s, b, o));
            }
        }
    }
    pairs.sort_by(|x, y| y.0.total_cmp(&x.0).then((x.1, x.2).cmp(&(y.1, y.2))));
    let (mut used_b, mut used_o) = (Vec::new(), Vec::new());
    let mut out = Vec::new();
    for (_, b, o) in pairs {
        if !used_b.contains(&b) && !used_o.contains(&o) {
            used_b.push(b);
            used_o.push(o);
            out.push((b, o));
        }
    }
    out
}

/// The speaker a belief is about: its subject, or the owner of "Gina's store".
fn about<'a>(b: &Belief, speakers: &'a [String; 2]) -> Option<&'a String> {
    let subject = b.subject.to_lowercase();
    speakers.iter().find(|s| {
        let s = s.to_lowercase();
        subject == s || subject.starts_with(&format!("{s}'s "))
    })
}

#[derive(Default, Clone, Copy)]
struct Tally {
    observations: usize,
    beliefs: usize,
    matched: usize,
}

impl Tally {
    fn add(&mut self, o: Tally) {
        self.observations += o.observations;
        self.beliefs += o.beliefs;
        self.matched += o.matched;
    }

    fn line(&self) -> String {
        let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        format!(
            "recall {:.3} ({}/{})  precision {:.3} ({}/{})",
            ratio(self.matched, self.observations),
            self.matched,
            self.observations,
            ratio(self.matched, self.beliefs),
            self.matched,
            self.beliefs
        )
    }
}

pub async fn run(client: &mut Client, bench: UnderstandingBench<'_>) -> anyhow::Result<()> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(bench.dir)
        .with_context(|| format!("reading {}", bench.dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    anyhow::ensure!(
        !files.is_empty(),
        "no annotated conversations (*.json) in {}",
        bench.dir.display()
    );
    println!(
        "beliefs against the authors' observations: one to one, by meaning (cosine ≥ {:.2})",
        bench.threshold
    );
    // The same matching at stricter lines too, so a reader sees how the figure leans on it.
    let mut lines: Vec<f32> = vec![bench.threshold];
    for stricter in [0.65, 0.7] {
        if stricter > bench.threshold {
            lines.push(stricter);
        }
    }
    let mut stricter_tallies = vec![Tally::default(); lines.len() - 1];
    let mut overall = Tally::default();
    let mut unmatched_beliefs: Vec<String> = Vec::new();
    let mut missed: Vec<String> = Vec::new();
    for file in &files {
        let conv = read(file)?;
        let ns = namespace(&conv.id);
        if bench.load {
            let items = locomo::turns(&conv.sample, &ns);
            let started = std::time::Instant::now();
            for chunk in items.chunks(200) {
                client
                    .call::<AddBatch>(&AddBatchParams {
                        items: chunk.to_vec(),
                    })
                    .await?;
            }
            eprintln!(
                "{}: loaded {} turns in {:.1} s",
                conv.id,
                items.len(),
                started.elapsed().as_secs_f64()
            );
        }
        let sessions = sessions_of(client, &ns).await?;
        let beliefs = beliefs_of(client, &ns).await?;
        // (session, speaker) → beliefs about that speaker read from that session's turns.
        let mut held: BTreeMap<(u32, String), Vec<&Belief>> = BTreeMap::new();
        for b in &beliefs {
            let session = b.source_memory_id.as_ref().and_then(|m| sessions.get(m));
            if let (Some(&n), Some(who)) = (session, about(b, &conv.speakers)) {
                held.entry((n, who.clone())).or_default().push(b);
            }
        }
        let mut tally = Tally::default();
        let keys: Vec<(u32, String)> = conv
            .observed
            .keys()
            .chain(held.keys())
            .cloned()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        for key in keys {
            let observed = conv.observed.get(&key).cloned().unwrap_or_default();
            let stated: Vec<String> = held
                .get(&key)
                .map(|bs| bs.iter().map(|b| b.statement.clone()).collect())
                .unwrap_or_default();
            let (ov, sv) = (
                embed(client, &observed).await?,
                embed(client, &stated).await?,
            );
            let similarity: Vec<Vec<f32>> = sv
                .iter()
                .map(|s| ov.iter().map(|o| cosine(s, o)).collect())
                .collect();
            let pairs = greedy_match(&similarity, bench.threshold);
            tally.add(Tally {
                observations: observed.len(),
                beliefs: stated.len(),
                matched: pairs.len(),
            });
            for (t, line) in stricter_tallies.iter_mut().zip(&lines[1..]) {
                t.add(Tally {
                    observations: observed.len(),
                    beliefs: stated.len(),
                    matched: greedy_match(&similarity, *line).len(),
                });
            }
            for (i, s) in stated.iter().enumerate() {
                if !pairs.iter().any(|(b, _)| *b == i) {
                    unmatched_beliefs.push(format!("{} s{} {}: {s}", conv.id, key.0, key.1));
                }
            }
            for (i, o) in observed.iter().enumerate() {
                if !pairs.iter().any(|(_, x)| *x == i) {
                    missed.push(format!("{} s{} {}: {o}", conv.id, key.0, key.1));
                }
            }
        }
        println!(
            "  {}: {} beliefs in all; {}",
            conv.id,
            beliefs.len(),
            tally.line()
        );
        overall.add(tally);
    }
    println!("  overall: {}", overall.line());
    for (t, line) in stricter_tallies.iter().zip(&lines[1..]) {
        println!("  overall at cosine ≥ {line:.2}: {}", t.line());
    }
    if bench.show > 0 {
        // Every k-th, so the sample spreads over the conversations rather than opening one.
        let every = |list: &[String]| -> Vec<String> {
            let step = (list.len() / bench.show).max(1);
            list.iter()
                .step_by(step)
                .take(bench.show)
                .cloned()
                .collect()
        };
        println!("beliefs that matched no observation (a sample, to judge on reading):");
        for line in every(&unmatched_beliefs) {
            println!("  {line}");
        }
        println!("observations no belief matched (a sample):");
        for line in every(&missed) {
            println!("  {line}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_is_one_to_one_best_first_above_the_threshold() {
        let sim = vec![vec![0.9, 0.8], vec![0.85, 0.3], vec![0.2, 0.1]];
        // Belief 0 takes observation 0 (0.9); belief 1 would want 0 too but it is taken and
        // its 0.3 for 1 is below the line; belief 0 cannot take a second.
        assert_eq!(greedy_match(&sim, 0.5), vec![(0, 0)]);
        assert_eq!(greedy_match(&sim, 0.25), vec![(0, 0), (1, 1)]);
        assert!(greedy_match(&sim, 0.95).is_empty());
    }
}
