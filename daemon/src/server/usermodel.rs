//! Handlers of `belief.*`, `preference.*` and `identity.get`: the user model's views.

use std::sync::Arc;

use mnemo_protocol::belief::{
    BeliefType, Evidence, Get, GetParams, GetResult, IdentityGet, IdentityParams, List, ListParams,
    ListResult, PreferenceForget, PreferenceForgetParams, PreferenceForgetResult, PreferenceList,
    PreferenceListParams, PreferenceSet, PreferenceSetParams, PreferenceSetResult,
};
use mnemo_protocol::memory::DEFAULT_NAMESPACE;
use mnemo_protocol::time::format_micros;
use mnemo_protocol::RpcError;

use super::router::Router;
use super::state::{rpc_error, store_error, State};
use crate::error::Error;
use crate::ingest::preview;
use crate::store::col;
use crate::store::filter::current;
use crate::usermodel::views::to_protocol;

pub fn register(r: &mut Router) {
    r.register::<List, _, _>(list)
        .register::<Get, _, _>(get)
        .register::<PreferenceList, _, _>(preference_list)
        .register::<PreferenceSet, _, _>(preference_set)
        .register::<PreferenceForget, _, _>(preference_forget)
        .register::<IdentityGet, _, _>(identity);
}

fn check_label(what: &str, value: Option<&str>) -> Result<(), RpcError> {
    crate::ingest::validate_label(what, value).map_err(RpcError::invalid_params)
}

async fn list(engine: Arc<State>, p: ListParams) -> Result<ListResult, RpcError> {
    check_label("subject", p.subject.as_deref())?;
    check_label("domain", p.domain.as_deref())?;
    let (beliefs, total, next_cursor) = engine
        .usermodel
        .list(&p)
        .map_err(RpcError::invalid_params)?;
    Ok(ListResult {
        beliefs,
        next_cursor,
        total,
    })
}

async fn get(engine: Arc<State>, p: GetParams) -> Result<GetResult, RpcError> {
    let Some(b) = engine.usermodel.get(&p.id) else {
        return Err(rpc_error(Error::NotFound(format!(
            "no belief with id `{}`; `mnemo beliefs` lists them",
            p.id
        ))));
    };
    let rows = engine
        .store
        .columns_of(
            &current().and(col("lineage").one_of(&b.evidence)),
            &["id", "content", "occurred_at", "created_at"],
        )
        .await
        .map_err(store_error)?;
    let mut evidence: Vec<(i64, Evidence)> = rows
        .iter()
        .map(|m| {
            (
                m.event_time(),
                Evidence {
                    memory_id: m.id.clone(),
                    at: format_micros(m.event_time()),
                    preview: preview(&m.content),
                },
            )
        })
        .collect();
    evidence.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
    Ok(GetResult {
        history: engine.usermodel.history(&b),
        belief: to_protocol(&b),
        evidence: evidence.into_iter().map(|(_, e)| e).collect(),
    })
}

async fn preference_list(
    engine: Arc<State>,
    p: PreferenceListParams,
) -> Result<ListResult, RpcError> {
    list(
        engine,
        ListParams {
            namespace: p.namespace,
            belief_type: Some(BeliefType::Preference),
            domain: p.domain,
            source: p.source,
            all: p.all,
            limit: p.limit,
            cursor: p.cursor,
            ..Default::default()
        },
    )
    .await
}

async fn preference_set(
    engine: Arc<State>,
    p: PreferenceSetParams,
) -> Result<PreferenceSetResult, RpcError> {
    check_label("namespace", p.namespace.as_deref())?;
    let (belief, superseded) = engine
        .usermodel
        .set_preference(p)
        .await
        .map_err(rpc_error)?;
    Ok(PreferenceSetResult {
        preference: to_protocol(&belief),
        superseded,
    })
}

async fn preference_forget(
    engine: Arc<State>,
    p: PreferenceForgetParams,
) -> Result<PreferenceForgetResult, RpcError> {
    let namespace = p.namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.into());
    let forgotten = match (&p.id, &p.domain, &p.key) {
        (Some(id), None, None) => {
            let id = id.clone();
            engine.usermodel.forget_preferences(|b| b.id == id).await
        }
        (None, Some(domain), Some(key)) => {
            let (domain, key) = (domain.to_lowercase(), key.to_lowercase());
            engine
                .usermodel
                .forget_preferences(|b| {
                    b.namespace == namespace
                        && b.domain.as_deref() == Some(domain.as_str())
                        && b.predicate.to_lowercase() == key
                })
                .await
        }
        _ => {
            return Err(RpcError::invalid_params(
                "name the preference: its id, or its domain and key",
            ))
        }
    }
    .map_err(rpc_error)?;
    if forgotten == 0 {
        return Err(rpc_error(Error::NotFound(
            "no preference matches; `mnemo prefs` lists them with their ids".into(),
        )));
    }
    Ok(PreferenceForgetResult { forgotten })
}

async fn identity(
    engine: Arc<State>,
    p: IdentityParams,
) -> Result<mnemo_protocol::belief::Identity, RpcError> {
    check_label("namespace", p.namespace.as_deref())?;
    check_label("subject", p.subject.as_deref())?;
    let namespace = p.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
    Ok(engine.usermodel.identity(namespace, p.subject.as_deref()))
}
