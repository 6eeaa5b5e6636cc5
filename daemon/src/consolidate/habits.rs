//! The habits phase: procedures learned again from every episode, and the implicit stats
//! written again from the memories' times, the sessions, the episodes and the projects.
//! One namespace is one unit; redoing it after a stop writes the same rows again. Only the
//! columns it counts are read; texts only of the last 30 days (at most [`MAX_TEXTS`]).

use std::collections::{BTreeSet, HashMap};

use mnemo_protocol::consolidate::{Phase, PhaseRecord};
use mnemo_protocol::project::Project;
use mnemo_protocol::time::now_micros;

use super::bump;
use super::pace::{Pace, Stop};
use crate::agent::procedures::learn;
use crate::agent::stats::{aggregate, Inputs, SessionSpan};
use crate::store::col;
use crate::store::filter::current;

const WINDOW_US: i64 = 30 * 86_400_000_000;
/// Recent texts read for topics by time of day.
const MAX_TEXTS: usize = 5000;

/// A namespace's memories: when each was made, and how many each project has.
#[derive(Default)]
struct Activity {
    times: Vec<i64>,
    uses: HashMap<String, u64>,
}

pub async fn run(pace: &mut Pace, record: &mut PhaseRecord) -> Result<(), Stop> {
    let ctx = pace.ctx().clone();
    let now = now_micros();
    // Folded as read: at 1M memories the rows themselves took hundreds of MB.
    let mut activity: HashMap<String, Activity> = HashMap::new();
    let all = current();
    let read = ctx
        .store
        .each_with_columns(&all, &["namespace", "created_at", "project_id"], |r| {
            let mine = activity.entry(r.namespace).or_default();
            mine.times.push(r.created_at);
            if let Some(p) = r.project_id {
                *mine.uses.entry(p).or_default() += 1;
            }
        });
    pace.guard(read).await??;
    let texts = pace
        .guard(ctx.store.plain_rows(
            &current().and(col("created_at").ge(now - WINDOW_US)),
            Some(MAX_TEXTS),
        ))
        .await??;
    let sessions = pace
        .guard(ctx.store.sessions().rows(&col("ended_at").not_null()))
        .await??;
    let episodes = ctx.agent.episodes(None);
    let projects: HashMap<String, Project> = ctx
        .usermodel
        .projects()
        .all()
        .into_iter()
        .map(|p| (p.id.clone(), p))
        .collect();
    let namespaces: BTreeSet<String> = activity
        .keys()
        .cloned()
        .chain(episodes.iter().map(|e| e.namespace.clone()))
        .collect();
    let settings = ctx.agent.learning(now);
    for (i, namespace) in namespaces.iter().enumerate() {
        pace.checkpoint().await?;
        pace.progress(Phase::Habits, i as u64, namespaces.len() as u64);
        let learned = learn(namespace, &episodes, &settings);
        bump(record, "procedures", learned.len() as u64);
        ctx.agent.replace_procedures(namespace, learned).await?;

        let mine = |ns: &String| ns == namespace;
        let Activity { times, uses } = activity.remove(namespace).unwrap_or_default();
        let used: Vec<Project> = uses
            .into_iter()
            .filter_map(|(id, n)| {
                let mut p = projects.get(&id)?.clone();
                p.interaction_count = n;
                Some(p)
            })
            .collect();
        let said: Vec<(i64, String)> = texts
            .iter()
            .filter(|r| mine(&r.namespace) && r.is_the_persons())
            .map(|r| (r.created_at, r.content.clone()))
            .collect();
        let spans: Vec<SessionSpan> = sessions
            .iter()
            .filter(|s| mine(&s.namespace))
            .filter_map(|s| {
                Some(SessionSpan {
                    started_at: s.started_at,
                    ended_at: s.ended_at?,
                    messages: s.message_count.max(0) as u64,
                })
            })
            .collect();
        let mine_episodes: Vec<_> = episodes
            .iter()
            .filter(|e| mine(&e.namespace))
            .cloned()
            .collect();
        let stats = aggregate(&Inputs {
            namespace,
            now,
            activity: &times,
            texts: &said,
            sessions: &spans,
            episodes: &mine_episodes,
            projects: &used,
        });
        bump(record, "stats", stats.len() as u64);
        ctx.agent.replace_stats(namespace, &stats).await?;
    }
    Ok(())
}
