//! A memory read by the configured LLM: the instructions it gets, and its reply read back
//! into belief [`Signal`]s and entity [`Mention`]s under the same limits as the rules' (known
//! types, short labels, at most [`MAX_SIGNALS`] beliefs and [`MAX_MENTIONS`] names). A reply
//! is untrusted input: whatever does not fit is dropped and counted, never stored half-read.

use mnemo_protocol::belief::{BeliefType, USER};
use mnemo_protocol::entity::EntityType;
use serde_json::Value;

use super::beliefs::{display, domain_of, Signal, MAX_SIGNALS};
use super::entities::{fold, Mention, MAX_MENTIONS};

/// What the model is asked to do. The predicate names are the rules' own, so a belief the
/// rules already hold is recognised as the same one.
pub const SYSTEM: &str = r#"You read one message from a person's memory and list what it states as lasting beliefs about the person or about people they mention. Answer with one JSON object and nothing else:
{"beliefs": [{"subject": "user", "predicate": "lives_in", "object": "Porto", "type": "identity", "negated": false, "domain": null, "statement": "The user lives in Porto", "confidence": 0.7}]}
- subject: "user" for the writer; another person by the name written. A message that starts with "Name:" was written by Name: what they say of themselves has Name as subject.
- predicate: snake_case. Use these when they fit: name, age, pronouns, occupation, lives_in, works_at, from, birthday, married_to, relation, speaks, diet, allergic_to, wants_to, plans_to, learning. For a preference or a rule, the thing it is about ("tea", "indentation").
- object: the value ("Porto"); for a preference, like, dislike or the choice preferred.
- type: one of fact, preference, constraint, goal, behavior, value, rule, identity.
- negated: true when the message says it does not hold.
- domain: coding, food, writing, health, travel, music, work, … or null.
- statement: the belief as one short sentence in the third person.
- confidence: 0 to 1, lower when the message hedges.
Questions, hypotheticals, jokes, greetings and remarks about the conversation state nothing: an empty "beliefs" list.
Also list every person, place, organization, project, event or concept the message names, including those written in lower case ("my dentist", "the lake house"), as "entities": [{"name": "Porto", "type": "place"}], type one of person, place, organization, project, event, concept, time."#;

/// Longest subject, predicate, object or domain kept; a statement may be twice as long.
const MAX_LABEL: usize = 200;
/// How sure the store is of what the LLM read, at most and when it does not say: a reading
/// never outranks the rules' 0.7 for something said of oneself.
const MAX_CONFIDENCE: f32 = 0.7;
const DEFAULT_CONFIDENCE: f32 = 0.6;
const MIN_CONFIDENCE: f32 = 0.3;

/// The message as the model sees it.
pub fn prompt(text: &str) -> String {
    format!("Message:\n{text}")
}

/// What one reply yielded: the beliefs and names kept, and how many items were dropped.
#[derive(Debug, Default, PartialEq)]
pub struct Reading {
    pub signals: Vec<Signal>,
    pub mentions: Vec<Mention>,
    pub dropped: usize,
}

/// Reads a reply: a JSON object with `beliefs` (or a bare array), possibly inside a code fence
/// or after a sentence. An error when no JSON list of beliefs is found at all.
pub fn parse(reply: &str) -> Result<Reading, String> {
    let mut names = Vec::new();
    let items = json_in(reply)
        .and_then(|v| match v {
            Value::Array(items) => Some(items),
            Value::Object(mut o) => {
                if let Some(Value::Array(entities)) = o.remove("entities") {
                    names = entities;
                }
                match o.remove("beliefs") {
                    Some(Value::Array(items)) => Some(items),
                    _ => None,
                }
            }
            _ => None,
        })
        .ok_or_else(|| {
            let shown: String = reply.chars().take(80).collect();
            format!("the reply holds no JSON list of beliefs (it began {shown:?})")
        })?;
    let mut reading = Reading::default();
    for item in items {
        match belief(&item) {
            Some(s)
                if reading.signals.len() < MAX_SIGNALS
                    && !reading.signals.iter().any(|o| {
                        o.subject == s.subject && o.predicate == s.predicate && o.object == s.object
                    }) =>
            {
                reading.signals.push(s)
            }
            _ => reading.dropped += 1,
        }
    }
    for item in names {
        match mention(&item) {
            Some(m)
                if reading.mentions.len() < MAX_MENTIONS
                    && !reading.mentions.iter().any(|o| o.key == m.key) =>
            {
                reading.mentions.push(m)
            }
            _ => reading.dropped += 1,
        }
    }
    Ok(reading)
}

/// A name the reply lists: known type, a name that folds to something.
fn mention(item: &Value) -> Option<Mention> {
    let name = label(item.get("name"), MAX_LABEL)?;
    let kind: EntityType = label(item.get("type"), MAX_LABEL)?
        .to_lowercase()
        .replace("organisation", "organization")
        .parse()
        .ok()?;
    let key = fold(&name);
    (!key.is_empty()).then_some(Mention {
        name,
        key,
        kind,
        relation: None,
    })
}

/// The first JSON value in `text` that parses, from its first `{` or `[`.
fn json_in(text: &str) -> Option<Value> {
    let start = text.find(['{', '['])?;
    let mut values = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
    values.next()?.ok()
}

fn label(v: Option<&Value>, max: usize) -> Option<String> {
    let text = match v? {
        Value::String(s) => s.trim().to_string(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => return None,
    };
    (!text.is_empty() && text.len() <= max && !text.contains('\n')).then_some(text)
}

/// `lives in` / `Lives-In` → `lives_in`; empty when nothing of it is a word.
fn snake(predicate: &str) -> String {
    let mut out = String::new();
    for c in predicate.trim().to_lowercase().chars() {
        if c.is_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_string()
}

fn belief(item: &Value) -> Option<Signal> {
    let subject = label(item.get("subject"), MAX_LABEL)?;
    let subject = match subject.to_lowercase().as_str() {
        "user" | "i" | "me" | "myself" | "the user" | "the writer" | "the person" => USER.into(),
        _ => subject,
    };
    let predicate = snake(&label(item.get("predicate"), MAX_LABEL)?);
    let object = label(item.get("object"), MAX_LABEL)?;
    let kind: BeliefType = label(item.get("type"), MAX_LABEL)?
        .to_lowercase()
        .parse()
        .ok()?;
    if predicate.is_empty() {
        return None;
    }
    let negated = item
        .get("negated")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let statement = label(item.get("statement"), 2 * MAX_LABEL).unwrap_or_else(|| {
        let not = if negated { "not " } else { "" };
        format!(
            "{} {not}{} {object}",
            display(&subject),
            predicate.replace('_', " ")
        )
    });
    let domain = label(item.get("domain"), MAX_LABEL)
        .map(|d| d.to_lowercase())
        .filter(|d| d != "null" && d != "none")
        .or_else(|| (kind == BeliefType::Preference).then(|| domain_of(&statement).to_string()));
    let confidence = item
        .get("confidence")
        .and_then(Value::as_f64)
        .map_or(DEFAULT_CONFIDENCE, |c| c as f32)
        .clamp(MIN_CONFIDENCE, MAX_CONFIDENCE);
    Some(Signal {
        subject,
        predicate,
        object,
        negated,
        kind,
        domain,
        statement,
        confidence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fenced_reply_with_prose_around_it_is_read() {
        let reply = "Sure! Here it is:\n```json\n{\"beliefs\": [{\"subject\": \"I\", \"predicate\": \"Spends Summers At\", \"object\": \"the lake house in Maine\", \"type\": \"Behavior\", \"confidence\": 0.95}]}\n```\nAnything else?";
        let r = parse(reply).unwrap();
        assert_eq!(r.dropped, 0);
        let s = &r.signals[0];
        assert_eq!(s.subject, USER);
        assert_eq!(s.predicate, "spends_summers_at");
        assert_eq!(s.object, "the lake house in Maine");
        assert_eq!(s.kind, BeliefType::Behavior);
        assert_eq!(
            s.statement,
            "User spends summers at the lake house in Maine"
        );
        // A reading never claims more than the rules would.
        assert_eq!(s.confidence, MAX_CONFIDENCE);
    }

    #[test]
    fn a_bare_list_and_an_empty_answer_are_read() {
        let r = parse(r#"[{"subject":"Maria","predicate":"lives in","object":"Porto","type":"fact","negated":true,"statement":"Maria no longer lives in Porto"}]"#).unwrap();
        assert_eq!(r.signals.len(), 1);
        assert!(r.signals[0].negated);
        assert_eq!(r.signals[0].predicate, "lives_in");
        assert_eq!(r.signals[0].confidence, DEFAULT_CONFIDENCE);
        assert_eq!(parse(r#"{"beliefs": []}"#).unwrap(), Reading::default());
    }

    #[test]
    fn items_that_do_not_fit_are_dropped_and_counted() {
        let long = "x".repeat(MAX_LABEL + 1);
        let reply = serde_json::json!({"beliefs": [
            {"subject": "user", "predicate": "likes", "object": "tea", "type": "opinion"},
            {"subject": "user", "predicate": "", "object": "tea", "type": "fact"},
            {"subject": "user", "predicate": "likes", "type": "preference"},
            {"subject": long, "predicate": "likes", "object": "tea", "type": "fact"},
            {"subject": "user", "predicate": "tea", "object": "like", "type": "preference", "confidence": 0.01},
            {"subject": "user", "predicate": "tea", "object": "like", "type": "preference"},
            "a string",
        ]});
        let r = parse(&reply.to_string()).unwrap();
        assert_eq!(r.dropped, 6, "{r:?}");
        assert_eq!(r.signals.len(), 1);
        assert_eq!(r.signals[0].confidence, MIN_CONFIDENCE);
        assert_eq!(r.signals[0].domain.as_deref(), Some("food"));
    }

    #[test]
    fn a_reply_without_a_list_is_an_error_that_shows_it() {
        let e = parse("I cannot help with that.").unwrap_err();
        assert!(e.contains("I cannot help"), "{e}");
        assert!(parse(r#"{"answer": "none"}"#).is_err());
        assert!(parse("{ not json").is_err());
    }

    #[test]
    fn names_are_read_with_their_types_and_the_rest_dropped() {
        let reply = r#"{"beliefs": [], "entities": [
            {"name": "the lake house", "type": "place"},
            {"name": "Acme Ltd", "type": "Organisation"},
            {"name": "The Lake House", "type": "place"},
            {"name": "Bob", "type": "pet"},
            {"name": "", "type": "person"},
            {"type": "person"}
        ]}"#;
        let r = parse(reply).unwrap();
        let names: Vec<(&str, &str, EntityType)> = r
            .mentions
            .iter()
            .map(|m| (m.name.as_str(), m.key.as_str(), m.kind))
            .collect();
        assert_eq!(
            names,
            [
                (
                    "the lake house",
                    fold("the lake house").as_str(),
                    EntityType::Place
                ),
                (
                    "Acme Ltd",
                    fold("Acme Ltd").as_str(),
                    EntityType::Organization
                ),
            ]
        );
        assert_eq!(
            r.dropped, 4,
            "a repeat, an unknown type, an empty and a missing name"
        );
    }

    #[test]
    fn a_flood_is_cut_at_the_rules_limit() {
        let items: Vec<Value> = (0..MAX_SIGNALS + 5)
            .map(|i| serde_json::json!({"subject": "user", "predicate": "likes", "object": format!("thing {i}"), "type": "fact"}))
            .collect();
        let r = parse(&Value::Array(items).to_string()).unwrap();
        assert_eq!(r.signals.len(), MAX_SIGNALS);
        assert_eq!(r.dropped, 5);
    }
}
