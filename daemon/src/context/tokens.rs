//! Token counts as an LLM counts them: OpenAI's BPE (o200k_base or cl100k_base), whose tables
//! ship inside the `tiktoken-rs` crate, so nothing is fetched at run time.

use tiktoken_rs::CoreBPE;

use crate::config::TokenizerKind;

#[derive(Clone, Copy)]
pub struct Tokenizer {
    kind: TokenizerKind,
    bpe: &'static CoreBPE,
}

impl Tokenizer {
    /// Loads the tables once per process (a fraction of a second): call off the reactor.
    pub fn load(kind: TokenizerKind) -> Self {
        let bpe = match kind {
            TokenizerKind::O200k => tiktoken_rs::o200k_base_singleton(),
            TokenizerKind::Cl100k => tiktoken_rs::cl100k_base_singleton(),
        };
        Self { kind, bpe }
    }

    pub fn name(&self) -> &'static str {
        self.kind.as_str()
    }

    pub fn count(&self, text: &str) -> u32 {
        self.bpe.count_ordinary(text) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_the_models_own() {
        // Reference counts from OpenAI's tiktoken.
        let o200k = Tokenizer::load(TokenizerKind::O200k);
        assert_eq!(o200k.count("hello world"), 2);
        assert_eq!(o200k.count(""), 0);
        let cl100k = Tokenizer::load(TokenizerKind::Cl100k);
        assert_eq!(cl100k.count("tiktoken is great!"), 6);
        assert_eq!(cl100k.name(), "cl100k_base");
    }
}
