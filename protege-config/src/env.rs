//! The environment variables a persona names: `[model] api_key_env`, the `secret_env` of
//! its `http` tools and the `token_env` of its `mcp` servers (which matter to the agent, so
//! only a persona with an `[agent]` table is checked for them) and `[outbox]
//! password_env` (which matters to delivery: checked with an `[agent]` table or an
//! `[outbox] smtp` server). Each that is not set is a problem at the key that names it.
//!
//! Parsing never reads the environment: this check runs when the loader is asked to
//! ([`PersonaSetBuilder::check_env`](crate::PersonaSetBuilder::check_env)) or when a caller
//! runs it ([`Persona::env_diagnostics`]).

use std::ops::Range;

use toml::de::{DeTable, DeValue};

use crate::diagnostic::Diagnostic;
use crate::persona::Persona;
use crate::reader::{Sink, get};

/// How a check reads a variable: its value, `None` when it is not set.
pub type EnvLookup = dyn Fn(&str) -> Option<String> + Send + Sync;

/// The value of `name` in this process's environment (`None` when unset; a value that is
/// not UTF-8 is set, and read lossily).
pub fn process_env(name: &str) -> Option<String> {
    std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
}

impl Persona {
    /// The problems of the environment variables this persona names, read with `env`
    /// (such as [`process_env`]): one per variable that is not set or is empty, at the key
    /// that names it in `source`, the text the persona was parsed from. A defaulted
    /// `api_key_env` is reported at `[model] provider`, which chose it.
    ///
    /// ```
    /// use protege::config::{Persona, Registry, render};
    /// let source = "[model]\nprovider = \"anthropic\"\n\n[agent]\n";
    /// let persona = Persona::parse("p.toml".as_ref(), source, &Registry::new()).unwrap();
    /// let problems = persona.env_diagnostics(source, &|_| None);
    /// assert_eq!(
    ///     problems[0].headline(),
    ///     "p.toml:2:12: error: `[model] api_key_env` names `ANTHROPIC_API_KEY` (the default of `provider = \"anthropic\"`), which is not set"
    /// );
    /// ```
    pub fn env_diagnostics(&self, source: &str, env: &EnvLookup) -> Vec<Diagnostic> {
        let info = &self.info;
        let agent = info.agent.is_some();
        let delivers = info.outbox.smtp.is_some();
        if !agent && !delivers && info.inbox.is_none() {
            return Vec::new();
        }
        let (doc, _) = DeTable::parse_recoverable(source);
        let doc = doc.get_ref();
        let mut sink = Sink::new(&self.path, source);
        // `note` follows the variable's name, as in "(the default of …)".
        let mut check = |span: Range<usize>, what: &str, name: &str, note: &str| {
            let state = match env(name) {
                None => "which is not set",
                Some(value) if value.is_empty() => "which is empty",
                Some(_) => return,
            };
            sink.error(span, format!("{what} names `{name}`{note}, {state}"));
        };
        if agent {
            let model = table(doc, "model");
            if let Some(config) = &info.model
                && let Some(name) = config.api_key_env()
                && let Some(model) = model
            {
                match (get(model, "api_key_env"), get(model, "provider")) {
                    (Some(v), _) => check(v.span(), "`[model] api_key_env`", name, ""),
                    (None, Some(provider)) => check(
                        provider.span(),
                        "`[model] api_key_env`",
                        name,
                        &format!(
                            " (the default of `provider = \"{}\"`)",
                            provider.get_ref().as_str().unwrap_or_default()
                        ),
                    ),
                    (None, None) => {}
                }
            }
            for entry in array_tables(doc, "tools") {
                if let Some(http) = table(entry, "http")
                    && let Some(v) = get(http, "secret_env")
                    && let Some(name) = v.get_ref().as_str()
                {
                    let tool = get(entry, "name")
                        .and_then(|n| n.get_ref().as_str())
                        .unwrap_or_default();
                    check(
                        v.span(),
                        &format!("`http.secret_env` of the tool `{tool}`"),
                        name,
                        "",
                    );
                }
                if let Some(mcp) = table(entry, "mcp")
                    && let Some(v) = get(mcp, "token_env")
                    && let Some(name) = v.get_ref().as_str()
                {
                    check(v.span(), "`mcp.token_env`", name, "");
                }
            }
        }
        if let Some(outbox) = table(doc, "outbox")
            && let Some(v) = get(outbox, "password_env")
            && let Some(name) = v.get_ref().as_str()
        {
            check(v.span(), "`[outbox] password_env`", name, "");
        }
        if let Some(inbox) = table(doc, "inbox")
            && let Some(v) = get(inbox, "password_env")
            && let Some(name) = v.get_ref().as_str()
        {
            check(v.span(), "`[inbox] password_env`", name, "");
        }
        let mut diagnostics = sink.diagnostics;
        diagnostics.sort_by_key(|d| (d.line(), d.column()));
        diagnostics
    }
}

impl Persona {
    /// What `protege check` warns of in this persona, at the key in `source` (the text it was
    /// parsed from): settings that load but say something twice or in vain. So far: `[agent]
    /// reply = "draft"` with `approval = "always"` (they mean the same).
    ///
    /// ```
    /// use protege::config::{Persona, Registry};
    /// let source = "[agent]\nreply = \"draft\"\napproval = \"always\"\n";
    /// let persona = Persona::parse("p.toml".as_ref(), source, &Registry::new()).unwrap();
    /// let warnings = persona.warnings(source);
    /// assert_eq!((warnings[0].line(), warnings[0].column()), (3, 12));
    /// ```
    pub fn warnings(&self, source: &str) -> Vec<Diagnostic> {
        let Some(agent) = &self.info.agent else {
            return Vec::new();
        };
        let (doc, _) = DeTable::parse_recoverable(source);
        let doc = doc.get_ref();
        let mut out = Vec::new();
        if agent.reply == protege_core::ReplyMode::Draft
            && agent.approval == protege_core::Approval::Always
            && let Some(v) = table(doc, "agent").and_then(|t| get(t, "approval"))
        {
            out.push(Diagnostic::new(
                &self.path,
                source,
                v.span(),
                "`approval = \"always\"` says again what `reply = \"draft\"` says: every reply waits for approval; keep one",
            ));
        }
        out
    }
}

/// The table under `key`, when it is one.
fn table<'a, 'i>(doc: &'a DeTable<'i>, key: &str) -> Option<&'a DeTable<'i>> {
    match get(doc, key)?.get_ref() {
        DeValue::Table(t) => Some(t),
        _ => None,
    }
}

/// The tables of the array under `key`.
fn array_tables<'a, 'i>(doc: &'a DeTable<'i>, key: &str) -> Vec<&'a DeTable<'i>> {
    match get(doc, key).map(|v| v.get_ref()) {
        Some(DeValue::Array(items)) => items
            .iter()
            .filter_map(|item| match item.get_ref() {
                DeValue::Table(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}
