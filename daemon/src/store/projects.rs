//! The `projects` table (ARCHITECTURE §3): the projects memories point into, with what their
//! files say (languages, frameworks, build system, README, remote). Kept by
//! `usermodel::Projects`; in an encrypted store the path, name, description and remote are
//! sealed to the row.

use super::column::table_rows;

pub const PROJECTS: &str = "projects";

table_rows! {
    /// One project as stored. Times are UTC microseconds.
    ProjectRecord {
        id: String,
        path: String,
        name: String,
        description: Option<String>,
        repo_url: Option<String>,
        /// JSON `[{"language": …, "files": …}]`, most files first.
        languages: String,
        frameworks: Vec<String>,
        build_system: Option<String>,
        status: String,
        first_seen: i64,
        last_active: i64,
        interaction_count: i64,
        detection_source: String,
        analyzed_at: i64,
        sealed: bool,
    }
}

/// The projects table: rows keyed by a hash of the root path.
pub type ProjectTable = super::keyed::KeyedTable<ProjectRecord>;
