//! The `resolvers!` macro of protege: a chain of resolvers declared in Rust, checked at
//! compile time and expanded to a statically typed `StaticChain`.
//!
//! Use it through `protege::resolvers!`, which documents the grammar; this crate holds
//! the implementation: parse (`ast`), check (`validate`), generate (`expand`), every
//! problem reported to one collector (`ctxt`). The `Options` derive (`options`) gives a
//! struct the options `resolvers!` sets in braces.

mod ast;
mod ctxt;
mod expand;
mod options;
mod validate;

use proc_macro::TokenStream;

/// Builds a statically typed chain of resolvers; see `protege::resolvers!` for the
/// grammar. Generated paths start with `::protege_core` unless the input starts with
/// `$crate;` (what the `resolvers!` forwarder of `protege-core` passes).
#[proc_macro]
pub fn resolvers(input: TokenStream) -> TokenStream {
    let invocation = syn::parse_macro_input!(input as ast::Invocation);
    expand::resolvers(invocation).into()
}

/// Derives `protege::Options` for a struct that derives `serde::Deserialize`: the option
/// names, defaults and types serde gives a TOML entry, set by name in `resolvers!`
/// (`use OpenOrders { statuses = ["packing"] };`). See `protege::Options`.
#[proc_macro_derive(Options, attributes(serde, protege))]
pub fn derive_options(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    options::derive(input).into()
}
