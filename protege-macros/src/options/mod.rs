//! `#[derive(Options)]`: a struct's serde options as `resolvers!` sets them.
//!
//! The derive reads the struct and serde's attributes (`model`) and generates, inside an
//! anonymous `const _: () = { ... };` (`expand`):
//!
//! - a builder with one setter per option name (aliases included), named as serde names the
//!   option (a `-` written `_`), so rustc's "a method with a similar name exists" points at
//!   the real name of a misspelt option;
//! - per option, a trait `<Option>Value` whose `on_unimplemented` message names the option
//!   and its type, bounding the setter's value (a wrong value is reported at the value);
//! - per required option, a type parameter of the builder that is `Unset` until the option
//!   is given, and a trait `Needs<Option>` bounding `__build` (a missing option is
//!   reported at the resolver, with the TOML message `` `T` needs the option `x` ``);
//! - the `Options` impl: the names, the required names, and the empty builder.

mod expand;
mod model;

use proc_macro2::TokenStream;

use crate::ctxt::Ctxt;

/// Derives `Options` for a struct with named fields (or a unit struct): read the struct,
/// then, when it was read without a problem, expand it; or every problem found as compile
/// errors.
pub(crate) fn derive(input: syn::DeriveInput) -> TokenStream {
    let ctxt = Ctxt::new();
    let expanded = model::Model::read(&ctxt, &input)
        .filter(|_| !ctxt.has_errors())
        .and_then(|model| expand::expand(&ctxt, &model));
    match ctxt.check() {
        Ok(()) => expanded.unwrap_or_default(),
        Err(e) => e.to_compile_error(),
    }
}
