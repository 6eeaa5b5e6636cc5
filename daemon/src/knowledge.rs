//! What the engine has learned from the memories, which the write path adds to and the read
//! path ranks with: the names and entities memories mention, and the user model.

use std::sync::Arc;

use crate::graph::{EntityBook, Gazetteer};
use crate::usermodel::UserModel;

#[derive(Clone)]
pub struct Knowledge {
    pub names: Arc<Gazetteer>,
    pub entities: Arc<EntityBook>,
    pub usermodel: Arc<UserModel>,
}
