//! Options into builder calls (`where`, `order_by`, roles, windows and the rest) and the
//! checks of the templates they hold.

use protege_schema::names::{Scope, Trigger};
use protege_schema::{
    Applies, Builtin, Provided, QUOTED, ROLES, WINDOWS, did_you_mean, is_identifier,
};
use quote::quote;
use syn::ext::IdentExt;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, Ident, Lit, LitStr, Token};

use super::{Call, CallArg};
use crate::ast::Named;
use crate::ctxt::Ctxt;

/// The form of `LoadRecord` an option belongs to, from the shared table.
pub(super) fn applies(builtin: &Builtin, key: &Ident) -> Applies {
    builtin
        .option(&key.to_string())
        .map_or(Applies::Always, |o| o.applies)
}

/// `where = { column = value, ... }`: one condition per column, bound as TOML binds it — a
/// string literal is a template rendered and bound as text (`filter_str`), an integer,
/// float or boolean literal is bound with its type (`filter_value`).
pub(super) fn where_calls(option: Named, calls: &mut Vec<Call>, ctxt: &Ctxt) {
    let Some(conditions) = where_conditions(&option.value, ctxt) else {
        return;
    };
    let mut seen: Vec<String> = Vec::new();
    for Condition { column, value } in conditions {
        let name = column.unraw().to_string();
        if !is_identifier(&name) {
            ctxt.error(
                column.span(),
                format!(
                    "invalid column name `{name}`: use ASCII letters, digits and `_`, not starting with a digit"
                ),
            );
            continue;
        }
        if seen.contains(&name) {
            ctxt.error(
                column.span(),
                format!("duplicate column `{name}` in `where`"),
            );
            continue;
        }
        seen.push(name.clone());
        calls.extend(filter_call(&column, &name, value, ctxt));
    }
}

/// The conditions of the `where` table as written; `None` (reported) when the value is
/// not a table of `column = value` pairs.
fn where_conditions(value: &Expr, ctxt: &Ctxt) -> Option<Punctuated<Condition, Token![,]>> {
    let Expr::Verbatim(table) = value else {
        ctxt.error(value.span(), WHERE_TAKES_A_TABLE);
        return None;
    };
    let parser = |input: syn::parse::ParseStream<'_>| {
        let content;
        syn::braced!(content in input);
        Punctuated::<Condition, Token![,]>::parse_terminated(&content)
    };
    parser
        .parse2(table.clone())
        .map_err(|e| ctxt.error(e.span(), e))
        .ok()
}

/// The message for a `where` that is not a table.
const WHERE_TAKES_A_TABLE: &str = "`where` takes a table of conditions, e.g. `where = { email = \"{{ message.from }}\", active = true }`";

/// The call binding one condition: a template as text, a number or boolean with its type;
/// `None` (reported) for any other value.
fn filter_call(column: &Ident, name: &str, value: Expr, ctxt: &Ctxt) -> Option<Call> {
    let (method, value) = match literal(&value) {
        Some(Lit::Str(_)) => {
            check_template(&value, &format!("LoadRecord where.{name}"), None, ctxt);
            ("filter_str", quote!(#value))
        }
        Some(Lit::Int(_)) => ("filter_value", quote!({ let value: i64 = #value; value })),
        Some(Lit::Float(_)) => ("filter_value", quote!({ let value: f64 = #value; value })),
        Some(Lit::Bool(_)) => ("filter_value", quote!(#value)),
        _ => {
            ctxt.error(
                value.span(),
                format!(
                    "`where.{name}` takes a string literal (a template), an integer, a float \
                     or a boolean, as in TOML"
                ),
            );
            return None;
        }
    };
    Some(Call {
        method: Ident::new(method, column.span()),
        arg: CallArg::Filter {
            column: LitStr::new(name, column.span()),
            value,
        },
    })
}

/// One `column = value` of `where`.
struct Condition {
    column: Ident,
    value: Expr,
}

impl syn::parse::Parse for Condition {
    fn parse(input: syn::parse::ParseStream<'_>) -> syn::Result<Self> {
        let column = Ident::parse_any(input).map_err(|e| {
            syn::Error::new(
                e.span(),
                "a `where` condition is `column = value`, the column an identifier",
            )
        })?;
        input.parse::<Token![=]>()?;
        Ok(Self {
            column,
            value: input.parse()?,
        })
    }
}

/// The literal of `expr`, a negative number included (`-1`).
fn literal(expr: &Expr) -> Option<&Lit> {
    match expr {
        Expr::Lit(l) => Some(&l.lit),
        Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => match literal(expr)? {
            l @ (Lit::Int(_) | Lit::Float(_)) => Some(l),
            _ => None,
        },
        Expr::Group(g) => literal(&g.expr),
        Expr::Paren(p) => literal(&p.expr),
        _ => None,
    }
}

/// `order_by = "column [asc|desc]"` or an array of such literals: one call per entry.
pub(super) fn order_calls(option: Named, calls: &mut Vec<Call>, ctxt: &Ctxt) {
    let entries: Vec<&Expr> = match &option.value {
        Expr::Array(a) => a.elems.iter().collect(),
        other => vec![other],
    };
    for entry in entries {
        let Some(lit) = str_literal(entry) else {
            ctxt.error(
                entry.span(),
                "`order_by` takes a string literal such as `\"id desc\"` or an array of them",
            );
            continue;
        };
        let text = lit.value();
        let words: Vec<&str> = text.split_whitespace().collect();
        let desc = match words.as_slice() {
            [_] => Some(false),
            [_, dir] if dir.eq_ignore_ascii_case("asc") => Some(false),
            [_, dir] if dir.eq_ignore_ascii_case("desc") => Some(true),
            _ => None,
        };
        let Some(desc) = desc else {
            ctxt.error(
                lit.span(),
                format!("`order_by` entry `{text}` is not `column`, `column asc` or `column desc`"),
            );
            continue;
        };
        calls.push(Call {
            method: option.key.clone(),
            arg: CallArg::Order {
                column: LitStr::new(words[0], lit.span()),
                desc,
            },
        });
    }
}

/// Turns `key = value` into a builder call; a role option takes a bare role word.
pub(super) fn option_call(n: Named, role: bool, ctxt: &Ctxt) -> Option<Call> {
    if role
        && let Expr::Path(p) = &n.value
        && p.qself.is_none()
        && let Some(word) = p.path.get_ident()
    {
        let written = word.to_string();
        let Some(variant) = ROLES
            .iter()
            .find(|w| **w == written)
            .map(|w| capitalized(w))
        else {
            let valid = list(&ROLES);
            let message = match did_you_mean(&written, ROLES) {
                Some(s) => {
                    format!("unknown role `{written}`, did you mean `{s}`? (roles: {valid})")
                }
                None => format!("unknown role `{written}` (roles: {valid})"),
            };
            ctxt.error(word.span(), message);
            return None;
        };
        return Some(Call {
            method: n.key,
            arg: CallArg::Role(Ident::new(&variant, word.span())),
        });
    }
    Some(Call {
        method: n.key,
        arg: CallArg::Expr(n.value),
    })
}

/// An option whose value is one of a few words: a bare word or the same as a string
/// literal, expanded as a variant of a type of protege.
pub(super) struct Words {
    /// The option.
    pub(super) option: &'static str,
    /// The type whose variants the words name.
    pub(super) ty: &'static str,
    /// The words, as written.
    pub(super) words: &'static [&'static str],
    /// How an unknown word is named: "window" gives "unknown window `x`".
    pub(super) what: &'static str,
    /// How the list of words is named: "windows" gives "(windows: ...)".
    pub(super) plural: &'static str,
}

/// `window = stable`.
pub(super) const WINDOW: Words = Words {
    option: "window",
    ty: "Window",
    words: &WINDOWS,
    what: "window",
    plural: "windows",
};

/// `quoted = strip`.
pub(super) const QUOTED_MODE: Words = Words {
    option: "quoted",
    ty: "Quoted",
    words: &QUOTED,
    what: "`quoted` mode",
    plural: "modes",
};

/// The variant of `value`, one of `spec`'s words (`window = stable`, `quoted = "strip"`);
/// anything else is an error listing the valid words.
pub(super) fn word_variant(value: &Expr, spec: &Words, ctxt: &Ctxt) -> Option<Ident> {
    let (written, span) = match value {
        Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
            let word = p.path.get_ident()?;
            (word.to_string(), word.span())
        }
        other => match str_literal(other) {
            Some(lit) => (lit.value(), lit.span()),
            None => {
                let [first, second] = [spec.words[spec.words.len() - 1], spec.words[0]];
                ctxt.error(
                    other.span(),
                    format!(
                        "`{}` takes `{first}` or `{second}`, e.g. `{} = {first}`",
                        spec.option, spec.option
                    ),
                );
                return None;
            }
        },
    };
    match spec.words.iter().find(|w| **w == written) {
        Some(word) => Some(Ident::new(&capitalized(word), span)),
        None => {
            let valid = list(spec.words);
            let (what, plural) = (spec.what, spec.plural);
            let message = match did_you_mean(&written, spec.words.iter().copied()) {
                Some(s) => {
                    format!("unknown {what} `{written}`, did you mean `{s}`? ({plural}: {valid})")
                }
                None => format!("unknown {what} `{written}` ({plural}: {valid})"),
            };
            ctxt.error(span, message);
            None
        }
    }
}

pub(super) fn str_literal(expr: &Expr) -> Option<&LitStr> {
    match expr {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(s),
        Expr::Group(g) => str_literal(&g.expr),
        Expr::Paren(p) => str_literal(&p.expr),
        _ => None,
    }
}

pub(super) fn is_template(text: &str) -> bool {
    text.contains("{{") || text.contains("{%")
}

/// Parses a string-literal template with minijinja; a syntax error points at the literal.
/// Then checks the names it uses (a built-in's own variable, such as `record`, only where
/// `provided` is it): the chain's
/// trigger and the persona's `[vars]` are not known at compile time, so `message`,
/// `responsibility` and `persona.vars.X` are taken as they come.
pub(super) fn check_template(expr: &Expr, what: &str, provided: Option<Provided>, ctxt: &Ctxt) {
    let Some(lit) = str_literal(expr) else {
        return;
    };
    let source = lit.value();
    let env = minijinja::Environment::new();
    if let Err(e) = env.template_from_str(&source) {
        let detail = e.detail().map(|d| format!(": {d}")).unwrap_or_default();
        let message = match e.line() {
            Some(line) => format!("{what} has a syntax error on line {line}{detail}"),
            None => format!("{what} has a syntax error{detail}"),
        };
        ctxt.error(lit.span(), message);
        return;
    }
    let scope = Scope {
        trigger: Trigger::Either,
        provided,
        vars: None,
    };
    let problems = protege_schema::names::check(&source, &scope, |name, candidates| {
        did_you_mean(name, candidates.iter().copied()).map(str::to_owned)
    });
    for p in problems {
        ctxt.error(lit.span(), format!("{what} line {}: {}", p.line, p.message));
    }
}

/// A duration option (`within = "3d"`): a string literal is read as in TOML at compile time
/// and becomes a `std::time::Duration` of its seconds; any other expression is passed as
/// it is (a `Duration` of the user's).
pub(super) fn duration_call(n: Named, ctxt: &Ctxt) -> Option<Call> {
    let Some(lit) = str_literal(&n.value) else {
        return Some(Call {
            method: n.key,
            arg: CallArg::Expr(n.value),
        });
    };
    let text = lit.value();
    match protege_schema::parse_duration(&text) {
        Ok(d) => Some(Call {
            method: n.key,
            arg: CallArg::Seconds(d.as_secs(), lit.span()),
        }),
        Err(protege_schema::DurationError::TooLong) => {
            ctxt.error(
                lit.span(),
                format!(
                    "`{}` must be at most {} days, found `{text}`",
                    n.key,
                    protege_schema::DURATION_MAX_DAYS
                ),
            );
            None
        }
        Err(protege_schema::DurationError::Malformed) => {
            ctxt.error(
                lit.span(),
                format!(
                    "`{}` must be a duration: a positive integer and a unit `s`, `m`, `h` or `d`, such as `\"90s\"` or `\"2d\"`; found `{text}`",
                    n.key
                ),
            );
            None
        }
    }
}

/// `system` as the variant name `System`.
fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

pub(super) fn list(words: &[&str]) -> String {
    words
        .iter()
        .map(|w| format!("`{w}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
