//! LoCoMo-style dialogue JSON: a list of samples, each a `conversation` of numbered sessions
//! (`session_1`, `session_1_date_time`, …) of turns `{speaker, dia_id, text}`. Each turn is a
//! memory of its session, said at the session's time, in the sample's namespace.

use mnemo_protocol::memory::AddParams;
use serde_json::{json, Value};

/// "1:56 pm on 8 May, 2023" -> RFC 3339.
pub fn date(text: &str) -> Option<String> {
    chrono::NaiveDateTime::parse_from_str(text.trim(), "%I:%M %p on %d %B, %Y")
        .ok()
        .map(|t| t.and_utc().to_rfc3339())
}

/// The namespace a sample's turns go to: `locomo-<sample_id>`.
pub fn namespace(sample: &Value) -> String {
    format!("locomo-{}", sample["sample_id"].as_str().unwrap_or("x"))
}

/// Every turn of `sample`, in order, as a memory of `namespace`.
pub fn turns(sample: &Value, namespace: &str) -> Vec<AddParams> {
    let conv = &sample["conversation"];
    let mut items = Vec::new();
    for s in 1.. {
        let Some(session) = conv.get(format!("session_{s}")).and_then(Value::as_array) else {
            break;
        };
        let when = conv
            .get(format!("session_{s}_date_time"))
            .and_then(Value::as_str)
            .and_then(date);
        for turn in session {
            let mut content = format!(
                "{}: {}",
                turn["speaker"].as_str().unwrap_or("?"),
                turn["text"].as_str().unwrap_or("")
            );
            if let Some(caption) = turn.get("blip_caption").and_then(Value::as_str) {
                content.push_str(&format!(" [shares a photo: {caption}]"));
            }
            items.push(AddParams {
                content,
                namespace: Some(namespace.to_string()),
                session_id: Some(format!("session_{s}")),
                occurred_at: when.clone(),
                metadata: Some(json!({ "dia_id": turn["dia_id"] })),
                source: Some("locomo".into()),
                ..Default::default()
            });
        }
    }
    items
}

/// The `dia_id`s of the turns that answer `qa`, as its `evidence` lists them. An entry may
/// name more than one turn ("D8:6; D9:17" in the dev set): read as one id it matched no turn,
/// and the question scored 0 however well it was answered.
pub fn evidence(qa: &Value) -> Vec<String> {
    qa["evidence"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .flat_map(|e| e.split([';', ',']))
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_dates() {
        assert_eq!(
            date("1:56 pm on 8 May, 2023").unwrap(),
            "2023-05-08T13:56:00+00:00"
        );
        assert!(date("8 May").is_none());
    }

    #[test]
    fn turns_keep_their_session_time_and_speaker() {
        let sample = json!({ "sample_id": "c1", "conversation": {
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                { "speaker": "Ann", "dia_id": "D1:1", "text": "Hi!" },
                { "speaker": "Bo", "dia_id": "D1:2", "text": "Look", "blip_caption": "a cat" }
            ],
            "session_2": [ { "speaker": "Ann", "dia_id": "D2:1", "text": "Later" } ]
        }});
        let items = turns(&sample, &namespace(&sample));
        assert_eq!(items.len(), 3);
        assert_eq!(items[0].content, "Ann: Hi!");
        assert_eq!(items[1].content, "Bo: Look [shares a photo: a cat]");
        assert_eq!(items[2].session_id.as_deref(), Some("session_2"));
        assert_eq!(items[2].occurred_at, None);
        assert_eq!(items[0].namespace.as_deref(), Some("locomo-c1"));
    }

    #[test]
    fn evidence_naming_two_turns_in_one_entry_is_both_turns() {
        let qa = json!({ "evidence": ["D1:3", " D8:6; D9:17", "D2:1,D2:4", ""] });
        assert_eq!(evidence(&qa), ["D1:3", "D8:6", "D9:17", "D2:1", "D2:4"]);
        assert!(evidence(&json!({ "question": "no evidence" })).is_empty());
    }
}
