//! What the retrievers are asked: the query without the names most memories mention.

use crate::graph::QueryEntity;
use crate::understand::entities::{fold, is_common_word};

/// `query` without the names of `named` that at least `share` of the memories in scope
/// mention (the owner of a store, the other side of a chat). Such a name tells little about
/// which memories answer, yet in a short memory its words outweigh the rest, for the
/// full-text index and the embedding alike: asked "What attributes describe John?", every
/// short remark of John's came first. The entity component still ranks by it. None when the
/// query names no such name, when `share` is 0 (off), or when only common words would be left
/// ("Who is John?").
pub fn without_common_names(query: &str, named: &[QueryEntity], share: f32) -> Option<String> {
    if share <= 0.0 {
        return None;
    }
    let common: Vec<Vec<String>> = named
        .iter()
        .filter(|q| q.share >= share)
        .map(|q| q.written.split_whitespace().map(fold).collect::<Vec<_>>())
        .filter(|words| !words.is_empty())
        .collect();
    if common.is_empty() {
        return None;
    }
    let words: Vec<&str> = query.split_whitespace().collect();
    let folded: Vec<String> = words.iter().map(|w| fold(w)).collect();
    // Indices of the words kept.
    let mut kept = Vec::new();
    let mut i = 0;
    while i < words.len() {
        match common.iter().find(|name| folded[i..].starts_with(name)) {
            Some(name) => i += name.len(),
            None => {
                kept.push(i);
                i += 1;
            }
        }
    }
    let content = kept
        .iter()
        .any(|&i| !folded[i].is_empty() && !is_common_word(&folded[i]));
    let asked: Vec<&str> = kept.iter().map(|&i| words[i]).collect();
    (kept.len() < words.len() && content).then(|| asked.join(" "))
}

/// Words that make a query a question and say nothing of its answer: wh-words and
/// auxiliaries. The full-text analyzer stems before it drops stop words, so "does" (as "doe")
/// is matched (`mnemo search "What does" --mode text` finds "What does it mean to you?"), and
/// in a store of conversations many memories are questions: "What does Melanie do to
/// destress?" found that one first by its words.
const QUESTION_WORDS: &[&str] = &[
    "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "do", "does", "did",
    "has", "have", "had", "can", "could", "would", "should", "shall", "may", "might", "must", "am",
];

/// What the full-text retriever is asked: `query` without its [`QUESTION_WORDS`]; None when
/// it has none, or nothing else ("What did?" is asked as written).
pub fn without_question_words(query: &str) -> Option<String> {
    let words: Vec<&str> = query.split_whitespace().collect();
    let kept: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !QUESTION_WORDS.contains(&fold(w).as_str()))
        .collect();
    (kept.len() < words.len() && !kept.is_empty()).then(|| kept.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A query, the names it names with their share, and what the retrievers are asked.
    type Case = (
        &'static str,
        &'static [(&'static str, f32)],
        Option<&'static str>,
    );

    fn named(written: &str, share: f32) -> QueryEntity {
        QueryEntity {
            key: fold(written),
            aliases: Vec::new(),
            written: written.into(),
            share,
        }
    }

    #[test]
    fn names_most_memories_mention_are_left_out_and_rare_ones_kept() {
        let cases: &[Case] = &[
            // (query, names it names with their share, what the retrievers are asked)
            (
                "What attributes describe John?",
                &[("John", 0.5)],
                Some("What attributes describe"),
            ),
            (
                "What do Melanie's kids like?",
                &[("Melanie", 0.4)],
                Some("What do kids like?"),
            ),
            (
                "When was Jon in Paris?",
                &[("Jon", 0.5), ("Paris", 0.01)],
                Some("When was in Paris?"),
            ),
            ("When was Jon in Paris?", &[("Paris", 0.01)], None),
            (
                "Did Caroline and Melanie paint?",
                &[("Caroline", 0.5), ("Melanie", 0.5)],
                Some("Did and paint?"),
            ),
            (
                "Mary Ann likes New York",
                &[("Mary Ann", 0.3), ("New York", 0.02)],
                Some("likes New York"),
            ),
            // A word of a common name alone is not the name.
            ("Ann went to Mary's", &[("Mary Ann", 0.3)], None),
            // Nothing but common words would be left: asked as written.
            ("Who is John?", &[("John", 0.5)], None),
        ];
        for (query, names, asked) in cases {
            let named: Vec<QueryEntity> = names.iter().map(|(w, s)| named(w, *s)).collect();
            assert_eq!(
                without_common_names(query, &named, 0.25).as_deref(),
                *asked,
                "{query}"
            );
        }
    }

    #[test]
    fn a_share_of_zero_turns_it_off() {
        let john = [named("John", 0.9)];
        assert_eq!(
            without_common_names("What does John eat?", &john, 0.0),
            None
        );
        assert_eq!(
            without_common_names("What does John eat?", &john, 0.95),
            None,
            "a name under the share is kept"
        );
    }

    #[test]
    fn question_words_are_not_asked_of_the_full_text_index() {
        let cases: &[(&str, Option<&str>)] = &[
            (
                "What does Melanie do to destress?",
                Some("Melanie to destress?"),
            ),
            (
                "When did Caroline go to Sweden?",
                Some("Caroline go to Sweden?"),
            ),
            ("How has Jon's studio done?", Some("Jon's studio done?")),
            // Nothing to leave out, or nothing left.
            ("pottery class with the kids", None),
            ("What did?", None),
        ];
        for (query, want) in cases {
            assert_eq!(without_question_words(query).as_deref(), *want, "{query}");
        }
    }
}
