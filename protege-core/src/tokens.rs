//! Token counts for `ThreadHistory`'s `max_tokens` budget and `--explain`: OpenAI's own
//! tokenizers for OpenAI models, a characters / 4 estimate for every other model.

use crate::message::{Content, Message, Part};

/// How a run counts tokens: the tokenizer of its model when that is an OpenAI model,
/// otherwise the characters / 4 estimate.
///
/// The OpenAI encodings are embedded in the binary (no download at run time) and each is
/// built once per process, on its first count; a run that asks for no token count never
/// builds one.
///
/// ```
/// use protege_core::tokens::Tokenizer;
/// assert_eq!(Tokenizer::for_model("gpt-4o"), Tokenizer::O200kBase);
/// assert_eq!(Tokenizer::for_model("gpt-4"), Tokenizer::Cl100kBase);
/// assert_eq!(Tokenizer::for_model("claude-sonnet-4-5"), Tokenizer::Estimate);
/// assert_eq!(Tokenizer::O200kBase.count("Hello, world!"), 4);
/// assert_eq!(Tokenizer::Estimate.count("Hello, world!"), 4);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Tokenizer {
    /// One token per four characters (Unicode scalar values), rounded up: the rule of
    /// thumb for models whose tokenizer is not public.
    #[default]
    Estimate,
    /// OpenAI's `cl100k_base` encoding: gpt-4 and gpt-3.5.
    Cl100kBase,
    /// OpenAI's `o200k_base` encoding: gpt-4o, gpt-4.1, gpt-5 and the o-series.
    O200kBase,
}

impl Tokenizer {
    /// The tokenizer of the model called `model`: `o200k_base` or `cl100k_base` for the
    /// OpenAI models that use them (dated and fine-tuned `ft:` names included), the
    /// estimate for any other name.
    pub fn for_model(model: &str) -> Self {
        use tiktoken_rs::tokenizer::{Tokenizer as Encoding, get_tokenizer};
        match get_tokenizer(model.trim()) {
            // o200k_harmony differs from o200k_base only in special tokens, which email
            // text never produces (counts treat them as ordinary text).
            Some(Encoding::O200kBase | Encoding::O200kHarmony) => Self::O200kBase,
            Some(Encoding::Cl100kBase) => Self::Cl100kBase,
            _ => Self::Estimate,
        }
    }

    /// The tokenizer of an optional model name: the estimate when there is none.
    pub fn for_optional_model(model: Option<&str>) -> Self {
        model.map_or(Self::Estimate, Self::for_model)
    }

    /// The tokenizer's name: `estimate`, `cl100k_base` or `o200k_base`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Estimate => "estimate",
            Self::Cl100kBase => "cl100k_base",
            Self::O200kBase => "o200k_base",
        }
    }

    /// The tokens of `text`. Special-token markers such as `<|endoftext|>` in the text
    /// count as the ordinary text they are.
    pub fn count(self, text: &str) -> usize {
        match self {
            Self::Estimate => estimate_tokens(text),
            Self::Cl100kBase => tiktoken_rs::cl100k_base_singleton().count_ordinary(text),
            Self::O200kBase => tiktoken_rs::o200k_base_singleton().count_ordinary(text),
        }
    }

    /// The tokens of a message: its text, its tool calls' names and inputs (compact JSON),
    /// and four tokens per message for the role and its framing. Images and documents
    /// count their Base64 text with the estimate, whatever the tokenizer: what a provider
    /// charges for them depends on its own processing (image size, extracted text).
    pub fn count_message(self, m: &Message) -> usize {
        let mut total = MESSAGE_OVERHEAD;
        match &m.content {
            Content::Text(text) => total += self.count(text),
            Content::Parts(parts) => {
                for p in parts {
                    total += match p {
                        Part::Text { text } => self.count(text),
                        Part::Image { data, .. } | Part::Document { data, .. } => {
                            estimate_tokens(data)
                        }
                    };
                }
            }
        }
        for call in &m.tool_calls {
            total += self.count(&call.name) + self.count(&call.input.to_string());
        }
        total
    }

    /// The sentence that explains the token column of `--explain`.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Estimate => {
                "tokens are estimated as characters / 4, rounded up, plus 4 per message"
            }
            Self::Cl100kBase => "tokens are counted with cl100k_base, plus 4 per message",
            Self::O200kBase => "tokens are counted with o200k_base, plus 4 per message",
        }
    }
}

/// The tokens of a message's role and framing, on top of its text. OpenAI documents three
/// tokens of framing per chat message plus the role's own token; the estimate uses the
/// same figure.
const MESSAGE_OVERHEAD: usize = 4;

/// Estimates the tokens of `text`: one token per four characters (Unicode scalar
/// values), rounded up. This is the common rule of thumb for English text with OpenAI's
/// and Anthropic's tokenizers; it needs no vocabulary and is the same for every model.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// Estimates the tokens of a message: [`Tokenizer::count_message`] with the estimate.
pub fn estimate_message_tokens(m: &Message) -> usize {
    Tokenizer::Estimate.count_message(m)
}

/// The characters (Unicode scalar values) of a message's text content.
pub fn message_chars(m: &Message) -> usize {
    match &m.content {
        Content::Text(text) => text.chars().count(),
        Content::Parts(parts) => parts
            .iter()
            .map(|p| match p {
                Part::Text { text } => text.chars().count(),
                Part::Image { data, .. } | Part::Document { data, .. } => data.len(),
            })
            .sum(),
    }
}
