//! The built-in resolvers' TOML options: `LoadText`, `LoadFile`, `LoadRecord`, `ThreadHistory`.

use std::ops::Range;

use protege_core::resolvers::{OrderBy, WhereValue};
use protege_core::{
    BoxResolver, LoadFile, LoadRecord, LoadText, Role, Template, ThreadHistory, ThreadSummary,
    Window,
};
use protege_template_names::{Scope, Trigger};
use toml::de::{DeTable, DeValue};

use crate::diagnostic::suggestion;
use crate::reader::{self, Sink, Value, check_keys, get, type_name};

/// What a resolver factory sees: the entry's table and where to report problems.
pub(crate) struct Options<'a, 'i, 's> {
    /// Where problems go.
    pub(crate) sink: &'a mut Sink<'s>,
    /// The entry's table, `use` included.
    pub(crate) table: &'a DeTable<'i>,
    /// The span of the entry (its `[[...]]` header or inline table).
    pub(crate) span: Range<usize>,
    /// The canonical resolver name.
    pub(crate) name: &'a str,
    /// The name the entry's templates start with, e.g. `LoadRecord` in
    /// `LoadRecord.template` (the name run-time errors give, as for chains built in Rust).
    pub(crate) location: String,
    /// The trigger of the entry's chain, for the names its templates may use.
    pub(crate) trigger: Trigger,
    /// The keys of the persona's `[vars]`; `None` when `[vars]` itself is invalid.
    pub(crate) vars: Option<&'a [&'a str]>,
}

impl<'a, 'i> Options<'a, 'i, '_> {
    fn check_keys(&mut self, allowed: &[&str]) {
        let name = self.name;
        let options: Vec<&str> = allowed.iter().copied().filter(|k| *k != "use").collect();
        for (key, _) in self.table.iter() {
            let key_name: &str = key.get_ref();
            if key_name != "use" && !options.contains(&key_name) {
                let hint = suggestion(key_name, options.iter().copied());
                self.sink.error(
                    key.span(),
                    format!("unknown option `{key_name}` for `{name}`{hint}"),
                );
            }
        }
    }

    fn required(&mut self, key: &str) -> Option<&'a Value<'i>> {
        let value = get(self.table, key);
        if value.is_none() && !reader::misspelt(self.table, key) {
            let name = self.name;
            self.sink.error(
                self.span.clone(),
                format!("`{name}` needs the option `{key}`"),
            );
        }
        value
    }

    fn string(&mut self, key: &str, required: bool) -> Option<(String, Value<'static>)> {
        let value = if required {
            self.required(key)?
        } else {
            get(self.table, key)?
        };
        let text = reader::string(self.sink, value, &format!("`{key}`"))?;
        Some((
            text.clone(),
            toml::Spanned::new(value.span(), DeValue::String(text.into())),
        ))
    }

    fn role(&mut self) -> Option<Role> {
        let (text, value) = self.string("role", false)?;
        parse_role(self.sink, &text, &value)
    }

    fn template(&mut self, key: &str, required: bool) -> Option<Template> {
        let (text, value) = self.string(key, required)?;
        let record = self.name == "LoadRecord" && key == "template";
        let name = format!("{}.{key}", self.location);
        self.checked_template(&name, &text, &value, key, record)
    }

    /// Compiles a template written in a TOML string and checks the names it uses
    /// (`record` only where `record` is true), from one parse.
    fn checked_template(
        &mut self,
        name: &str,
        text: &str,
        value: &Value<'_>,
        key: &str,
        record: bool,
    ) -> Option<Template> {
        let scope = self.scope(record);
        let compiled = Template::compile_inspecting(name, text, |tree| {
            crate::names::problems(tree, text, &scope)
        });
        match compiled {
            Ok((template, problems)) => {
                crate::names::report(self.sink, text, value, problems).then_some(template)
            }
            Err(e) => {
                report_template_error(self.sink, &e, value, key);
                None
            }
        }
    }

    /// Checks the names a compiled template uses (`record` only where `record` is true).
    fn names(&mut self, text: &str, value: &Value<'_>, record: bool) -> bool {
        let scope = self.scope(record);
        crate::names::check(self.sink, text, value, &scope)
    }

    /// What a template of this resolver sees when it renders.
    fn scope(&self, record: bool) -> Scope<'a> {
        Scope {
            trigger: self.trigger,
            record,
            summary: self.name == "ThreadSummary",
            vars: self.vars,
        }
    }
}

fn parse_role(sink: &mut Sink<'_>, text: &str, value: &Value<'_>) -> Option<Role> {
    const ROLES: [&str; 4] = ["system", "user", "assistant", "tool"];
    match text {
        "system" => Some(Role::System),
        "user" => Some(Role::User),
        "assistant" => Some(Role::Assistant),
        "tool" => Some(Role::Tool),
        _ => {
            let hint = suggestion(text, ROLES);
            let message = if hint.is_empty() {
                format!(
                    "unknown role `{text}`, expected one of `system`, `user`, `assistant`, `tool`"
                )
            } else {
                format!("unknown role `{text}`{hint}")
            };
            sink.error(value.span(), message);
            None
        }
    }
}

/// Reports a template compile error at the template's line inside the TOML string.
pub(crate) fn report_template_error(
    sink: &mut Sink<'_>,
    error: &protege_core::Error,
    value: &Value<'_>,
    key: &str,
) {
    let span = match error.template_line() {
        Some(line) => crate::template_span::line_span(sink.source, value.span(), line),
        None => value.span(),
    };
    // The core error reads "template `NAME` line N: what"; keep "what".
    let detail = error.detail();
    let what = detail
        .split_once(": ")
        .map_or(detail, |(_, rest)| rest)
        .to_owned();
    sink.error(span, format!("invalid template in `{key}`: {what}"));
}

/// Whether `name` is a plain SQL identifier: ASCII letters, digits, `_`, not starting with a digit.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn check_identifier(sink: &mut Sink<'_>, span: Range<usize>, what: &str, name: &str) -> bool {
    if is_identifier(name) {
        return true;
    }
    sink.error(
        span,
        format!(
            "invalid {what} `{name}`: use ASCII letters, digits and `_`, not starting with a digit"
        ),
    );
    false
}

/// `LoadText`: `template`, `role`.
pub(crate) fn load_text(o: &mut Options<'_, '_, '_>) -> Option<BoxResolver> {
    o.check_keys(&["use", "template", "role"]);
    let template = o.template("template", true);
    let role = o.role();
    let mut r = LoadText::new(template?);
    if let Some(role) = role {
        r = r.role(role);
    }
    Some(BoxResolver::new(r))
}

/// `LoadFile`: `path`, `role`.
pub(crate) fn load_file(o: &mut Options<'_, '_, '_>) -> Option<BoxResolver> {
    o.check_keys(&["use", "path", "role"]);
    let path = o.string("path", true);
    let role = o.role();
    let (text, value) = path?;
    if text.trim().is_empty() {
        o.sink.error(value.span(), "`path` must not be empty");
        return None;
    }
    let r = match LoadFile::try_named(&text, &format!("{}.path", o.location)) {
        Ok(r) => r,
        Err(e) => {
            report_template_error(o.sink, &e, &value, "path");
            return None;
        }
    };
    if protege_core::template::is_template(&text) && !o.names(&text, &value, false) {
        return None;
    }
    Some(BoxResolver::new(match role {
        Some(role) => r.role(role),
        None => r,
    }))
}

/// `LoadRecord`: `table`, `where`, `order_by`, `limit`, `template`, `role`.
pub(crate) fn load_record(o: &mut Options<'_, '_, '_>) -> Option<BoxResolver> {
    o.check_keys(&[
        "use", "table", "where", "order_by", "limit", "template", "role",
    ]);
    let mut ok = true;
    let table = o.string("table", true).and_then(|(name, value)| {
        check_identifier(o.sink, value.span(), "table name", &name).then_some(name)
    });
    let mut record = table.map(LoadRecord::table);
    if let Some(value) = get(o.table, "where") {
        match reader::table(o.sink, value, "`where`") {
            Some(conditions) => {
                for (column, v) in conditions.iter() {
                    let column: &str = column.get_ref();
                    if !check_identifier(o.sink, v.span(), "column name", column) {
                        ok = false;
                        continue;
                    }
                    let cond = match v.get_ref() {
                        DeValue::String(s) => {
                            let name = format!("{}.where.{column}", o.location);
                            o.checked_template(&name, s, v, &format!("where.{column}"), false)
                                .map(WhereValue::Template)
                        }
                        DeValue::Integer(_) | DeValue::Float(_) | DeValue::Boolean(_) => {
                            reader::to_json(o.sink, v, &format!("`where.{column}`"))
                                .map(WhereValue::Value)
                        }
                        other => {
                            o.sink.error(
                                v.span(),
                                format!(
                                    "`where.{column}` must be a string, integer, float or boolean, found {}",
                                    type_name(other)
                                ),
                            );
                            None
                        }
                    };
                    match cond {
                        Some(c) => record = record.map(|r| r.filter(column, c)),
                        None => ok = false,
                    }
                }
            }
            None => ok = false,
        }
    }
    if let Some(value) = get(o.table, "order_by") {
        let items: Vec<&Value<'_>> = match value.get_ref() {
            DeValue::String(_) => vec![value],
            DeValue::Array(a) => a.iter().collect(),
            other => {
                o.sink.error(
                    value.span(),
                    format!(
                        "`order_by` must be a string or an array of strings, found {}",
                        type_name(other)
                    ),
                );
                ok = false;
                Vec::new()
            }
        };
        for item in items {
            match order_by(o.sink, item) {
                Some(ob) => record = record.map(|r| r.order_by(ob)),
                None => ok = false,
            }
        }
    }
    if let Some(value) = get(o.table, "limit") {
        match reader::unsigned(o.sink, value, "`limit`") {
            Some(n) => record = record.map(|r| r.limit(n)),
            None => ok = false,
        }
    }
    if get(o.table, "template").is_some() {
        match o.template("template", false) {
            Some(t) => record = record.map(|r| r.template(t)),
            None => ok = false,
        }
    }
    if get(o.table, "role").is_some() {
        match o.role() {
            Some(role) => record = record.map(|r| r.role(role)),
            None => ok = false,
        }
    }
    let record = record?;
    ok.then(|| BoxResolver::new(record))
}

fn order_by(sink: &mut Sink<'_>, item: &Value<'_>) -> Option<OrderBy> {
    let text = reader::string(sink, item, "each `order_by` entry")?;
    let words: Vec<&str> = text.split_whitespace().collect();
    let (column, desc) = match words.as_slice() {
        [column] => (*column, false),
        [column, dir] if dir.eq_ignore_ascii_case("asc") => (*column, false),
        [column, dir] if dir.eq_ignore_ascii_case("desc") => (*column, true),
        _ => {
            sink.error(
                item.span(),
                format!("invalid `order_by` entry `{text}`: expected `column`, `column asc` or `column desc`"),
            );
            return None;
        }
    };
    check_identifier(sink, item.span(), "column name", column).then(|| OrderBy {
        column: column.to_owned(),
        desc,
    })
}

/// `ThreadSummary`: `template` (variable `summary`), `role`.
pub(crate) fn thread_summary(o: &mut Options<'_, '_, '_>) -> Option<BoxResolver> {
    o.check_keys(&["use", "template", "role"]);
    let mut ok = true;
    let mut r = ThreadSummary::new();
    if get(o.table, "template").is_some() {
        match o.template("template", false) {
            Some(t) => r = r.template(t),
            None => ok = false,
        }
    }
    if get(o.table, "role").is_some() {
        match o.role() {
            Some(role) => r = r.role(role),
            None => ok = false,
        }
    }
    ok.then(|| BoxResolver::new(r))
}

/// `ThreadHistory`: `limit`, `window`, `step`, `after_summary`, `include_tool_calls`,
/// `result_limit`, `max_tokens`.
pub(crate) fn thread_history(o: &mut Options<'_, '_, '_>) -> Option<BoxResolver> {
    o.check_keys(&[
        "use",
        "limit",
        "window",
        "step",
        "after_summary",
        "include_tool_calls",
        "result_limit",
        "max_tokens",
    ]);
    let mut r = ThreadHistory::new();
    let mut ok = true;
    if let Some(value) = get(o.table, "limit") {
        match value.get_ref() {
            DeValue::Boolean(false) => r = r.limit(None),
            DeValue::Integer(_) => match reader::int_of(value.get_ref()) {
                Some(n) if n >= 0 => r = r.limit(n as u64),
                _ => {
                    o.sink.error(
                        value.span(),
                        format!(
                            "`limit` must be a non-negative integer or `false`, found `{}`",
                            &o.sink.source[value.span()]
                        ),
                    );
                    ok = false;
                }
            },
            other => {
                let found = match other {
                    DeValue::Boolean(true) => "`true`".to_owned(),
                    other => type_name(other).to_owned(),
                };
                o.sink.error(
                    value.span(),
                    format!("`limit` must be a non-negative integer or `false`, found {found}"),
                );
                ok = false;
            }
        }
    }
    let mut window = Window::Sliding;
    if let Some(value) = get(o.table, "window") {
        match reader::string(o.sink, value, "`window`") {
            Some(text) => match Window::parse(&text) {
                Some(w) => {
                    window = w;
                    r = r.window(w);
                }
                None => {
                    let hint = suggestion(&text, ["sliding", "stable"]);
                    let message = if hint.is_empty() {
                        format!("unknown window `{text}`, expected `sliding` or `stable`")
                    } else {
                        format!("unknown window `{text}`{hint}")
                    };
                    o.sink.error(value.span(), message);
                    ok = false;
                }
            },
            None => ok = false,
        }
    }
    if let Some(value) = get(o.table, "step") {
        match reader::unsigned(o.sink, value, "`step`") {
            Some(0) => {
                o.sink
                    .error(value.span(), "`step` must be at least 1, found `0`");
                ok = false;
            }
            Some(n) if window == Window::Stable => r = r.step(n),
            Some(_) if ok => {
                o.sink.error(
                    value.span(),
                    "`step` applies to a stable window: add `window = \"stable\"`",
                );
                ok = false;
            }
            _ => ok = false,
        }
    }
    if let Some(value) = get(o.table, "after_summary") {
        match reader::boolean(o.sink, value, "`after_summary`") {
            Some(b) => r = r.after_summary(b),
            None => ok = false,
        }
    }
    if let Some(value) = get(o.table, "include_tool_calls") {
        match reader::boolean(o.sink, value, "`include_tool_calls`") {
            Some(b) => r = r.include_tool_calls(b),
            None => ok = false,
        }
    }
    if let Some(value) = get(o.table, "result_limit") {
        match reader::unsigned(o.sink, value, "`result_limit`") {
            Some(n) => r = r.result_limit(usize::try_from(n).unwrap_or(usize::MAX)),
            None => ok = false,
        }
    }
    if let Some(value) = get(o.table, "max_tokens") {
        match reader::unsigned(o.sink, value, "`max_tokens`") {
            Some(n) => r = r.max_tokens(usize::try_from(n).unwrap_or(usize::MAX)),
            None => ok = false,
        }
    }
    ok.then(|| BoxResolver::new(r))
}

/// Reports unknown keys of a non-resolver table (used by the persona reader too).
pub(crate) fn unknown_keys(
    sink: &mut Sink<'_>,
    table: &DeTable<'_>,
    allowed: &[&str],
    place: &str,
) {
    check_keys(sink, table, allowed, |k| {
        format!("unknown key `{k}`{place}")
    });
}
