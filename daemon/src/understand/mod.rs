//! Ingest-time analysis: pure functions of the text. Rules only for now; each factor is small
//! and named so the score can be explained and tuned.

pub mod entities;

/// Salience 0–10 from weighted factors of the text. 5 is an ordinary remark.
pub fn salience(text: &str) -> f32 {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .collect();
    let has = |list: &[&str]| words.iter().any(|w| list.contains(w));
    let mut score: f32 = 4.0;
    // Explicit marking: the person says it matters.
    if [
        "remember",
        "important",
        "never forget",
        "don't forget",
        "always",
        "must",
    ]
    .iter()
    .any(|p| lower.contains(p))
    {
        score += 2.0;
    }
    // Self-reference: about the person themselves.
    if has(&["i", "i'm", "my", "me", "mine", "myself"]) {
        score += 1.0;
    }
    // Emotional intensity.
    if has(&[
        "love",
        "hate",
        "afraid",
        "scared",
        "excited",
        "thrilled",
        "angry",
        "sad",
        "happy",
        "worried",
        "proud",
        "grief",
        "devastated",
        "amazing",
        "terrible",
    ]) {
        score += 1.5;
    }
    // Relationships and life events.
    if has(&[
        "wife",
        "husband",
        "mom",
        "dad",
        "mother",
        "father",
        "son",
        "daughter",
        "friend",
        "partner",
        "married",
        "born",
        "died",
        "divorce",
        "job",
        "moved",
        "graduated",
    ]) {
        score += 1.0;
    }
    // Temporal relevance and concrete detail.
    if text.chars().any(|c| c.is_ascii_digit()) {
        score += 0.5;
    }
    if words.len() < 4 {
        score -= 1.5;
    }
    score.clamp(0.0, 10.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn salience_orders_as_a_person_would() {
        let cases = [
            ("ok", 0.0, 3.0),
            ("The weather report says rain tomorrow", 3.0, 5.0),
            ("Remember: my daughter is allergic to peanuts", 7.0, 10.0),
            (
                "I'm so excited, my wife and I got married on 12 May!",
                7.5,
                10.0,
            ),
        ];
        for (text, lo, hi) in cases {
            let s = salience(text);
            assert!((lo..=hi).contains(&s), "{text}: {s} not in {lo}..={hi}");
        }
    }
}
