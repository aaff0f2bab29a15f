//! The one minijinja setup of protege: semi-strict undefined, no auto-escaping, `slugify`.

use std::sync::Arc;

use minijinja::{AutoEscape, Environment, UndefinedBehavior, Value};

use crate::error::{Error, ErrorKind, Result};

/// Whether `text` is a template (contains `{{` or `{%`) rather than a literal.
pub fn is_template(text: &str) -> bool {
    text.contains("{{") || text.contains("{%")
}

/// Lowercase ASCII letters and digits; every other run of characters becomes one `-`;
/// no leading or trailing `-`. `"Support Team!"` gives `"support-team"`.
pub fn slugify(text: &str) -> String {
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

/// A new environment configured as §4 of the contract says: semi-strict undefined
/// (printing, iterating or filtering an undefined value fails; testing it in `if` is
/// allowed), no auto-escaping, and the `slugify` filter.
pub fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::SemiStrict);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_debug(true);
    env.add_filter("slugify", |s: String| slugify(&s));
    env
}

/// A template compiled once and rendered per run; cheap to clone.
#[derive(Clone)]
pub struct Template {
    env: Arc<Environment<'static>>,
    name: Arc<str>,
    source: Arc<str>,
}

impl std::fmt::Debug for Template {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Template").field(&self.name).finish()
    }
}

impl Template {
    /// Compiles `source` under `name` (the name appears in errors). A syntax error names
    /// the template and the line.
    pub fn compile(name: impl Into<String>, source: impl Into<String>) -> Result<Template> {
        let name: String = name.into();
        let source: String = source.into();
        let mut env = environment();
        env.add_template_owned(name.clone(), source.clone())
            .map_err(|e| template_error(&name, &e))?;
        Ok(Template {
            env: Arc::new(env),
            name: name.into(),
            source: source.into(),
        })
    }

    /// The name given at compile time.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The template source.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Renders with `vars`; an undefined variable names itself, the template and the line.
    pub fn render(&self, vars: &Value) -> Result<String> {
        let tmpl = self
            .env
            .get_template(&self.name)
            .map_err(|e| template_error(&self.name, &e))?;
        tmpl.render(vars)
            .map_err(|e| template_error(&self.name, &e))
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
    if let (Some(range), Some(src)) = (err.range(), err.template_source())
        && let Some(expr) = src.get(range)
        && err.kind() != minijinja::ErrorKind::SyntaxError
    {
        what.push_str(&format!(" `{}`", expr.trim()));
    }
    if let Some(detail) = err.detail() {
        what.push_str(": ");
        what.push_str(detail);
    }
    let line = err.line();
    let detail = match line {
        Some(line) => format!("template `{name}` line {line}: {what}"),
        None => format!("template `{name}`: {what}"),
    };
    let mut error = Error::new(ErrorKind::Template, detail);
    error.set_line(line);
    error
}
