//! The user model: `belief.*`, `preference.*` and `identity.get`. A belief is one statement
//! about someone (the person by default) with where it came from, how sure the store is, and
//! when it held; newer beliefs supersede older ones instead of overwriting them.

use serde::{Deserialize, Serialize};

/// Most beliefs one page holds.
pub const MAX_LIST: usize = 500;
/// The subject beliefs of the person themself have ("I live in …" without a speaker).
pub const USER: &str = "user";

crate::name_set! {
    /// What a belief is about.
    BeliefType, "belief type" {
        /// Something true of someone or something ("Maria lives in Porto").
        #[default]
        Fact = "fact",
        /// What someone likes, dislikes or prefers; keyed by `predicate`, valued by `object`.
        Preference = "preference",
        /// What cannot be otherwise: allergies, inabilities, deadlines.
        Constraint = "constraint",
        Goal = "goal",
        Behavior = "behavior",
        Value = "value",
        /// A standing instruction or correction ("never use emojis").
        Rule = "rule",
        /// Who someone is: name, age, roles, places, languages, pronouns.
        Identity = "identity",
    }
}

crate::name_set! {
    /// Where a belief came from; an explicit one outranks an extracted one, which outranks an
    /// inferred one.
    BeliefSource, "belief source" {
        /// Said or set by the person (`preference.set`).
        Explicit = "explicit",
        /// Read from a memory by the rules (or the configured LLM).
        #[default]
        Extracted = "extracted",
        /// Derived from several memories.
        Inferred = "inferred",
    }
}

impl BeliefSource {
    /// Higher wins a disagreement.
    pub fn rank(self) -> u8 {
        match self {
            Self::Explicit => 2,
            Self::Extracted => 1,
            Self::Inferred => 0,
        }
    }
}

/// One belief, one version of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Belief {
    pub id: String,
    pub namespace: String,
    /// Who or what it is about: `user` for the person, else a name as written.
    pub subject: String,
    /// `lives_in`, `works_at`, `name`, …; for a preference or rule, its key ("tea",
    /// "indentation", "use emojis").
    pub predicate: String,
    /// The value ("Porto"); for a preference, like / dislike or the preferred choice.
    pub object: String,
    /// "It is not so" ("Maria no longer lives in Lisbon", "I don't speak French").
    #[serde(default)]
    pub negated: bool,
    /// The belief in words.
    pub statement: String,
    #[serde(rename = "type")]
    pub belief_type: BeliefType,
    /// coding, food, writing, …, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Where it applies (a project), when narrower than everywhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// 0–1: from the source, grown by each independent memory that says it again.
    pub confidence: f32,
    /// Memories that say it.
    pub evidence_count: u64,
    pub source: BeliefSource,
    /// What read it from a memory: `rules`, or `llm:<model>` when the configured LLM found
    /// what the rules missed. Absent for an explicit one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_by: Option<String>,
    /// The memory it was first read from (absent for an explicit one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_memory_id: Option<String>,
    pub valid_from: String,
    /// When it stopped holding; absent while current.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<String>,
    /// The belief that replaced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// Current beliefs it cannot hold together with (both kept, the stronger ranked first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contradicts: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// All namespaces when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub belief_type: Option<BeliefType>,
    /// `user`, or a name in any case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<BeliefSource>,
    /// Superseded beliefs too (default: current only).
    #[serde(default)]
    pub all: bool,
    /// The beliefs that held at this time (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
    /// Page size, 1–500 (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// `next_cursor` of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ListResult {
    /// Explicit before extracted before inferred, then the more confident, then the newer.
    pub beliefs: Vec<Belief>,
    pub next_cursor: Option<String>,
    /// Beliefs matching, over all pages.
    pub total: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GetParams {
    pub id: String,
}

/// A memory a belief rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub memory_id: String,
    /// When it happened (or was added).
    pub at: String,
    /// The first 120 characters.
    pub preview: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GetResult {
    pub belief: Belief,
    /// The current memories that say it, newest first.
    pub evidence: Vec<Evidence>,
    /// Every version about the same subject and predicate, oldest first (this one included):
    /// how it changed.
    pub history: Vec<Belief>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreferenceSetParams {
    /// coding, food, writing, … (required).
    pub domain: String,
    /// What it is about: "indentation", "tea", "answer length".
    pub key: String,
    /// The choice: "tabs", "dislike", "short".
    pub value: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PreferenceSetResult {
    pub preference: Belief,
    /// Beliefs it replaced (a disagreeing extracted one, an older explicit one).
    pub superseded: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreferenceListParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<BeliefSource>,
    /// Superseded ones too.
    #[serde(default)]
    pub all: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// Forget one preference by id, or every version of one key of a domain.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreferenceForgetParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PreferenceForgetResult {
    pub forgotten: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentityParams {
    /// The default namespace when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Whose identity: `user` (the default) or a name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

/// One thing known of someone, with how sure and from where.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trait {
    pub value: String,
    pub confidence: f32,
    pub source: BeliefSource,
    pub belief_id: String,
    pub since: String,
}

/// Who someone is, from their current beliefs; each list strongest first, empty when unknown.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Identity {
    pub namespace: String,
    pub subject: String,
    pub name: Vec<Trait>,
    pub age: Vec<Trait>,
    pub pronouns: Vec<Trait>,
    /// Occupations and roles ("software engineer").
    pub roles: Vec<Trait>,
    /// Where they work.
    pub workplaces: Vec<Trait>,
    /// Where they live and come from.
    pub places: Vec<Trait>,
    pub languages: Vec<Trait>,
    /// What they work on and want to do (goals).
    pub works_on: Vec<Trait>,
    /// The people around them, as "Maria (sister)".
    pub relations: Vec<Trait>,
    /// The person's projects their memories point into, most recently active first (only
    /// for the person themself).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub projects: Vec<ProjectWorkedOn>,
}

/// A project in someone's identity: what `project.get` tells in full.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectWorkedOn {
    pub id: String,
    pub name: String,
    pub path: String,
    pub last_active: String,
    /// Memories that pointed into it.
    pub interaction_count: u64,
}

impl Identity {
    /// Each part with its label, in the order people read them.
    pub fn parts(&self) -> [(&'static str, &[Trait]); 9] {
        [
            ("name", &self.name),
            ("age", &self.age),
            ("pronouns", &self.pronouns),
            ("roles", &self.roles),
            ("works at", &self.workplaces),
            ("places", &self.places),
            ("languages", &self.languages),
            ("works on", &self.works_on),
            ("people", &self.relations),
        ]
    }
}

crate::methods! {
    List = "belief.list" (ListParams) -> ListResult;
    Get = "belief.get" (GetParams) -> GetResult;
    PreferenceList = "preference.list" (PreferenceListParams) -> ListResult;
    PreferenceSet = "preference.set" (PreferenceSetParams) -> PreferenceSetResult;
    PreferenceForget = "preference.forget" (PreferenceForgetParams) -> PreferenceForgetResult;
    IdentityGet = "identity.get" (IdentityParams) -> Identity;
}
