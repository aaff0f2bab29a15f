//! The one minijinja setup of protege: semi-strict undefined, no auto-escaping, `slugify`
//! and `rfc3339`, and a budget on every render (fuel and an output cap).

use std::sync::{Arc, LazyLock, OnceLock};

use minijinja::{AutoEscape, Environment, UndefinedBehavior, Value};

use crate::context::Context;
use crate::error::{Error, ErrorKind, Result};
use crate::limits::{DEFAULT_TEMPLATE_FUEL, TemplateLimits};

/// Whether `text` is a template (contains `{{` or `{%`) rather than a literal.
pub(crate) fn is_template(text: &str) -> bool {
    text.contains("{{") || text.contains("{%")
}

/// Lowercase ASCII letters and digits; every other run of characters becomes one `-`;
/// no leading or trailing `-`. `"Support Team!"` gives `"support-team"`.
pub(crate) fn slugify(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut dash = false;
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c.to_ascii_lowercase());
        } else {
            dash = true;
        }
    }
    out
}

/// A timestamp as a database prints it, as RFC 3339 in UTC with `Z`: `LoadRecord` renders a
/// timestamp as the text its backend returns (PostgreSQL `2026-01-05 11:00:00+01`, MySQL
/// and MariaDB `2026-01-05 10:00:00` in the connection's UTC, SQLite what was stored), and
/// `{{ record.created_at | rfc3339 }}` gives `2026-01-05T10:00:00Z` for each. A time without
/// an offset is taken as UTC (protege's connections read MySQL in UTC); a fraction of a
/// second is kept without trailing zeros. `None` when the text is not a date and time.
pub(crate) fn rfc3339(text: &str) -> Option<String> {
    use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};
    let text = text.trim();
    let utc: DateTime<Utc> = if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        t.to_utc()
    } else if let Ok(t) = DateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f%#z") {
        // PostgreSQL's `+01`, `+05:30` and `+0530` offsets.
        t.to_utc()
    } else {
        ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f"]
            .iter()
            .find_map(|f| NaiveDateTime::parse_from_str(text, f).ok())?
            .and_utc()
    };
    Some(utc.to_rfc3339_opts(SecondsFormat::AutoSi, true))
}

/// At most 40 characters of `text` on one line, for an error that quotes it.
fn one_line(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(40)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().count() > 40 {
        out.push('…');
    }
    out
}

/// A new environment configured the protege way: semi-strict undefined
/// (printing, iterating or filtering an undefined value fails; testing it in `if` is
/// allowed), no auto-escaping, and the `slugify` and `rfc3339` filters; its fuel is
/// [`DEFAULT_TEMPLATE_FUEL`].
///
/// Built once per process and cloned: a clone shares the filters, tests and globals, so a
/// template compiled on its own costs its parse, not a fresh set of built-ins.
pub(crate) fn environment() -> Environment<'static> {
    static BASE: LazyLock<Environment<'static>> = LazyLock::new(|| {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::SemiStrict);
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env.set_debug(true);
        env.set_fuel(Some(DEFAULT_TEMPLATE_FUEL));
        env.add_filter("slugify", |s: String| slugify(&s));
        env.add_filter("rfc3339", |s: String| {
            rfc3339(&s).ok_or_else(|| {
                minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    format!("`{}` is not a date and time", one_line(&s)),
                )
            })
        });
        env
    });
    BASE.clone()
}

/// A template checked once and rendered per run; cheap to clone.
///
/// [`Template::compile`] parses the source, so a syntax error is an error there, when the
/// persona loads. The bytecode is generated from the source at the first render and kept:
/// minijinja's code generator reserves a few kilobytes per template, which a folder of a
/// thousand personas would otherwise hold (and pay to allocate and free on every load and
/// reload) for templates that may never run in this process. Generating it cannot fail
/// once the source has parsed.
#[derive(Clone)]
pub struct Template {
    inner: Arc<Compiled>,
}

struct Compiled {
    name: String,
    source: String,
    /// Boxed: most templates of a loaded persona set never render in a process, and an
    /// empty `OnceLock<Box<_>>` is one word where an environment is hundreds of bytes.
    env: OnceLock<Box<Environment<'static>>>,
}

impl std::fmt::Debug for Template {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Template").field(&self.inner.name).finish()
    }
}

impl Template {
    /// Compiles `source` under `name` (the name appears in errors). A syntax error names
    /// the template and the line.
    pub fn compile(name: impl Into<String>, source: impl Into<String>) -> Result<Template> {
        Self::compile_inspecting(name, source, |_| ()).map(|(template, ())| template)
    }

    /// [`Template::compile`], handing the syntax tree to `inspect` on the way (minijinja's
    /// unstable `machinery` AST): a caller that walks the tree, such as a check of the names
    /// the template uses, needs no second parse.
    pub fn compile_inspecting<T>(
        name: impl Into<String>,
        source: impl Into<String>,
        inspect: impl FnOnce(&minijinja::machinery::ast::Stmt<'_>) -> T,
    ) -> Result<(Template, T)> {
        let name: String = name.into();
        let source: String = source.into();
        // The same parse (function, syntax and file name) as minijinja's own compile, so
        // the error is the one compiling would give.
        let inspected = match minijinja::machinery::parse(&source, &name, Default::default()) {
            Ok(tree) => inspect(&tree),
            Err(e) => return Err(template_error(&name, &e)),
        };
        let template = Template {
            inner: Arc::new(Compiled {
                name,
                source,
                env: OnceLock::new(),
            }),
        };
        Ok((template, inspected))
    }

    /// The name given at compile time.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The template source.
    pub fn source(&self) -> &str {
        &self.inner.source
    }

    /// The environment holding this template's bytecode, generated at the first call.
    fn env(&self) -> Result<&Environment<'static>> {
        if let Some(env) = self.inner.env.get() {
            return Ok(env);
        }
        let mut env = environment();
        env.add_template_owned(self.inner.name.clone(), self.inner.source.clone())
            .map_err(|e| template_error(&self.inner.name, &e))?;
        // Two first renders at once both generate; the first stored wins, which is the same.
        Ok(self.inner.env.get_or_init(|| Box::new(env)))
    }

    /// Renders with `vars` under the default [`TemplateLimits`]; an undefined variable
    /// names itself, the template and the line.
    pub fn render(&self, vars: &Value) -> Result<String> {
        self.render_limited(vars, TemplateLimits::default())
    }

    /// Renders with `vars` under `limits`.
    pub fn render_limited(&self, vars: &Value, limits: TemplateLimits) -> Result<String> {
        self.render_bounded(vars, limits, None)
    }

    /// Renders with `vars` in a run: under the limits of `ctx` (the persona's `[limits]`
    /// over the [`AppConfig`](crate::AppConfig)), naming the persona when a limit is hit.
    pub fn render_in(&self, ctx: &Context, vars: &Value) -> Result<String> {
        self.render_bounded(vars, ctx.template_limits(), Some(&ctx.persona().name))
    }

    fn render_bounded(
        &self,
        vars: &Value,
        limits: TemplateLimits,
        persona: Option<&str>,
    ) -> Result<String> {
        // The compiled environment carries the default fuel; another budget needs a copy
        // (cheap: templates, filters and globals are shared).
        let compiled = self.env()?;
        let other;
        let env = if compiled.fuel() == Some(limits.fuel) {
            compiled
        } else {
            let mut env = compiled.clone();
            env.set_fuel(Some(limits.fuel));
            other = env;
            &other
        };
        let tmpl = env
            .get_template(&self.inner.name)
            .map_err(|e| template_error(&self.inner.name, &e))?;
        let mut out = CappedOutput {
            bytes: Vec::new(),
            cap: limits.output_bytes,
            over: false,
        };
        let rendered = tmpl.render_captured_to(vars, &mut out).map(drop);
        let who = match persona {
            Some(p) => format!("template `{}` of persona `{p}`", self.inner.name),
            None => format!("template `{}`", self.inner.name),
        };
        if out.over {
            return Err(Error::new(
                ErrorKind::TemplateBudget,
                format!(
                    "{who} exceeded its output limit (`template_output_bytes` limit {})",
                    limits.output_bytes
                ),
            ));
        }
        match rendered {
            Ok(()) => String::from_utf8(out.bytes).map_err(|_| {
                Error::new(
                    ErrorKind::Template,
                    format!("{who} wrote output that is not valid UTF-8"),
                )
            }),
            Err(e) if e.kind() == minijinja::ErrorKind::OutOfFuel => Err(Error::new(
                ErrorKind::TemplateBudget,
                format!(
                    "{who} ran out of fuel (`template_fuel` limit {})",
                    limits.fuel
                ),
            )),
            Err(e) => Err(template_error(&self.inner.name, &e)),
        }
    }
}

/// The output of a render, refusing every write past `cap` so that a runaway template
/// stops at the cap instead of filling memory.
struct CappedOutput {
    bytes: Vec<u8>,
    cap: usize,
    over: bool,
}

impl std::io::Write for CappedOutput {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len().saturating_add(buf.len()) > self.cap {
            self.over = true;
            return Err(std::io::Error::other("template output limit reached"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Turns a minijinja error into a protege error naming the template, line and, for an
/// undefined value, the expression.
pub(crate) fn template_error(name: &str, err: &minijinja::Error) -> Error {
    let mut what = match err.kind() {
        minijinja::ErrorKind::SyntaxError => "syntax error".to_owned(),
        minijinja::ErrorKind::UndefinedError => "undefined value".to_owned(),
        minijinja::ErrorKind::UnknownFilter => "unknown filter".to_owned(),
        minijinja::ErrorKind::UnknownTest => "unknown test".to_owned(),
        minijinja::ErrorKind::UnknownFunction => "unknown function".to_owned(),
        minijinja::ErrorKind::InvalidOperation => "invalid operation".to_owned(),
        minijinja::ErrorKind::BadSerialization => "bad value".to_owned(),
        _ => "error".to_owned(),
    };
    let undefined = err.kind() == minijinja::ErrorKind::UndefinedError;
    match err.detail() {
        // minijinja names the undefined value itself: "`message.subject` is undefined" (the
        // only detail it gives an undefined value).
        Some(detail) if undefined => what = detail.to_owned(),
        detail => {
            if let (Some(range), Some(src)) = (err.range(), err.template_source())
                && let Some(expr) = src.get(range)
                && err.kind() != minijinja::ErrorKind::SyntaxError
            {
                what.push_str(&format!(" `{}`", expr.trim()));
            }
            if let Some(detail) = detail {
                what.push_str(": ");
                what.push_str(detail);
            }
        }
    }
    Error::new(ErrorKind::Template, what).in_template(name, err.line())
}

#[cfg(test)]
mod tests {
    use super::{rfc3339, slugify};

    #[test]
    fn rfc3339_reads_each_backends_timestamps() {
        let cases = [
            ("2026-01-05 10:00:00+00", "2026-01-05T10:00:00Z"),
            ("2026-01-05 11:00:00+01", "2026-01-05T10:00:00Z"),
            ("2026-01-05 15:30:00.25+05:30", "2026-01-05T10:00:00.250Z"),
            ("2026-01-05 10:00:00", "2026-01-05T10:00:00Z"),
            ("2026-01-05 10:00:00.123456", "2026-01-05T10:00:00.123456Z"),
            ("2026-01-05T12:00:00+02:00", "2026-01-05T10:00:00Z"),
            ("2026-01-05T10:00:00Z", "2026-01-05T10:00:00Z"),
            ("2026-01-05T10:00:00", "2026-01-05T10:00:00Z"),
        ];
        for (text, want) in cases {
            assert_eq!(rfc3339(text).as_deref(), Some(want), "{text}");
        }
        for text in ["", "2026-01-05", "yesterday", "2026-13-05 10:00:00"] {
            assert_eq!(rfc3339(text), None, "{text}");
        }
    }

    #[test]
    fn rfc3339_filter_names_what_it_cannot_read() {
        let t = super::Template::compile("t", "{{ x | rfc3339 }}").unwrap();
        let ok = t
            .render(&minijinja::context! { x => "2026-01-05 11:00:00+01" })
            .unwrap();
        assert_eq!(ok, "2026-01-05T10:00:00Z");
        let err = t
            .render(&minijinja::context! { x => "next\nweek" })
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "template `t` line 1: invalid operation `rfc3339`: `next week` is not a date and time"
        );
    }

    #[test]
    fn slugify_rules() {
        assert_eq!(slugify("Support Team!"), "support-team");
        assert_eq!(slugify("  --Hello,  World--  "), "hello-world");
        assert_eq!(slugify("Café Lumière 2"), "caf-lumi-re-2");
        assert_eq!(slugify("!!!"), "");
    }
}
