//! The token estimate shared by `ThreadHistory`'s `max_tokens` budget and `--explain`.

use crate::message::{Content, Message, Part};

/// Estimates the tokens of `text`: one token per four characters (Unicode scalar
/// values), rounded up. This is the common rule of thumb for English text with OpenAI's
/// and Anthropic's tokenizers; it needs no vocabulary and is the same for every model.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// Estimates the tokens of a message: its text, its tool calls' names and inputs, and a
/// fixed overhead of four tokens per message (role and framing). Images and documents
/// count their Base64 text.
pub fn estimate_message_tokens(m: &Message) -> usize {
    let mut total = 4;
    match &m.content {
        Content::Text(text) => total += estimate_tokens(text),
        Content::Parts(parts) => {
            for p in parts {
                total += match p {
                    Part::Text { text } => estimate_tokens(text),
                    Part::Image { data, .. } | Part::Document { data, .. } => estimate_tokens(data),
                };
            }
        }
    }
    for call in &m.tool_calls {
        total += estimate_tokens(&call.name) + estimate_tokens(&call.input.to_string());
    }
    total
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
