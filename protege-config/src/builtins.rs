//! Loading a persona, stage 4 of 4, for the built-in resolvers: their TOML options
//! (`LoadText`, `LoadFile`, `LoadRecord`, `ThreadHistory`, `ThreadSummary`,
//! `CorrespondentHistory`, `OpenThreads`), read from an
//! entry of a chain ([`chains`](crate::chains)).
//!
//! Which keys an entry may have, which are required and how each value is read come from
//! the shared table of `protege-schema` (the same one the `resolvers!` macro checks
//! against): [`Options::read_entry`] reads every given option by its kind, and the
//! built-in's own reader in `protege-core` (`BuiltinResolver::from_given`) builds the
//! resolver from the values read. Nothing here names a built-in.

use std::ops::Range;

use protege_core::{
    BoxResolver, BuiltinReader, Given, GivenOptions, LoadFile, OrderBy, Role, Template, WhereValue,
    Window,
};
use protege_schema::names::{Scope, Trigger};
use protege_schema::{
    Builtin, Kind, OptionSpec, Provided, QUOTED, ROLES, WINDOWS, is_identifier, suggestion,
};
use toml::de::{DeTable, DeValue};

use crate::diagnostic::unknown_choice;
use crate::reader::{self, Quoted, Sink, Value, get, type_name};
use crate::templates::Templates;

/// What a resolver factory sees: the entry's table and where to report problems.
pub(crate) struct Options<'a, 'i, 's> {
    /// Where problems go.
    pub(crate) sink: &'a mut Sink<'s>,
    /// The entry's table, `use` included.
    pub(crate) table: &'a DeTable<'i>,
    /// The span of the entry (its `[[...]]` header or inline table).
    pub(crate) span: Range<usize>,
    /// The canonical resolver name, which the entry's templates' names start with, e.g.
    /// `LoadRecord.template` (the name run-time errors give, as for chains built in Rust).
    pub(crate) name: &'a str,
    /// The trigger of the entry's chain, for the names its templates may use.
    pub(crate) trigger: Trigger,
    /// The keys of the persona's `[vars]`; `None` when `[vars]` itself is invalid.
    pub(crate) vars: Option<&'a [&'a str]>,
    /// The templates compiled so far in this load.
    pub(crate) templates: &'a mut Templates,
}

impl<'a, 'i> Options<'a, 'i, '_> {
    /// Reads the entry against the shared table: unknown keys (with a suggestion), missing
    /// required options, then every given option by its kind, in the table's order.
    fn read_entry(&mut self, spec: &'static Builtin) -> GivenOptions {
        let name = self.name;
        for (key, _) in self.table.iter() {
            let key_name: &str = key.get_ref();
            if key_name != "use" && !spec.toml_names().any(|n| n == key_name) {
                let hint = suggestion(key_name, spec.toml_names());
                self.sink.error(
                    key.span(),
                    format!("unknown option `{key_name}` for `{name}`{hint}"),
                );
            }
        }
        let mut given = GivenOptions::new();
        for option in spec.options.iter().filter(|o| o.toml.is_some()) {
            match get(self.table, option.name) {
                Some(value) => {
                    let read = self.read(spec, option, value);
                    given.push(option.name, read);
                }
                // A near miss of the name was reported as unknown with a suggestion;
                // "missing" would repeat it.
                None if option.default == protege_schema::Default::Required
                    && !reader::misspelt(self.table, option.name) =>
                {
                    self.sink.error(
                        self.span.clone(),
                        format!("`{name}` needs the option `{}`", option.name),
                    );
                }
                None => {}
            }
        }
        given
    }

    /// Reads one given option of `spec` by its kind; `None` after reporting a wrong value.
    fn read(
        &mut self,
        spec: &'static Builtin,
        option: &OptionSpec,
        value: &'a Value<'i>,
    ) -> Option<Given> {
        let key = option.name;
        let what = Quoted(key);
        match option.kind {
            Kind::Template => {
                let text = reader::text(self.sink, value, what)?;
                // The template sees the built-in's own variable (`record`, `summary`...).
                self.checked_template(key, text, value, spec.provides)
                    .map(Given::Template)
            }
            Kind::Path => {
                let text = reader::text(self.sink, value, what)?;
                if text.trim().is_empty() {
                    self.sink.error(value.span(), "`path` must not be empty");
                    return None;
                }
                if !is_template(text) {
                    return Some(Given::Path(LoadFile::new(text)));
                }
                self.checked_template(key, text, value, None)
                    .map(|template| Given::Path(LoadFile::from_template(template)))
            }
            Kind::Role => {
                let text = reader::text(self.sink, value, what)?;
                parse_role(self.sink, text, value).map(Given::Role)
            }
            Kind::Table => {
                let name = reader::string(self.sink, value, what)?;
                check_identifier(self.sink, value.span(), "table name", &name)
                    .then_some(Given::Table(name))
            }
            Kind::Where => self.conditions(value).map(Given::Where),
            Kind::OrderBy => {
                let items: Vec<&Value<'_>> = match value.get_ref() {
                    DeValue::String(_) => vec![value],
                    DeValue::Array(a) => a.iter().collect(),
                    other => {
                        self.sink.error(
                            value.span(),
                            format!(
                                "`{key}` must be a string or an array of strings, found {}",
                                type_name(other)
                            ),
                        );
                        return None;
                    }
                };
                let mut entries = Vec::with_capacity(items.len());
                let mut ok = true;
                for item in items {
                    match order_by(self.sink, item) {
                        Some(entry) => entries.push(entry),
                        None => ok = false,
                    }
                }
                ok.then_some(Given::OrderBy(entries))
            }
            Kind::Count => reader::unsigned(self.sink, value, what).map(Given::Count),
            Kind::CountOrAll => self.count_or_all(value, key).map(Given::CountOrAll),
            Kind::Step => match reader::unsigned(self.sink, value, what)? {
                0 => {
                    self.sink.error(
                        value.span(),
                        format!("{what} must be at least 1, found `0`"),
                    );
                    None
                }
                n => Some(Given::Step(n)),
            },
            Kind::Window => {
                let text = reader::string(self.sink, value, what)?;
                match Window::parse(&text) {
                    Some(w) => Some(Given::Window(w)),
                    None => {
                        let message =
                            unknown_choice("window", &text, &WINDOWS, "`sliding` or `stable`");
                        self.sink.error(value.span(), message);
                        None
                    }
                }
            }
            Kind::Quoted => parse_quoted(self.sink, value).map(Given::Quoted),
            Kind::Flag => reader::boolean(self.sink, value, what).map(Given::Flag),
            Kind::Duration => crate::agent::duration(self.sink, value, key).map(Given::Duration),
            // A closure has no TOML form; `read_entry` reads TOML options only.
            Kind::Closure => None,
        }
    }

    /// `limit = N` or `limit = false`.
    fn count_or_all(&mut self, value: &Value<'_>, key: &str) -> Option<Option<u64>> {
        match value.get_ref() {
            DeValue::Boolean(false) => Some(None),
            DeValue::Integer(_) => match reader::int_of(value.get_ref()) {
                Some(n) if n >= 0 => Some(Some(n as u64)),
                _ => {
                    self.sink.error(
                        value.span(),
                        format!(
                            "`{key}` must be a non-negative integer or `false`, found `{}`",
                            &self.sink.source[value.span()]
                        ),
                    );
                    None
                }
            },
            other => {
                let found = match other {
                    DeValue::Boolean(true) => "`true`".to_owned(),
                    other => type_name(other).to_owned(),
                };
                self.sink.error(
                    value.span(),
                    format!("`{key}` must be a non-negative integer or `false`, found {found}"),
                );
                None
            }
        }
    }

    /// Compiles the template of option `key` (`template`, `where.email`...), written in a
    /// TOML string, and checks the names it uses (a built-in's own variable, such as
    /// `record`, only where `provided` is it), from one parse. Its name is the resolver's
    /// and the key: `LoadRecord.where.email`.
    fn checked_template(
        &mut self,
        key: &str,
        text: &str,
        value: &Value<'_>,
        provided: Option<Provided>,
    ) -> Option<Template> {
        let scope = Scope {
            trigger: self.trigger,
            provided,
            vars: self.vars,
        };
        let mut name = String::with_capacity(self.name.len() + 1 + key.len());
        name.push_str(self.name);
        name.push('.');
        name.push_str(key);
        match self.templates.compile(&name, text, &scope) {
            Ok((template, problems)) => {
                crate::names::report(self.sink, text, value, problems).then_some(template)
            }
            Err(e) => {
                report_template_error(self.sink, &e, value, key);
                None
            }
        }
    }

    /// `where = { column = value, ... }`: a string is a template bound as text, a number or
    /// boolean is bound with its type.
    fn conditions(&mut self, value: &Value<'_>) -> Option<Vec<(String, WhereValue)>> {
        let conditions = reader::table(self.sink, value, "`where`")?;
        let mut out = Vec::new();
        let mut ok = true;
        for (column, v) in conditions.iter() {
            let column: &str = column.get_ref();
            if !check_identifier(self.sink, v.span(), "column name", column) {
                ok = false;
                continue;
            }
            let cond = match v.get_ref() {
                DeValue::String(s) => self
                    .checked_template(&format!("where.{column}"), s, v, None)
                    .map(WhereValue::Template),
                DeValue::Integer(_) | DeValue::Float(_) | DeValue::Boolean(_) => {
                    reader::to_json(self.sink, v, &format!("`where.{column}`"))
                        .map(WhereValue::Value)
                }
                other => {
                    self.sink.error(
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
                Some(c) => out.push((column.to_owned(), c)),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }
}

/// A `quoted` value (`[mail]` or a resolver's option): `"keep"` or `"strip"`.
pub(crate) fn parse_quoted(sink: &mut Sink<'_>, value: &Value<'_>) -> Option<protege_core::Quoted> {
    let text = reader::string(sink, value, "`quoted`")?;
    let quoted = protege_core::Quoted::parse(&text);
    if quoted.is_none() {
        let message = unknown_choice("`quoted` mode", &text, &QUOTED, "`keep` or `strip`");
        sink.error(value.span(), message);
    }
    quoted
}

fn parse_role(sink: &mut Sink<'_>, text: &str, value: &Value<'_>) -> Option<Role> {
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
    // The line is the span above; the detail is what went wrong there.
    let what = error.detail();
    sink.error(span, format!("invalid template in `{key}`: {what}"));
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

/// A built-in from its entry: the options read by its declaration, then built by its own
/// reader; `None` when a problem was reported.
pub(crate) fn read(o: &mut Options<'_, '_, '_>, reader: &BuiltinReader) -> Option<BoxResolver> {
    let errors_before = o.sink.diagnostics.len();
    let given = o.read_entry(reader.spec);
    let built = match (reader.read)(given) {
        Ok(built) => built,
        Err(refused) => {
            let span = get(o.table, refused.option).map_or_else(|| o.span.clone(), |v| v.span());
            o.sink.error(span, refused.message);
            None
        }
    };
    built.filter(|_| o.sink.diagnostics.len() == errors_before)
}

/// Whether `text` is a template (contains `{{` or `{%`) rather than a literal path.
fn is_template(text: &str) -> bool {
    text.contains("{{") || text.contains("{%")
}
