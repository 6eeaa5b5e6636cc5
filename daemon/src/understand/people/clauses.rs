//! A text cut into the clauses a reader takes one at a time: sentences (at `.`, `!`, `?`, `;`,
//! a line end, a dash or a colon between words), and inside a sentence the clauses a
//! conjunction or a comma opens with a subject of their own ("I live in Porto and I work at
//! Acme") or with a verb that shares the last one's ("Maria lives in Lisbon and works as an
//! architect"). A condition stays whole, so its consequence is not read as a statement.

use super::words::{
    is_company, is_name_like, is_past_verb, is_subject_word, is_subject_word_strict,
    is_third_person_verb, looks_like_a_verb,
};

/// One clause as written, and what the sentence around it makes of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Clause {
    pub text: String,
    /// Its sentence ends in a question mark.
    pub question: bool,
    /// Its sentence opens with a condition ("if", "when", …).
    pub condition: bool,
    /// It opens with a verb: its subject is the clause's before it.
    pub carried: bool,
}

/// Openings of a condition: what follows the comma holds only if it holds.
const CONDITIONS: &[&str] = &[
    "if ",
    "when ",
    "unless ",
    "whenever ",
    "once ",
    "in case ",
    "what if ",
];

/// "When I was younger, …", "When we moved here, …": a time in the past, no condition; its
/// clause after the comma is told as it is.
fn is_past_time(lower: &str) -> bool {
    let Some(rest) = lower.strip_prefix("when ") else {
        return false;
    };
    let head = rest.split(',').next().unwrap_or_default();
    let mut words = head.split_whitespace().map(bare);
    // "When I'm stressed": a subject with its verb in it is the present.
    if words.next().is_none_or(|subject| subject.contains('\'')) {
        return false;
    }
    words
        .find(|w| !super::words::is_adverb_between(w))
        .is_some_and(|w| is_past_verb(&w))
}

/// Words that join two clauses.
const CONJUNCTIONS: &[&str] = &[
    "and", "but", "so", "because", "cause", "'cause", "cuz", "plus", "then", "while", "although",
    "though", "whereas", "yet",
];

/// The clauses of `text`, in order.
pub fn clauses(text: &str) -> Vec<Clause> {
    let mut out = Vec::new();
    for (sentence, question) in sentences(text) {
        let lower = sentence.to_lowercase();
        if CONDITIONS.iter().any(|c| lower.starts_with(c)) && !is_past_time(&lower) {
            out.push(Clause {
                text: sentence.to_string(),
                question,
                condition: true,
                carried: false,
            });
            continue;
        }
        for (piece, carried) in split_clauses(sentence) {
            out.push(Clause {
                text: piece,
                question,
                condition: false,
                carried,
            });
        }
    }
    out.retain(|c| !c.text.is_empty());
    out
}

/// Sentences of `text`, each with whether it asks.
fn sentences(text: &str) -> Vec<(&str, bool)> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        let next = chars.get(i + 1).map(|&(_, n)| n);
        let prev = i.checked_sub(1).map(|p| chars[p].1);
        // "3.5", "e.g." and "Dr. Chen" keep their full stop; one before a space or the end ends.
        let full_stop =
            c == '.' && next.is_none_or(char::is_whitespace) && !is_abbreviation(&text[start..at]);
        // A dash or colon between spaced words ends a thought: "…health - I'd love to …".
        let dash = matches!(c, '-' | '–' | '—')
            && prev.is_some_and(char::is_whitespace)
            && next.is_some_and(char::is_whitespace);
        let colon = c == ':' && next.is_some_and(char::is_whitespace);
        if matches!(c, '!' | '?' | ';' | '\n' | '…') || full_stop || dash || colon {
            let piece = text[start..at].trim();
            // "?!" and "!!!": the sentence asks if any of its closing marks does.
            let mut end = i;
            let mut question = c == '?';
            while let Some(&(_, n)) = chars.get(end + 1) {
                if !matches!(n, '!' | '?' | '.') {
                    break;
                }
                question |= n == '?';
                end += 1;
            }
            out.push((piece, question));
            i = end + 1;
            start = chars.get(i).map_or(text.len(), |&(a, _)| a);
            continue;
        }
        i += 1;
    }
    out.push((text[start..].trim(), false));
    out.retain(|(s, _)| !s.is_empty());
    out
}

/// Titles and short forms whose full stop ends no sentence.
fn is_abbreviation(before: &str) -> bool {
    let last = before
        .rsplit(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or_default()
        .to_lowercase();
    matches!(
        last.as_str(),
        "dr" | "mr"
            | "mrs"
            | "ms"
            | "prof"
            | "st"
            | "jr"
            | "sr"
            | "e.g"
            | "i.e"
            | "vs"
            | "etc"
            | "approx"
            | "no"
            | "mt"
            | "ft"
    )
}

/// A sentence cut where a conjunction (or a comma) opens a clause with its own subject or with
/// a verb; each piece with whether it carries the last one's subject.
fn split_clauses(sentence: &str) -> Vec<(String, bool)> {
    let words: Vec<(usize, &str)> = sentence
        .split_whitespace()
        .map(|w| (w.as_ptr() as usize - sentence.as_ptr() as usize, w))
        .collect();
    let mut cuts: Vec<(usize, usize, bool)> = Vec::new(); // (end of piece, start of next, carried)
    let fronted_end = fronted_phrase_end(&words);
    for i in 1..words.len() {
        let (at, word) = words[i];
        let joiner = bare(word);
        let after_comma = words[i - 1].1.ends_with(',');
        let (opens_at, next) = if CONJUNCTIONS.contains(&joiner.as_str()) {
            let Some(&(next_at, next)) = words.get(i + 1) else {
                continue;
            };
            (next_at, next)
        } else if after_comma && i == fronted_end {
            // "Last week, my grandma passed away": the phrase stays with its clause, which
            // tells it after its subject (`who::subject`).
            continue;
        } else if after_comma {
            (at, word)
        } else {
            continue;
        };
        let next_bare = bare_keep_case(next);
        // "Some friends from church and I went camping": one subject, the speaker with them.
        let piece_from = cuts.last().map_or(0, |&(_, next_at, _)| next_at);
        let with_me = joiner == "and" && bare(next) == "i" && i <= 7 && {
            let before: Vec<&str> = words[..i]
                .iter()
                .filter(|&&(a, _)| a >= piece_from)
                .map(|&(_, w)| w)
                .collect();
            is_company(&before)
        };
        if with_me {
            continue;
        }
        // A name opens a clause only with its verb after it ("French and Spanish" is a list).
        let after_next = words
            .iter()
            .position(|&(a, _)| a == opens_at)
            .and_then(|j| words.get(j + 1))
            .map(|(_, w)| bare(w))
            .unwrap_or_default();
        let named = is_name_like(&next_bare) && !is_subject_word_strict(&next_bare);
        if is_subject_word(&next_bare) && (!named || looks_like_a_verb(&after_next)) {
            cuts.push((at, opens_at, false));
        } else if !after_comma || CONJUNCTIONS.contains(&joiner.as_str()) {
            let lower = next_bare.to_lowercase();
            if is_past_verb(&lower) || is_third_person_verb(&lower) {
                cuts.push((at, opens_at, true));
            }
        }
    }
    let mut out = Vec::new();
    let mut from = 0;
    let mut carried = false;
    for (end, next, carry) in cuts {
        if end < from {
            continue;
        }
        out.push((tidy(&sentence[from..end]), carried));
        from = next;
        carried = carry;
    }
    out.push((tidy(&sentence[from..]), carried));
    out.retain(|(p, _)| !p.is_empty());
    out
}

/// Where the clause after a short phrase put before it starts ("Last week, my grandma …",
/// "While volunteering yesterday, I met …"): the word after the phrase's comma, when the
/// phrase names no subject and "I", "we" or "my" follows. `usize::MAX` when there is none.
fn fronted_phrase_end(words: &[(usize, &str)]) -> usize {
    let opens = words
        .first()
        .is_some_and(|(_, w)| super::who::FRONTING.contains(&bare(w).as_str()));
    let Some(comma) = words.iter().take(6).position(|(_, w)| w.ends_with(',')) else {
        return usize::MAX;
    };
    let subjectless = words[..=comma].iter().all(|(_, w)| {
        let b = bare(w);
        !is_subject_word_strict(&b) || matches!(b.as_str(), "my" | "our")
    });
    let next = words
        .get(comma + 1)
        .map(|(_, w)| bare(w))
        .unwrap_or_default();
    let subject_follows = matches!(
        next.as_str(),
        "i" | "i'm" | "i've" | "i'd" | "we" | "we're" | "we've" | "my" | "our"
    );
    if opens && subjectless && subject_follows {
        comma + 1
    } else {
        usize::MAX
    }
}

/// A word lower-cased without the punctuation around it.
fn bare(word: &str) -> String {
    bare_keep_case(word).to_lowercase()
}

fn bare_keep_case(word: &str) -> String {
    word.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’')
        .trim_end_matches(['\'', '’'])
        .replace('’', "'")
}

/// A piece without the commas and spaces around it.
fn tidy(piece: &str) -> String {
    piece
        .trim()
        .trim_matches(|c: char| matches!(c, ',' | ' '))
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<(String, bool)> {
        clauses(text)
            .into_iter()
            .map(|c| (c.text, c.carried))
            .collect()
    }

    #[test]
    fn sentences_end_at_marks_dashes_and_colons_but_not_titles_or_decimals() {
        let got: Vec<String> =
            clauses("Big news: I left Google. Dr. Chen says 3.5 is fine - I agree!! Really?! Yes")
                .into_iter()
                .map(|c| c.text)
                .collect();
        assert_eq!(
            got,
            [
                "Big news",
                "I left Google",
                "Dr. Chen says 3.5 is fine",
                "I agree",
                "Really",
                "Yes"
            ]
        );
        let asked: Vec<bool> = clauses("Is it? Yes!")
            .into_iter()
            .map(|c| c.question)
            .collect();
        assert_eq!(asked, [true, false]);
    }

    #[test]
    fn a_conjunction_opens_a_clause_with_its_own_subject_or_a_verb() {
        assert_eq!(
            texts("I live in Porto and I work at Acme"),
            [
                ("I live in Porto".into(), false),
                ("I work at Acme".into(), false)
            ]
        );
        assert_eq!(
            texts("My sister Maria lives in Lisbon and works as an architect"),
            [
                ("My sister Maria lives in Lisbon".into(), false),
                ("works as an architect".into(), true)
            ]
        );
        assert_eq!(
            texts("I'm not a developer, I'm a designer"),
            [
                ("I'm not a developer".into(), false),
                ("I'm a designer".into(), false)
            ]
        );
        // Two things joined are one clause.
        assert_eq!(
            texts("I like salt and pepper"),
            [("I like salt and pepper".into(), false)]
        );
    }

    #[test]
    fn a_condition_stays_whole() {
        let c = clauses("If I move to Berlin, I'll learn German.");
        assert_eq!(c.len(), 1);
        assert!(c[0].condition);
    }

    #[test]
    fn a_phrase_put_first_stays_with_its_clause() {
        assert_eq!(
            texts("Last week, my grandma passed away and it's been hard"),
            [
                ("Last week, my grandma passed away".into(), false),
                ("it's been hard".into(), false)
            ]
        );
        // A phrase with a subject of its own is a clause of its own.
        assert_eq!(texts("After I moved, I cried").len(), 2);
    }

    #[test]
    fn a_time_in_the_past_is_no_condition() {
        let c = clauses("When I was younger, we had some money problems.");
        assert!(c.iter().all(|c| !c.condition));
        assert_eq!(
            c.last().map(|c| c.text.as_str()),
            Some("we had some money problems")
        );
        assert!(clauses("When I'm stressed, I paint.")[0].condition);
    }

    #[test]
    fn people_and_i_are_one_subject() {
        assert_eq!(
            texts("Some friends from church and I went camping"),
            [("Some friends from church and I went camping".into(), false)]
        );
        assert_eq!(texts("I went home and I slept").len(), 2);
        assert_eq!(texts("My sister and I went hiking").len(), 1);
    }
}
