//! Checking: turns the parsed items into a plan that cannot be wrong in ways rustc would
//! not see (unknown or duplicate options, argument order, bare roles, template syntax, the
//! names templates use), collecting every problem as one combined `syn::Error`.

use proc_macro2::{Span, TokenStream};
use protege_schema::{Applies, Kind, builtin, did_you_mean};
use syn::spanned::Spanned;
use syn::{Expr, ExprPath, Ident, Lit, LitStr, TypePath};

use crate::ast::{Arg, Invocation, Item, Named};

mod calls;

use calls::{
    Own, applies, check_template, is_template, list, option_call, order_calls, str_literal,
    where_calls, window_variant,
};

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
    /// One `where` condition: the column and the value expression.
    Filter {
        /// The column, spanned at the user's key.
        column: LitStr,
        /// A template literal (`filter_str`) or a typed value (`filter_value`).
        value: TokenStream,
    },
}

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
        .and_then(|id| builtin(&id.to_string()).map(|b| (b, id.span())))
        .map(|(b, at)| (b, Ident::new(b.name, at)));
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
        for mut n in named {
            if n.key == "where" {
                if let Expr::Verbatim(table) = &n.value {
                    errors.push(
                        table.span(),
                        "a `{ column = value }` table is the value of `LoadRecord`'s `where` only",
                    );
                    continue;
                }
                // An option named `where` is the method `r#where`.
                n.key = Ident::new_raw("where", n.key.span());
            }
            let role = n.key == "role";
            calls.extend(option_call(n, role, errors));
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
    let name = builtin.name;
    let missing_at = paren_span.unwrap_or(span);

    // Unknown options, with a suggestion: the names of the shared table.
    let options: Vec<&str> = builtin.rust_names().collect();
    let mut known = Vec::with_capacity(named.len());
    for n in named {
        let key = n.key.to_string();
        if options.contains(&key.as_str()) {
            known.push(n);
            continue;
        }
        let valid = list(&options);
        let message = match did_you_mean(&key, options.iter().copied()) {
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

    let ctor = match name {
        "LoadText" => {
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
        "LoadFile" => {
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
        "ThreadHistory" => {
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
            Ctor::History(ident)
        }
        "ThreadSummary" => {
            if let Some(p) = first {
                errors.push(
                    p.span(),
                    "`ThreadSummary` takes no positional argument; use named options \
                     such as `template = \"Earlier: {{ summary }}\"`",
                );
            }
            Ctor::Summary(ident)
        }
        "LoadRecord" => {
            let table = take("table");
            let order_by = take("order_by");
            let conditions = take("where");
            match (first, table) {
                (Some(_), Some(t)) => {
                    errors.push(
                        t.key.span(),
                        "`LoadRecord` got both a loader closure and `table`: give one",
                    );
                    return None;
                }
                (Some(loader), None) => {
                    let given = named
                        .iter()
                        .map(|n| &n.key)
                        .chain(order_by.as_ref().map(|o| &o.key))
                        .chain(conditions.as_ref().map(|c| &c.key));
                    for key in given.filter(|k| applies(builtin, k) == Applies::Table) {
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
                    for n in named
                        .iter()
                        .filter(|n| applies(builtin, &n.key) == Applies::Loader)
                    {
                        let key = &n.key;
                        errors.push(
                            key.span(),
                            format!(
                                "`{key}` applies to `LoadRecord(loader)`; \
                                 a table's records are rendered by `template`"
                            ),
                        );
                    }
                    if let Some(c) = conditions {
                        where_calls(c, &mut extra, errors);
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
            }
        }
        other => {
            errors.push(span, format!("`{other}` has no form in `resolvers!`"));
            return None;
        }
    };
    // The options left are read by their kind in the shared table.
    let own = match name {
        "LoadRecord" => Own::Record,
        "ThreadSummary" => Own::Summary,
        _ => Own::Nothing,
    };
    let mut calls = extra;
    for mut n in named {
        let kind = builtin.option(&n.key.to_string()).map(|o| o.kind);
        match kind {
            Some(Kind::Template) => {
                check_template(&n.value, &format!("{name} template"), own, errors);
                n.key = Ident::new("template_str", n.key.span());
            }
            Some(Kind::Step) => {
                if let Expr::Lit(syn::ExprLit {
                    lit: Lit::Int(int), ..
                }) = &n.value
                    && int.base10_digits() == "0"
                {
                    errors.push(int.span(), "`step` must be at least 1");
                }
            }
            _ => {}
        }
        calls.extend(option_call(n, kind == Some(Kind::Role), errors));
    }
    Some(Planned { span, ctor, calls })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use protege_schema::BUILTINS;

    /// The errors of one invocation, as written.
    fn errors(source: &str) -> Vec<String> {
        let tokens: proc_macro2::TokenStream = source.parse().expect("tokens");
        let invocation: crate::ast::Invocation = syn::parse2(tokens).expect("an invocation");
        match super::check(invocation) {
            Ok(_) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    /// Every option of the shared table, written as its `resolvers!` example, is accepted.
    #[test]
    fn every_option_of_the_shared_table_is_accepted() {
        for builtin in BUILTINS {
            for option in builtin.options {
                let item = builtin.rust_item(option);
                assert_eq!(errors(&item), Vec::<String>::new(), "{item}");
            }
        }
    }

    /// The names the macro accepts for each built-in are the table's, no more, no fewer:
    /// every option name of any built-in (and two that are none) is tried on each.
    #[test]
    fn the_macro_accepts_exactly_the_options_of_the_shared_table() {
        let candidates: BTreeSet<&str> = BUILTINS
            .iter()
            .flat_map(|b| b.rust_names())
            .chain(["limt", "colour"])
            .collect();
        for builtin in BUILTINS {
            let accepted: BTreeSet<&str> = candidates
                .iter()
                .copied()
                .filter(|name| {
                    // The table form of `LoadRecord` needs `table`; the others need nothing
                    // that an unknown-option check depends on.
                    let base = if builtin.name == "LoadRecord" && *name != "table" {
                        "table = \"t\", "
                    } else {
                        ""
                    };
                    let item = format!("use {}({base}{name} = 1);", builtin.name);
                    let unknown = format!("unknown option `{name}` for `{}`", builtin.name);
                    !errors(&item).iter().any(|e| e.starts_with(&unknown))
                })
                .collect();
            let expected: BTreeSet<&str> = builtin.rust_names().collect();
            assert_eq!(accepted, expected, "{}", builtin.name);
        }
    }

    #[test]
    fn where_conditions_are_checked_like_toml_ones() {
        assert_eq!(
            errors(
                "use LoadRecord(table = \"accounts\", where = { \
                 email = \"{{ mesage.from }}\", seats = seats(), r#type = \"x\", seats = 5 });"
            ),
            [
                "LoadRecord where.email line 1: unknown template variable `mesage`, did you mean `message`?",
                "`where.seats` takes a string literal (a template), an integer, a float or a boolean, as in TOML",
                "duplicate column `seats` in `where`",
            ]
        );
        assert_eq!(
            errors("use LoadRecord(table = \"t\", where = { \"plan\" = 1 });"),
            ["a `where` condition is `column = value`, the column an identifier"]
        );
        assert_eq!(
            errors(
                "use LoadRecord(load, where = { plan = \"pro\" }); use LoadRecord(table = \"t\", where = \"plan\");"
            ),
            [
                "`where` applies to `LoadRecord(table = ...)`; a loader closure decides itself which records it returns",
                "`where` takes a table of conditions, e.g. `where = { email = \"{{ message.from }}\", active = true }`",
            ]
        );
        assert_eq!(
            errors("use LoadRecord(table = \"t\", where = { plan = \"pro\", plan = \"free\" });"),
            ["duplicate column `plan` in `where`"]
        );
    }
}
