//! Checking: turns the parsed items into a plan that cannot be wrong in ways rustc would
//! not see (unknown or duplicate options, argument order, bare roles, template syntax, the
//! names templates use), collecting every problem as one combined `syn::Error`.

use proc_macro2::Span;
use protege_template_names::{Scope, Trigger};
use syn::spanned::Spanned;
use syn::{Expr, ExprPath, Ident, Lit, LitStr, TypePath};

use crate::ast::{Arg, Invocation, Item, Named};

/// The most resolvers one chain holds (the tuple arities `StaticChain` implements).
pub(crate) const MAX_RESOLVERS: usize = 16;

/// The checked chain, ready to expand.
pub(crate) struct Plan {
    /// One entry per item, in declaration order.
    pub(crate) resolvers: Vec<Planned>,
}

/// One checked resolver: how to construct it, then the builder calls to chain onto it.
pub(crate) struct Planned {
    /// Where errors about the resolver's type point (the user's path).
    pub(crate) span: Span,
    /// The construction expression.
    pub(crate) ctor: Ctor,
    /// Builder calls, in the order written.
    pub(crate) calls: Vec<Call>,
}

/// How a resolver value is constructed.
pub(crate) enum Ctor {
    /// `LoadText::template(expr)`. Each built-in variant carries the type's name spanned
    /// at the user's word.
    TextTemplate(Ident, Expr),
    /// `LoadText::from_fn(expr)`.
    TextFn(Ident, Expr),
    /// `LoadFile::new(expr)`.
    File(Ident, Expr),
    /// `ThreadHistory::new()`.
    History(Ident),
    /// `ThreadSummary::new()`.
    Summary(Ident),
    /// `LoadRecord::from_loader(expr)`.
    RecordLoader(Ident, Expr),
    /// `LoadRecord::table(expr)`.
    RecordTable(Ident, Expr),
    /// A user type used as a value: `my::Type`.
    UserValue(ExprPath),
    /// A user type built with `my::Type::new(positional...)`.
    UserNew(ExprPath, Vec<Expr>),
    /// A user type deriving `Options`, its options set by name: `my::Type { key = value }`.
    UserOptions(TypePath),
}

/// One `.method(arg)` call, spanned at the user's option name.
pub(crate) struct Call {
    /// The method, carrying the span of the option as written.
    pub(crate) method: Ident,
    /// The argument.
    pub(crate) arg: CallArg,
}

/// The argument of a builder call.
pub(crate) enum CallArg {
    /// An expression passed through unchanged.
    Expr(Expr),
    /// A bare role word: the `Role` variant, spanned at the user's word.
    Role(Ident),
    /// A window word (`stable`, `sliding` or the same as a string): the `Window` variant,
    /// spanned at the user's word.
    Window(Ident),
    /// One `order_by` entry, parsed at compile time.
    Order {
        /// The column, spanned at the user's literal.
        column: LitStr,
        /// Descending when true.
        desc: bool,
    },
}

/// The built-in resolvers, by the short name the macro and TOML use.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Builtin {
    LoadText,
    LoadFile,
    LoadRecord,
    ThreadHistory,
    ThreadSummary,
}

impl Builtin {
    fn from_name(name: &str) -> Option<Self> {
        match name {
            "LoadText" | "LoadTextResolver" => Some(Self::LoadText),
            "LoadFile" | "LoadFileResolver" => Some(Self::LoadFile),
            "LoadRecord" | "LoadRecordResolver" => Some(Self::LoadRecord),
            "ThreadHistory" | "ThreadHistoryResolver" => Some(Self::ThreadHistory),
            "ThreadSummary" | "ThreadSummaryResolver" => Some(Self::ThreadSummary),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::LoadText => "LoadText",
            Self::LoadFile => "LoadFile",
            Self::LoadRecord => "LoadRecord",
            Self::ThreadHistory => "ThreadHistory",
            Self::ThreadSummary => "ThreadSummary",
        }
    }

    fn options(self) -> &'static [&'static str] {
        match self {
            Self::LoadText => &["template", "role"],
            Self::LoadFile => &["path", "role"],
            Self::LoadRecord => &[
                "table",
                "template",
                "limit",
                "order_by",
                "render_with",
                "role",
            ],
            Self::ThreadHistory => &[
                "limit",
                "window",
                "step",
                "after_summary",
                "include_tool_calls",
                "result_limit",
                "max_tokens",
            ],
            Self::ThreadSummary => &["template", "role"],
        }
    }
}

const ROLES: [(&str, &str); 4] = [
    ("system", "System"),
    ("user", "User"),
    ("assistant", "Assistant"),
    ("tool", "Tool"),
];

/// Several errors reported together.
#[derive(Default)]
struct Errors(Option<syn::Error>);

impl Errors {
    fn push(&mut self, span: Span, message: impl std::fmt::Display) {
        let err = syn::Error::new(span, message);
        match &mut self.0 {
            Some(all) => all.combine(err),
            None => self.0 = Some(err),
        }
    }
}

/// Checks the whole invocation; every problem found is in the returned error.
pub(crate) fn check(input: Invocation) -> syn::Result<Plan> {
    let mut errors = Errors::default();
    if input.items.is_empty() {
        errors.push(
            Span::call_site(),
            "`resolvers!` needs at least one resolver, e.g. `use LoadText(\"You are {{ persona.name }}.\");`",
        );
    }
    if let Some(extra) = input.items.get(MAX_RESOLVERS) {
        errors.push(
            extra.use_token.span,
            format!(
                "a chain holds at most {MAX_RESOLVERS} resolvers and this is resolver {}; \
                 combine some in a resolver of your own",
                MAX_RESOLVERS + 1
            ),
        );
    }
    let mut resolvers = Vec::with_capacity(input.items.len());
    for item in input.items {
        if let Some(planned) = check_item(item, &mut errors) {
            resolvers.push(planned);
        }
    }
    match errors.0 {
        Some(e) => Err(e),
        None => Ok(Plan { resolvers }),
    }
}

/// The arguments of one item after the order and duplicate checks.
struct Sorted {
    positional: Vec<Expr>,
    named: Vec<Named>,
}

fn sort_args(item: &mut Item, errors: &mut Errors) -> Sorted {
    let mut sorted = Sorted {
        positional: Vec::new(),
        named: Vec::new(),
    };
    let list = item.args.take().map(|a| a.list).unwrap_or_default();
    for arg in list {
        match arg {
            Arg::Positional(expr) => {
                if let Some(first) = sorted.named.first() {
                    errors.push(
                        expr.span(),
                        format!(
                            "positional argument after the named option `{}`: \
                             write positional arguments first",
                            first.key
                        ),
                    );
                }
                sorted.positional.push(expr);
            }
            Arg::Named(named) => {
                if sorted.named.iter().any(|n| n.key == named.key) {
                    errors.push(
                        named.key.span(),
                        format!("duplicate option `{}`", named.key),
                    );
                    continue;
                }
                sorted.named.push(named);
            }
        }
    }
    sorted
}

fn check_item(mut item: Item, errors: &mut Errors) -> Option<Planned> {
    let span = item.path_span();
    let builtin = item
        .short_name()
        .and_then(|id| Builtin::from_name(&id.to_string()).map(|b| (b, id.span())))
        .map(|(b, at)| (b, Ident::new(b.name(), at)));
    let had_parens = item.args.is_some();
    let braces = item.args.as_ref().is_some_and(|a| a.braces);
    let paren_span = item.args.as_ref().map(|a| a.delim_span);
    let Sorted { positional, named } = sort_args(&mut item, errors);
    if braces {
        // Options in braces are named, like the keys of a TOML entry.
        for p in &positional {
            errors.push(
                p.span(),
                "options in braces are named, as in a TOML entry: write `name = value`",
            );
        }
    }
    let Some((builtin, ident)) = builtin else {
        // A user type: in braces, options set through its `Options` builder; in
        // parentheses, positional arguments go to `new` and options become builder calls.
        let mut calls = Vec::with_capacity(named.len());
        for n in named {
            calls.extend(option_call(n, errors));
        }
        let ctor = if braces {
            let ExprPath { qself, path, .. } = item.path;
            Ctor::UserOptions(TypePath { qself, path })
        } else if had_parens {
            Ctor::UserNew(item.path, positional)
        } else {
            Ctor::UserValue(item.path)
        };
        return Some(Planned { span, ctor, calls });
    };
    let positional = if braces { Vec::new() } else { positional };
    let name = builtin.name();
    let missing_at = paren_span.unwrap_or(span);

    // Unknown options, with a suggestion.
    let mut known = Vec::with_capacity(named.len());
    for n in named {
        let key = n.key.to_string();
        if builtin.options().contains(&key.as_str()) {
            known.push(n);
            continue;
        }
        let valid = list(builtin.options());
        let message = match suggest(&key, builtin.options()) {
            Some(s) => format!(
                "unknown option `{key}` for `{name}`, did you mean `{s}`? (valid options: {valid})"
            ),
            None => format!("unknown option `{key}` for `{name}` (valid options: {valid})"),
        };
        errors.push(n.key.span(), message);
    }
    let mut named = known;
    let mut take = |key: &str| {
        let at = named.iter().position(|n| n.key == key)?;
        Some(named.remove(at))
    };
    let mut extra = Vec::new();
    let mut positional = positional.into_iter();
    let first = positional.next();
    for extra in positional {
        errors.push(
            extra.span(),
            format!("`{name}` takes at most one positional argument"),
        );
    }

    let ctor = match builtin {
        Builtin::LoadText => {
            let template = take("template");
            match (first, template) {
                (Some(_), Some(t)) => {
                    errors.push(
                        t.key.span(),
                        "`LoadText` got both a positional argument and `template`: give one",
                    );
                    return None;
                }
                (Some(Expr::Lit(lit)), None) if matches!(lit.lit, Lit::Str(_)) => {
                    check_template(
                        &Expr::Lit(lit.clone()),
                        "LoadText template",
                        Own::Nothing,
                        errors,
                    );
                    Ctor::TextTemplate(ident, Expr::Lit(lit))
                }
                (Some(closure), None) => Ctor::TextFn(ident, closure),
                (None, Some(t)) => {
                    check_template(&t.value, "LoadText template", Own::Nothing, errors);
                    Ctor::TextTemplate(ident, t.value)
                }
                (None, None) => {
                    errors.push(
                        missing_at,
                        "`LoadText` needs a template or a closure, e.g. \
                         `LoadText(template = \"You are {{ persona.name }}.\")`",
                    );
                    return None;
                }
            }
        }
        Builtin::LoadFile => {
            let path = take("path");
            let path = match (first, path) {
                (Some(_), Some(p)) => {
                    errors.push(
                        p.key.span(),
                        "`LoadFile` got both a positional path and `path`: give one",
                    );
                    return None;
                }
                (Some(p), None) => p,
                (None, Some(p)) => p.value,
                (None, None) => {
                    errors.push(
                        missing_at,
                        "`LoadFile` needs a path, e.g. `LoadFile(\"prompts/agent.md\")`",
                    );
                    return None;
                }
            };
            if let Some(lit) = str_literal(&path)
                && is_template(&lit.value())
            {
                check_template(&path, "LoadFile path", Own::Nothing, errors);
            }
            Ctor::File(ident, path)
        }
        Builtin::ThreadHistory => {
            if let Some(p) = first {
                errors.push(
                    p.span(),
                    "`ThreadHistory` takes no positional argument; use named options \
                     such as `limit = 10`",
                );
            }
            if let Some(w) = take("window") {
                let variant = window_variant(&w.value, errors);
                let stable = variant.as_ref().is_some_and(|v| v == "Stable");
                if let Some(variant) = variant {
                    extra.push(Call {
                        method: w.key,
                        arg: CallArg::Window(variant),
                    });
                }
                if !stable && let Some(step) = named.iter().find(|n| n.key == "step") {
                    errors.push(
                        step.key.span(),
                        "`step` applies to a stable window: add `window = stable`",
                    );
                }
            } else if let Some(step) = named.iter().find(|n| n.key == "step") {
                errors.push(
                    step.key.span(),
                    "`step` applies to a stable window: add `window = stable`",
                );
            }
            if let Some(step) = named.iter().find(|n| n.key == "step")
                && let Expr::Lit(syn::ExprLit {
                    lit: Lit::Int(int), ..
                }) = &step.value
                && int.base10_digits() == "0"
            {
                errors.push(int.span(), "`step` must be at least 1");
            }
            Ctor::History(ident)
        }
        Builtin::ThreadSummary => {
            if let Some(p) = first {
                errors.push(
                    p.span(),
                    "`ThreadSummary` takes no positional argument; use named options \
                     such as `template = \"Earlier: {{ summary }}\"`",
                );
            }
            if let Some(t) = named.iter_mut().find(|n| n.key == "template") {
                check_template(&t.value, "ThreadSummary template", Own::Summary, errors);
                t.key = Ident::new("template_str", t.key.span());
            }
            Ctor::Summary(ident)
        }
        Builtin::LoadRecord => {
            let table = take("table");
            let order_by = take("order_by");
            let ctor = match (first, table) {
                (Some(_), Some(t)) => {
                    errors.push(
                        t.key.span(),
                        "`LoadRecord` got both a loader closure and `table`: give one",
                    );
                    return None;
                }
                (Some(loader), None) => {
                    let table_only = named
                        .iter()
                        .map(|n| &n.key)
                        .chain(order_by.as_ref().map(|o| &o.key));
                    for key in table_only.filter(|k| *k == "limit" || *k == "order_by") {
                        errors.push(
                            key.span(),
                            format!(
                                "`{key}` applies to `LoadRecord(table = ...)`; \
                                 a loader closure decides itself which records it returns"
                            ),
                        );
                    }
                    Ctor::RecordLoader(ident, loader)
                }
                (None, Some(t)) => {
                    if let Some(r) = named.iter().find(|n| n.key == "render_with") {
                        errors.push(
                            r.key.span(),
                            "`render_with` applies to `LoadRecord(loader)`; \
                             a table's records are rendered by `template`",
                        );
                    }
                    if let Some(o) = order_by {
                        order_calls(o, &mut extra, errors);
                    }
                    Ctor::RecordTable(ident, t.value)
                }
                (None, None) => {
                    errors.push(
                        missing_at,
                        "`LoadRecord` needs a loader closure or a table, e.g. \
                         `LoadRecord(|ctx| async move { load(ctx).await }, template = \"{{ record.name }}\")`",
                    );
                    return None;
                }
            };
            if let Some(t) = named.iter_mut().find(|n| n.key == "template") {
                check_template(&t.value, "LoadRecord template", Own::Record, errors);
                t.key = Ident::new("template_str", t.key.span());
            }
            ctor
        }
    };
    let mut calls = extra;
    for n in named {
        calls.extend(option_call(n, errors));
    }
    Some(Planned { span, ctor, calls })
}

/// `order_by = "column [asc|desc]"` or an array of such literals: one call per entry.
fn order_calls(option: Named, calls: &mut Vec<Call>, errors: &mut Errors) {
    let entries: Vec<&Expr> = match &option.value {
        Expr::Array(a) => a.elems.iter().collect(),
        other => vec![other],
    };
    for entry in entries {
        let Some(lit) = str_literal(entry) else {
            errors.push(
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
            errors.push(
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

/// Turns `key = value` into a builder call; `role` takes a bare role word.
fn option_call(n: Named, errors: &mut Errors) -> Option<Call> {
    if n.key == "role"
        && let Expr::Path(p) = &n.value
        && p.qself.is_none()
        && let Some(word) = p.path.get_ident()
    {
        let written = word.to_string();
        let Some((_, variant)) = ROLES.iter().find(|(w, _)| *w == written) else {
            let words: Vec<&str> = ROLES.iter().map(|(w, _)| *w).collect();
            let valid = list(&words);
            let message = match suggest(&written, &words) {
                Some(s) => {
                    format!("unknown role `{written}`, did you mean `{s}`? (roles: {valid})")
                }
                None => format!("unknown role `{written}` (roles: {valid})"),
            };
            errors.push(word.span(), message);
            return None;
        };
        return Some(Call {
            method: n.key,
            arg: CallArg::Role(Ident::new(variant, word.span())),
        });
    }
    Some(Call {
        method: n.key,
        arg: CallArg::Expr(n.value),
    })
}

/// The `Window` variant of `window = stable`, `window = sliding` or the same as a string
/// literal; anything else is an error listing the valid words.
fn window_variant(value: &Expr, errors: &mut Errors) -> Option<Ident> {
    const WINDOWS: [(&str, &str); 2] = [("sliding", "Sliding"), ("stable", "Stable")];
    let (written, span) = match value {
        Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
            let word = p.path.get_ident()?;
            (word.to_string(), word.span())
        }
        other => match str_literal(other) {
            Some(lit) => (lit.value(), lit.span()),
            None => {
                errors.push(
                    other.span(),
                    "`window` takes `stable` or `sliding`, e.g. `window = stable`",
                );
                return None;
            }
        },
    };
    match WINDOWS.iter().find(|(w, _)| *w == written) {
        Some((_, variant)) => Some(Ident::new(variant, span)),
        None => {
            let words: Vec<&str> = WINDOWS.iter().map(|(w, _)| *w).collect();
            let valid = list(&words);
            let message = match suggest(&written, &words) {
                Some(s) => {
                    format!("unknown window `{written}`, did you mean `{s}`? (windows: {valid})")
                }
                None => format!("unknown window `{written}` (windows: {valid})"),
            };
            errors.push(span, message);
            None
        }
    }
}

fn str_literal(expr: &Expr) -> Option<&LitStr> {
    match expr {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(s),
        Expr::Group(g) => str_literal(&g.expr),
        Expr::Paren(p) => str_literal(&p.expr),
        _ => None,
    }
}

fn is_template(text: &str) -> bool {
    text.contains("{{") || text.contains("{%")
}

/// The variable a template has beyond the run's own.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Own {
    /// None.
    Nothing,
    /// `record` (a LoadRecord template).
    Record,
    /// `summary` (a ThreadSummary template).
    Summary,
}

/// Parses a string-literal template with minijinja; a syntax error points at the literal.
/// Then checks the names it uses (`record` or `summary` only where `own` says so): the chain's
/// trigger and the persona's `[vars]` are not known at compile time, so `message`,
/// `responsibility` and `persona.vars.X` are taken as they come.
fn check_template(expr: &Expr, what: &str, own: Own, errors: &mut Errors) {
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
        errors.push(lit.span(), message);
        return;
    }
    let scope = Scope {
        trigger: Trigger::Either,
        record: own == Own::Record,
        summary: own == Own::Summary,
        vars: None,
    };
    let problems = protege_template_names::check(&source, &scope, |name, candidates| {
        suggest(name, candidates).map(str::to_owned)
    });
    for p in problems {
        errors.push(lit.span(), format!("{what} line {}: {}", p.line, p.message));
    }
}

/// The closest candidate to `word`, when it is close enough to be a likely typo.
fn suggest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (strsim::damerau_levenshtein(word, c), *c))
        .filter(|(d, c)| *d <= (c.len() / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn list(words: &[&str]) -> String {
    words
        .iter()
        .map(|w| format!("`{w}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
