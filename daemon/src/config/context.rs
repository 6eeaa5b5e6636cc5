//! `[sessions]` and `[context]`: when a silent session ends, which tokenizer counts a
//! package, and the profiles packages are built with (`[context.profiles.NAME]`, beside and
//! over the built-in `general`, `work`, `personal` and `creative`).

use std::collections::BTreeMap;

use mnemo_protocol::context::{Format, MAX_BUDGET, MIN_BUDGET};
use mnemo_protocol::memory::MemoryKind;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SessionsConfig {
    /// An active session with no message for this long ends (and is summarised); 0 never.
    pub end_after_silence_minutes: u64,
    /// The recent messages a session's short-term memory holds.
    pub recent_messages: usize,
}

impl Default for SessionsConfig {
    fn default() -> Self {
        Self {
            end_after_silence_minutes: 120,
            recent_messages: 12,
        }
    }
}

/// The LLM tokenizers a package can be counted with; their BPE tables ship in the binary.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
pub enum TokenizerKind {
    /// GPT-4o and later.
    #[default]
    #[serde(rename = "o200k_base")]
    O200k,
    /// GPT-4 and GPT-3.5.
    #[serde(rename = "cl100k_base")]
    Cl100k,
}

impl TokenizerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::O200k => "o200k_base",
            Self::Cl100k => "cl100k_base",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct ContextConfig {
    pub tokenizer: TokenizerKind,
    /// User-defined profiles; one named like a built-in replaces it.
    pub profiles: BTreeMap<String, ProfileConfig>,
}

/// How much of the budget each tier may take before the others; shares are relative (they
/// need not add up to 1), and what a tier leaves unused passes to the others.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TierShares {
    pub core: f32,
    pub living: f32,
    pub session: f32,
    pub retrieved: f32,
}

impl Default for TierShares {
    fn default() -> Self {
        Self {
            core: 0.15,
            living: 0.10,
            session: 0.30,
            retrieved: 0.45,
        }
    }
}

/// A context profile: what a package may hold and how its budget is split.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ProfileConfig {
    /// Memories and beliefs of another domain are left out (those with none stay); empty:
    /// every domain.
    pub domains: Vec<String>,
    /// Only memories of these kinds; empty: every kind.
    pub kinds: Vec<MemoryKind>,
    /// Retrieve from these namespaces; empty: the request's (or session's) namespace.
    pub namespaces: Vec<String>,
    /// Memories below this salience (0–10) or strength (0–1) are left out.
    pub min_salience: f32,
    pub min_strength: f32,
    /// How much a newer memory beats an older one in the retrieved tier, 0–1.
    pub recency_weight: f32,
    pub shares: TierShares,
    /// The budget when the request gives none; absent: the adaptive budget.
    pub max_tokens: Option<u32>,
    pub format: Format,
}

impl Default for ProfileConfig {
    fn default() -> Self {
        Self {
            domains: Vec::new(),
            kinds: Vec::new(),
            namespaces: Vec::new(),
            min_salience: 0.0,
            min_strength: 0.0,
            recency_weight: 0.2,
            shares: TierShares::default(),
            max_tokens: None,
            format: Format::Markdown,
        }
    }
}

fn domains(names: &[&str]) -> Vec<String> {
    names.iter().map(|d| d.to_string()).collect()
}

impl ContextConfig {
    /// The built-in profiles, then the configured ones over them.
    pub fn profiles(&self) -> BTreeMap<String, ProfileConfig> {
        let mut all = BTreeMap::from([
            ("general".to_string(), ProfileConfig::default()),
            (
                "work".to_string(),
                ProfileConfig {
                    domains: domains(&["work", "coding", "career", "project", "meeting"]),
                    recency_weight: 0.35,
                    shares: TierShares {
                        core: 0.15,
                        living: 0.15,
                        session: 0.30,
                        retrieved: 0.40,
                    },
                    ..Default::default()
                },
            ),
            (
                "personal".to_string(),
                ProfileConfig {
                    domains: domains(&[
                        "personal", "family", "health", "food", "home", "friends", "hobby",
                        "travel",
                    ]),
                    recency_weight: 0.15,
                    ..Default::default()
                },
            ),
            (
                "creative".to_string(),
                ProfileConfig {
                    domains: domains(&["writing", "art", "music", "creative", "ideas", "design"]),
                    recency_weight: 0.05,
                    shares: TierShares {
                        core: 0.10,
                        living: 0.10,
                        session: 0.25,
                        retrieved: 0.55,
                    },
                    ..Default::default()
                },
            ),
        ]);
        all.extend(self.profiles.clone());
        all
    }

    pub fn validate(&self) -> Result<(), String> {
        for (name, p) in &self.profiles {
            let s = p.shares;
            let shares = [s.core, s.living, s.session, s.retrieved];
            if shares.iter().any(|x| !x.is_finite() || *x < 0.0)
                || shares.iter().sum::<f32>() <= 0.0
            {
                return Err(format!(
                    "context.profiles.{name}.shares must be 0 or more, and not all 0"
                ));
            }
            if !(0.0..=10.0).contains(&p.min_salience) || !(0.0..=1.0).contains(&p.min_strength) {
                return Err(format!(
                    "context.profiles.{name}: min_salience is 0–10 and min_strength 0–1"
                ));
            }
            if !(0.0..=1.0).contains(&p.recency_weight) {
                return Err(format!("context.profiles.{name}.recency_weight is 0–1"));
            }
            if let Some(t) = p.max_tokens {
                if !(MIN_BUDGET..=MAX_BUDGET).contains(&t) {
                    return Err(format!(
                        "context.profiles.{name}.max_tokens is {t}; it must be {MIN_BUDGET}–{MAX_BUDGET}"
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_profiles_join_and_replace_the_built_ins() {
        let config: ContextConfig = toml::from_str(
            "tokenizer = \"cl100k_base\"\n[profiles.work]\nmax_tokens = 900\n[profiles.study]\ndomains = [\"school\"]\n",
        )
        .unwrap();
        assert_eq!(config.tokenizer, TokenizerKind::Cl100k);
        let all = config.profiles();
        let names: Vec<_> = all.keys().map(String::as_str).collect();
        assert_eq!(names, ["creative", "general", "personal", "study", "work"]);
        assert_eq!(all["work"].max_tokens, Some(900));
        assert!(all["work"].domains.is_empty(), "replaced whole");
        config.validate().unwrap();
    }

    #[test]
    fn bad_profiles_are_named() {
        let config: ContextConfig = toml::from_str("[profiles.x]\nmax_tokens = 10\n").unwrap();
        assert!(config
            .validate()
            .unwrap_err()
            .contains("profiles.x.max_tokens"));
        let config: ContextConfig = toml::from_str(
            "[profiles.y.shares]\ncore = 0\nliving = 0\nsession = 0\nretrieved = 0\n",
        )
        .unwrap();
        assert!(config.validate().unwrap_err().contains("not all 0"));
    }
}
