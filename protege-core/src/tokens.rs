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
/// use protege::Tokenizer;
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
            Self::Cl100kBase => count_bpe(tiktoken_rs::cl100k_base_singleton(), text),
            Self::O200kBase => count_bpe(tiktoken_rs::o200k_base_singleton(), text),
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

/// The longest run of letters, of whitespace or of other characters that is counted as
/// it is. The BPE merges of one piece of text take time quadratic in its length, so a
/// longer run (a hostile body of a million letters) is counted in slices of this many
/// characters: exact for text without such a run (natural text in any language), within a
/// token or two per slice otherwise, and linear time either way.
const LONG_RUN: usize = 1024;

/// The class of a character for [`LONG_RUN`]: whitespace, letters, anything else.
fn class(c: char) -> u8 {
    if c.is_whitespace() {
        0
    } else if c.is_alphabetic() {
        1
    } else {
        2
    }
}

/// The tokens of `text` with an OpenAI encoding, special-token text counted as ordinary
/// text; runs over [`LONG_RUN`] characters of one class are counted slice by slice.
fn count_bpe(bpe: &tiktoken_rs::CoreBPE, text: &str) -> usize {
    let mut total = 0;
    // The text before this byte is counted.
    let mut counted = 0;
    for (start, end) in long_runs(text) {
        total += bpe.count_ordinary(&text[counted..start]);
        let run = &text[start..end];
        let cuts: Vec<usize> = run
            .char_indices()
            .step_by(LONG_RUN)
            .map(|(i, _)| i)
            .chain([run.len()])
            .collect();
        total += cuts
            .windows(2)
            .map(|w| bpe.count_ordinary(&run[w[0]..w[1]]))
            .sum::<usize>();
        counted = end;
    }
    total + bpe.count_ordinary(&text[counted..])
}

/// The byte ranges of the runs of one [`class`] longer than [`LONG_RUN`] characters.
fn long_runs(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    // The current run: its first byte, its length in characters and its class.
    let mut run = (0, 0, None);
    for (i, c) in text.char_indices() {
        let class = Some(class(c));
        if class != run.2 {
            if run.1 > LONG_RUN {
                out.push((run.0, i));
            }
            run = (i, 0, class);
        }
        run.1 += 1;
    }
    if run.1 > LONG_RUN {
        out.push((run.0, text.len()));
    }
    out
}

/// The tokens of a message's role and framing, on top of its text. OpenAI documents three
/// tokens of framing per chat message plus the role's own token; the estimate uses the
/// same figure.
const MESSAGE_OVERHEAD: usize = 4;

/// Estimates the tokens of `text`: one token per four characters (Unicode scalar
/// values), rounded up. This is the common rule of thumb for English text with OpenAI's
/// and Anthropic's tokenizers; it needs no vocabulary and is the same for every model.
pub(crate) fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// The characters (Unicode scalar values) of a message's text content.
pub(crate) fn message_chars(m: &Message) -> usize {
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
