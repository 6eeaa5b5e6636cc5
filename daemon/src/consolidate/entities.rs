//! Entities: what the memories added since the last pass say about the entities they name.
//! Names said together relate ([`super::related`]); aliases the texts prove merge into
//! their entity — a name stated as another's ("call me Mel"), a name a chat line greets its
//! listener by when it shortens exactly one other speaker of the session ("Hey Mel!" to
//! Melanie), and two spellings of one name ("José", "Jose"). Nothing merges on a guess: a
//! greeting that could shorten two speakers merges neither.
//!
//! Resumable: `meta` keeps the creation time up to which memories are done.

use std::collections::{BTreeSet, HashMap};

use mnemo_protocol::consolidate::{Phase, PhaseRecord};

use super::pace::{Pace, Stop};
use super::related::relate;
use super::{bump, done_through, time_blocks};
use crate::graph::EntityBook;
use crate::store::filter::current;
use crate::store::{col, MemoryRecord};
use crate::understand::aliases::{addressed, shortens, speaker, stated};

const WATERMARK: &str = "consolidate.entities_through";

/// (namespace, session) → the speakers of its lines (folded).
type Speakers = HashMap<(String, String), BTreeSet<String>>;

/// Notes `r`'s speaker among those of its session.
fn note_speaker(out: &mut Speakers, r: &MemoryRecord) {
    if let (Some(session), Some(who)) = (&r.session_id, speaker(&r.content)) {
        out.entry((r.namespace.clone(), session.clone()))
            .or_default()
            .insert(who);
    }
}

/// The (alias, entity) pairs `r` proves, folded: what it states, and whom it greets when
/// the greeting shortens exactly one other speaker of its session.
pub fn proven(r: &MemoryRecord, speakers: &Speakers) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = stated(&r.content)
        .into_iter()
        .map(|s| (s.alias, s.of))
        .collect();
    let (Some(session), Some(greeted)) = (&r.session_id, addressed(&r.content)) else {
        return out;
    };
    let me = speaker(&r.content);
    let Some(others) = speakers.get(&(r.namespace.clone(), session.clone())) else {
        return out;
    };
    let mut shortened = others
        .iter()
        .filter(|o| Some(*o) != me.as_ref() && shortens(&greeted, o));
    if let (Some(one), None) = (shortened.next(), shortened.next()) {
        out.push((greeted, one.clone()));
    }
    out
}

pub async fn run(pace: &mut Pace, record: &mut PhaseRecord) -> Result<(), Stop> {
    let ctx = pace.ctx().clone();
    let config = &ctx.state.config;
    let store = &ctx.store;
    let book: &EntityBook = &ctx.entities;
    let watermark = done_through(store, WATERMARK).await?;
    let new = current().and(col("created_at").gt(watermark));
    // Two passes over the new memories' texts, none held: the speakers of each session,
    // then what each line proves and the names it says together. Only lines naming two
    // entities or more are kept (without their text) for relating: at 1M new memories
    // holding them all took 1.6 GB.
    let mut speakers = Speakers::new();
    let spoken = new.clone().and(col("session_id").not_null());
    let noted = store.each_with_columns(&spoken, &["namespace", "session_id", "content"], |r| {
        note_speaker(&mut speakers, &r)
    });
    pace.guard(noted).await??;
    let mut proofs: Vec<(i64, String, String, String)> = Vec::new();
    let mut rows: Vec<MemoryRecord> = Vec::new();
    let mut last = watermark;
    let columns = [
        "id",
        "namespace",
        "session_id",
        "entities",
        "content",
        "created_at",
    ];
    let read = store.each_with_columns(&new, &columns, |mut r| {
        last = last.max(r.created_at);
        for (alias, of) in proven(&r, &speakers) {
            proofs.push((r.created_at, r.namespace.clone(), alias, of));
        }
        if r.entities.len() > 1 {
            r.content = String::new();
            rows.push(r);
        }
    });
    pace.guard(read).await??;
    // Aliases first, in the order they were said, so names said together relate under the
    // entity's own key.
    proofs.sort();
    for (_, namespace, alias, of) in &proofs {
        if book.merge(namespace, alias, of) {
            bump(record, "aliases", 1);
        }
    }
    bump(record, "spellings", book.merge_spellings() as u64);
    rows.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    for r in &mut rows {
        r.entities = r
            .entities
            .iter()
            .map(|key| book.canonical(&r.namespace, key))
            .collect();
    }
    let times: Vec<i64> = rows.iter().map(|r| r.created_at).collect();
    let total = rows.len() as u64;
    for block in time_blocks(&times, config.batch_rows.max(1)) {
        pace.checkpoint().await?;
        let end = block.end;
        let block = &rows[block];
        let edges = relate(store, block, config.hebbian_rate).await?;
        if !edges.is_empty() {
            store.writer().submit(store.edges().upsert(&edges)?).await?;
            bump(record, "related", edges.len() as u64);
        }
        let through = block.last().map_or(watermark, |r| r.created_at);
        store.meta_set(WATERMARK, &through.to_string()).await?;
        pace.progress(Phase::Entities, end as u64, total);
    }
    if last > watermark {
        store.meta_set(WATERMARK, &last.to_string()).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema::tests::record;

    fn line(session: &str, text: &str) -> MemoryRecord {
        let mut r = record(text, text, 4);
        r.session_id = Some(session.into());
        r
    }

    #[test]
    fn a_greeting_proves_an_alias_only_when_it_shortens_one_other_speaker() {
        let rows = [
            line("s1", "Melanie: Hi Caroline!"),
            line("s1", "Caroline: Hey Mel! How are the kids?"),
            line("s2", "Melanie: hello"),
            line("s2", "Melissa: hello"),
            line("s2", "Caroline: Hey Mel!"),
            line("s3", "Mel: call me Mel, I mean it"),
        ];
        let mut speakers = Speakers::new();
        rows.iter().for_each(|r| note_speaker(&mut speakers, r));
        assert_eq!(
            proven(&rows[1], &speakers),
            vec![("mel".into(), "melanie".into())]
        );
        // Greeting a full name proves nothing new.
        assert!(proven(&rows[0], &speakers).is_empty());
        // Two speakers Mel could shorten: no guess.
        assert!(proven(&rows[4], &speakers).is_empty());
        // Stating one's own name is no alias.
        assert!(proven(&rows[5], &speakers).is_empty());
    }
}
