//! Fusion and ranking, as pure functions of the candidates so they can be tested by table.

use mnemo_protocol::memory::{ScoreExplain, ScoreWeights, SearchMode};

use crate::config::{Fusion, SearchConfig};
use crate::store::MemoryRecord;

/// The constant of reciprocal-rank fusion (Cormack et al.).
const RRF_K: f32 = 60.0;
const MICROS_PER_DAY: f32 = 86_400_000_000.0;

#[derive(Debug, Clone)]
pub struct Candidate {
    /// The ranking columns only (`store::RANKING_COLUMNS`) until it is among the results.
    pub record: MemoryRecord,
    /// Where the rest of its row is read from.
    pub row_id: Option<u64>,
    pub vector_rank: Option<usize>,
    pub vector_similarity: Option<f32>,
    pub text_rank: Option<usize>,
    pub text_score: Option<f32>,
    /// The share of the query's entities this memory mentions (`graph::entity_match`).
    pub entity: f32,
    /// Whether it is by (or first about) someone the query names (`graph::subject_match`).
    pub subject: f32,
    /// What it draws from a strong result beside it (`graph::spread`), and that result's id.
    pub graph: f32,
    pub graph_via: Option<String>,
    /// How well the time it speaks about matches the time the query names ([`time_match`]).
    pub time: f32,
}

impl Candidate {
    /// A candidate a read found at `row_id`.
    pub fn found(record: MemoryRecord, row_id: Option<u64>) -> Self {
        Self {
            row_id,
            ..Self::new(record)
        }
    }

    pub fn new(record: MemoryRecord) -> Self {
        Self {
            record,
            row_id: None,
            vector_rank: None,
            vector_similarity: None,
            text_rank: None,
            text_score: None,
            entity: 0.0,
            subject: 0.0,
            graph: 0.0,
            graph_via: None,
            time: 0.0,
        }
    }
}

#[derive(Debug, Clone)]
pub struct RankSettings {
    pub fusion: Fusion,
    pub mode: SearchMode,
    pub text_weight: f32,
    pub weights: ScoreWeights,
    pub recency_half_life_days: f32,
}

impl RankSettings {
    pub fn from_config(config: &SearchConfig, mode: SearchMode) -> Self {
        Self {
            fusion: config.fusion,
            mode,
            text_weight: config.text_weight.clamp(0.0, 1.0),
            weights: ScoreWeights {
                relevance: config.relevance_weight,
                salience: config.salience_weight,
                strength: config.strength_weight,
                recency: config.recency_weight,
                entity: config.entity_weight,
                subject: config.subject_weight,
                graph: config.graph_weight,
                time: config.time_weight,
            },
            recency_half_life_days: config.recency_half_life_days,
        }
    }
}

/// The lowest and highest score one retriever gave the candidates.
#[derive(Debug, Clone, Copy)]
struct Span {
    low: f32,
    high: f32,
}

impl Span {
    fn of(scores: impl Iterator<Item = f32>) -> Self {
        scores.fold(
            Span {
                low: f32::INFINITY,
                high: f32::NEG_INFINITY,
            },
            |s, x| Span {
                low: s.low.min(x),
                high: s.high.max(x),
            },
        )
    }

    /// Where `x` lies between the lowest (0) and the highest (1); 1 when all are equal.
    fn scale(&self, x: f32) -> f32 {
        if self.high > self.low {
            ((x - self.low) / (self.high - self.low)).clamp(0.0, 1.0)
        } else {
            1.0
        }
    }
}

/// Relevance in 0–1 from whichever retrievers found the candidate. Weighted fusion scales
/// each retriever's scores to 0–1 across the candidates first (relative score fusion): the
/// cosines of a small embedder's candidates lie within a few hundredths of each other while
/// BM25 scores spread over their whole range, so unscaled the words decided nearly alone
/// (LoCoMo dev, hybrid evidence recall@10 over categories 1–4: 0.795 → 0.816 scaled).
fn relevance(c: &Candidate, spans: &(Span, Span), s: &RankSettings) -> f32 {
    let (wv, wt) = match s.mode {
        SearchMode::Vector => (1.0, 0.0),
        SearchMode::Text => (0.0, 1.0),
        SearchMode::Hybrid => (1.0 - s.text_weight, s.text_weight),
    };
    match s.fusion {
        Fusion::Rrf => {
            let rr = |rank: Option<usize>| rank.map_or(0.0, |r| 1.0 / (RRF_K + r as f32));
            (wv * rr(c.vector_rank) + wt * rr(c.text_rank)) * (RRF_K + 1.0)
        }
        Fusion::Weighted => {
            let (vector, text) = spans;
            let v = c.vector_similarity.map_or(0.0, |x| vector.scale(x));
            let t = c.text_score.map_or(0.0, |x| text.scale(x));
            wv * v + wt * t
        }
    }
}

/// How well a memory's time matches the span `[start, end)` a query names: 1 when the time
/// its text speaks about (or, without one, when it happened) overlaps it, falling by half for
/// each span's width it lies away.
pub fn time_match(start: i64, end: i64, r: &MemoryRecord) -> f32 {
    let (from, to) = match (r.event_start, r.event_end) {
        (Some(s), Some(e)) => (s, e),
        _ => (r.event_time(), r.event_time() + 1),
    };
    let gap = if to <= start {
        start - to
    } else if from >= end {
        from - end
    } else {
        return 1.0;
    };
    let width = (end - start).max(1) as f32;
    0.5f32.powf(gap as f32 / width)
}

/// Scores every candidate and sorts them best first.
pub fn fuse_and_rank(
    candidates: Vec<Candidate>,
    s: &RankSettings,
    now: i64,
) -> Vec<(Candidate, ScoreExplain)> {
    let spans = (
        Span::of(candidates.iter().filter_map(|c| c.vector_similarity)),
        Span::of(candidates.iter().filter_map(|c| c.text_score)),
    );
    let w = s.weights;
    let mut scored: Vec<(Candidate, ScoreExplain)> = candidates
        .into_iter()
        .map(|c| {
            let relevance = relevance(&c, &spans, s);
            let age_days = ((now - c.record.event_time()).max(0) as f32) / MICROS_PER_DAY;
            let recency =
                (-std::f32::consts::LN_2 * age_days / s.recency_half_life_days.max(0.01)).exp();
            let salience = c.record.salience / 10.0;
            let strength = c.record.strength;
            let score = w.relevance * relevance
                + w.salience * salience
                + w.strength * strength
                + w.recency * recency
                + w.entity * c.entity
                + w.subject * c.subject
                + w.graph * c.graph
                + w.time * c.time;
            let explain = ScoreExplain {
                vector_rank: c.vector_rank,
                vector_similarity: c.vector_similarity,
                text_rank: c.text_rank,
                text_score: c.text_score,
                relevance,
                salience: c.record.salience,
                strength,
                recency,
                entity: c.entity,
                subject: c.subject,
                graph: c.graph,
                graph_via: c.graph_via.clone(),
                time: c.time,
                salience_factors: c.record.salience_factors(),
                superseded: None,
                weights: w,
                score,
            };
            (c, explain)
        })
        .collect();
    scored.sort_by(|a, b| {
        b.1.score
            .total_cmp(&a.1.score)
            .then_with(|| a.0.record.id.cmp(&b.0.record.id))
    });
    scored
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema::tests::record;

    fn cand(id: &str, v: Option<(usize, f32)>, t: Option<(usize, f32)>) -> Candidate {
        let mut c = Candidate::new(record(id, id, 4));
        c.record.occurred_at = Some(0);
        c.vector_rank = v.map(|x| x.0);
        c.vector_similarity = v.map(|x| x.1);
        c.text_rank = t.map(|x| x.0);
        c.text_score = t.map(|x| x.1);
        c
    }

    fn settings(fusion: Fusion, mode: SearchMode) -> RankSettings {
        RankSettings::from_config(
            &SearchConfig {
                fusion,
                ..Default::default()
            },
            mode,
        )
    }

    fn order(fusion: Fusion, mode: SearchMode, cands: Vec<Candidate>) -> Vec<String> {
        fuse_and_rank(cands, &settings(fusion, mode), 0)
            .into_iter()
            .map(|(c, _)| c.record.id)
            .collect()
    }

    #[test]
    fn found_by_both_beats_found_by_one() {
        for fusion in [Fusion::Rrf, Fusion::Weighted] {
            let cands = vec![
                cand("vec-only", Some((1, 0.8)), None),
                cand("both", Some((2, 0.75)), Some((1, 9.0))),
                cand("text-only", None, Some((2, 8.0))),
                cand("weak", Some((3, 0.5)), Some((3, 1.0))),
            ];
            assert_eq!(
                order(fusion, SearchMode::Hybrid, cands)[0],
                "both",
                "{fusion:?}"
            );
        }
    }

    #[test]
    fn single_mode_follows_its_retriever() {
        let cands = || {
            vec![
                cand("a", Some((2, 0.5)), Some((1, 9.0))),
                cand("b", Some((1, 0.9)), Some((2, 1.0))),
            ]
        };
        assert_eq!(
            order(Fusion::Weighted, SearchMode::Vector, cands()),
            ["b", "a"]
        );
        assert_eq!(
            order(Fusion::Weighted, SearchMode::Text, cands()),
            ["a", "b"]
        );
        assert_eq!(order(Fusion::Rrf, SearchMode::Text, cands()), ["a", "b"]);
    }

    #[test]
    fn ties_on_relevance_go_to_salience_then_recency() {
        let mut hi = cand("salient", Some((1, 0.5)), None);
        hi.record.salience = 9.0;
        let lo = cand("plain", Some((1, 0.5)), None);
        assert_eq!(
            order(Fusion::Weighted, SearchMode::Vector, vec![lo, hi]),
            ["salient", "plain"]
        );

        let mut old = cand("old", Some((1, 0.5)), None);
        old.record.occurred_at = Some(-400 * MICROS_PER_DAY as i64);
        let new = cand("new", Some((1, 0.5)), None);
        assert_eq!(
            order(Fusion::Weighted, SearchMode::Vector, vec![old, new]),
            ["new", "old"]
        );
    }

    #[test]
    fn a_memory_naming_the_querys_entities_moves_up() {
        let plain = cand("plain", Some((1, 0.62)), None);
        let mut named = cand("named", Some((2, 0.6)), None);
        named.entity = 1.0;
        let far = cand("far", Some((3, 0.2)), None);
        assert_eq!(
            order(
                Fusion::Weighted,
                SearchMode::Vector,
                vec![plain, named, far]
            ),
            ["named", "plain", "far"]
        );
    }

    #[test]
    fn weighted_fusion_scales_each_retrievers_scores_across_the_candidates() {
        // Cosines close together, BM25 scores far apart: scaled, the best cosine counts as
        // much as the best BM25 score, so a memory first by meaning is not lost to words.
        let cands = vec![
            cand("meaning", Some((1, 0.62)), Some((3, 1.0))),
            cand("words", Some((3, 0.58)), Some((1, 9.0))),
            cand("neither", Some((2, 0.60)), Some((2, 5.0))),
        ];
        let ranked = fuse_and_rank(cands, &settings(Fusion::Weighted, SearchMode::Hybrid), 0);
        let relevance = |id: &str| {
            ranked
                .iter()
                .find(|(c, _)| c.record.id == id)
                .unwrap()
                .1
                .relevance
        };
        assert!((relevance("meaning") - 0.5).abs() < 1e-6);
        assert!((relevance("words") - 0.5).abs() < 1e-6);
        assert!((relevance("neither") - 0.5 * (0.5 + 0.5)).abs() < 1e-3);
        // One retriever's only candidate is its best.
        let alone = fuse_and_rank(
            vec![cand("only", Some((1, 0.3)), None)],
            &settings(Fusion::Weighted, SearchMode::Vector),
            0,
        );
        assert_eq!(alone[0].1.relevance, 1.0);
    }

    #[test]
    fn a_memory_beside_a_strong_result_moves_up() {
        let best = cand("best", Some((1, 0.6)), None);
        let plain = cand("plain", Some((2, 0.3)), None);
        let mut beside = cand("beside", None, None);
        beside.graph = 0.9;
        beside.graph_via = Some("best".into());
        let ranked = fuse_and_rank(
            vec![best, plain, beside],
            &settings(Fusion::Weighted, SearchMode::Vector),
            0,
        );
        let ids: Vec<&str> = ranked.iter().map(|(c, _)| c.record.id.as_str()).collect();
        assert_eq!(ids, ["best", "beside", "plain"]);
        assert_eq!(ranked[1].1.graph_via.as_deref(), Some("best"));
    }

    #[test]
    fn explain_adds_up() {
        let mut a = cand("a", Some((1, 0.6)), Some((3, 2.0)));
        a.entity = 0.5;
        a.graph = 0.25;
        a.time = 0.5;
        let ranked = fuse_and_rank(vec![a], &settings(Fusion::Weighted, SearchMode::Hybrid), 0);
        let e = &ranked[0].1;
        let w = e.weights;
        let sum = w.relevance * e.relevance
            + w.salience * e.salience / 10.0
            + w.strength * e.strength
            + w.recency * e.recency
            + w.entity * e.entity
            + w.graph * e.graph
            + w.time * e.time;
        assert!(w.graph > 0.0);
        assert!((sum - e.score).abs() < 1e-6);
        // The only candidate is each retriever's best.
        assert!((e.relevance - 1.0).abs() < 1e-6);
        assert_eq!((e.vector_rank, e.text_rank), (Some(1), Some(3)));
    }
}

#[cfg(test)]
mod time_tests {
    use super::*;
    use crate::store::schema::tests::record;

    const DAY: i64 = 86_400_000_000;

    #[test]
    fn a_memory_in_the_named_time_matches_and_one_far_away_does_not() {
        // The query names days 10–17 (a week).
        let (start, end) = (10 * DAY, 17 * DAY);
        let mut inside = record("in", "x", 4);
        inside.occurred_at = Some(12 * DAY);
        inside.event_start = None;
        inside.event_end = None;
        let mut speaks_of = record("of", "x", 4);
        speaks_of.occurred_at = Some(40 * DAY);
        speaks_of.event_start = Some(16 * DAY);
        speaks_of.event_end = Some(18 * DAY);
        let mut week_after = record("after", "x", 4);
        week_after.occurred_at = Some(24 * DAY);
        week_after.event_start = None;
        week_after.event_end = None;
        let mut year_later = record("later", "x", 4);
        year_later.occurred_at = Some(400 * DAY);
        year_later.event_start = None;
        year_later.event_end = None;
        assert_eq!(time_match(start, end, &inside), 1.0);
        assert_eq!(time_match(start, end, &speaks_of), 1.0);
        let after = time_match(start, end, &week_after);
        assert!((after - 0.5).abs() < 0.01, "{after}");
        assert!(time_match(start, end, &year_later) < 0.001);
    }
}
