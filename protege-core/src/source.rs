//! Provenance (§15): where each message of a request came from.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

/// The origin of one message of a request: a stored message, a recorded tool use, a
/// database record, a file, a summary, or text a resolver made itself.
///
/// Serialised as an object tagged by `kind`: `{"kind":"message","message_id":…}`,
/// `{"kind":"tool_use","run_id":…,"tool_call_id":…}`, `{"kind":"record","table":…,"key":…}`,
/// `{"kind":"file","path":…,"sha256":…}`, `{"kind":"summary","id":…}`,
/// `{"kind":"text","resolver":…}`; a [`Source::Custom`] object as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A stored mail message, by its RFC 5322 Message-ID.
    Message {
        /// The Message-ID as stored (with its angle brackets).
        message_id: String,
    },
    /// A recorded tool call or its result. The assistant turn of a round with several
    /// calls names its first call.
    ToolUse {
        /// The run that recorded it (empty for tool uses imported from a fixture).
        run_id: String,
        /// The provider's call id.
        tool_call_id: String,
    },
    /// Rows of a table: `key` is the primary key of the row (an object of column → value
    /// when the key has several columns), an array of those when several rows were
    /// rendered, or the `where` values when the table has no primary key.
    Record {
        /// The table read.
        table: String,
        /// The rows' keys.
        key: Value,
    },
    /// A file read from the app root.
    File {
        /// Its path relative to the app root, with `/` separators.
        path: String,
        /// The SHA-256 of the bytes read, in lowercase hex.
        sha256: String,
    },
    /// A stored thread summary, by its row id.
    Summary {
        /// The `thread_summaries` row id.
        id: i64,
    },
    /// Text the resolver made (a template over the run's context, or a custom resolver
    /// that declares no source).
    Text {
        /// The resolver's name.
        resolver: String,
    },
    /// Stored messages and summaries taken together into one message (what
    /// `CorrespondentHistory` renders): `{"kind":"messages","message_ids":[…],"summary_ids":[…]}`.
    Messages {
        /// The Message-IDs, in the order they are rendered.
        message_ids: Vec<String>,
        /// The summaries' row ids, in the order they are rendered.
        summary_ids: Vec<i64>,
    },
    /// A kind a custom resolver declares: serialised as `{"kind": kind, …fields}`.
    Custom {
        /// The kind's name.
        kind: String,
        /// Its other fields (a `kind` among them is ignored).
        fields: Map<String, Value>,
    },
}

impl Source {
    /// The source of a stored message.
    pub fn message(message_id: impl Into<String>) -> Self {
        Source::Message {
            message_id: message_id.into(),
        }
    }

    /// The source of text made by `resolver`.
    pub fn text(resolver: impl Into<String>) -> Self {
        Source::Text {
            resolver: resolver.into(),
        }
    }

    /// The `kind` field.
    pub fn kind(&self) -> &str {
        match self {
            Source::Message { .. } => "message",
            Source::ToolUse { .. } => "tool_use",
            Source::Record { .. } => "record",
            Source::File { .. } => "file",
            Source::Summary { .. } => "summary",
            Source::Text { .. } => "text",
            Source::Messages { .. } => "messages",
            Source::Custom { kind, .. } => kind,
        }
    }

    /// The SHA-256 of `bytes` in lowercase hex (a [`Source::File`]'s `sha256`).
    pub fn sha256_hex(bytes: &[u8]) -> String {
        protege_mail::sha256_hex(bytes)
    }
}

impl Serialize for Source {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("kind", self.kind())?;
        match self {
            Source::Message { message_id } => map.serialize_entry("message_id", message_id)?,
            Source::ToolUse {
                run_id,
                tool_call_id,
            } => {
                map.serialize_entry("run_id", run_id)?;
                map.serialize_entry("tool_call_id", tool_call_id)?;
            }
            Source::Record { table, key } => {
                map.serialize_entry("table", table)?;
                map.serialize_entry("key", key)?;
            }
            Source::File { path, sha256 } => {
                map.serialize_entry("path", path)?;
                map.serialize_entry("sha256", sha256)?;
            }
            Source::Summary { id } => map.serialize_entry("id", id)?,
            Source::Text { resolver } => map.serialize_entry("resolver", resolver)?,
            Source::Messages {
                message_ids,
                summary_ids,
            } => {
                map.serialize_entry("message_ids", message_ids)?;
                map.serialize_entry("summary_ids", summary_ids)?;
            }
            Source::Custom { fields, .. } => {
                for (name, value) in fields.iter().filter(|(name, _)| *name != "kind") {
                    map.serialize_entry(name, value)?;
                }
            }
        }
        map.end()
    }
}

/// The sources of one resolver's messages in a few words, for the `--explain` table:
/// `file prompts/a.md`, `record orders`, `summary 3`, `4 messages, 2 tool uses`, `text`.
pub fn describe(sources: &[Source]) -> String {
    let mut parts: Vec<(String, usize)> = Vec::new();
    for source in sources {
        let label = match source {
            Source::Message { .. } => "message".to_owned(),
            Source::ToolUse { .. } => "tool use".to_owned(),
            Source::Record { table, .. } => format!("record {table}"),
            Source::File { path, .. } => format!("file {path}"),
            Source::Summary { id } => format!("summary {id}"),
            Source::Text { .. } => "text".to_owned(),
            Source::Messages {
                message_ids,
                summary_ids,
            } => format!(
                "{} stored, {} summaries",
                message_ids.len(),
                summary_ids.len()
            ),
            Source::Custom { kind, .. } => kind.clone(),
        };
        match parts.iter_mut().find(|(l, _)| *l == label) {
            Some((_, n)) => *n += 1,
            None => parts.push((label, 1)),
        }
    }
    let words: Vec<String> = parts
        .into_iter()
        .map(|(label, n)| match label.as_str() {
            "message" | "tool use" if n > 1 => format!("{n} {label}s"),
            "message" | "tool use" => format!("1 {label}"),
            _ => label,
        })
        .collect();
    words.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_serialises_tagged() {
        let all = vec![
            Source::message("<a@x>"),
            Source::ToolUse {
                run_id: "r1".into(),
                tool_call_id: "c1".into(),
            },
            Source::Record {
                table: "orders".into(),
                key: json!(7),
            },
            Source::File {
                path: "prompts/a.md".into(),
                sha256: Source::sha256_hex(b"abc"),
            },
            Source::Summary { id: 3 },
            Source::text("LoadText"),
            Source::Messages {
                message_ids: vec!["<b@x>".into()],
                summary_ids: vec![2],
            },
            Source::Custom {
                kind: "crm".into(),
                fields: json!({"kind": "ignored", "account": 12})
                    .as_object()
                    .cloned()
                    .unwrap(),
            },
        ];
        assert_eq!(
            serde_json::to_string(&all).unwrap(),
            r#"[{"kind":"message","message_id":"<a@x>"},{"kind":"tool_use","run_id":"r1","tool_call_id":"c1"},{"kind":"record","table":"orders","key":7},{"kind":"file","path":"prompts/a.md","sha256":"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},{"kind":"summary","id":3},{"kind":"text","resolver":"LoadText"},{"kind":"messages","message_ids":["<b@x>"],"summary_ids":[2]},{"kind":"crm","account":12}]"#
        );
    }

    #[test]
    fn describe_counts_messages_and_names_the_rest() {
        let sources = [
            Source::message("<a@x>"),
            Source::message("<b@x>"),
            Source::ToolUse {
                run_id: String::new(),
                tool_call_id: "c".into(),
            },
            Source::Summary { id: 4 },
        ];
        assert_eq!(describe(&sources), "2 messages, 1 tool use, summary 4");
        assert_eq!(describe(&[]), "");
    }
}
