//! Walking a parsed TOML document with spans, collecting every problem on the way.

use std::fmt;
use std::ops::Range;
use std::path::Path;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::diagnostic::{Diagnostic, suggestion};

/// A spanned TOML value, as the parser returns it.
pub(crate) type Value<'i> = Spanned<DeValue<'i>>;

/// Where problems of one file are collected.
#[derive(Debug)]
pub(crate) struct Sink<'s> {
    pub(crate) path: &'s Path,
    pub(crate) source: &'s str,
    pub(crate) diagnostics: Vec<Diagnostic>,
}

impl<'s> Sink<'s> {
    pub(crate) fn new(path: &'s Path, source: &'s str) -> Self {
        Self {
            path,
            source,
            diagnostics: Vec::new(),
        }
    }

    /// Records a problem at `span`.
    pub(crate) fn error(&mut self, span: Range<usize>, message: impl Into<String>) {
        self.diagnostics
            .push(Diagnostic::new(self.path, self.source, span, message));
    }
}

/// A name in backquotes, as messages show it (`` `limit` ``), formatted only when a
/// message is.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Quoted<'a>(pub(crate) &'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`", self.0)
    }
}

/// The TOML type name used in messages: `a string`, `an integer`, ...
pub(crate) fn type_name(value: &DeValue<'_>) -> &'static str {
    match value {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a datetime",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// Reports every key of `table` not in `allowed`, with a suggestion, using `describe` to
/// phrase the message from the key (e.g. "unknown option `limt` for `ThreadHistory`").
fn check_keys(
    sink: &mut Sink<'_>,
    table: &DeTable<'_>,
    allowed: &[&str],
    describe: impl Fn(&str) -> String,
) {
    for (key, _) in table.iter() {
        let name: &str = key.get_ref();
        if !allowed.contains(&name) {
            let hint = suggestion(name, allowed.iter().copied());
            sink.error(key.span(), format!("{}{hint}", describe(name)));
        }
    }
}

/// Reports the keys of a non-resolver table not in `allowed`, `place` saying where the
/// table is (` in `[model]``).
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

/// Whether some key of `table` is a near miss of `key` (already reported as unknown with a
/// suggestion, so "missing `key`" would repeat it).
pub(crate) fn misspelt(table: &DeTable<'_>, key: &str) -> bool {
    table.iter().any(|(k, _)| {
        let name: &str = k.get_ref();
        name != key && crate::diagnostic::did_you_mean(name, [key]).is_some()
    })
}

/// The value under `key`, when present.
pub(crate) fn get<'a, 'i>(table: &'a DeTable<'i>, key: &str) -> Option<&'a Value<'i>> {
    table
        .iter()
        .find(|(k, _)| k.get_ref().as_ref() == key)
        .map(|(_, v)| v)
}

/// The entries of an array of tables such as `[[tools]]`.
pub(crate) fn entries<'a, 'i>(
    sink: &mut Sink<'_>,
    value: &'a Value<'i>,
    key: &str,
) -> Vec<(&'a Value<'i>, &'a DeTable<'i>)> {
    let Some(items) = array(sink, value, &format!("`{key}`")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in items {
        if let DeValue::Table(t) = item.get_ref() {
            out.push((item, t));
        } else {
            sink.error(
                item.span(),
                format!(
                    "each entry of `{key}` must be a table, found {}",
                    type_name(item.get_ref())
                ),
            );
        }
    }
    out
}

/// The value under `key` of the entry `t`, or a problem saying `place` needs it (unless a
/// near miss of `key` was already reported as unknown).
pub(crate) fn required<'a, 'i>(
    sink: &mut Sink<'_>,
    entry: &Value<'_>,
    t: &'a DeTable<'i>,
    key: &str,
    place: &str,
) -> Option<&'a Value<'i>> {
    let v = get(t, key);
    if v.is_none() && !misspelt(t, key) {
        sink.error(entry.span(), format!("{place} needs the key `{key}`"));
    }
    v
}

/// A string, or a type error naming `what` (e.g. "`name`").
pub(crate) fn string(
    sink: &mut Sink<'_>,
    value: &Value<'_>,
    what: impl fmt::Display + Copy,
) -> Option<String> {
    text(sink, value, what).map(str::to_owned)
}

/// The text of a string, borrowed from the parsed file, or a type error naming `what`.
pub(crate) fn text<'v>(
    sink: &mut Sink<'_>,
    value: &'v Value<'_>,
    what: impl fmt::Display + Copy,
) -> Option<&'v str> {
    match value.get_ref() {
        DeValue::String(s) => Some(s),
        other => {
            sink.error(
                value.span(),
                format!("{what} must be a string, found {}", type_name(other)),
            );
            None
        }
    }
}

/// A boolean, or a type error.
pub(crate) fn boolean(
    sink: &mut Sink<'_>,
    value: &Value<'_>,
    what: impl fmt::Display + Copy,
) -> Option<bool> {
    match value.get_ref() {
        DeValue::Boolean(b) => Some(*b),
        other => {
            sink.error(
                value.span(),
                format!("{what} must be a boolean, found {}", type_name(other)),
            );
            None
        }
    }
}

/// The integer of an integer value (`None` if it does not fit an `i64`).
pub(crate) fn int_of(value: &DeValue<'_>) -> Option<i64> {
    match value {
        DeValue::Integer(i) => i64::from_str_radix(&i.as_str().replace('_', ""), i.radix()).ok(),
        _ => None,
    }
}

/// A non-negative integer, or an error.
pub(crate) fn unsigned(
    sink: &mut Sink<'_>,
    value: &Value<'_>,
    what: impl fmt::Display + Copy,
) -> Option<u64> {
    at_least(sink, value, what, 0, "a non-negative integer")
}

/// A positive integer, or an error (zero, negative, too large or another type).
pub(crate) fn positive(
    sink: &mut Sink<'_>,
    value: &Value<'_>,
    what: impl fmt::Display + Copy,
) -> Option<u64> {
    at_least(sink, value, what, 1, "a positive integer")
}

/// An integer of at least `min`, or an error saying `what` must be `expected`.
fn at_least(
    sink: &mut Sink<'_>,
    value: &Value<'_>,
    what: impl fmt::Display + Copy,
    min: i64,
    expected: &str,
) -> Option<u64> {
    let found = match value.get_ref() {
        DeValue::Integer(_) => match int_of(value.get_ref()) {
            // Not negative, by `min`.
            Some(n) if n >= min => return u64::try_from(n).ok(),
            _ => format!("`{}`", &sink.source[value.span()]),
        },
        other => type_name(other).to_owned(),
    };
    sink.error(
        value.span(),
        format!("{what} must be {expected}, found {found}"),
    );
    None
}

/// A table, or a type error.
pub(crate) fn table<'a, 'i>(
    sink: &mut Sink<'_>,
    value: &'a Value<'i>,
    what: impl fmt::Display + Copy,
) -> Option<&'a DeTable<'i>> {
    match value.get_ref() {
        DeValue::Table(t) => Some(t),
        other => {
            sink.error(
                value.span(),
                format!("{what} must be a table, found {}", type_name(other)),
            );
            None
        }
    }
}

/// An array, or a type error.
pub(crate) fn array<'a, 'i>(
    sink: &mut Sink<'_>,
    value: &'a Value<'i>,
    what: impl fmt::Display + Copy,
) -> Option<&'a [Value<'i>]> {
    match value.get_ref() {
        DeValue::Array(a) => Some(&a[..]),
        other => {
            sink.error(
                value.span(),
                format!("{what} must be an array, found {}", type_name(other)),
            );
            None
        }
    }
}

/// Converts a TOML value to JSON, keeping table order; datetimes become strings.
pub(crate) fn to_json(
    sink: &mut Sink<'_>,
    value: &Value<'_>,
    what: impl fmt::Display + Copy,
) -> Option<serde_json::Value> {
    use serde_json::Value as J;
    Some(match value.get_ref() {
        DeValue::String(s) => J::String(s.to_string()),
        DeValue::Integer(_) => match int_of(value.get_ref()) {
            Some(n) => J::from(n),
            None => {
                sink.error(value.span(), format!("{what}: integer out of range"));
                return None;
            }
        },
        DeValue::Float(f) => {
            let parsed: Option<f64> = f.as_str().replace('_', "").parse().ok();
            match parsed.and_then(serde_json::Number::from_f64) {
                Some(n) => J::Number(n),
                None => {
                    sink.error(
                        value.span(),
                        format!("{what}: `{}` cannot be represented in JSON", f.as_str()),
                    );
                    return None;
                }
            }
        }
        DeValue::Boolean(b) => J::Bool(*b),
        DeValue::Datetime(d) => J::String(d.to_string()),
        DeValue::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items.iter() {
                out.push(to_json(sink, item, what)?);
            }
            J::Array(out)
        }
        DeValue::Table(t) => J::Object(table_to_json(sink, t, what)?),
    })
}

/// Converts a TOML table to a JSON object, keeping order.
pub(crate) fn table_to_json(
    sink: &mut Sink<'_>,
    table: &DeTable<'_>,
    what: impl fmt::Display + Copy,
) -> Option<serde_json::Map<String, serde_json::Value>> {
    let mut map = serde_json::Map::new();
    let mut ok = true;
    for (k, v) in table.iter() {
        match to_json(sink, v, what) {
            Some(j) => {
                map.insert(k.get_ref().to_string(), j);
            }
            None => ok = false,
        }
    }
    ok.then_some(map)
}
