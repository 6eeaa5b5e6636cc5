//! The memory graph: the entities memories mention ([`names`]), the edges a new memory
//! brings ([`links`]), and walks over the edges ([`walk`]): neighbours, paths, and the spread
//! recall uses to lift what sits beside its best results.

pub mod entities;
pub mod links;
pub mod names;
pub mod walk;

pub use entities::EntityBook;
pub use links::Linker;
pub use names::{entity_match, subject_match, Gazetteer, QueryEntity};
pub use walk::Graph;
