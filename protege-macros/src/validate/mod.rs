//! Checking: turns the parsed items into a plan that cannot be wrong in ways rustc would
//! not see (unknown or duplicate options, argument order, bare roles, template syntax, the
//! names templates use), collecting every problem as one combined `syn::Error`.

use proc_macro2::{Span, TokenStream};
use protege_schema::builtin;
use syn::spanned::Spanned;
use syn::{Expr, ExprPath, Ident, LitStr, TypePath};

use crate::ast::{Arg, Invocation, Item, Named};
use crate::ctxt::Ctxt;

mod calls;
mod forms;

use calls::option_call;
use forms::Form;

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
    /// `T::new()` for a built-in of named options only (`ThreadHistory::new()`).
    New(Ident),
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
    /// A duration read at compile time: `std::time::Duration::from_secs(N)`, spanned at the
    /// user's literal.
    Seconds(u64, proc_macro2::Span),
    /// A word naming a variant (`window = stable`, `quoted = strip`, or the same as a
    /// string): the type (`Window`, `Quoted`) and the variant, spanned at the user's word.
    Word(&'static str, Ident),
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

/// Checks the whole invocation, reporting every problem found to `ctxt`; the plan holds
/// the items that could be planned.
pub(crate) fn check(ctxt: &Ctxt, input: Invocation) -> Plan {
    if input.items.is_empty() {
        ctxt.error(
            Span::call_site(),
            "`resolvers!` needs at least one resolver, e.g. `use LoadText(\"You are {{ persona.name }}.\");`",
        );
    }
    if let Some(extra) = input.items.get(MAX_RESOLVERS) {
        ctxt.error(
            extra.use_token.span,
            format!(
                "a chain holds at most {MAX_RESOLVERS} resolvers and this is resolver {}; \
                 combine some in a resolver of your own",
                MAX_RESOLVERS + 1
            ),
        );
    }
    let resolvers = input
        .items
        .into_iter()
        .filter_map(|item| check_item(item, ctxt))
        .collect();
    Plan { resolvers }
}

/// The arguments of one item after the order and duplicate checks.
struct Sorted {
    positional: Vec<Expr>,
    named: Vec<Named>,
}

/// Splits an item's arguments into positional and named ones, reporting a positional
/// argument after a named one and a duplicate option.
fn sort_args(item: &mut Item, ctxt: &Ctxt) -> Sorted {
    let mut sorted = Sorted {
        positional: Vec::new(),
        named: Vec::new(),
    };
    let list = item.args.take().map(|a| a.list).unwrap_or_default();
    for arg in list {
        match arg {
            Arg::Positional(expr) => {
                if let Some(first) = sorted.named.first() {
                    ctxt.error(
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
                    ctxt.error(
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

/// Checks one item: a built-in by the shared table, a user type by the shape written.
fn check_item(mut item: Item, ctxt: &Ctxt) -> Option<Planned> {
    let span = item.path_span();
    let builtin = item
        .short_name()
        .and_then(|id| builtin(&id.to_string()).map(|b| (b, id.span())))
        .map(|(b, at)| (b, Ident::new(b.name, at)));
    let had_parens = item.args.is_some();
    let braces = item.args.as_ref().is_some_and(|a| a.braces);
    let paren_span = item.args.as_ref().map(|a| a.delim_span);
    let Sorted { positional, named } = sort_args(&mut item, ctxt);
    if braces {
        // Options in braces are named, like the keys of a TOML entry.
        for p in &positional {
            ctxt.error(
                p.span(),
                "options in braces are named, as in a TOML entry: write `name = value`",
            );
        }
    }
    let Some((builtin, ident)) = builtin else {
        let shape = if braces {
            Shape::Braces
        } else if had_parens {
            Shape::Parens(positional)
        } else {
            Shape::Bare
        };
        return Some(user_type(item.path, shape, named, ctxt));
    };
    let positional = if braces { Vec::new() } else { positional };
    let missing_at = paren_span.unwrap_or(span);
    let mut form = Form::new(builtin, ident, positional, named, missing_at, ctxt);
    let ctor = form.ctor(ctxt)?;
    let calls = form.into_calls(ctxt);
    Some(Planned { span, ctor, calls })
}

/// How a user type's arguments were written.
enum Shape {
    /// `use my::Type;`: the path is the value.
    Bare,
    /// `use my::Type(positional..., key = value...);`: `new`, then builder calls.
    Parens(Vec<Expr>),
    /// `use my::Type { key = value };`: the `Options` builder.
    Braces,
}

/// A user type: in braces, options set through its `Options` builder; in parentheses,
/// positional arguments go to `new` and options become builder calls.
fn user_type(path: ExprPath, shape: Shape, named: Vec<Named>, ctxt: &Ctxt) -> Planned {
    let span = path.span();
    let mut calls = Vec::with_capacity(named.len());
    for mut n in named {
        if n.key == "where" {
            if let Expr::Verbatim(table) = &n.value {
                ctxt.error(
                    table.span(),
                    "a `{ column = value }` table is the value of `LoadRecord`'s `where` only",
                );
                continue;
            }
            // An option named `where` is the method `r#where`.
            n.key = Ident::new_raw("where", n.key.span());
        }
        let role = n.key == "role";
        calls.extend(option_call(n, role, ctxt));
    }
    let ctor = match shape {
        Shape::Braces => {
            let ExprPath { qself, path, .. } = path;
            Ctor::UserOptions(TypePath { qself, path })
        }
        Shape::Parens(positional) => Ctor::UserNew(path, positional),
        Shape::Bare => Ctor::UserValue(path),
    };
    Planned { span, ctor, calls }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use protege_schema::{BUILTINS, Form};

    /// The errors of one invocation, as written.
    fn errors(source: &str) -> Vec<String> {
        let tokens: proc_macro2::TokenStream = source.parse().expect("tokens");
        let invocation: crate::ast::Invocation = syn::parse2(tokens).expect("an invocation");
        let ctxt = crate::ctxt::Ctxt::new();
        super::check(&ctxt, invocation);
        match ctxt.check() {
            Ok(()) => Vec::new(),
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
                    let base = if builtin.form == Form::Source && *name != "table" {
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
