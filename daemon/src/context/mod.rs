//! `context.build`: the package an AI starts a conversation from. Four tiers — core (who
//! the person is, and what the automatic layer carries: standing rules, preferences), living
//! summaries, the session (recent messages, running summary, active project) and retrieved
//! (the triggered layer's warnings, recall for the query, beliefs it touches) — filled by
//! score under a budget counted with a real LLM tokenizer.
//! No budget given: the profile's, else the adaptive one from the hardware and RAM pressure.

mod fill;
mod tiers;
pub mod tokens;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use mnemo_protocol::agent::{ActionState, TriggersParams, TriggersResult};
use mnemo_protocol::context::{
    BuildParams, Package, Tier, MAX_BUDGET, MAX_QUERY_BYTES, MIN_BUDGET,
};
use mnemo_protocol::daemon::LastContext;
use mnemo_protocol::memory::DEFAULT_NAMESPACE;
use mnemo_protocol::project::Project;
use mnemo_protocol::time::{format_micros, now_micros};

use crate::agent::Agent;
use crate::config::{AutomaticSource, ProfileConfig, TriggeredSource};
use crate::error::{Error, Result};
use crate::hardware::Monitor;
use crate::ingest::validate_label;
use crate::living::Living;
use crate::recall::Recall;
use crate::sessions::Sessions;
use crate::usermodel::UserModel;
use tokens::Tokenizer;

/// Warnings a package carries at most.
const WARNINGS: usize = 5;

pub struct ContextBuilder {
    pub recall: Arc<Recall>,
    pub usermodel: Arc<UserModel>,
    pub sessions: Arc<Sessions>,
    pub living: Arc<Living>,
    /// The triggered layer, and which layers are on.
    pub agent: Arc<Agent>,
    pub hardware: Arc<Monitor>,
    pub tokenizer: Tokenizer,
    pub profiles: BTreeMap<String, ProfileConfig>,
    /// The last package's accounting, for the dashboard.
    pub last: Mutex<Option<LastContext>>,
}

/// A request with its defaults resolved.
pub struct Request {
    pub query: Option<String>,
    pub namespace: String,
    pub profile: String,
    pub budget: u32,
}

impl ContextBuilder {
    pub fn profile_names(&self) -> Vec<String> {
        self.profiles.keys().cloned().collect()
    }

    pub async fn build(&self, p: BuildParams) -> Result<Package> {
        let query = p.query.filter(|q| !q.trim().is_empty());
        if query.as_ref().is_some_and(|q| q.len() > MAX_QUERY_BYTES) {
            return Err(Error::invalid(format!(
                "query is over {MAX_QUERY_BYTES} bytes"
            )));
        }
        validate_label("namespace", p.namespace.as_deref()).map_err(Error::Invalid)?;
        let short = match &p.session_id {
            Some(id) => Some(self.sessions.short_term(id).await?),
            None => None,
        };
        let session = short.as_ref().map(|s| &s.session);
        let profile_name = p
            .profile
            .or_else(|| session.and_then(|s| s.profile.clone()))
            .unwrap_or_else(|| "general".into());
        let Some(profile) = self.profiles.get(&profile_name) else {
            return Err(Error::invalid(format!(
                "unknown profile `{profile_name}`; the profiles are {} (add one under [context.profiles] in the config)",
                self.profile_names().join(", ")
            )));
        };
        let (budget, budget_source) = match (p.budget, profile.max_tokens) {
            (Some(b), _) => (b, "the request".to_string()),
            (None, Some(b)) => (b, format!("profile `{profile_name}`")),
            (None, None) => {
                let adaptive = self.hardware.budget();
                (
                    adaptive.total_tokens.clamp(MIN_BUDGET, MAX_BUDGET),
                    format!("adaptive: {}", adaptive.reason),
                )
            }
        };
        if budget < MIN_BUDGET {
            return Err(Error::invalid(format!(
                "budget {budget} is below the smallest useful package ({MIN_BUDGET} tokens); ask for at least {MIN_BUDGET}"
            )));
        }
        if budget > MAX_BUDGET {
            return Err(Error::invalid(format!(
                "budget {budget} is over {MAX_BUDGET} tokens; ask for less"
            )));
        }
        let namespace = p
            .namespace
            .or_else(|| session.map(|s| s.namespace.clone()))
            .unwrap_or_else(|| DEFAULT_NAMESPACE.into());
        let request = Request {
            query,
            namespace,
            profile: profile_name.clone(),
            budget,
        };
        let project = self
            .active_project(
                session.and_then(|s| s.project_id.as_deref()),
                p.cwd.as_deref(),
            )
            .await?;
        let warnings = self
            .warnings(&p.files, p.command.as_deref(), &request, p.cwd.as_deref())
            .await?;
        // Statements written a moment ago may still wait for their vectors.
        self.usermodel.embed_missing().await?;
        let beliefs = self.usermodel.current(&request.namespace, None);
        let identity = self.usermodel.identity(&request.namespace, None);
        let living = self.living.list(Some(&request.namespace), None).await?;
        let layers = self.agent.config();
        let last = match short {
            Some(_) => Err(String::new()),
            None if layers.automatic(AutomaticSource::RecentSession) => self
                .sessions
                .last_ended(&request.namespace)
                .ok_or_else(|| self.sessions.why_no_last_ended(&request.namespace).into()),
            None => Err(
                "no session given, and the automatic layer does not carry the last \
                 session (add recent_session to agent.automatic)"
                    .into(),
            ),
        };
        let found = [
            (
                Tier::Core,
                tiers::core(&request, profile, &beliefs, &identity, layers),
            ),
            (Tier::Living, tiers::living(&living)),
            (
                Tier::Session,
                tiers::session(
                    short.as_ref(),
                    last.as_ref().map(|(s, m)| (s, m)).map_err(String::as_str),
                    project.as_ref(),
                ),
            ),
            (
                Tier::Retrieved,
                tiers::retrieved(&self.recall, &request, profile, &beliefs, project.as_ref())
                    .await?,
            ),
        ];
        let mut candidates = Vec::new();
        let mut sources: HashMap<Tier, Vec<_>> = HashMap::new();
        let mut left_out = Vec::new();
        let warned = (Tier::Retrieved, tiers::warnings(warnings.as_ref()));
        for (tier, f) in found.into_iter().chain([warned]) {
            candidates.extend(f.candidates);
            left_out.extend(f.left_out);
            sources.entry(tier).or_default().extend(f.sources);
        }
        let format = p.format.unwrap_or(profile.format);
        let filled = fill::fill(
            candidates,
            sources,
            left_out,
            &fill::Settings {
                budget,
                shares: &profile.shares,
                format,
                tokenizer: &self.tokenizer,
                explain: p.explain,
            },
        );
        let package = Package {
            text: filled.text,
            format,
            profile: profile_name,
            tokenizer: self.tokenizer.name().into(),
            budget,
            budget_source,
            tokens: filled.tokens,
            tiers: filled.tiers,
            dropped: filled.dropped,
            dropped_count: filled.dropped_count,
        };
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(LastContext::of(&package, format_micros(now_micros())));
        Ok(package)
    }

    /// What the triggered layer says of the state: the files and command about to be acted
    /// on, and the query as the task. None when the layer is off or nothing is named.
    async fn warnings(
        &self,
        files: &[String],
        command: Option<&str>,
        r: &Request,
        cwd: Option<&str>,
    ) -> Result<Option<TriggersResult>> {
        let layers = self.agent.config();
        let on =
            layers.triggered(TriggeredSource::Failures) || layers.triggered(TriggeredSource::Rules);
        let ask = TriggersParams {
            files: files.to_vec(),
            command: command.map(str::to_string),
            state: ActionState {
                cwd: cwd.map(str::to_string),
                task: r.query.clone(),
                ..Default::default()
            },
            namespace: Some(r.namespace.clone()),
            limit: Some(WARNINGS),
            ..Default::default()
        };
        if !on || ask.is_empty() {
            return Ok(None);
        }
        Ok(Some(self.agent.triggers(ask).await?))
    }

    /// The session's project, else the one `cwd` lies in (known once a memory pointed there).
    async fn active_project(&self, id: Option<&str>, cwd: Option<&str>) -> Result<Option<Project>> {
        let projects = self.usermodel.projects();
        if let Some(id) = id {
            return Ok(projects.get(id));
        }
        let Some(cwd) = cwd else { return Ok(None) };
        if !std::path::Path::new(cwd).is_absolute() {
            return Err(Error::invalid(format!(
                "cwd `{cwd}` is not absolute; give the full path"
            )));
        }
        Ok(match projects.root_of(cwd).await {
            Some(root) => projects.get(&projects.id_of(&root)),
            None => None,
        })
    }

    pub fn last(&self) -> Option<LastContext> {
        self.last.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
