//! `entity.*` methods: the people, places, organisations, projects, events, concepts and
//! times the memories mention, as the store knows them.

use serde::{Deserialize, Serialize};

/// Most entities one `entity.list` page holds.
pub const MAX_LIST: usize = 500;
/// Most mentions and related entities `entity.get` returns.
pub const MAX_MENTIONS_SHOWN: usize = 50;

crate::name_set! {
    /// What kind of thing an entity is.
    EntityType, "entity type" {
        Person = "person",
        Place = "place",
        Organization = "organization",
        Project = "project",
        Event = "event",
        #[default]
        Concept = "concept",
        Time = "time",
    }
}

/// An entity of one namespace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    /// Its graph node id (`graph.neighbors` with an entity node).
    pub id: String,
    pub namespace: String,
    /// The form written most often.
    pub name: String,
    #[serde(rename = "type")]
    pub entity_type: EntityType,
    /// Every form it was written in ("Maria", "maria", "Maria's" fold to one entity).
    pub aliases: Vec<String>,
    /// How the text relates it to its author ("sister", "speaker"), when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relation: Option<String>,
    /// Current memories that mention it.
    pub mention_count: u64,
    pub first_seen: String,
    pub last_seen: String,
    /// The mean salience of the memories that mention it, 0–10.
    pub salience: f32,
    /// The entity it was merged into, when consolidation proved them one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_into: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntitySort {
    /// Most mentioned first (the default).
    #[default]
    Mentions,
    /// Most recently mentioned first.
    Recent,
    /// By name.
    Name,
}

impl std::str::FromStr for EntitySort {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "mentions" => Ok(Self::Mentions),
            "recent" => Ok(Self::Recent),
            "name" => Ok(Self::Name),
            _ => Err(format!(
                "unknown sort `{s}`; expected mentions, recent or name"
            )),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// All namespaces when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub entity_type: Option<EntityType>,
    /// Names starting with this, in any case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    #[serde(default)]
    pub sort: EntitySort,
    /// Page size, 1–500 (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// `next_cursor` of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ListResult {
    pub entities: Vec<Entity>,
    pub next_cursor: Option<String>,
    /// Entities matching, over all pages.
    pub total: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GetParams {
    /// Its name or any alias, in any case.
    pub name: String,
    /// Needed when the name is known in several namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// A memory that mentions the entity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MentionedIn {
    pub memory_id: String,
    /// When it happened (or was added).
    pub at: String,
    /// The first 120 characters.
    pub preview: String,
}

/// An entity mentioned with this one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Related {
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub entity_type: EntityType,
    /// Memories mentioning both.
    pub together: u64,
    /// `together` over the memories mentioning this entity, 0–1.
    pub weight: f32,
    /// The weight of their RELATES_TO edge (grown by consolidation each time they are named
    /// together, faded when they are not); absent until a consolidation run has seen them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edge_weight: Option<f32>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GetResult {
    pub entity: Entity,
    /// Newest first.
    pub mentions: Vec<MentionedIn>,
    /// Strongest first.
    pub related: Vec<Related>,
}

crate::methods! {
    List = "entity.list" (ListParams) -> ListResult;
    Get = "entity.get" (GetParams) -> GetResult;
}
