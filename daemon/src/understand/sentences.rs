//! Sentences of a text, the ones that commit the speaker to something, and the content
//! words a text is about.

use std::collections::HashMap;

use super::emotion::words;
use super::entities::is_common_word;

/// The words of `text` that carry its topic: four letters or more, not common, not numbers.
pub fn content_words(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| w.len() >= 4 && !is_common_word(w) && !w.chars().all(|c| c.is_numeric()))
        .collect()
}

/// Content words said more than once over `texts`, most frequent first (ties: first said),
/// at most `max`.
pub fn frequent_words<'a>(texts: impl IntoIterator<Item = &'a str>, max: usize) -> Vec<String> {
    let mut counts: HashMap<String, (usize, usize)> = HashMap::new();
    let mut order = 0;
    for text in texts {
        for w in content_words(text) {
            order += 1;
            counts.entry(w).or_insert((0, order)).0 += 1;
        }
    }
    let mut ranked: Vec<_> = counts.into_iter().filter(|(_, (n, _))| *n > 1).collect();
    ranked.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.1 .1.cmp(&b.1 .1)));
    ranked.into_iter().take(max).map(|(w, _)| w).collect()
}

/// The text cut into sentences (at `.`, `!` or `?` before a space, and at line ends), trimmed.
pub fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in text.char_indices() {
        let end = match c {
            '\n' => Some(i),
            '.' | '!' | '?' if text[i + 1..].starts_with(' ') => Some(i + 1),
            _ => None,
        };
        if let Some(end) = end {
            out.push(text[start..end].trim());
            start = end;
        }
    }
    out.push(text[start..].trim());
    out.retain(|s| !s.is_empty());
    out
}

/// The first sentence, cut to `max_chars` (with `…`).
pub fn first_sentence(text: &str, max_chars: usize) -> String {
    let sentence = sentences(text).into_iter().next().unwrap_or_default();
    clip(sentence, max_chars)
}

/// `text` cut to `max_chars` characters, `…` marking the cut.
pub fn clip(text: &str, max_chars: usize) -> String {
    if text.chars().count() > max_chars {
        let cut: String = text.chars().take(max_chars.saturating_sub(1)).collect();
        format!("{}…", cut.trim_end())
    } else {
        text.to_string()
    }
}

/// Openings by which the speaker takes something on ("I'll send the draft").
const COMMITTING: &[&str] = &[
    "i'll ",
    "i will ",
    "i'm going to ",
    "i am going to ",
    "i need to ",
    "i have to ",
    "i must ",
    "i promise ",
    "i promised ",
    "i plan to ",
    "remind me to ",
    "we'll ",
    "we will ",
    "we need to ",
    "todo:",
    "todo ",
];

/// Whether `sentence` commits its speaker to doing something: a committing opening at the
/// start of the sentence or of a clause, not asked and not denied.
pub fn is_commitment(sentence: &str) -> bool {
    let s = sentence.trim().to_lowercase().replace('’', "'");
    if s.ends_with('?') || s.contains(" not ") || (s.contains("n't ") && !s.contains("won't")) {
        return false;
    }
    // A clause start: the sentence start, or after a comma or "and"/"so"/"then".
    let starts = std::iter::once(0).chain(s.match_indices([',', ';']).map(|(i, _)| i + 1));
    starts
        .flat_map(|i| {
            let clause = s[i..].trim_start();
            let clause = ["and ", "so ", "then ", "ok ", "okay "]
                .iter()
                .find_map(|w| clause.strip_prefix(w))
                .unwrap_or(clause);
            COMMITTING.iter().map(move |c| clause.starts_with(c))
        })
        .any(|hit| hit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_split_at_ends_and_lines() {
        assert_eq!(
            sentences("One. Two! Three?\nFour"),
            ["One.", "Two!", "Three?", "Four"]
        );
        assert_eq!(sentences("v1.2 is out"), ["v1.2 is out"]);
        assert!(sentences("  ").is_empty());
        assert_eq!(first_sentence("A long first sentence. B.", 8), "A long…");
    }

    #[test]
    fn commitments_are_taken_on_not_asked_or_denied() {
        for yes in [
            "I'll send the draft by Friday.",
            "OK, I will call the landlord tomorrow",
            "We need to fix the login bug before the release.",
            "Remind me to water the plants",
            "Thanks, and I'm going to book the flights tonight",
            "TODO: rotate the keys",
        ] {
            assert!(is_commitment(yes), "{yes}");
        }
        for no in [
            "Will you send the draft?",
            "I'll not be there.",
            "I don't need to go.",
            "She will send it.",
            "I sent the draft.",
            "Should I book the flights?",
        ] {
            assert!(!is_commitment(no), "{no}");
        }
    }
}
