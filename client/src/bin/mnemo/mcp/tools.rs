//! The tools `mnemo mcp` offers: each takes arguments a model can fill in from its JSON schema,
//! forwards one request to mnemod, and answers with short text for the model and the same
//! result as structured content beside it. What mnemod refuses (bad input, not running) is a
//! tool error the model reads, never a protocol failure.

use std::str::FromStr;

use mnemo_protocol::entity::{self, EntityType};
use mnemo_protocol::memory::{
    Add, AddParams, Filter, Forget, ForgetParams, List, ListParams, MemoryKind, Search,
    SearchParams, Update, UpdateParams,
};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::{tool, tool_router, ErrorData, Peer, RoleServer};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::render;
use super::MnemoServer;

/// Results a recall returns unless the model asks for more.
const DEFAULT_RECALL: usize = 8;
/// Most results one recall or listing returns: more would flood the model's context.
const MAX_RESULTS: usize = 50;

pub(super) type ToolResult = Result<CallToolResult, ErrorData>;

/// A tool's answer: `text` for the model, `structured` beside it for programs.
pub(super) fn answer(text: String, structured: Value) -> ToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    Ok(result)
}

/// A failure the model should read (and may fix by calling again differently).
pub(super) fn refused(message: impl Into<String>) -> ToolResult {
    Ok(CallToolResult::error(vec![ContentBlock::text(message)]))
}

/// An optional string from a closed set, its names listed so the model picks a valid one.
fn names_schema(names: Vec<&'static str>, description: &str) -> schemars::Schema {
    let mut values: Vec<Value> = names.into_iter().map(Value::from).collect();
    values.push(Value::Null);
    schemars::json_schema!({
        "type": ["string", "null"],
        "enum": values,
        "description": description,
    })
}

fn kind_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    names_schema(
        MemoryKind::ALL.iter().map(|k| k.as_str()).collect(),
        "What sort of thing it is: episodic (something that happened or was said; the \
         default), semantic (a fact), procedural (how to do something), preference, belief, \
         identity, goal.",
    )
}

fn entity_type_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    names_schema(
        EntityType::ALL.iter().map(|t| t.as_str()).collect(),
        "Only entities of this type.",
    )
}

fn parse<T: FromStr<Err = String>>(value: Option<String>) -> Result<Option<T>, String> {
    value.map(|v| v.parse()).transpose()
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RememberArgs {
    /// What to remember, in one self-contained statement ("Maria prefers tea to coffee").
    pub content: String,
    #[serde(default)]
    #[schemars(schema_with = "kind_schema")]
    pub kind: Option<String>,
    /// Short labels to find it by later.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The conversation or task it belongs to, if you track one.
    pub session: Option<String>,
    /// When it happened, if not now (RFC 3339 or YYYY-MM-DD).
    pub occurred_at: Option<String>,
    /// A separate memory space ("work", a project's name); `default` when absent.
    pub namespace: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RecallArgs {
    /// What to look for, in words: a question or a topic.
    pub query: String,
    /// How many memories, 1–50 (default 8).
    #[schemars(range(min = 1, max = 50))]
    pub k: Option<usize>,
    #[serde(default)]
    #[schemars(schema_with = "kind_schema")]
    pub kind: Option<String>,
    /// Only memories from this time on (RFC 3339 or YYYY-MM-DD).
    pub since: Option<String>,
    /// Only memories from before this time.
    pub until: Option<String>,
    /// Only memories of this session.
    pub session: Option<String>,
    /// Only this memory space; every space when absent.
    pub namespace: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ForgetArgs {
    /// The ids of the memories to delete for real, every version (from recall or
    /// list_recent).
    pub ids: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct UpdateArgs {
    /// The memory to change (any version's id).
    pub id: String,
    /// Its new content; the old version stays in its history.
    pub content: Option<String>,
    #[serde(default)]
    #[schemars(schema_with = "kind_schema")]
    pub kind: Option<String>,
    /// Replaces all its tags.
    pub tags: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListRecentArgs {
    /// How many, 1–50 (default 10).
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<usize>,
    #[serde(default)]
    #[schemars(schema_with = "kind_schema")]
    pub kind: Option<String>,
    /// Only this memory space.
    pub namespace: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct EntitiesArgs {
    /// Names starting with this, in any case.
    pub prefix: Option<String>,
    #[serde(default, rename = "type")]
    #[schemars(schema_with = "entity_type_schema")]
    pub entity_type: Option<String>,
    /// How many, 1–50 (default 20), most mentioned first.
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<usize>,
}

/// The name the MCP client gave at the handshake ("claude-code", "cursor"), recorded as the
/// source of what it remembers.
fn source_of(peer: &Peer<RoleServer>) -> String {
    match peer.peer_info() {
        Some(info) => format!("mcp:{}", info.client_info.name),
        None => "mcp".into(),
    }
}

fn bounded(n: Option<usize>, default: usize) -> Result<usize, String> {
    match n.unwrap_or(default) {
        0 => Err("ask for at least 1 result".into()),
        n if n > MAX_RESULTS => Err(format!("ask for at most {MAX_RESULTS} results")),
        n => Ok(n),
    }
}

#[tool_router(router = tool_router, vis = "pub(super)")]
impl MnemoServer {
    #[tool(
        description = "Store something worth remembering about the user, their work or the \
                       conversation, so later conversations can recall it. One fact or event \
                       per call, written to stand on its own.",
        annotations(
            title = "Remember",
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = false
        )
    )]
    async fn remember(
        &self,
        Parameters(args): Parameters<RememberArgs>,
        peer: Peer<RoleServer>,
    ) -> ToolResult {
        let kind = match parse::<MemoryKind>(args.kind) {
            Ok(kind) => kind,
            Err(e) => return refused(e),
        };
        let params = AddParams {
            content: args.content,
            kind,
            source: Some(source_of(&peer)),
            session_id: args.session,
            occurred_at: args.occurred_at,
            tags: args.tags,
            namespace: args.namespace,
            ..Default::default()
        };
        match self.link.call::<Add>(&params).await {
            Ok(memory) => answer(render::remembered(&memory), render::memory_json(&memory)),
            Err(e) => refused(e),
        }
    }

    #[tool(
        description = "Search the user's memories by meaning and words. Use it before \
                       answering anything that may depend on what the user said or did \
                       before: their preferences, people, projects, past events. Returns the \
                       best matches with dates and ids.",
        annotations(title = "Recall", read_only_hint = true, open_world_hint = false)
    )]
    async fn recall(&self, Parameters(args): Parameters<RecallArgs>) -> ToolResult {
        let (k, kind) = match (
            bounded(args.k, DEFAULT_RECALL),
            parse::<MemoryKind>(args.kind),
        ) {
            (Ok(k), Ok(kind)) => (k, kind),
            (Err(e), _) | (_, Err(e)) => return refused(e),
        };
        let params = SearchParams {
            query: args.query.clone(),
            k: Some(k),
            filter: Filter {
                namespace: args.namespace,
                kind,
                session_id: args.session,
                since: args.since,
                until: args.until,
                ..Default::default()
            },
            ..Default::default()
        };
        match self.link.call::<Search>(&params).await {
            Ok(found) => {
                let structured = json!({
                    "hits": found.hits.iter().map(|h| {
                        let mut m = render::memory_json(&h.memory);
                        m["score"] = json!(h.score);
                        m
                    }).collect::<Vec<_>>(),
                    "embedder": found.embedder,
                });
                answer(render::recalled(&args.query, &found), structured)
            }
            Err(e) => refused(e),
        }
    }

    #[tool(
        description = "Delete memories for real (every version), by id. Use it when the user \
                       asks to forget something; find the ids with recall first.",
        annotations(
            title = "Forget",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn forget(&self, Parameters(args): Parameters<ForgetArgs>) -> ToolResult {
        if args.ids.is_empty() {
            return refused("name the memories to forget by id (recall shows each one's id)");
        }
        let params = ForgetParams {
            ids: args.ids.clone(),
            filter: None,
        };
        match self.link.call::<Forget>(&params).await {
            Ok(done) => answer(
                format!(
                    "Forgot {} ({} stored version{} deleted).",
                    render::count(args.ids.len(), "memory", "memories"),
                    done.deleted,
                    if done.deleted == 1 { "" } else { "s" }
                ),
                json!({ "ids": args.ids, "deleted_versions": done.deleted }),
            ),
            Err(e) => refused(e),
        }
    }

    #[tool(
        description = "Correct or change a memory: new content, kind or tags. The old version \
                       stays in its history; recall sees the new one.",
        annotations(
            title = "Update a memory",
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = false
        )
    )]
    async fn update(&self, Parameters(args): Parameters<UpdateArgs>) -> ToolResult {
        let kind = match parse::<MemoryKind>(args.kind) {
            Ok(kind) => kind,
            Err(e) => return refused(e),
        };
        let params = UpdateParams {
            id: args.id,
            content: args.content,
            kind,
            tags: args.tags,
            ..Default::default()
        };
        match self.link.call::<Update>(&params).await {
            Ok(memory) => answer(
                format!("Updated: {}", render::line(&memory)),
                render::memory_json(&memory),
            ),
            Err(e) => refused(e),
        }
    }

    #[tool(
        description = "The most recently added memories, newest first.",
        annotations(
            title = "Recent memories",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_recent(&self, Parameters(args): Parameters<ListRecentArgs>) -> ToolResult {
        let (limit, kind) = match (bounded(args.limit, 10), parse::<MemoryKind>(args.kind)) {
            (Ok(limit), Ok(kind)) => (limit, kind),
            (Err(e), _) | (_, Err(e)) => return refused(e),
        };
        let params = ListParams {
            filter: Filter {
                namespace: args.namespace,
                kind,
                ..Default::default()
            },
            limit: Some(limit),
            cursor: None,
        };
        match self.link.call::<List>(&params).await {
            Ok(page) => answer(
                render::listing(&page.memories),
                json!({ "memories": page.memories.iter().map(render::memory_json).collect::<Vec<_>>() }),
            ),
            Err(e) => refused(e),
        }
    }

    #[tool(
        description = "The people, places, organisations, projects and other things the \
                       memories mention, most mentioned first.",
        annotations(title = "Entities", read_only_hint = true, open_world_hint = false)
    )]
    async fn entities(&self, Parameters(args): Parameters<EntitiesArgs>) -> ToolResult {
        let (limit, entity_type) = match (
            bounded(args.limit, 20),
            parse::<EntityType>(args.entity_type),
        ) {
            (Ok(limit), Ok(t)) => (limit, t),
            (Err(e), _) | (_, Err(e)) => return refused(e),
        };
        let params = entity::ListParams {
            prefix: args.prefix,
            entity_type,
            limit: Some(limit),
            ..Default::default()
        };
        match self.link.call::<entity::List>(&params).await {
            Ok(page) => answer(
                render::entities(&page.entities, page.total),
                json!({ "entities": page.entities, "total": page.total }),
            ),
            Err(e) => refused(e),
        }
    }
}
