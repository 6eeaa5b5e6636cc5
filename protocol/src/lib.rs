//! The wire contract between `mnemod` and every client: JSON-RPC 2.0, one JSON value per
//! line. Each method is a type implementing [`Method`], which names it and fixes its params
//! and result, so daemon handlers and client calls cannot disagree. Where the socket and the
//! data live by default is part of the contract too ([`paths`], [`socket`]).

pub mod agent;
pub mod belief;
pub mod consolidate;
pub mod context;
pub mod daemon;
pub mod entity;
pub mod events;
pub mod graph;
pub mod jsonrpc;
#[cfg(feature = "manpage")]
pub mod manpage;
pub mod memory;
pub mod notes;
pub mod paths;
pub mod project;
pub mod session;
pub mod socket;
pub mod summary;
pub mod system;
pub mod time;
pub mod transfer;
pub mod understanding;

use serde::{de::DeserializeOwned, Deserialize, Serialize};

pub use jsonrpc::{codes, Id, Request, Response, RpcError};

/// Bumped on any incompatible change to a method's params or result.
pub const PROTOCOL_VERSION: u32 = 1;
/// Default largest frame (one line) either side accepts.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 8 * 1024 * 1024;

pub trait Method {
    const NAME: &'static str;
    type Params: Serialize + DeserializeOwned + Send + 'static;
    type Result: Serialize + DeserializeOwned + Send + 'static;
}

/// Params of a method that takes none: `{}`, `null` or absent.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// Declares a closed set of names once: the enum (each variant on the wire as its text),
/// `ALL`, `as_str`, `FromStr` (any case, `-` for `_`) with an error listing the names, and
/// `Display`. `$what` names the set in errors.
macro_rules! name_set {
    ($(#[$meta:meta])* $name:ident, $what:literal {
        $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )*
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize, Default)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $text)] $variant, )*
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$(Self::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => $text, )*
                }
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                let wanted = s.replace('-', "_");
                Self::ALL
                    .iter()
                    .copied()
                    .find(|k| k.as_str().eq_ignore_ascii_case(&wanted))
                    .ok_or_else(|| {
                        let names: Vec<_> = Self::ALL.iter().map(|k| k.as_str()).collect();
                        format!(concat!("unknown ", $what, " `{}`; expected one of {}"), s, names.join(", "))
                    })
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }
    };
}
pub(crate) use name_set;

/// Declares a module's methods, each once: a marker type implementing [`Method`], and the
/// module's `METHODS` list that [`all_methods`] gathers.
macro_rules! methods {
    ($( $(#[$doc:meta])* $marker:ident = $name:literal ($params:ty) -> $result:ty; )*) => {
        $(
            $(#[$doc])*
            pub struct $marker;
            impl $crate::Method for $marker {
                const NAME: &'static str = $name;
                type Params = $params;
                type Result = $result;
            }
        )*
        /// Every method this module declares.
        pub const METHODS: &[&str] = &[$($name),*];
    };
}
pub(crate) use methods;

/// Every method of the protocol, sorted: what a daemon must answer.
pub fn all_methods() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = [
        daemon::METHODS,
        memory::METHODS,
        system::METHODS,
        consolidate::METHODS,
        events::METHODS,
        graph::METHODS,
        entity::METHODS,
        transfer::METHODS,
        belief::METHODS,
        project::METHODS,
        session::METHODS,
        context::METHODS,
        summary::METHODS,
        agent::METHODS,
    ]
    .concat();
    all.sort_unstable();
    all
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_method_is_declared_once_and_namespaced() {
        let all = super::all_methods();
        let mut unique = all.clone();
        unique.dedup();
        assert_eq!(all, unique, "a method name is declared twice");
        for m in all {
            assert!(m.contains('.') || m.ends_with("subscribe"), "{m}");
        }
    }
}
