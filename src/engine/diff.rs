//! What a persona edit changes, before it goes live: [`Engine::diff`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use super::{Engine, EngineError, EngineErrorKind, Format, ResolveInput};
use crate::db;
use protege_core::AppConfig;

/// The messages [`Engine::diff`] resolves for each persona.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffOptions {
    /// Only this persona (default: every persona of either side).
    pub persona: Option<String>,
    /// The most recent inbound messages addressed to the persona, at most this many
    /// (default 20).
    pub messages: u64,
    /// Only messages sent at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// The time of every run, on both sides (default: the time of the call), so that
    /// templates reading `now` compare alike.
    pub now: Option<DateTime<Utc>>,
}

impl Default for DiffOptions {
    fn default() -> Self {
        Self {
            persona: None,
            messages: 20,
            since: None,
            now: None,
        }
    }
}

/// How a persona compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DiffStatus {
    /// Every request is the same.
    Unchanged,
    /// At least one request changes.
    Changed,
    /// Only the candidate folder has the persona.
    Added,
    /// Only the live folder has the persona.
    Removed,
    /// The candidate folder's file of the persona is invalid.
    Invalid,
}

/// What a persona edit changes: the requests of the persona's recent messages, with the
/// live personas and with the candidate ones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PersonaDiff {
    /// The persona's name.
    pub persona: String,
    /// How it compares.
    pub status: DiffStatus,
    /// The messages resolved.
    pub requests: usize,
    /// The requests that differ (all of them when the persona is added, removed or
    /// invalid).
    pub changed: usize,
    /// The requests' tokens with the live personas (as `--explain` counts them).
    pub tokens_before: usize,
    /// The requests' tokens with the candidate personas.
    pub tokens_after: usize,
    /// The problems of the candidate file, when it is invalid (one line each).
    pub diagnostics: Vec<String>,
    /// The first request that differs: its trigger and a unified diff of its messages.
    pub first_change: Option<FirstChange>,
}

/// The first request of a persona that differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FirstChange {
    /// The Message-ID of the inbound message resolved.
    pub message_id: String,
    /// A unified diff of the request's JSON, one hunk per message (`@@ message 3 (user)
    /// @@`) and per other key that differs (`@@ tools @@`); a request that failed on a
    /// side shows its error there.
    pub diff: String,
}

/// One side of a request: the canonical body, or the error that stopped it.
type Side = Result<(Value, usize), String>;

impl Engine {
    /// Resolves, per persona, the most recent inbound messages addressed to it (one of its
    /// `addresses` in the To or Cc; see [`DiffOptions`]) with this engine's personas and
    /// with `candidate`'s (typically the same database and another persona folder), and
    /// reports what changes, persona by persona in name order. A persona that fails to
    /// load in `candidate` is [`DiffStatus::Invalid`] with its diagnostics; the messages
    /// are chosen by the addresses of the live persona, else of the candidate.
    pub async fn diff(
        &self,
        candidate: &Engine,
        options: &DiffOptions,
    ) -> Result<Vec<PersonaDiff>, EngineError> {
        self.personas_ready()?;
        candidate.personas_ready()?;
        let now = options.now.unwrap_or_else(Utc::now);
        let invalid: Vec<(String, String)> = candidate
            .diagnostics()
            .into_iter()
            .filter_map(|d| {
                let name = d.path().file_stem()?.to_string_lossy().into_owned();
                Some((name, d.headline()))
            })
            .collect();
        let mut names: BTreeSet<String> = self
            .personas()
            .iter()
            .chain(candidate.personas().iter())
            .map(|p| p.name().to_owned())
            .collect();
        names.extend(invalid.iter().map(|(name, _)| name.clone()));
        if let Some(only) = &options.persona {
            if !names.contains(only) {
                return Err(self.unknown_persona(only));
            }
            names.retain(|n| n == only);
        }
        let conn = self.db().await?;
        let mut out = Vec::new();
        for name in names {
            let live = self.persona(&name);
            let new = candidate.persona(&name);
            let diagnostics: Vec<String> = invalid
                .iter()
                .filter(|(n, _)| *n == name)
                .map(|(_, line)| line.clone())
                .collect();
            let status = match (&live, &new) {
                _ if !diagnostics.is_empty() => DiffStatus::Invalid,
                (Some(_), None) => DiffStatus::Removed,
                (None, _) => DiffStatus::Added,
                (Some(_), Some(_)) => DiffStatus::Unchanged,
            };
            let addresses = live
                .as_ref()
                .or(new.as_ref())
                .map(|p| p.info.addresses.clone())
                .unwrap_or_default();
            let triggers =
                db::recent_inbound_to(conn, &addresses, options.since, options.messages).await?;
            let mut diff = PersonaDiff {
                persona: name.clone(),
                status,
                requests: triggers.len(),
                changed: 0,
                tokens_before: 0,
                tokens_after: 0,
                diagnostics,
                first_change: None,
            };
            for message_id in triggers {
                let before = match &live {
                    Some(_) => side(self, &name, &message_id, now).await,
                    None => Err(format!("persona `{name}` is not live")),
                };
                let after = match (&new, diff.status) {
                    (_, DiffStatus::Invalid) => Err(format!("persona `{name}` is invalid")),
                    (Some(_), _) => side(candidate, &name, &message_id, now).await,
                    (None, _) => Err(format!("persona `{name}` is removed")),
                };
                diff.tokens_before += before.as_ref().map_or(0, |(_, t)| *t);
                diff.tokens_after += after.as_ref().map_or(0, |(_, t)| *t);
                let same = match (&before, &after) {
                    (Ok((a, _)), Ok((b, _))) => a == b,
                    (Err(a), Err(b)) => a == b,
                    _ => false,
                };
                if same {
                    continue;
                }
                diff.changed += 1;
                if diff.status == DiffStatus::Unchanged {
                    diff.status = DiffStatus::Changed;
                }
                if diff.first_change.is_none() {
                    diff.first_change = Some(FirstChange {
                        diff: unified(&name, &message_id, &before, &after),
                        message_id,
                    });
                }
            }
            out.push(diff);
        }
        Ok(out)
    }
}

/// The most persona files [`Engine::diff_files`] takes.
pub const MAX_DIFF_FILES: usize = 256;

impl Engine {
    /// This engine with the personas of `dir` instead of its own folder (not watched):
    /// the same root, resolvers, settings, database (its connection shared once made) and
    /// fence key; for [`Engine::diff`].
    pub async fn with_personas(&self, dir: impl Into<PathBuf>) -> Result<Engine, EngineError> {
        self.with_personas_config(dir, self.inner.config.clone())
            .await
    }

    /// [`Engine::with_personas`] with the settings `config`.
    async fn with_personas_config(
        &self,
        dir: impl Into<PathBuf>,
        config: AppConfig,
    ) -> Result<Engine, EngineError> {
        let inner = &self.inner;
        let mut builder = Engine::builder()
            .root(self.root())
            .personas(dir)
            .registry(inner.set.registry().clone())
            .config(config)
            .database(inner.database.clone())
            .connect_timeout(inner.connect_timeout)
            .trusted_authserv_ids(inner.trusted_authserv_ids.iter().cloned());
        if let Some(conn) = inner.db.get() {
            builder = builder.connection(conn.clone());
        }
        let engine = builder.build().await?;
        if let Some(key) = inner.fence_key.get() {
            // The new engine has read no key yet: it takes this one.
            let _ = engine.inner.fence_key.set(key.clone());
        }
        Ok(engine)
    }

    /// [`Engine::diff`] against the persona files `files` (file name → TOML text), as
    /// `POST /v1/diff` takes them: the candidate folder holds exactly these files. A name
    /// is `NAME.toml`, NAME of ASCII letters, digits, `-` and `_` (at most 64); at most
    /// [`MAX_DIFF_FILES`] files. The diagnostics name the files without a folder. The files
    /// come from a request, so every path they read, a literal one too, is confined to the
    /// app root ([`AppConfig::confine_paths`]).
    pub async fn diff_files(
        &self,
        files: &BTreeMap<String, String>,
        options: &DiffOptions,
    ) -> Result<Vec<PersonaDiff>, EngineError> {
        let invalid = |message: String| EngineError::new(EngineErrorKind::InvalidInput, message);
        if files.len() > MAX_DIFF_FILES {
            return Err(invalid(format!(
                "{} persona files, over the limit of {MAX_DIFF_FILES}",
                files.len()
            )));
        }
        for name in files.keys() {
            let stem = name.strip_suffix(".toml").unwrap_or("");
            let valid = (1..=64).contains(&stem.len())
                && stem
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !valid {
                return Err(invalid(format!(
                    "persona file name `{}` is not NAME.toml, NAME of 1 to 64 ASCII letters, digits, `-` and `_`",
                    name.escape_debug()
                )));
            }
        }
        let unavailable = |e: std::io::Error| {
            EngineError::new(
                EngineErrorKind::Unavailable,
                format!("cannot write the candidate personas to a temporary folder: {e}"),
            )
        };
        let dir = tempfile::tempdir().map_err(unavailable)?;
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).map_err(unavailable)?;
        }
        let candidate = self
            .with_personas_config(dir.path(), self.inner.config.clone().confine_paths(true))
            .await?;
        let mut diffs = self.diff(&candidate, options).await?;
        let prefix = format!("{}/", dir.path().display());
        for diff in &mut diffs {
            for line in &mut diff.diagnostics {
                *line = line.replace(&prefix, "");
            }
            if let Some(first) = &mut diff.first_change {
                first.diff = first.diff.replace(&prefix, "");
            }
        }
        Ok(diffs)
    }
}

/// The request of `message_id` for persona `name` on `engine`, in the canonical form,
/// with its tokens.
async fn side(engine: &Engine, name: &str, message_id: &str, now: DateTime<Utc>) -> Side {
    let input = ResolveInput::reply(name, message_id)
        .format(Format::Messages)
        .now(now)
        .explain(true);
    match engine.resolve(&input).await {
        Ok(out) => {
            let tokens = out.steps.iter().filter_map(|s| s.tokens).sum();
            Ok((out.body, tokens))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// A unified diff of two requests: one hunk per message that differs, then one per other
/// key of the body that differs; an error is shown as one line.
fn unified(name: &str, message_id: &str, before: &Side, after: &Side) -> String {
    let mut out = format!("--- live/{name} {message_id}\n+++ candidate/{name} {message_id}\n");
    let (a, b) = match (before, after) {
        (Ok((a, _)), Ok((b, _))) => (a, b),
        _ => {
            let text = |s: &Side| match s {
                Ok((body, _)) => pretty(body),
                Err(e) => format!("error: {e}\n"),
            };
            hunk(&mut out, "request", &text(before), &text(after));
            return out;
        }
    };
    let empty = Vec::new();
    let list = |v: &Value| v["messages"].as_array().unwrap_or(&empty).clone();
    let (old, new) = (list(a), list(b));
    for i in 0..old.len().max(new.len()) {
        let (x, y) = (old.get(i), new.get(i));
        if x == y {
            continue;
        }
        let role = y.or(x).and_then(|m| m["role"].as_str()).unwrap_or("?");
        hunk(
            &mut out,
            &format!("message {} ({role})", i + 1),
            &x.map(pretty).unwrap_or_default(),
            &y.map(pretty).unwrap_or_default(),
        );
    }
    let keys: BTreeSet<&String> = a
        .as_object()
        .into_iter()
        .chain(b.as_object())
        .flat_map(|o| o.keys())
        .filter(|k| k.as_str() != "messages")
        .collect();
    for key in keys {
        if a.get(key) != b.get(key) {
            hunk(
                &mut out,
                key,
                &a.get(key).map(pretty).unwrap_or_default(),
                &b.get(key).map(pretty).unwrap_or_default(),
            );
        }
    }
    out
}

/// A value as indented JSON with a final newline.
fn pretty(value: &Value) -> String {
    // A `Value` always serialises.
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

/// Appends `@@ TITLE @@` and every line of `old` and `new`, marked `-`, `+` or ` `.
fn hunk(out: &mut String, title: &str, old: &str, new: &str) {
    let _ = writeln!(out, "@@ {title} @@");
    for change in TextDiff::from_lines(old, new).iter_all_changes() {
        let mark = match change.tag() {
            ChangeTag::Delete => '-',
            ChangeTag::Insert => '+',
            ChangeTag::Equal => ' ',
        };
        out.push(mark);
        out.push_str(change.value());
        if !change.value().ends_with('\n') {
            out.push('\n');
        }
    }
}
