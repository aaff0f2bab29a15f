//! Parsing: the raw shape of a `resolvers!` invocation, before any check.
//!
//! ```text
//! input  := [ "$crate" ";" ] item*
//! item   := "use" PATH [ "(" args ")" | "{" args "}" ] ";"
//! args   := [ arg { "," arg } [ "," ] ]
//! arg    := IDENT "=" EXPR        (a named option)
//!         | "where" "=" "{" [ IDENT "=" EXPR { "," IDENT "=" EXPR } [ "," ] ] "}"
//!         | EXPR                  (a positional argument)
//! ```

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprPath, Ident, Token, token};

/// A whole invocation: the crate to generate paths against, then the items.
pub(crate) struct Invocation {
    /// `$crate` when called through `protege_core::resolvers!`, else `::protege_core`.
    pub(crate) krate: TokenStream,
    /// The `use` items, in declaration order.
    pub(crate) items: Vec<Item>,
}

/// One `use PATH;`, `use PATH(args);` or `use PATH { options };`.
pub(crate) struct Item {
    /// The `use` keyword (its span marks the whole item in errors).
    pub(crate) use_token: Token![use],
    /// The resolver: a built-in short name or a path to a user type.
    pub(crate) path: ExprPath,
    /// The arguments in parentheses or braces, when written.
    pub(crate) args: Option<Args>,
}

/// The argument list of an item, in parentheses or in braces.
pub(crate) struct Args {
    /// The delimiters' span: the place to report a missing argument.
    pub(crate) delim_span: Span,
    /// Braces: the options of a type deriving `Options`, by name.
    pub(crate) braces: bool,
    /// The arguments as written.
    pub(crate) list: Vec<Arg>,
}

/// One argument: positional or `key = value`.
pub(crate) enum Arg {
    /// A positional expression.
    Positional(Expr),
    /// A named option.
    Named(Named),
}

/// A `key = value` option.
pub(crate) struct Named {
    /// The option name, with the user's span.
    pub(crate) key: Ident,
    /// The value expression.
    pub(crate) value: Expr,
}

impl Item {
    /// The span of the resolver path (where type errors about the resolver point).
    pub(crate) fn path_span(&self) -> Span {
        self.path.span()
    }

    /// The single identifier of a plain one-segment path (`LoadText`), if it is one.
    pub(crate) fn short_name(&self) -> Option<&Ident> {
        let p = &self.path;
        if p.qself.is_some() || p.path.leading_colon.is_some() || p.path.segments.len() != 1 {
            return None;
        }
        let seg = &p.path.segments[0];
        seg.arguments.is_none().then_some(&seg.ident)
    }
}

impl Parse for Invocation {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let krate = parse_crate_prefix(input)?;
        let mut items = Vec::new();
        while !input.is_empty() {
            items.push(input.parse()?);
        }
        Ok(Self { krate, items })
    }
}

/// Reads the `$crate ;` prefix that `protege_core::resolvers!` adds, if present.
fn parse_crate_prefix(input: ParseStream<'_>) -> syn::Result<TokenStream> {
    let fork = input.fork();
    let is_crate = fork
        .step(|cursor| match cursor.token_tree() {
            Some((TokenTree::Ident(ident), rest)) if ident == "$crate" => Ok((ident, rest)),
            _ => Err(cursor.error("no crate prefix")),
        })
        .ok()
        .filter(|_| fork.peek(Token![;]));
    match is_crate {
        Some(ident) => {
            input.step(|cursor| {
                let (_, rest) = cursor.token_tree().ok_or_else(|| cursor.error("eof"))?;
                Ok(((), rest))
            })?;
            input.parse::<Token![;]>()?;
            Ok(ident.into_token_stream())
        }
        None => Ok(quote!(::protege_core)),
    }
}

impl Parse for Item {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        if !input.peek(Token![use]) {
            return Err(input.error(
                "expected `use`: each item of `resolvers!` is `use Name;` or `use Name(options);`",
            ));
        }
        let use_token = input.parse()?;
        let path: ExprPath = input.parse()?;
        let args = if input.peek(token::Paren) || input.peek(token::Brace) {
            Some(input.parse()?)
        } else {
            None
        };
        if !input.peek(Token![;]) {
            return Err(input.error("expected `;` after the resolver"));
        }
        input.parse::<Token![;]>()?;
        Ok(Self {
            use_token,
            path,
            args,
        })
    }
}

impl Parse for Args {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let content;
        let (delim_span, braces) = if input.peek(token::Brace) {
            (syn::braced!(content in input).span.join(), true)
        } else {
            (syn::parenthesized!(content in input).span.join(), false)
        };
        let list = Punctuated::<Arg, Token![,]>::parse_terminated(&content)?;
        Ok(Self {
            delim_span,
            braces,
            list: list.into_iter().collect(),
        })
    }
}

impl Parse for Arg {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        if input.peek(Token![where]) && input.peek2(Token![=]) {
            // `where = { column = value, ... }`: the table is kept as written and read by
            // the check of `LoadRecord`.
            let keyword: Token![where] = input.parse()?;
            input.parse::<Token![=]>()?;
            let value = if input.peek(token::Brace) {
                Expr::Verbatim(input.parse::<TokenTree>()?.into_token_stream())
            } else {
                input.parse()?
            };
            return Ok(Self::Named(Named {
                key: Ident::new("where", keyword.span),
                value,
            }));
        }
        let named = input.peek(Ident)
            && input.peek2(Token![=])
            && !input.peek2(Token![==])
            && !input.peek2(Token![=>]);
        if named {
            let key = input.parse()?;
            input.parse::<Token![=]>()?;
            let value = input.parse()?;
            Ok(Self::Named(Named { key, value }))
        } else {
            Ok(Self::Positional(input.parse()?))
        }
    }
}
