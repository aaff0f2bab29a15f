//! The payload: roles, content, messages, tools and requests, with their canonical JSON.

use serde::{Deserialize, Serialize};

use crate::cache::CacheHints;

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions to the model.
    System,
    /// A turn of the human side (an inbound email, a task).
    User,
    /// A turn of the model (an outbound email, a round of tool calls).
    Assistant,
    /// The result of one tool call.
    Tool,
}

impl Role {
    /// The lowercase name used in JSON, TOML and the macro.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    /// Parses the lowercase name; `None` for anything else.
    pub fn parse(name: &str) -> Option<Role> {
        match name {
            "system" => Some(Role::System),
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            "tool" => Some(Role::Tool),
            _ => None,
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One part of a multi-part content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Part {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, Base64-encoded.
    Image {
        /// The MIME type, e.g. `image/png`.
        media_type: String,
        /// The image bytes in Base64.
        data: String,
    },
    /// A document such as a PDF, Base64-encoded.
    Document {
        /// The file name shown to the model.
        filename: String,
        /// The MIME type, e.g. `application/pdf`.
        media_type: String,
        /// The document bytes in Base64.
        data: String,
    },
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part::Text { text: text.into() }
    }
}

/// The content of a message: a string or a list of parts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text (may be empty).
    Text(String),
    /// Several parts, in order.
    Parts(Vec<Part>),
}

impl Content {
    /// The content as parts: a string is one text part.
    pub fn parts(&self) -> Vec<Part> {
        match self {
            Content::Text(text) => vec![Part::text(text.clone())],
            Content::Parts(parts) => parts.clone(),
        }
    }

    /// The text of the content: the string, or the text parts joined by a blank line.
    pub fn text(&self) -> String {
        match self {
            Content::Text(text) => text.clone(),
            Content::Parts(parts) => {
                let texts: Vec<&str> = parts
                    .iter()
                    .filter_map(|p| match p {
                        Part::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                texts.join("\n\n")
            }
        }
    }

    /// The parts that are not text (images and documents), in order.
    pub fn media(&self) -> Vec<&Part> {
        match self {
            Content::Text(_) => Vec::new(),
            Content::Parts(parts) => parts
                .iter()
                .filter(|p| !matches!(p, Part::Text { .. }))
                .collect(),
        }
    }

    /// The content followed by `extra` parts (the same content when there are none).
    #[must_use = "returns the longer content"]
    pub fn and_parts(self, extra: Vec<Part>) -> Content {
        if extra.is_empty() {
            return self;
        }
        let mut parts = match self {
            Content::Text(text) if text.is_empty() => Vec::new(),
            Content::Text(text) => vec![Part::text(text)],
            Content::Parts(parts) => parts,
        };
        parts.extend(extra);
        Content::Parts(parts)
    }

    /// Whether the content holds no text and no parts.
    pub fn is_empty(&self) -> bool {
        match self {
            Content::Text(text) => text.is_empty(),
            Content::Parts(parts) => parts.is_empty(),
        }
    }
}

impl Default for Content {
    fn default() -> Self {
        Content::Text(String::new())
    }
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        Content::Text(text)
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Content::Text(text.to_owned())
    }
}

impl From<Vec<Part>> for Content {
    fn from(parts: Vec<Part>) -> Self {
        Content::Parts(parts)
    }
}

/// A call of a tool made by the model in an assistant message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The id a tool message answers with `tool_call_id`.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, a JSON object.
    pub input: serde_json::Value,
}

impl ToolCall {
    /// A tool call with its id, tool name and JSON input.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: serde_json::Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            input,
        }
    }
}

/// One chat message.
///
/// Build it with [`message`] and the setters rather than field by field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// For a tool message: the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// What is said.
    pub content: Content,
    /// For an assistant message: the tools it calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool message: whether the tool failed (sent as the `tool_result`'s `is_error`
    /// in Anthropic bodies, dropped from OpenAI bodies). Omitted from the JSON when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

/// Creates a message of `role` with `content`; add calls or a call id with the setters.
///
/// ```
/// use protege::{message, Role};
/// let m = message(Role::System, "You are helpful.");
/// assert_eq!(serde_json::to_string(&m).unwrap(), r#"{"role":"system","content":"You are helpful."}"#);
/// ```
pub fn message(role: Role, content: impl Into<Content>) -> Message {
    Message {
        role,
        content: content.into(),
        tool_call_id: None,
        tool_calls: Vec::new(),
        is_error: false,
    }
}

impl Message {
    /// Sets the id of the call this tool message answers.
    #[must_use = "returns the changed message"]
    pub fn with_tool_call_id(mut self, id: impl Into<String>) -> Self {
        self.tool_call_id = Some(id.into());
        self
    }

    /// Adds a tool call to this assistant message.
    #[must_use = "returns the changed message"]
    pub fn with_tool_call(mut self, call: ToolCall) -> Self {
        self.tool_calls.push(call);
        self
    }

    /// Sets all the tool calls of this assistant message.
    #[must_use = "returns the changed message"]
    pub fn with_tool_calls(mut self, calls: Vec<ToolCall>) -> Self {
        self.tool_calls = calls;
        self
    }

    /// Marks this tool message as the result of a tool that failed.
    #[must_use = "returns the changed message"]
    pub fn with_is_error(mut self, is_error: bool) -> Self {
        self.is_error = is_error;
        self
    }

    /// The content as parts: a string is one text part.
    pub fn parts(&self) -> Vec<Part> {
        self.content.parts()
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolDef {
    /// The tool's name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// A JSON Schema object describing the input.
    pub input_schema: serde_json::Value,
}

/// What the model sees: messages in order and the tools it may call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// The messages, in order.
    pub messages: Vec<Message>,
    /// The tools (always serialised, possibly `[]`).
    #[serde(default)]
    pub tools: Vec<ToolDef>,
    /// Where the thread history ends and the conversation's cache key, set by
    /// [`Chain::request`](crate::Chain::request) for the wire formats' cache markers; not
    /// part of the JSON.
    #[serde(skip)]
    pub cache: CacheHints,
    /// Where each message came from (§15), one per message in order, set by
    /// [`Chain::request`](crate::Chain::request); empty for a request built otherwise. Not
    /// part of the JSON.
    #[serde(skip)]
    pub sources: Vec<crate::source::Source>,
}
