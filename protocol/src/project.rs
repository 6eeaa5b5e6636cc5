//! `project.*` methods: the projects the person works on, found from the working directories
//! and file paths their tools send with memories.

use serde::{Deserialize, Serialize};

use crate::belief::{Belief, Evidence};

/// Most projects one page holds.
pub const MAX_LIST: usize = 500;

/// Files of one language in a project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LanguageCount {
    pub language: String,
    pub files: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Project {
    pub id: String,
    /// Its root: the enclosing git repository, else the directory with its build file.
    pub path: String,
    pub name: String,
    /// The README's first paragraph.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The `origin` remote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo_url: Option<String>,
    /// Most files first.
    pub languages: Vec<LanguageCount>,
    pub frameworks: Vec<String>,
    /// cargo, npm, pnpm, yarn, poetry, pip, go, maven, gradle, cmake, make, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_system: Option<String>,
    /// `active`, or `missing` once its directory is gone.
    pub status: String,
    pub first_seen: String,
    pub last_active: String,
    /// Memories that pointed into it.
    pub interaction_count: u64,
    /// How it was found: `cwd`, `metadata path` or `text path`.
    pub detection_source: String,
    /// When its files were last read.
    pub analyzed_at: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// Page size, 1–500 (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ListResult {
    /// Most recently active first.
    pub projects: Vec<Project>,
    pub next_cursor: Option<String>,
    pub total: u64,
}

/// One project by id, or by a path inside it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GetParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GetResult {
    pub project: Project,
    /// Its most recent memories, newest first.
    pub recent: Vec<Evidence>,
    /// Current beliefs read from its memories.
    pub beliefs: Vec<Belief>,
}

crate::methods! {
    List = "project.list" (ListParams) -> ListResult;
    Get = "project.get" (GetParams) -> GetResult;
}
