//! The `resolvers!` macro of protege: a chain of resolvers declared in Rust, checked at
//! compile time and expanded to a statically typed `StaticChain`.
//!
//! Use it through `protege::resolvers!`, which documents the grammar; this crate holds
//! the implementation: parse (`ast`), check (`validate`), generate (`expand`).

mod ast;
mod expand;
mod validate;

use proc_macro::TokenStream;

/// Builds a statically typed chain of resolvers; see `protege::resolvers!` for the
/// grammar. Generated paths start with `::protege_core` unless the input starts with
/// `$crate;` (what the `resolvers!` forwarder of `protege-core` passes).
#[proc_macro]
pub fn resolvers(input: TokenStream) -> TokenStream {
    let invocation = syn::parse_macro_input!(input as ast::Invocation);
    let krate = invocation.krate.clone();
    match validate::check(invocation) {
        Ok(plan) => expand::expand(&krate, &plan).into(),
        // A block, so several errors are several statements in expression position.
        Err(e) => {
            let errors = e.to_compile_error();
            quote::quote!({ #errors }).into()
        }
    }
}
