//! The fixture format of `protege db import` and its import: parsed whole first,
//! with the JSON path of any problem, then written in one transaction.

use std::collections::{HashMap, HashSet};
use std::fmt;

use base64::Engine as _;
use chrono::{DateTime, Datelike as _, Utc};
use sea_orm::{
    ActiveValue::{NotSet, Set},
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbBackend, DbErr, EntityTrait, QueryFilter,
    QuerySelect, SqlErr,
    sea_query::OnConflict,
};
use serde_json::{Map, Value};

use super::entities::{attachment, email_thread, message, tool_use};
use crate::error::{Error, ErrorKind, Result};
use crate::mail::{Direction, one_line, without_nul};

/// The longest id (Message-ID, attachment id, run id, tool call id, tool name) a fixture
/// may hold, in characters: the width of the indexed columns.
const MAX_KEY_CHARS: usize = 512;

/// A parsed fixture: threads of messages with their attachments and tool uses.
#[derive(Debug, Clone, PartialEq)]
pub struct Fixture {
    /// The threads, in file order.
    pub threads: Vec<FixtureThread>,
}

/// A thread of a fixture.
#[derive(Debug, Clone, PartialEq)]
pub struct FixtureThread {
    /// The subject of the thread.
    pub subject: String,
    /// Its messages (at least one), in file order.
    pub messages: Vec<FixtureMessage>,
}

/// A message of a fixture.
#[derive(Debug, Clone, PartialEq)]
pub struct FixtureMessage {
    /// The RFC 5322 Message-ID, unique across the fixture and the database.
    pub message_id: String,
    /// Inbound or outbound.
    pub direction: Direction,
    /// The From header form.
    pub from: String,
    /// The To addresses in header form.
    pub to: Vec<String>,
    /// The Cc addresses in header form (default empty).
    pub cc: Vec<String>,
    /// The subject.
    pub subject: String,
    /// When it was sent, converted to UTC.
    pub sent_at: DateTime<Utc>,
    /// The plain-text body.
    pub text_body: Option<String>,
    /// The HTML body.
    pub html_body: Option<String>,
    /// The Message-ID it replies to.
    pub in_reply_to: Option<String>,
    /// The attachments, in order.
    pub attachments: Vec<FixtureAttachment>,
    /// The tool uses of the runs that answered this message.
    pub tool_uses: Vec<FixtureToolUse>,
}

/// An attachment of a fixture message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixtureAttachment {
    /// The stable attachment id (`id` in the file).
    pub id: String,
    /// The file name.
    pub filename: String,
    /// The MIME type.
    pub content_type: String,
    /// The size in bytes, as given.
    pub byte_size: i64,
    /// The decoded `data_base64`, when given.
    pub data: Option<Vec<u8>>,
}

/// A tool use of a fixture message.
#[derive(Debug, Clone, PartialEq)]
pub struct FixtureToolUse {
    /// The run that made the call.
    pub run_id: String,
    /// The round within the run.
    pub turn_index: i32,
    /// The position within the round.
    pub position: i32,
    /// The call id.
    pub tool_call_id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments (a JSON object).
    pub input: Map<String, Value>,
    /// The result text, when recorded.
    pub result: Option<String>,
}

/// What an import did: shown as `imported 2 threads, 5 messages (0 already present)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportSummary {
    /// Threads that received at least one new message (new or reused).
    pub threads: usize,
    /// Messages inserted.
    pub messages: usize,
    /// Messages skipped because their Message-ID was already stored.
    pub already_present: usize,
    /// Attachments inserted.
    pub attachments: usize,
    /// Tool uses inserted.
    pub tool_uses: usize,
}

impl fmt::Display for ImportSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "imported {} {}, {} {} ({} already present)",
            self.threads,
            if self.threads == 1 {
                "thread"
            } else {
                "threads"
            },
            self.messages,
            if self.messages == 1 {
                "message"
            } else {
                "messages"
            },
            self.already_present
        )
    }
}

fn fixture_error(path: &str, what: impl fmt::Display) -> Error {
    Error::new(ErrorKind::Fixture, format!("{path}: {what}"))
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// An object being read, with its JSON path; rejects unknown fields up front.
struct Obj<'a> {
    path: String,
    map: &'a Map<String, Value>,
}

impl<'a> Obj<'a> {
    fn new(path: String, value: &'a Value, fields: &[&str]) -> Result<Self> {
        let Value::Object(map) = value else {
            return Err(fixture_error(
                &path,
                format_args!("expected an object, found {}", kind_of(value)),
            ));
        };
        for key in map.keys() {
            if !fields.contains(&key.as_str()) {
                let expected: Vec<String> = fields.iter().map(|f| format!("`{f}`")).collect();
                return Err(fixture_error(
                    &join(&path, key),
                    format_args!(
                        "unknown field `{key}`, expected one of {}",
                        expected.join(", ")
                    ),
                ));
            }
        }
        Ok(Self { path, map })
    }

    fn field_path(&self, key: &str) -> String {
        join(&self.path, key)
    }

    /// The value of `key`, treating `null` as absent.
    fn optional(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn required(&self, key: &str) -> Result<&'a Value> {
        match self.map.get(key) {
            Some(v) => Ok(v),
            None => Err(fixture_error(
                &self.field_path(key),
                "missing required field",
            )),
        }
    }

    fn string(&self, key: &str) -> Result<String> {
        as_string(self.required(key)?, &self.field_path(key))
    }

    fn key_string(&self, key: &str) -> Result<String> {
        let path = self.field_path(key);
        let s = self.string(key)?;
        if s.trim().is_empty() {
            return Err(fixture_error(&path, "must not be empty"));
        }
        if s.chars().count() > MAX_KEY_CHARS {
            return Err(fixture_error(
                &path,
                format_args!("longer than {MAX_KEY_CHARS} characters"),
            ));
        }
        Ok(s)
    }

    fn opt_string(&self, key: &str) -> Result<Option<String>> {
        self.optional(key)
            .map(|v| as_string(v, &self.field_path(key)))
            .transpose()
    }

    fn strings(&self, value: Option<&Value>, key: &str) -> Result<Vec<String>> {
        let path = self.field_path(key);
        match value {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| as_string(v, &format!("{path}[{i}]")))
                .collect(),
            Some(other) => Err(fixture_error(
                &path,
                format_args!("expected an array of strings, found {}", kind_of(other)),
            )),
        }
    }

    fn array(&self, value: Option<&'a Value>, key: &str) -> Result<&'a [Value]> {
        match value {
            None => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(other) => Err(fixture_error(
                &self.field_path(key),
                format_args!("expected an array, found {}", kind_of(other)),
            )),
        }
    }

    fn int(&self, key: &str, max: i64) -> Result<i64> {
        let path = self.field_path(key);
        let v = self.required(key)?;
        match v.as_i64() {
            Some(n) if (0..=max).contains(&n) => Ok(n),
            _ => Err(fixture_error(
                &path,
                format_args!(
                    "expected an integer from 0 to {max}, found {}",
                    match v {
                        Value::Number(n) => format!("`{n}`"),
                        other => kind_of(other).to_owned(),
                    }
                ),
            )),
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn as_string(v: &Value, path: &str) -> Result<String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        other => Err(fixture_error(
            path,
            format_args!("expected a string, found {}", kind_of(other)),
        )),
    }
}

/// Parses and checks a fixture without touching a database.
///
/// Every problem is an error of kind [`Fixture`](ErrorKind::Fixture) naming its JSON path,
/// e.g. `threads[0].messages[1].sent_at: invalid RFC 3339 timestamp `last tuesday``.
pub fn parse_fixture(text: &str) -> Result<Fixture> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let root: Value = serde_json::from_str(text).map_err(|e| {
        Error::new(
            ErrorKind::Fixture,
            format!(
                "invalid JSON at line {} column {}: {}",
                e.line(),
                e.column(),
                strip_position(&e.to_string())
            ),
        )
    })?;
    let root = Obj::new(String::new(), &root, &["threads"])
        .map_err(|_| fixture_error("(root)", "expected an object with the field `threads`"))?;
    let threads_value = root.required("threads")?;
    let threads = root.array(Some(threads_value), "threads")?;
    let mut seen_messages: HashMap<String, String> = HashMap::new();
    let mut seen_attachments: HashMap<String, String> = HashMap::new();
    let mut out = Vec::with_capacity(threads.len());
    for (t, thread) in threads.iter().enumerate() {
        let tp = format!("threads[{t}]");
        let thread = Obj::new(tp.clone(), thread, &["subject", "messages"])?;
        let subject = thread.string("subject")?;
        let messages = thread.array(Some(thread.required("messages")?), "messages")?;
        if messages.is_empty() {
            return Err(fixture_error(
                &thread.field_path("messages"),
                "a thread needs at least one message",
            ));
        }
        let mut parsed = Vec::with_capacity(messages.len());
        let mut seen_calls: HashMap<String, String> = HashMap::new();
        for (m, value) in messages.iter().enumerate() {
            let message = parse_message(format!("{tp}.messages[{m}]"), value)?;
            let id_path = format!("{tp}.messages[{m}].message_id");
            if let Some(first) = seen_messages.insert(message.message_id.clone(), id_path.clone()) {
                return Err(fixture_error(
                    &id_path,
                    format_args!(
                        "duplicate message id `{}` (first at {first})",
                        message.message_id
                    ),
                ));
            }
            for (a, att) in message.attachments.iter().enumerate() {
                let path = format!("{tp}.messages[{m}].attachments[{a}].id");
                if let Some(first) = seen_attachments.insert(att.id.clone(), path.clone()) {
                    return Err(fixture_error(
                        &path,
                        format_args!("duplicate attachment id `{}` (first at {first})", att.id),
                    ));
                }
            }
            for (u, use_) in message.tool_uses.iter().enumerate() {
                let path = format!("{tp}.messages[{m}].tool_uses[{u}].tool_call_id");
                if let Some(first) = seen_calls.insert(use_.tool_call_id.clone(), path.clone()) {
                    return Err(fixture_error(
                        &path,
                        format_args!(
                            "duplicate tool call id `{}` in this thread (first at {first})",
                            use_.tool_call_id
                        ),
                    ));
                }
            }
            parsed.push(message);
        }
        out.push(FixtureThread {
            subject,
            messages: parsed,
        });
    }
    Ok(Fixture { threads: out })
}

fn strip_position(text: &str) -> &str {
    match text.rfind(" at line ") {
        Some(i) => &text[..i],
        None => text,
    }
}

fn parse_message(path: String, value: &Value) -> Result<FixtureMessage> {
    let m = Obj::new(
        path,
        value,
        &[
            "message_id",
            "direction",
            "from",
            "to",
            "cc",
            "subject",
            "sent_at",
            "text_body",
            "html_body",
            "in_reply_to",
            "attachments",
            "tool_uses",
        ],
    )?;
    let message_id = m.key_string("message_id")?;
    let direction_text = m.string("direction")?;
    let direction = Direction::parse(&direction_text).ok_or_else(|| {
        fixture_error(
            &m.field_path("direction"),
            format_args!("unknown direction `{direction_text}`, expected `inbound` or `outbound`"),
        )
    })?;
    let from = m.string("from")?;
    let to = m.strings(Some(m.required("to")?), "to")?;
    let cc = m.strings(m.optional("cc"), "cc")?;
    let subject = m.string("subject")?;
    let sent_text = m.string("sent_at")?;
    let sent_at = DateTime::parse_from_rfc3339(&sent_text)
        .map_err(|_| {
            fixture_error(
                &m.field_path("sent_at"),
                format_args!("invalid RFC 3339 timestamp `{sent_text}`"),
            )
        })?
        .with_timezone(&Utc);
    if !(1970..=9999).contains(&sent_at.year()) {
        return Err(fixture_error(
            &m.field_path("sent_at"),
            format_args!("timestamp `{sent_text}` is outside the years 1970 to 9999 (UTC)"),
        ));
    }
    let text_body = m.opt_string("text_body")?;
    let html_body = m.opt_string("html_body")?;
    let in_reply_to = m.opt_string("in_reply_to")?;
    let attachments = m
        .array(m.optional("attachments"), "attachments")?
        .iter()
        .enumerate()
        .map(|(i, v)| parse_attachment(format!("{}[{i}]", m.field_path("attachments")), v))
        .collect::<Result<Vec<_>>>()?;
    let tool_uses = m
        .array(m.optional("tool_uses"), "tool_uses")?
        .iter()
        .enumerate()
        .map(|(i, v)| parse_tool_use(format!("{}[{i}]", m.field_path("tool_uses")), v))
        .collect::<Result<Vec<_>>>()?;
    Ok(FixtureMessage {
        message_id,
        direction,
        from,
        to,
        cc,
        subject,
        sent_at,
        text_body,
        html_body,
        in_reply_to,
        attachments,
        tool_uses,
    })
}

fn parse_attachment(path: String, value: &Value) -> Result<FixtureAttachment> {
    let a = Obj::new(
        path,
        value,
        &["id", "filename", "content_type", "byte_size", "data_base64"],
    )?;
    let data = match a.opt_string("data_base64")? {
        None => None,
        Some(text) => Some(decode_base64(&text).map_err(|e| {
            fixture_error(
                &a.field_path("data_base64"),
                format_args!("invalid base64: {e}"),
            )
        })?),
    };
    Ok(FixtureAttachment {
        id: a.key_string("id")?,
        filename: a.string("filename")?,
        content_type: a.string("content_type")?,
        byte_size: a.int("byte_size", i64::MAX)?,
        data,
    })
}

fn parse_tool_use(path: String, value: &Value) -> Result<FixtureToolUse> {
    let u = Obj::new(
        path,
        value,
        &[
            "run_id",
            "turn_index",
            "position",
            "tool_call_id",
            "name",
            "input",
            "result",
        ],
    )?;
    let input = match u.required("input")? {
        Value::Object(map) => map.clone(),
        other => {
            return Err(fixture_error(
                &u.field_path("input"),
                format_args!("expected a JSON object, found {}", kind_of(other)),
            ));
        }
    };
    Ok(FixtureToolUse {
        run_id: u.key_string("run_id")?,
        turn_index: u.int("turn_index", i32::MAX.into())? as i32,
        position: u.int("position", i32::MAX.into())? as i32,
        tool_call_id: u.key_string("tool_call_id")?,
        name: tool_name(&u)?,
        input,
        result: u.opt_string("result")?,
    })
}

/// Decodes standard base64 that may hold line breaks and spaces anywhere (MIME style);
/// an error names the offending character by its offset in `text`.
fn decode_base64(text: &str) -> std::result::Result<Vec<u8>, String> {
    use base64::DecodeError;
    let kept: Vec<(usize, u8)> = text
        .bytes()
        .enumerate()
        .filter(|(_, b)| !b.is_ascii_whitespace())
        .collect();
    let bytes: Vec<u8> = kept.iter().map(|&(_, b)| b).collect();
    base64::engine::general_purpose::STANDARD
        .decode(&bytes)
        .map_err(|e| match e {
            DecodeError::InvalidByte(i, b) | DecodeError::InvalidLastSymbol(i, b) => {
                let shown = if b.is_ascii_graphic() {
                    format!("`{}`", char::from(b))
                } else {
                    format!("byte 0x{b:02x}")
                };
                let offset = kept.get(i).map_or(i, |&(at, _)| at);
                format!("unexpected character {shown} at offset {offset}")
            }
            DecodeError::InvalidLength(n) => format!(
                "{n} base64 characters (spaces and line breaks aside) do not make whole 4-character groups"
            ),
            DecodeError::InvalidPadding => "invalid `=` padding".to_owned(),
        })
}

/// The `name` of a tool use: `^[a-zA-Z0-9_-]{1,64}$`, what both providers accept.
fn tool_name(u: &Obj<'_>) -> Result<String> {
    let name = u.string("name")?;
    let valid = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !valid {
        return Err(fixture_error(
            &u.field_path("name"),
            format_args!(
                "invalid tool name `{name}`: expected 1 to 64 characters from `a-z`, `A-Z`, `0-9`, `_` and `-`"
            ),
        ));
    }
    Ok(name)
}

/// Parses `text` with [`parse_fixture`] and imports it with [`import_fixture`].
pub async fn import_fixture_str(db: &DatabaseConnection, text: &str) -> Result<ImportSummary> {
    let fixture = parse_fixture(text)?;
    import_fixture(db, &fixture).await
}

/// The most values bound in one `IN (...)` list, well under every backend's limit.
/// How many values one `IN (...)` list holds at most.
pub(crate) const IN_CHUNK: usize = 500;

/// The thread of each of `message_ids` that is already stored, by Message-ID.
pub(crate) async fn stored_threads<C: ConnectionTrait>(
    db: &C,
    message_ids: &[&str],
) -> Result<HashMap<String, i64>> {
    let mut found = HashMap::new();
    for chunk in message_ids.chunks(IN_CHUNK) {
        let rows: Vec<(String, i64)> = message::Entity::find()
            .select_only()
            .column(message::Column::MessageId)
            .column(message::Column::EmailThreadId)
            .filter(message::Column::MessageId.is_in(chunk.iter().copied()))
            .into_tuple()
            .all(db)
            .await?;
        found.extend(rows);
    }
    Ok(found)
}

/// Imports `fixture` in one transaction: a message whose Message-ID is already stored is
/// skipped with its attachments and tool uses (so a second import changes nothing), and
/// a thread whose messages are already stored receives its new messages. On any error
/// nothing is written.
///
/// Imports into one database run one at a time (under a lock, see [`migrate`](super::migrate)),
/// so concurrent imports of overlapping fixtures all succeed and store each message once.
pub async fn import_fixture(db: &DatabaseConnection, fixture: &Fixture) -> Result<ImportSummary> {
    let txn = super::lock::begin_import(db).await?;
    match import_in(&txn, fixture).await {
        Ok(summary) => {
            txn.commit().await?;
            Ok(summary)
        }
        Err(e) => {
            txn.rollback().await.ok();
            Err(e)
        }
    }
}

/// Reads, checks and imports the fixture file at `path`, with errors that say whose fault
/// they are: `cannot read fixture `PATH`: ...` and `fixture `PATH`: JSON.PATH: ...` for the
/// file (kind [`Fixture`](ErrorKind::Fixture) or [`Io`](ErrorKind::Io)), and
/// `database error while importing `PATH`: REASON` when the database fails (kind
/// [`Database`](ErrorKind::Database)); nothing is written unless all of it is.
pub async fn import_fixture_file(
    db: &DatabaseConnection,
    path: &std::path::Path,
) -> Result<ImportSummary> {
    let shown = path.display();
    let bytes = std::fs::read(path).map_err(|e| {
        Error::new(ErrorKind::Io, format!("cannot read fixture `{shown}`: {e}")).with_source(e)
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        Error::new(
            ErrorKind::Fixture,
            format!(
                "fixture `{shown}`: not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })?;
    let fixture = parse_fixture(&text)
        .map_err(|e| Error::new(ErrorKind::Fixture, format!("fixture `{shown}`: {e}")))?;
    import_fixture(db, &fixture).await.map_err(|e| {
        if e.kind() == ErrorKind::Database {
            let reason = match std::error::Error::source(&e)
                .and_then(|s| s.downcast_ref::<sea_orm::DbErr>())
            {
                Some(db_err) => super::db_reason(db_err),
                None => e.to_string(),
            };
            Error::new(
                ErrorKind::Database,
                format!("database error while importing `{shown}`: {reason}"),
            )
            .with_source(e)
        } else {
            Error::new(e.kind(), format!("fixture `{shown}`: {e}"))
        }
    })
}

async fn import_in<C: ConnectionTrait>(db: &C, fixture: &Fixture) -> Result<ImportSummary> {
    // Which messages exist already, and in which thread.
    let all_ids: Vec<&str> = fixture
        .threads
        .iter()
        .flat_map(|t| t.messages.iter().map(|m| m.message_id.as_str()))
        .collect();
    let existing = stored_threads(db, &all_ids).await?;

    // Attachment ids of new messages must not be stored already.
    let mut new_attachments: Vec<(&str, String)> = Vec::new();
    for (t, thread) in fixture.threads.iter().enumerate() {
        for (m, msg) in thread.messages.iter().enumerate() {
            if existing.contains_key(&msg.message_id) {
                continue;
            }
            for (a, att) in msg.attachments.iter().enumerate() {
                new_attachments.push((
                    att.id.as_str(),
                    format!("threads[{t}].messages[{m}].attachments[{a}].id"),
                ));
            }
        }
    }
    let mut taken: HashSet<String> = HashSet::new();
    for chunk in new_attachments.chunks(IN_CHUNK) {
        let rows: Vec<String> = attachment::Entity::find()
            .select_only()
            .column(attachment::Column::AttachmentId)
            .filter(attachment::Column::AttachmentId.is_in(chunk.iter().map(|(id, _)| *id)))
            .into_tuple()
            .all(db)
            .await?;
        taken.extend(rows);
    }
    if let Some((id, path)) = new_attachments.iter().find(|(id, _)| taken.contains(*id)) {
        return Err(fixture_error(
            path,
            format_args!("attachment id `{id}` is already stored with another message"),
        ));
    }

    let mut summary = ImportSummary::default();
    for thread in &fixture.threads {
        let reused = thread
            .messages
            .iter()
            .find_map(|m| existing.get(&m.message_id).copied());
        let new: Vec<&FixtureMessage> = thread
            .messages
            .iter()
            .filter(|m| !existing.contains_key(&m.message_id))
            .collect();
        summary.already_present += thread.messages.len() - new.len();
        if new.is_empty() {
            continue;
        }
        let (thread_id, created) = match reused {
            Some(id) => (id, false),
            None => {
                let created_at = thread
                    .messages
                    .iter()
                    .map(|m| m.sent_at)
                    .min()
                    .unwrap_or_else(Utc::now);
                (insert_thread(db, &thread.subject, created_at).await?, true)
            }
        };
        let before = summary.messages;
        for msg in new {
            insert_message(db, thread_id, msg, &mut summary).await?;
        }
        if summary.messages > before {
            summary.threads += 1;
        } else if created {
            // Every message was stored meanwhile by another writer: no empty thread.
            email_thread::Entity::delete_by_id(thread_id)
                .exec(db)
                .await?;
        }
    }
    Ok(summary)
}

/// The row of a new thread: its subject on one line.
pub(super) fn thread_row(subject: &str, created_at: DateTime<Utc>) -> email_thread::ActiveModel {
    email_thread::ActiveModel {
        id: NotSet,
        subject: Set(one_line(subject).into_owned()),
        created_at: Set(created_at),
    }
}

/// Inserts a thread row; returns its id.
pub(super) async fn insert_thread<C: ConnectionTrait>(
    db: &C,
    subject: &str,
    created_at: DateTime<Utc>,
) -> Result<i64> {
    Ok(
        email_thread::Entity::insert(thread_row(subject, created_at))
            .exec(db)
            .await?
            .last_insert_id,
    )
}

/// The row of `msg` in thread `thread_id`: header values on one line, NUL removed from
/// every text.
pub(super) fn message_row(thread_id: i64, msg: &FixtureMessage) -> message::ActiveModel {
    let line = |v: &str| one_line(v).into_owned();
    let text = |v: &str| without_nul(v).into_owned();
    let json = |list: &Vec<String>| {
        let list: Vec<String> = list.iter().map(|a| line(a)).collect();
        serde_json::to_string(&list).unwrap_or_else(|_| "[]".into())
    };
    message::ActiveModel {
        id: NotSet,
        email_thread_id: Set(thread_id),
        message_id: Set(text(&msg.message_id)),
        direction: Set(msg.direction.as_str().to_owned()),
        from_address: Set(line(&msg.from)),
        to_addresses: Set(json(&msg.to)),
        cc_addresses: Set(json(&msg.cc)),
        subject: Set(line(&msg.subject)),
        text_body: Set(msg.text_body.as_deref().map(text)),
        html_body: Set(msg.html_body.as_deref().map(text)),
        in_reply_to: Set(msg.in_reply_to.as_deref().map(text)),
        sent_at: Set(msg.sent_at),
    }
}

/// The row of attachment `att` of the message whose row id is `message_id`.
pub(super) fn attachment_row(message_id: i64, att: &FixtureAttachment) -> attachment::ActiveModel {
    attachment::ActiveModel {
        id: NotSet,
        message_id: Set(message_id),
        attachment_id: Set(without_nul(&att.id).into_owned()),
        filename: Set(one_line(&att.filename).into_owned()),
        content_type: Set(one_line(&att.content_type).into_owned()),
        byte_size: Set(att.byte_size),
        data: Set(att.data.clone()),
    }
}

/// Inserts a message of thread `thread_id` with its attachments and tool uses, one row at
/// a time, counting them in `summary`.
pub(super) async fn insert_message<C: ConnectionTrait>(
    db: &C,
    thread_id: i64,
    msg: &FixtureMessage,
    summary: &mut ImportSummary,
) -> Result<()> {
    let text = |v: &str| without_nul(v).into_owned();
    let inserted = insert_or_skip(db, message_row(thread_id, msg)).await?;
    let Some(id) = inserted else {
        summary.already_present += 1;
        return Ok(());
    };
    summary.messages += 1;
    // One row at a time keeps insertion order (the `id` order) equal to file order on
    // every backend.
    for att in &msg.attachments {
        attachment::Entity::insert(attachment_row(id, att))
            .exec(db)
            .await?;
        summary.attachments += 1;
    }
    for use_ in &msg.tool_uses {
        tool_use::Entity::insert(tool_use::ActiveModel {
            id: NotSet,
            message_id: Set(id),
            run_id: Set(text(&use_.run_id)),
            turn_index: Set(use_.turn_index),
            position: Set(use_.position),
            tool_call_id: Set(text(&use_.tool_call_id)),
            name: Set(text(&use_.name)),
            input: Set(Value::Object(use_.input.clone()).to_string()),
            result: Set(use_.result.as_deref().map(text)),
        })
        .exec(db)
        .await?;
        summary.tool_uses += 1;
    }
    Ok(())
}

/// Inserts a message row unless its Message-ID is stored already (by another writer since
/// it was looked up); returns the new row's id, or `None` when it was skipped.
async fn insert_or_skip<C: ConnectionTrait>(
    db: &C,
    row: message::ActiveModel,
) -> Result<Option<i64>> {
    let outcome = if db.get_database_backend() == DbBackend::MySql {
        // MySQL has no `ON CONFLICT DO NOTHING`, and `INSERT IGNORE` would also hide other
        // errors; a duplicate key rolls back only its own statement there.
        message::Entity::insert(row).exec(db).await
    } else {
        message::Entity::insert(row)
            .on_conflict(
                OnConflict::column(message::Column::MessageId)
                    .do_nothing()
                    .to_owned(),
            )
            .exec(db)
            .await
    };
    match outcome {
        Ok(result) => Ok(Some(result.last_insert_id)),
        Err(DbErr::RecordNotInserted) => Ok(None),
        Err(e) if matches!(e.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => Ok(None),
        Err(e) => Err(e.into()),
    }
}
