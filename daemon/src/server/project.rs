//! Handlers of `project.*`: the projects memories point into, and one with its recent
//! memories and the beliefs read from them.

use std::sync::Arc;

use mnemo_protocol::belief::Evidence;
use mnemo_protocol::project::{Get, GetParams, GetResult, List, ListParams, ListResult, MAX_LIST};
use mnemo_protocol::time::format_micros;
use mnemo_protocol::RpcError;

use super::router::Router;
use super::state::{rpc_error, store_error, State};
use crate::error::Error;
use crate::ingest::preview;
use crate::paging::Page;
use crate::store::col;
use crate::store::filter::current;
use crate::usermodel::views::{strongest_first, to_protocol};

/// Recent memories `project.get` shows.
const RECENT: usize = 20;

pub fn register(r: &mut Router) {
    r.register::<List, _, _>(list).register::<Get, _, _>(get);
}

async fn list(engine: Arc<State>, p: ListParams) -> Result<ListResult, RpcError> {
    let page =
        Page::new(p.limit, MAX_LIST, p.cursor.as_deref()).map_err(RpcError::invalid_params)?;
    let all = engine.usermodel.projects().all();
    let total = all.len() as u64;
    let (projects, next_cursor) = page.of(all);
    Ok(ListResult {
        projects,
        next_cursor,
        total,
    })
}

async fn get(engine: Arc<State>, p: GetParams) -> Result<GetResult, RpcError> {
    let projects = engine.usermodel.projects();
    let id = match (p.id, p.path) {
        (Some(id), None) => id,
        (None, Some(path)) => {
            if !std::path::Path::new(&path).is_absolute() {
                return Err(RpcError::invalid_params(format!(
                    "path `{path}` is not absolute; give the full path"
                )));
            }
            if !std::path::Path::new(&path).exists() {
                return Err(RpcError::invalid_params(format!(
                    "path `{path}` does not exist"
                )));
            }
            let Some(root) = projects.root_of(&path).await else {
                return Err(rpc_error(Error::NotFound(format!(
                    "`{path}` is in no project: no git repository or build file encloses it"
                ))));
            };
            projects.id_of(&root)
        }
        _ => {
            return Err(RpcError::invalid_params(
                "name the project: its id or a path inside it",
            ))
        }
    };
    let Some(project) = projects.get(&id) else {
        return Err(rpc_error(Error::NotFound(format!(
            "no memory points into project `{id}` yet; `mnemo projects` lists the known ones"
        ))));
    };
    let mut rows = engine
        .store
        .columns_of(
            &current().and(col("project_id").eq(id.as_str())),
            &["id", "content", "occurred_at", "created_at"],
        )
        .await
        .map_err(store_error)?;
    rows.sort_by_key(|m| std::cmp::Reverse(m.event_time()));
    let recent = rows
        .iter()
        .take(RECENT)
        .map(|m| Evidence {
            memory_id: m.id.clone(),
            at: format_micros(m.event_time()),
            preview: preview(&m.content),
        })
        .collect();
    let mut beliefs = engine
        .usermodel
        .matching(|b| b.valid_to.is_none() && b.scope.as_deref() == Some(id.as_str()));
    strongest_first(&mut beliefs);
    Ok(GetResult {
        project,
        recent,
        beliefs: beliefs.iter().map(to_protocol).collect(),
    })
}
