//! Loading a persona, stage 3 of 4: the persona schema. [`Persona::parse`] runs the
//! stages in order: the TOML syntax ([`syntax`](crate::syntax)), then the top-level keys
//! and tables read here (`name`, `addresses`, `[model]`, `[limits]`, `[mail]`; `[agent]`
//! and `[outbox]` in [`agent`](crate::agent), `[[tools]]` in [`tools`](crate::tools),
//! `[[responsibilities]]` in [`responsibilities`](crate::responsibilities)), then the
//! resolver chains ([`chains`](crate::chains)). Stage 1, the file's text, is
//! [`source`](crate::source); a folder of personas is [`PersonaSet`](crate::PersonaSet).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use protege_core::{
    CacheMode, CacheTtl, DynChain, ModelConfig, OpenaiApi, PersonaInfo, PersonaLimits, PersonaMail,
    PriceOverrides, Provider,
};
use protege_schema::{
    CACHE_MODES, CACHE_TTLS, LIMITS, MAIL, MODEL, OPENAI_APIS, PERSONA, PRICES, PROVIDERS,
    key_names,
};
use toml::de::{DeTable, DeValue};

use crate::agent::{self, is_loopback};
use crate::chains::chain;
use crate::diagnostic::{Diagnostics, unknown_choice};
use crate::inbox;
use crate::reader::{self, Quoted, Sink, Value, get, unknown_keys};
use crate::registry::Registry;
use crate::responsibilities;
use crate::syntax;
use crate::templates::Templates;
use crate::tools;

/// A validated persona: what it is, and its two resolver chains, built once at load.
///
/// Shared as `Arc<Persona>` snapshots: a run keeps the snapshot it started with even when
/// the file is reloaded meanwhile.
#[derive(Debug)]
pub struct Persona {
    /// Name, instructions, addresses, vars, model, tools and responsibilities.
    pub info: Arc<PersonaInfo>,
    /// The chain of a reply run (`[[message_resolvers]]`).
    pub message_chain: DynChain,
    /// The chain of a scheduled run (`[[responsibility_resolvers]]`).
    pub responsibility_chain: DynChain,
    /// The file it was loaded from, as given to the loader.
    pub path: PathBuf,
}

impl Persona {
    /// The persona's unique name.
    pub fn name(&self) -> &str {
        &self.info.name
    }

    /// What the persona is, for [`Context::builder`](protege_core::Context::builder).
    pub fn info(&self) -> &Arc<PersonaInfo> {
        &self.info
    }

    /// The chain of a reply run.
    pub fn message_chain(&self) -> &DynChain {
        &self.message_chain
    }

    /// The chain of a scheduled run.
    pub fn responsibility_chain(&self) -> &DynChain {
        &self.responsibility_chain
    }

    /// The file it was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Parses and validates `source` (the contents of `path`), collecting every problem.
    /// `path` is only used for the default name (the file stem) and in diagnostics.
    pub fn parse(path: &Path, source: &str, registry: &Registry) -> Result<Persona, Diagnostics> {
        Self::parse_sharing(path, source, registry, &mut Templates::default())
    }

    /// [`parse`](Self::parse), sharing compiled templates with the other personas of a load.
    pub(crate) fn parse_sharing(
        path: &Path,
        source: &str,
        registry: &Registry,
        templates: &mut Templates,
    ) -> Result<Persona, Diagnostics> {
        let mut sink = Sink::new(path, source);
        let Some(doc) = syntax::parse(&mut sink) else {
            return Err(sink.diagnostics.into());
        };
        let persona = read(&mut sink, doc.get_ref(), registry, templates);
        match persona {
            Some(p) if sink.diagnostics.is_empty() => Ok(p),
            _ => {
                let mut diagnostics = sink.diagnostics;
                diagnostics.sort_by_key(|d| (d.line(), d.column()));
                Err(diagnostics.into())
            }
        }
    }

    /// The span of the `name` value in `source`, for duplicate-name diagnostics.
    pub(crate) fn name_span(source: &str) -> std::ops::Range<usize> {
        let (doc, _) = DeTable::parse_recoverable(source);
        get(doc.get_ref(), "name").map_or(0..0, |v| v.span())
    }
}

fn read(
    sink: &mut Sink<'_>,
    doc: &DeTable<'_>,
    registry: &Registry,
    templates: &mut Templates,
) -> Option<Persona> {
    unknown_keys(sink, doc, &key_names(PERSONA), "");
    let stem = sink
        .path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match get(doc, "name") {
        Some(v) => reader::string(sink, v, "`name`").and_then(|n| {
            if n.trim().is_empty() {
                sink.error(v.span(), "`name` must not be empty");
                None
            } else {
                Some(n)
            }
        }),
        None => Some(stem),
    };
    let instructions = get(doc, "instructions")
        .and_then(|v| reader::string(sink, v, "`instructions`"))
        .unwrap_or_default();
    let addresses = get(doc, "addresses")
        .map(|v| addresses(sink, v, "addresses"))
        .unwrap_or_default();
    let vars = match get(doc, "vars") {
        Some(v) => {
            reader::table(sink, v, "`vars`").and_then(|t| reader::table_to_json(sink, t, "`vars`"))
        }
        None => Some(serde_json::Map::new()),
    };
    // The keys templates may name as `persona.vars.X`; unknown when `[vars]` is invalid.
    let var_keys: Option<Vec<&str>> = vars
        .as_ref()
        .map(|v| v.keys().map(String::as_str).collect());
    let model = get(doc, "model").and_then(|v| model(sink, v));
    let limits = get(doc, "limits")
        .map(|v| limits(sink, v))
        .unwrap_or_default();
    let mail = get(doc, "mail").map(|v| mail(sink, v)).unwrap_or_default();
    // Before the tables that name tools.
    let tools = get(doc, "tools")
        .map(|v| tools::tools(sink, v))
        .unwrap_or_default();
    let agent = get(doc, "agent").and_then(|v| agent::agent(sink, v, &tools.names));
    let outbox = get(doc, "outbox")
        .map(|v| agent::outbox(sink, v))
        .unwrap_or_default();
    let inbox = get(doc, "inbox").and_then(|v| inbox::inbox(sink, v));
    let responsibilities = get(doc, "responsibilities")
        .map(|v| responsibilities::read(sink, v, &tools.names))
        .unwrap_or_default();
    let message_chain = chain(
        sink,
        doc,
        "message_resolvers",
        registry,
        var_keys.as_deref(),
        templates,
    );
    let responsibility_chain = chain(
        sink,
        doc,
        "responsibility_resolvers",
        registry,
        var_keys.as_deref(),
        templates,
    );
    let vars = vars.unwrap_or_default();
    let info = PersonaInfo {
        name: name?,
        instructions,
        addresses,
        vars,
        model,
        tools: tools.defs,
        tool_runners: tools.runners,
        responsibilities,
        limits,
        mail,
        agent,
        outbox,
        inbox,
    };
    Some(Persona {
        info: Arc::new(info),
        message_chain,
        responsibility_chain,
        path: sink.path.to_owned(),
    })
}

/// An array of bare email addresses under `key` (`addresses`, a responsibility's `to`),
/// each trimmed; every other value is reported.
pub(crate) fn addresses(sink: &mut Sink<'_>, value: &Value<'_>, key: &str) -> Vec<String> {
    let Some(items) = reader::array(sink, value, Quoted(key)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if let Some(a) = reader::string(sink, item, &format!("`{key}[{i}]`")) {
            if a.contains('@') && !a.trim().contains(char::is_whitespace) {
                out.push(a.trim().to_owned());
            } else {
                sink.error(item.span(), format!("`{a}` is not an email address"));
            }
        }
    }
    out
}

fn model(sink: &mut Sink<'_>, value: &Value<'_>) -> Option<ModelConfig> {
    let t = reader::table(sink, value, "`model`")?;
    unknown_keys(sink, t, &key_names(MODEL), " in `[model]`");
    let mut model = ModelConfig::default();
    if let Some(v) = get(t, "provider")
        && let Some(p) = reader::string(sink, v, "`provider`")
    {
        model.provider = match p.as_str() {
            "openai" => Some(Provider::Openai),
            "anthropic" => Some(Provider::Anthropic),
            _ => {
                let message = unknown_choice("provider", &p, &PROVIDERS, "`openai` or `anthropic`");
                sink.error(v.span(), message);
                None
            }
        };
    }
    if let Some(v) = get(t, "api") {
        model.api = api(sink, v, &model, get(t, "provider").is_some());
    }
    if let Some(v) = get(t, "name") {
        model.name = reader::string(sink, v, "`name`");
    }
    if let Some(v) = get(t, "max_tokens")
        && let Some(n) = reader::unsigned(sink, v, "`max_tokens`")
    {
        match u32::try_from(n) {
            Ok(n) if n > 0 => model.max_tokens = Some(n),
            _ => sink.error(
                v.span(),
                format!(
                    "`max_tokens` must be between 1 and {}, found `{n}`",
                    u32::MAX
                ),
            ),
        }
    }
    if let Some(v) = get(t, "cache")
        && let Some(c) = reader::string(sink, v, "`cache`")
    {
        match CacheMode::parse(&c) {
            Some(mode) => model.cache = mode,
            None => {
                let message = unknown_choice("cache mode", &c, &CACHE_MODES, "`auto` or `off`");
                sink.error(v.span(), message);
            }
        }
    }
    if let Some(v) = get(t, "cache_ttl")
        && let Some(c) = reader::string(sink, v, "`cache_ttl`")
    {
        match CacheTtl::parse(&c) {
            Some(ttl) => model.cache_ttl = ttl,
            None => {
                let message = unknown_choice("cache_ttl", &c, &CACHE_TTLS, "`auto`, `5m` or `1h`");
                sink.error(v.span(), message);
            }
        }
    }
    if let Some(v) = get(t, "prices") {
        model.prices = prices(sink, v);
    }
    if let Some(v) = get(t, "api_key_env") {
        model.api_key_env = agent::env_name(sink, v, "api_key_env");
    }
    if let Some(v) = get(t, "base_url")
        && let Some((url, parsed)) = agent::http_url(sink, v, "base_url", "api_key_env")
    {
        if parsed.https || is_loopback(&parsed.host) {
            model.base_url = Some(url);
        } else {
            sink.error(
                v.span(),
                format!(
                    "`base_url` must be `https://`: TLS is required unless the host is a loopback address (`localhost`, `127.0.0.0/8`, `[::1]`), and `{}` is not one",
                    parsed.host
                ),
            );
        }
    }
    if let Some(v) = get(t, "timeout") {
        model.timeout = agent::duration(sink, v, "timeout");
    }
    Some(model)
}

/// `[model] prices`: a table of prices in USD per million tokens, each a finite number
/// that is not negative.
fn prices(sink: &mut Sink<'_>, value: &Value<'_>) -> Option<PriceOverrides> {
    let t = reader::table(sink, value, "`prices`")?;
    unknown_keys(sink, t, &key_names(PRICES), " in `[model] prices`");
    let mut out = PriceOverrides::default();
    for (name, slot) in [
        ("input", &mut out.input),
        ("output", &mut out.output),
        ("cache_read", &mut out.cache_read),
        ("cache_write_5m", &mut out.cache_write_5m),
        ("cache_write_1h", &mut out.cache_write_1h),
    ] {
        let Some(v) = get(t, name) else { continue };
        let number = match v.get_ref() {
            DeValue::Integer(_) => reader::int_of(v.get_ref()).map(|n| n as f64),
            DeValue::Float(f) => f.as_str().replace('_', "").parse::<f64>().ok(),
            other => {
                sink.error(
                    v.span(),
                    format!(
                        "`prices.{name}` must be a number (USD per million tokens), found {}",
                        reader::type_name(other)
                    ),
                );
                continue;
            }
        };
        match number {
            Some(n) if n.is_finite() && n >= 0.0 => *slot = Some(n),
            _ => sink.error(
                v.span(),
                format!(
                    "`prices.{name}` must be a finite price of at least 0 (USD per million tokens), found `{}`",
                    &sink.source[v.span()]
                ),
            ),
        }
    }
    Some(out)
}

/// `[model] api`: one of OpenAI's APIs, so only with `provider = "openai"` (`provider_written`:
/// whether the table names a provider at all, which may be an unknown one already reported).
fn api(
    sink: &mut Sink<'_>,
    v: &Value<'_>,
    model: &ModelConfig,
    provider_written: bool,
) -> Option<OpenaiApi> {
    let name = reader::string(sink, v, "`api`")?;
    let Some(api) = OpenaiApi::parse(&name) else {
        let message = unknown_choice("api", &name, &OPENAI_APIS, "`chat` or `responses`");
        sink.error(v.span(), message);
        return None;
    };
    match model.provider {
        Some(Provider::Openai) => Some(api),
        Some(Provider::Anthropic) => {
            sink.error(
                v.span(),
                "`api` chooses between OpenAI's APIs; `provider = \"anthropic\"` has only the Messages API: remove `api` or set `provider = \"openai\"`",
            );
            None
        }
        // An unknown provider is reported at `provider`.
        None if provider_written => None,
        None => {
            sink.error(
                v.span(),
                "`api` chooses between OpenAI's APIs and needs `provider = \"openai\"` in the same table",
            );
            None
        }
    }
}

/// The `[limits]` table: positive integers replacing the application's template budget,
/// how much of each email reaches the model, and the bounds of a run (§13).
fn limits(sink: &mut Sink<'_>, value: &Value<'_>) -> PersonaLimits {
    let mut limits = PersonaLimits::default();
    let Some(t) = reader::table(sink, value, "`limits`") else {
        return limits;
    };
    unknown_keys(sink, t, &key_names(LIMITS), " in `[limits]`");
    if let Some(v) = get(t, "template_fuel") {
        limits.template_fuel = reader::positive(sink, v, "`template_fuel`");
    }
    if let Some(v) = get(t, "template_output_bytes") {
        limits.template_output_bytes = reader::positive(sink, v, "`template_output_bytes`")
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    }
    if let Some(v) = get(t, "message_text_bytes") {
        limits.message_text_bytes = reader::positive(sink, v, "`message_text_bytes`")
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    }
    if let Some(v) = get(t, "attachment_parts") {
        limits.attachment_parts = reader::positive(sink, v, "`attachment_parts`")
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    }
    if let Some(v) = get(t, "max_rounds") {
        limits.max_rounds =
            reader::positive(sink, v, "`max_rounds`").map(|n| u32::try_from(n).unwrap_or(u32::MAX));
    }
    if let Some(v) = get(t, "tool_result_bytes") {
        limits.tool_result_bytes = reader::positive(sink, v, "`tool_result_bytes`")
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    }
    limits
}

/// The `[mail]` table: how the persona's mail is imported and rendered.
fn mail(sink: &mut Sink<'_>, value: &Value<'_>) -> PersonaMail {
    let mut mail = PersonaMail::default();
    let Some(t) = reader::table(sink, value, "`mail`") else {
        return mail;
    };
    unknown_keys(sink, t, &key_names(MAIL), " in `[mail]`");
    if let Some(v) = get(t, "quoted")
        && let Some(quoted) = crate::builtins::parse_quoted(sink, v)
    {
        mail.quoted = quoted;
    }
    if let Some(v) = get(t, "fence")
        && let Some(fence) = reader::boolean(sink, v, "`fence`")
    {
        mail.fence = fence;
    }
    if let Some(v) = get(t, "trusted_authserv_ids")
        && let Some(items) = reader::array(sink, v, "`trusted_authserv_ids`")
    {
        for (i, item) in items.iter().enumerate() {
            let what = format!("`trusted_authserv_ids[{i}]`");
            if let Some(id) = reader::string(sink, item, &what) {
                let id = id.trim();
                if id.is_empty() || id.contains(|c: char| c.is_whitespace() || c == ';') {
                    sink.error(
                        item.span(),
                        format!("{what} `{id}` is not an authserv-id (a host name such as `mx.acme.test`)"),
                    );
                } else {
                    mail.trusted_authserv_ids.push(id.to_owned());
                }
            }
        }
    }
    mail
}

/// The addresses a persona file names, read from `source` as far as it can be (for a file
/// that is invalid elsewhere): the strings of its top-level `addresses` array that look
/// like email addresses.
pub fn addresses_in(source: &str) -> Vec<String> {
    let (doc, _) = DeTable::parse_recoverable(source);
    let Some(value) = get(doc.get_ref(), "addresses") else {
        return Vec::new();
    };
    let DeValue::Array(items) = value.get_ref() else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| match item.get_ref() {
            DeValue::String(a) if a.contains('@') && !a.trim().contains(char::is_whitespace) => {
                Some(a.trim().to_owned())
            }
            _ => None,
        })
        .collect()
}
