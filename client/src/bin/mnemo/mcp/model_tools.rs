//! The user-model tools: what the memories say about the person (`whoami`, `preferences`)
//! and the preferences the person states through the assistant (`set_preference`).

use mnemo_protocol::belief::{
    Belief, IdentityGet, IdentityParams, PreferenceList, PreferenceListParams, PreferenceSet,
    PreferenceSetParams,
};
use mnemo_protocol::context::{Build, BuildParams, Format};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::tools::{answer, refused, ToolResult};
use super::MnemoServer;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PreferencesArgs {
    /// Only this domain: coding, food, writing, music, …
    pub domain: Option<String>,
    /// A separate memory space; `default` when absent.
    pub namespace: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SetPreferenceArgs {
    /// coding, food, writing, music, … (required).
    pub domain: String,
    /// What it is about: "indentation", "answer length", "tea".
    pub key: String,
    /// The choice: "tabs", "short", "dislike".
    pub value: String,
    pub namespace: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ContextArgs {
    /// What the conversation or task is about; retrieval uses it.
    pub query: Option<String>,
    /// Tokens the package may take (64–200000); default: what this machine affords.
    pub budget: Option<u32>,
    /// general, work, personal, creative, or one from mnemo's config.
    pub profile: Option<String>,
    /// A mnemo session id: its recent messages and running summary join the package.
    pub session_id: Option<String>,
    pub namespace: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WhoamiArgs {
    pub namespace: Option<String>,
}

fn preference_line(b: &Belief) -> String {
    let flag = if b.contradicts.is_empty() {
        ""
    } else {
        " (contradicted)"
    };
    format!(
        "- {} [{}, {}, {:.2}]{flag}",
        b.statement,
        b.domain.as_deref().unwrap_or("general"),
        b.source,
        b.confidence
    )
}

#[tool_router(router = model_router, vis = "pub(super)")]
impl MnemoServer {
    #[tool(
        description = "The user's preferences, corrections and standing rules (what they like, \
                       dislike, always or never want), strongest first. Read them before \
                       writing code, prose or plans for the user.",
        annotations(title = "Preferences", read_only_hint = true, open_world_hint = false)
    )]
    async fn preferences(&self, Parameters(args): Parameters<PreferencesArgs>) -> ToolResult {
        let params = PreferenceListParams {
            namespace: args.namespace,
            domain: args.domain,
            limit: Some(50),
            ..Default::default()
        };
        match self.link.call::<PreferenceList>(&params).await {
            Ok(page) if page.beliefs.is_empty() => answer(
                "No preferences known yet.".into(),
                json!({ "preferences": [] }),
            ),
            Ok(page) => answer(
                page.beliefs
                    .iter()
                    .map(preference_line)
                    .collect::<Vec<_>>()
                    .join("\n"),
                json!({ "preferences": page.beliefs, "total": page.total }),
            ),
            Err(e) => refused(e),
        }
    }

    #[tool(
        description = "Record a preference the user states explicitly (\"always use tabs\", \
                       \"I don't drink coffee\"): it replaces their earlier choice for the same \
                       key and outranks anything read from conversation.",
        annotations(
            title = "Set a preference",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn set_preference(&self, Parameters(args): Parameters<SetPreferenceArgs>) -> ToolResult {
        let params = PreferenceSetParams {
            domain: args.domain,
            key: args.key,
            value: args.value,
            namespace: args.namespace,
        };
        match self.link.call::<PreferenceSet>(&params).await {
            Ok(set) => answer(
                format!("Recorded: {}.", set.preference.statement),
                json!({ "preference": set.preference, "superseded": set.superseded }),
            ),
            Err(e) => refused(e),
        }
    }

    #[tool(
        description = "Start here: the context package for a conversation or task — who the \
                       user is, their standing preferences and corrections, what is going on \
                       lately, the session so far and the memories relevant to `query` — as \
                       Markdown under a token budget counted with a real LLM tokenizer.",
        annotations(title = "Context", read_only_hint = true, open_world_hint = false)
    )]
    async fn context(&self, Parameters(args): Parameters<ContextArgs>) -> ToolResult {
        let params = BuildParams {
            query: args.query,
            session_id: args.session_id,
            profile: args.profile,
            budget: args.budget,
            namespace: args.namespace,
            format: Some(Format::Markdown),
            ..Default::default()
        };
        match self.link.call::<Build>(&params).await {
            Ok(p) => answer(
                p.text.clone(),
                json!({ "tokens": p.tokens, "budget": p.budget, "tiers": p.tiers, "dropped": p.dropped_count }),
            ),
            Err(e) => refused(e),
        }
    }

    #[tool(
        description = "Who the user is, as their memories tell: name, age, pronouns, roles, \
                       workplaces, places, languages, goals and the people around them, each \
                       with how sure mnemo is.",
        annotations(title = "Who am I", read_only_hint = true, open_world_hint = false)
    )]
    async fn whoami(&self, Parameters(args): Parameters<WhoamiArgs>) -> ToolResult {
        let params = IdentityParams {
            namespace: args.namespace,
            subject: None,
        };
        match self.link.call::<IdentityGet>(&params).await {
            Ok(me) => answer(super::render::identity(&me), json!(me)),
            Err(e) => refused(e),
        }
    }
}
