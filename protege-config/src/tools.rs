//! The `[[tools]]` entries of a persona, read for [`persona`](crate::persona): the tools
//! the model may call and what runs each (`http`, `mcp`, `builtin`, or the application),
//! and the check of the tool names `[agent] reply_tools` and `[[responsibilities]] tools`
//! give.
//!
//! An entry declares a tool (`name`, `description`, `input_schema`) unless it has `mcp`,
//! whose server lists its tools, or `builtin`, a tool protege carries with its own name and
//! schema (`description` may replace its description). It has at most one of `http`,
//! `mcp` and `builtin`; with none, the application runs the tool.

use protege_core::{
    BuiltinTool, DEFAULT_TOOL_TIMEOUT, HttpTool, McpServer, McpTool, PersonaTool, ToolDef,
    ToolRunner, glob_matches,
};
use protege_schema::{BUILTIN_TOOLS, HTTP_TOOL, MCP_TOOL, TOOL, TOOL_RUNNERS, key_names};
use toml::de::DeTable;

use crate::agent::{duration, env_name, http_url, one_of};
use crate::diagnostic::suggestion;
use crate::reader::{self, Quoted, Sink, Value, entries, get, misspelt, required, unknown_keys};

/// What `[[tools]]` declares.
#[derive(Debug, Default)]
pub(crate) struct Tools {
    /// The tools the model may call, in file order.
    pub(crate) defs: Vec<ToolDef>,
    /// What runs the tools protege runs, in file order.
    pub(crate) runners: Vec<PersonaTool>,
    /// The names other tables may give.
    pub(crate) names: ToolNames,
}

/// The tool names a persona's other tables may give: the declared ones (of entries with
/// other problems too, so that one mistake is reported once) and those an `mcp` entry's
/// `allow` matches.
#[derive(Debug, Default)]
pub(crate) struct ToolNames {
    known: Vec<String>,
    patterns: Vec<String>,
    /// Whether the names cannot be known (`tools` is not an array, or an `mcp` entry's
    /// `allow` is invalid): any name is accepted rather than reported wrongly.
    open: bool,
}

impl ToolNames {
    /// The tool names of the array under `key`, each a tool of the persona (or matched by
    /// an `mcp` entry's `allow`) and each once; `None` when the value is not an array of
    /// strings.
    pub(crate) fn check(
        &self,
        sink: &mut Sink<'_>,
        value: &Value<'_>,
        key: &str,
    ) -> Option<Vec<String>> {
        let items = reader::array(sink, value, Quoted(key))?;
        let mut names: Vec<String> = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            let Some(name) = reader::text(sink, item, format_args!("`{key}[{i}]`")) else {
                ok = false;
                continue;
            };
            if !is_tool_name(name) {
                sink.error(
                    item.span(),
                    format!(
                        "invalid tool name `{name}` in `{key}`: use 1 to 64 ASCII letters, digits, `_` or `-`"
                    ),
                );
                ok = false;
            } else if names.iter().any(|n| n == name) {
                sink.error(item.span(), format!("`{key}` names `{name}` twice"));
                ok = false;
            } else if !self.accepts(name) {
                let hint = suggestion(name, self.known.iter().map(String::as_str));
                let message = if !hint.is_empty() {
                    format!("unknown tool `{name}` in `{key}`{hint}")
                } else if self.patterns.is_empty() {
                    format!("unknown tool `{name}` in `{key}`: no `[[tools]]` entry declares it")
                } else {
                    format!(
                        "unknown tool `{name}` in `{key}`: no `[[tools]]` entry declares it and no `allow` of an `mcp` entry matches it"
                    )
                };
                sink.error(item.span(), message);
                ok = false;
            } else {
                names.push(name.to_owned());
            }
        }
        ok.then_some(names)
    }

    fn accepts(&self, name: &str) -> bool {
        self.open
            || self.known.iter().any(|n| n == name)
            || self.patterns.iter().any(|p| glob_matches(p, name))
    }
}

/// Whether `name` is a valid tool name: 1 to 64 ASCII letters, digits, `_` or `-`.
fn is_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The `[[tools]]` array.
pub(crate) fn tools(sink: &mut Sink<'_>, value: &Value<'_>) -> Tools {
    let mut out = Tools::default();
    if !matches!(value.get_ref(), toml::de::DeValue::Array(_)) {
        out.names.open = true;
    }
    for (entry, t) in entries(sink, value, "tools") {
        tool(sink, entry, t, &mut out);
    }
    out
}

/// One entry of `[[tools]]`, added to `out` when it is valid.
fn tool(sink: &mut Sink<'_>, entry: &Value<'_>, t: &DeTable<'_>, out: &mut Tools) {
    unknown_keys(sink, t, &key_names(TOOL), " in `[[tools]]`");
    let runners: Vec<(&str, &Value<'_>)> = TOOL_RUNNERS
        .iter()
        .filter_map(|k| get(t, k).map(|v| (*k, v)))
        .collect();
    if let [(first, _), rest @ ..] = &runners[..]
        && !rest.is_empty()
    {
        for (other, v) in rest {
            sink.error(
                v.span(),
                format!(
                    "a tool has at most one of `http`, `mcp` and `builtin`, and this one has `{first}` and `{other}`"
                ),
            );
        }
        // Its name, if any, is still a tool's: other tables naming it are not wrong.
        if let Some(name) = get(t, "name").and_then(|v| v.get_ref().as_str())
            && is_tool_name(name)
        {
            out.names.known.push(name.to_owned());
        }
        return;
    }
    let approval = match get(t, "approval") {
        Some(v) if runners.is_empty() => {
            sink.error(
                v.span(),
                "`approval` needs `http`, `mcp` or `builtin`: protege waits for a person only before a call it makes itself",
            );
            None
        }
        Some(v) => reader::boolean(sink, v, "`approval`"),
        None => Some(false),
    };
    let valid = approval.is_some();
    let approval = approval.unwrap_or_default();
    match runners.first() {
        Some(("mcp", v)) => mcp_entry(sink, t, v, approval, valid, out),
        Some(("builtin", v)) => builtin_entry(sink, t, v, approval, valid, out),
        first => {
            let http = first.and_then(|(_, v)| http(sink, v));
            let valid = valid && (first.is_none() || http.is_some());
            let Some(def) = declared(sink, entry, t, &mut out.names) else {
                return;
            };
            if !valid {
                return;
            }
            if let Some(http) = http {
                out.runners.push(PersonaTool {
                    name: Some(def.name.clone()),
                    runner: ToolRunner::Http(http),
                    approval,
                });
            }
            out.defs.push(def);
        }
    }
}

/// Reports each of `keys` (key, why it does not go) that the entry `t` has, as not going
/// with its `runner`: whether it has none of them.
fn refuse_keys(sink: &mut Sink<'_>, t: &DeTable<'_>, runner: &str, keys: &[(&str, &str)]) -> bool {
    let mut none = true;
    for (key, why) in keys {
        if let Some(k) = get(t, key) {
            sink.error(
                k.span(),
                format!("`{key}` does not go with `{runner}`: {why}"),
            );
            none = false;
        }
    }
    none
}

/// An entry `t` of `[[tools]]` with `mcp` (its value `v`), added to `out` when it is valid
/// (`valid`: nothing read before it was wrong) with its `approval`; the names its `allow`
/// matches are the persona's tools either way.
fn mcp_entry(
    sink: &mut Sink<'_>,
    t: &DeTable<'_>,
    v: &Value<'_>,
    approval: bool,
    valid: bool,
    out: &mut Tools,
) {
    let valid = refuse_keys(
        sink,
        t,
        "mcp",
        &[
            ("name", "the server names its tools"),
            ("description", "the server describes its tools"),
            ("input_schema", "the server gives the schema of each tool"),
        ],
    ) && valid;
    match mcp(sink, v) {
        Some(mcp) => {
            out.names.patterns.extend(mcp.allow.iter().cloned());
            if valid {
                out.runners.push(PersonaTool {
                    name: None,
                    runner: ToolRunner::Mcp(mcp),
                    approval,
                });
            }
        }
        // Which names it allows is unknown: none is reported as unknown.
        None => out.names.open = true,
    }
}

/// An entry `t` of `[[tools]]` with `builtin` (its value `v`), added to `out` when it is
/// valid (`valid`: nothing read before it was wrong) with its `approval`; its name is
/// declared when the tool exists.
fn builtin_entry(
    sink: &mut Sink<'_>,
    t: &DeTable<'_>,
    v: &Value<'_>,
    approval: bool,
    valid: bool,
    out: &mut Tools,
) {
    let valid = refuse_keys(
        sink,
        t,
        "builtin",
        &[
            ("name", "a built-in tool has its own name"),
            ("input_schema", "a built-in tool has its own schema"),
        ],
    ) && valid;
    let description = get(t, "description").map(|d| reader::string(sink, d, "`description`"));
    let Some(builtin) = one_of(sink, v, "builtin", &BUILTIN_TOOLS, BuiltinTool::parse) else {
        return;
    };
    let mut def = builtin.tool_def();
    if !declare(sink, v, &def.name, &mut out.names) {
        return;
    }
    match description {
        Some(Some(d)) => def.description = d,
        Some(None) => return,
        None => {}
    }
    if valid {
        out.runners.push(PersonaTool {
            name: Some(def.name.clone()),
            runner: ToolRunner::Builtin(builtin),
            approval,
        });
        out.defs.push(def);
    }
}

/// Records `name` as declared at `value`, or reports it as a duplicate.
fn declare(sink: &mut Sink<'_>, value: &Value<'_>, name: &str, names: &mut ToolNames) -> bool {
    if names.known.iter().any(|n| n == name) {
        sink.error(value.span(), format!("duplicate tool `{name}`"));
        return false;
    }
    names.known.push(name.to_owned());
    true
}

/// The tool an entry declares with `name`, `description` and `input_schema`.
fn declared(
    sink: &mut Sink<'_>,
    entry: &Value<'_>,
    t: &DeTable<'_>,
    names: &mut ToolNames,
) -> Option<ToolDef> {
    let name = required(sink, entry, t, "name", "a tool").and_then(|v| {
        let n = reader::string(sink, v, "`name`")?;
        if !is_tool_name(&n) {
            sink.error(
                v.span(),
                format!("invalid tool name `{n}`: use 1 to 64 ASCII letters, digits, `_` or `-`"),
            );
            return None;
        }
        declare(sink, v, &n, names).then_some(n)
    });
    let description = required(sink, entry, t, "description", "a tool")
        .and_then(|v| reader::string(sink, v, "`description`"));
    let schema = required(sink, entry, t, "input_schema", "a tool").and_then(|v| {
        let table = reader::table(sink, v, "`input_schema`")?;
        let object = reader::table_to_json(sink, table, "`input_schema`")?;
        if object.get("type").and_then(|t| t.as_str()) != Some("object") {
            sink.error(v.span(), "`input_schema` must declare `type = \"object\"`");
            return None;
        }
        Some(serde_json::Value::Object(object))
    });
    Some(ToolDef {
        name: name?,
        description: description?,
        input_schema: schema?,
    })
}

/// The `http` table of an entry.
fn http(sink: &mut Sink<'_>, value: &Value<'_>) -> Option<HttpTool> {
    let t = reader::table(sink, value, "`http`")?;
    unknown_keys(sink, t, &key_names(HTTP_TOOL), " in `http`");
    let url = required(sink, value, t, "url", "`http`")
        .and_then(|v| http_url(sink, v, "http.url", "http.secret_env"))
        .map(|(url, _)| url);
    let secret_env = optional(get(t, "secret_env"), |v| env_name(sink, v, "secret_env"));
    let timeout = timeout(sink, t);
    Some(HttpTool {
        url: url?,
        secret_env: secret_env?,
        timeout: timeout?,
    })
}

/// `Some(None)` without `value`, `Some(Some(x))` when `read` reads it, `None` when it
/// reports a problem.
fn optional<'v, 'i: 'v, T>(
    value: Option<&'v Value<'i>>,
    read: impl FnOnce(&'v Value<'i>) -> Option<T>,
) -> Option<Option<T>> {
    match value {
        Some(v) => read(v).map(Some),
        None => Some(None),
    }
}

/// The `timeout` of an `http` or `mcp` table, [`DEFAULT_TOOL_TIMEOUT`] without one.
fn timeout(sink: &mut Sink<'_>, t: &DeTable<'_>) -> Option<std::time::Duration> {
    match get(t, "timeout") {
        Some(v) => duration(sink, v, "timeout"),
        None => Some(DEFAULT_TOOL_TIMEOUT),
    }
}

/// The `mcp` table of an entry.
fn mcp(sink: &mut Sink<'_>, value: &Value<'_>) -> Option<McpTool> {
    let t = reader::table(sink, value, "`mcp`")?;
    unknown_keys(sink, t, &key_names(MCP_TOOL), " in `mcp`");
    let server = match (get(t, "url"), get(t, "command")) {
        (Some(_), Some(command)) => {
            sink.error(
                command.span(),
                "`mcp` takes one of `url` and `command`, not both",
            );
            None
        }
        (Some(url), None) => {
            http_url(sink, url, "mcp.url", "mcp.token_env").map(|(url, _)| McpServer::Url(url))
        }
        (None, Some(command)) => self::command(sink, command).map(McpServer::Command),
        (None, None) => {
            if !misspelt(t, "url") && !misspelt(t, "command") {
                sink.error(
                    value.span(),
                    "`mcp` needs `url` (a streamable HTTP server) or `command` (a program spoken to over its standard input and output)",
                );
            }
            None
        }
    };
    let allow = match get(t, "allow") {
        Some(v) => allow(sink, v),
        None => Some(vec!["*".to_owned()]),
    };
    let token_env = optional(get(t, "token_env"), |v| {
        if get(t, "command").is_some() && get(t, "url").is_none() {
            sink.error(
                v.span(),
                "`token_env` goes with `url`: a `command` server is sent no bearer token",
            );
            return None;
        }
        env_name(sink, v, "token_env")
    });
    let timeout = timeout(sink, t);
    Some(McpTool {
        server: server?,
        allow: allow?,
        token_env: token_env?,
        timeout: timeout?,
    })
}

/// `mcp.command`: a program and its arguments.
fn command(sink: &mut Sink<'_>, value: &Value<'_>) -> Option<Vec<String>> {
    let items = reader::array(sink, value, "`command`")?;
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        out.push(reader::string(sink, item, format_args!("`command[{i}]`")));
    }
    let out: Option<Vec<String>> = out.into_iter().collect();
    let out = out?;
    if out.first().is_none_or(|program| program.trim().is_empty()) {
        sink.error(
            value.span(),
            "`command` must start with a program, as in `[\"kb-mcp\", \"--stdio\"]`",
        );
        return None;
    }
    Some(out)
}

/// `mcp.allow`: the patterns of the tool names offered.
fn allow(sink: &mut Sink<'_>, value: &Value<'_>) -> Option<Vec<String>> {
    let items = reader::array(sink, value, "`allow`")?;
    if items.is_empty() {
        sink.error(
            value.span(),
            "`allow` must have at least one pattern; leave it out to offer every tool",
        );
        return None;
    }
    let mut out = Vec::with_capacity(items.len());
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let Some(pattern) = reader::text(sink, item, format_args!("`allow[{i}]`")) else {
            ok = false;
            continue;
        };
        let valid = !pattern.is_empty()
            && pattern
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*'));
        if valid {
            out.push(pattern.to_owned());
        } else {
            sink.error(
                item.span(),
                format!(
                    "invalid pattern `{pattern}` in `allow`: use ASCII letters, digits, `_`, `-` and `*`, which stands for any run of them"
                ),
            );
            ok = false;
        }
    }
    ok.then_some(out)
}
