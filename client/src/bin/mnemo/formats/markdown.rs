//! mnemo's Markdown export, for people to read: one file per namespace and month
//! (`<namespace>/<YYYY-MM>.md`), a front matter naming both, and each current memory as a
//! `## <day> · <kind> · id <id>` section with its tags and text. `mnemo import` reads it back
//! section by section (new ids; the day, kind, tags and namespace kept).

use mnemo_protocol::memory::{AddParams, Memory};

/// The front matter line that marks a file as this export (so import reads its sections).
pub const MARK: &str = "mnemo: markdown export";

/// Where `m` goes under the export's folder: `<namespace>/<YYYY-MM>.md`.
pub fn file_of(m: &Memory) -> String {
    let day = crate::output::day(m);
    // Namespaces are free text: keep the path one safe component.
    let namespace: String = m
        .namespace
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!(
        "{}/{}.md",
        namespace.trim_start_matches('.'),
        &day[..day.len().min(7)]
    )
}

/// The front matter a new file starts with.
pub fn header(m: &Memory) -> String {
    let day = crate::output::day(m);
    format!(
        "---\n{MARK}\nnamespace: {}\nmonth: {}\n---\n",
        m.namespace,
        &day[..day.len().min(7)]
    )
}

/// One memory's section.
pub fn section(m: &Memory) -> String {
    let mut text = format!(
        "\n## {} · {} · id {}\n",
        crate::output::day(m),
        m.kind,
        m.id
    );
    if !m.tags.is_empty() {
        text.push_str(&format!("tags: {}\n", m.tags.join(", ")));
    }
    text.push('\n');
    text.push_str(m.content.trim_end());
    text.push('\n');
    text
}

/// Whether `line` opens one of [`section`]'s sections: `## <day> · <kind> · id <id>`. A
/// memory's own `## ` lines are its text, not a new section.
fn is_section_heading(line: &str) -> bool {
    line.strip_prefix("## ").is_some_and(|heading| {
        let parts: Vec<&str> = heading.split(" · ").collect();
        parts.len() == 3 && parts[2].starts_with("id ")
    })
}

/// The memories of an export file's body (after its front matter), each section one memory.
pub fn memories(body: &str, namespace: Option<&str>, source: &str) -> Vec<AddParams> {
    let mut sections: Vec<(&str, String)> = Vec::new();
    for line in body.lines() {
        if is_section_heading(line) {
            sections.push((&line[3..], String::new()));
        } else if let Some((_, text)) = sections.last_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    let mut items = Vec::new();
    for (heading, rest) in &sections {
        let mut parts = heading.split(" · ");
        let (Some(day), Some(kind)) = (parts.next(), parts.next()) else {
            continue;
        };
        let mut rest = rest.strip_prefix('\n').unwrap_or(rest);
        let mut tags = Vec::new();
        if let Some(line) = rest.strip_prefix("tags: ") {
            let (line, after) = line.split_once('\n').unwrap_or((line, ""));
            tags = line.split(", ").map(str::to_string).collect();
            rest = after;
        }
        let content = rest.trim();
        if content.is_empty() {
            continue;
        }
        items.push(AddParams {
            content: content.to_string(),
            kind: kind.trim().parse().ok(),
            occurred_at: Some(day.trim().to_string()),
            tags,
            namespace: namespace.map(str::to_string),
            source: Some(source.to_string()),
            ..Default::default()
        });
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A memory of 1 May 2026 in `namespace`, as mnemod sends it.
    fn memory(namespace: &str, content: &str, kind: &str, tags: &[&str]) -> Memory {
        serde_json::from_value(serde_json::json!({
            "id": "m1", "lineage": "m1", "namespace": namespace, "content": content,
            "kind": kind, "domain": null, "source": null, "session_id": null,
            "salience": 6.0, "strength": 1.0, "created_at": "2026-11-23T10:00:00Z",
            "occurred_at": "2026-05-01T00:00:00Z", "valid_from": "2026-11-23T10:00:00Z",
            "valid_to": null, "superseded_by": null, "tags": tags, "metadata": {},
            "content_hash": "h"
        }))
        .unwrap()
    }

    #[test]
    fn a_section_reads_back_as_the_memory_it_shows() {
        let m = memory("work/x", "Line one\n\nLine two", "semantic", &["a", "b"]);
        assert_eq!(file_of(&m), "work_x/2026-05.md");
        let body = format!("{}{}", section(&m), section(&m));
        let items = memories(&body, Some("work/x"), "file:x.md");
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].content, "Line one\n\nLine two");
        assert_eq!(
            items[0].kind,
            Some(mnemo_protocol::memory::MemoryKind::Semantic)
        );
        assert_eq!(items[0].occurred_at.as_deref(), Some("2026-05-01"));
        assert_eq!(items[0].tags, vec!["a", "b"]);
        assert!(header(&m).contains(MARK));
    }

    #[test]
    fn a_heading_inside_a_memory_stays_in_it() {
        let m = memory("n", "Intro\n\n## Steps\nOne", "procedural", &[]);
        let body = format!("{}{}", section(&m), section(&m));
        let items = memories(&body, None, "file:x.md");
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].content, "Intro\n\n## Steps\nOne");
    }
}
