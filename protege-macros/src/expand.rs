//! Generation: a `StaticChain` over a tuple of resolvers, every path absolute and every
//! user-written token keeping its span.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

use crate::validate::{Call, CallArg, Ctor, Plan, Planned};

/// Expands a checked chain into `<krate>::StaticChain::new((r1, r2, ...))`.
pub(crate) fn expand(krate: &TokenStream, plan: &Plan) -> TokenStream {
    let resolvers = plan.resolvers.iter().map(|r| resolver(krate, r));
    quote! {
        #krate::StaticChain::new((#(#resolvers,)*))
    }
}

/// One resolver expression, wrapped in the `Resolver` check at the user's path so a type
/// that is not a resolver is reported there with the trait's own message.
fn resolver(krate: &TokenStream, planned: &Planned) -> TokenStream {
    let span = planned.span;
    let mut expr = match &planned.ctor {
        Ctor::TextTemplate(ty, source) => quote_spanned!(span=> #krate::#ty::template(#source)),
        Ctor::TextFn(ty, closure) => quote_spanned!(span=> #krate::#ty::from_fn(#closure)),
        Ctor::File(ty, path) => quote_spanned!(span=> #krate::#ty::new(#path)),
        Ctor::History(ty) => quote_spanned!(span=> #krate::#ty::new()),
        Ctor::RecordLoader(ty, loader) => quote_spanned!(span=> #krate::#ty::from_loader(#loader)),
        Ctor::RecordTable(ty, table) => quote_spanned!(span=> #krate::#ty::table(#table)),
        Ctor::UserValue(path) => quote!(#path),
        Ctor::UserNew(path, args) => quote_spanned!(span=> #path::new(#(#args),*)),
    };
    for Call { method, arg } in &planned.calls {
        let arg = match arg {
            CallArg::Expr(e) => quote!(#e),
            CallArg::Role(variant) => quote!(#krate::Role::#variant),
        };
        expr = quote!(#expr.#method(#arg));
    }
    quote_spanned! {span=>
        #krate::__private::resolver(#expr)
    }
}
