//! Chat exports: ChatGPT's `conversations.json` (each conversation a tree of messages in
//! `mapping`; the thread read is the one ending at `current_node`) and Claude's
//! (`chat_messages` in order). Each message with text becomes a memory of its conversation's
//! session (`chatgpt:<id>`, `claude:<uuid>`), said by its role, at its time.

use mnemo_protocol::memory::AddParams;
use serde_json::{json, Value};

/// Seconds since the epoch (ChatGPT's times) -> RFC 3339.
fn from_epoch(seconds: f64) -> Option<String> {
    chrono::DateTime::from_timestamp_micros((seconds * 1e6) as i64).map(|t| t.to_rfc3339())
}

fn turn(
    session: &str,
    title: &str,
    who: &str,
    text: &str,
    at: Option<String>,
    source: &str,
) -> AddParams {
    AddParams {
        content: format!("{who}: {}", text.trim()),
        session_id: Some(session.to_string()),
        occurred_at: at,
        source: Some(source.into()),
        metadata: Some(json!({ "conversation": title })),
        ..Default::default()
    }
}

/// The text of a ChatGPT message: its string parts, joined.
fn chatgpt_text(message: &Value) -> String {
    message["content"]["parts"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// One ChatGPT conversation's messages, oldest first.
pub fn chatgpt(conversation: &Value) -> Result<Vec<AddParams>, String> {
    let mapping = conversation["mapping"]
        .as_object()
        .ok_or("not a ChatGPT conversation (no `mapping`)")?;
    let id = conversation["id"]
        .as_str()
        .or(conversation["conversation_id"].as_str())
        .ok_or("a ChatGPT conversation without an id")?;
    let title = conversation["title"].as_str().unwrap_or("");
    let session = format!("chatgpt:{id}");
    // A message without a time of its own was said when its conversation was.
    let started = conversation["create_time"].as_f64().and_then(from_epoch);
    // From the last node up through the parents: the thread the person saw.
    let mut thread = Vec::new();
    let mut node = conversation["current_node"].as_str();
    while let Some(key) = node {
        let Some(entry) = mapping.get(key) else { break };
        thread.push(entry);
        node = entry["parent"].as_str();
        if thread.len() > mapping.len() {
            return Err("its message tree has a cycle".into());
        }
    }
    thread.reverse();
    Ok(thread
        .into_iter()
        .filter_map(|entry| {
            let message = entry.get("message").filter(|m| !m.is_null())?;
            let role = message["author"]["role"].as_str()?;
            let text = chatgpt_text(message);
            let who = match role {
                "user" => "user",
                "assistant" => "assistant",
                _ => return None,
            };
            (!text.trim().is_empty()).then(|| {
                let at = message["create_time"]
                    .as_f64()
                    .and_then(from_epoch)
                    .or_else(|| started.clone());
                turn(&session, title, who, &text, at, "chatgpt")
            })
        })
        .collect())
}

/// The text of a Claude message: its `content[]` text blocks (its `text` holds the app's
/// placeholder where a block is a tool's), else its `text`; then what its attachments hold.
fn claude_text(message: &Value) -> String {
    let blocks: Vec<&str> = message["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b["type"].as_str() == Some("text"))
                .filter_map(|b| b["text"].as_str())
                .filter(|t| !t.trim().is_empty())
                .collect()
        })
        .unwrap_or_default();
    let mut parts: Vec<&str> = if blocks.is_empty() {
        message["text"].as_str().into_iter().collect()
    } else {
        blocks
    };
    if let Some(attachments) = message["attachments"].as_array() {
        parts.extend(
            attachments
                .iter()
                .filter_map(|a| a["extracted_content"].as_str())
                .filter(|t| !t.trim().is_empty()),
        );
    }
    parts.join("\n\n")
}

/// One Claude conversation's messages, in order.
pub fn claude(conversation: &Value) -> Result<Vec<AddParams>, String> {
    let messages = conversation["chat_messages"]
        .as_array()
        .ok_or("not a Claude conversation (no `chat_messages`)")?;
    let id = conversation["uuid"]
        .as_str()
        .ok_or("a Claude conversation without a uuid")?;
    let title = conversation["name"].as_str().unwrap_or("");
    let session = format!("claude:{id}");
    Ok(messages
        .iter()
        .filter_map(|m| {
            let who = match m["sender"].as_str()? {
                "human" => "user",
                "assistant" => "assistant",
                _ => return None,
            };
            let text = claude_text(m);
            (!text.trim().is_empty()).then(|| {
                let at = m["created_at"].as_str().map(str::to_string);
                turn(&session, title, who, &text, at, "claude")
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chatgpt_thread_is_read_from_its_last_node_up() {
        let conv = json!({
            "id": "c1", "title": "Trip", "current_node": "n3",
            "mapping": {
                "root": { "message": null, "parent": null },
                "n1": { "parent": "root", "message": { "author": { "role": "user" }, "create_time": 1700000000.5, "content": { "parts": ["Plan a trip to Porto"] } } },
                "n2": { "parent": "n1", "message": { "author": { "role": "assistant" }, "content": { "parts": ["Sure: day one…"] } } },
                "n2b": { "parent": "n1", "message": { "author": { "role": "assistant" }, "content": { "parts": ["an abandoned branch"] } } },
                "n3": { "parent": "n2", "message": { "author": { "role": "system" }, "content": { "parts": ["hidden"] } } }
            }
        });
        let items = chatgpt(&conv).unwrap();
        let contents: Vec<&str> = items.iter().map(|i| i.content.as_str()).collect();
        assert_eq!(
            contents,
            vec!["user: Plan a trip to Porto", "assistant: Sure: day one…"]
        );
        assert_eq!(items[0].session_id.as_deref(), Some("chatgpt:c1"));
        assert!(items[0]
            .occurred_at
            .as_deref()
            .unwrap()
            .starts_with("2023-11-14T22:13:20.5"));
        assert!(chatgpt(&json!({ "chat_messages": [] })).is_err());
    }

    #[test]
    fn a_claude_conversation_keeps_its_order_and_times() {
        let conv = json!({ "uuid": "u1", "name": "Garden", "chat_messages": [
            { "sender": "human", "text": "What grows on a balcony?", "created_at": "2024-05-01T10:00:00Z" },
            { "sender": "assistant", "text": "Herbs and tomatoes.", "created_at": "2024-05-01T10:00:05Z" },
            { "sender": "human", "text": "  " }
        ]});
        let items = claude(&conv).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[1].content, "assistant: Herbs and tomatoes.");
        assert_eq!(
            items[0].occurred_at.as_deref(),
            Some("2024-05-01T10:00:00Z")
        );
    }

    #[test]
    fn a_claude_message_is_read_from_its_blocks_and_attachments() {
        let conv = json!({ "uuid": "u2", "name": "Notes", "chat_messages": [
            { "sender": "human", "text": "This block is not supported on your current device yet.",
              "content": [
                  { "type": "text", "text": "Summarise the attached plan." },
                  { "type": "tool_use", "name": "search", "input": {} }
              ],
              "attachments": [{ "file_name": "plan.txt", "extracted_content": "Move to Porto in May." }],
              "created_at": "2024-05-02T09:00:00Z" }
        ]});
        let items = claude(&conv).unwrap();
        assert_eq!(
            items[0].content,
            "user: Summarise the attached plan.\n\nMove to Porto in May."
        );
    }

    #[test]
    fn a_chatgpt_message_without_a_time_takes_its_conversations() {
        let conv = json!({
            "id": "c2", "title": "t", "current_node": "n1", "create_time": 1700000000.0,
            "mapping": {
                "n1": { "parent": null, "message": { "author": { "role": "user" }, "content": { "parts": ["Hello there"] } } }
            }
        });
        let items = chatgpt(&conv).unwrap();
        assert!(items[0]
            .occurred_at
            .as_deref()
            .unwrap()
            .starts_with("2023-11-14T22:13:20"));
    }
}
