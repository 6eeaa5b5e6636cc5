//! Who each turn of a chat is said to: in a session between two people, the other speaker.
//! Followed as turns arrive (in the order said), per namespace and session, so "you" in
//! "Keep pushing for your dreams!" can be read as the one it means.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::store::MemoryRecord;
use crate::understand::entities::speaker_line;

/// A session, by namespace and id.
type Session = (String, String);

/// A session's speakers seen so far: the latest, and the one before them.
type Speakers = (String, Option<String>);

/// The speakers of each session seen so far.
#[derive(Default)]
pub struct Talk {
    sessions: Mutex<HashMap<Session, Speakers>>,
}

impl Talk {
    /// The one `r` (a turn of a chat) is said to, when its session has had another speaker;
    /// notes `r`'s speaker for the turns after it.
    pub fn listener(&self, r: &MemoryRecord) -> Option<String> {
        let session = r.session_id.clone()?;
        let (speaker, _) = speaker_line(&r.content)?;
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let seen = sessions
            .entry((r.namespace.clone(), session))
            .or_insert_with(|| (speaker.to_string(), None));
        if !seen.0.eq_ignore_ascii_case(speaker) {
            let before = std::mem::replace(&mut seen.0, speaker.to_string());
            seen.1 = Some(before);
        }
        seen.1.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(session: &str, content: &str) -> MemoryRecord {
        MemoryRecord {
            namespace: "chat".into(),
            session_id: Some(session.into()),
            content: content.into(),
            ..Default::default()
        }
    }

    #[test]
    fn each_turn_is_said_to_the_other_speaker() {
        let talk = Talk::default();
        assert_eq!(talk.listener(&turn("s1", "Gina: Hey Jon!")), None);
        assert_eq!(
            talk.listener(&turn("s1", "Jon: Hi Gina, good news"))
                .as_deref(),
            Some("Gina")
        );
        assert_eq!(
            talk.listener(&turn("s1", "Jon: the studio opens soon"))
                .as_deref(),
            Some("Gina")
        );
        assert_eq!(
            talk.listener(&turn("s1", "Gina: Keep going!")).as_deref(),
            Some("Jon")
        );
        // Another session starts afresh; a note with no speaker is said to no one.
        assert_eq!(talk.listener(&turn("s2", "Jon: Hello again")), None);
        assert_eq!(talk.listener(&turn("s1", "buy milk")), None);
    }
}
