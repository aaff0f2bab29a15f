//! Generation: the builder, its setters and the `Options` impl, inside `const _: () = {}`
//! so nothing but the impl is visible outside.

use std::collections::BTreeSet;

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote};
use syn::Ident;
use syn::ext::IdentExt;

use super::model::{DefaultFrom, Field, Model};

/// Names for generated items that no identifier of the input uses, so a user type called
/// `Required` or `StatusesValue` is never shadowed inside the generated block.
struct Fresh {
    taken: BTreeSet<String>,
}

impl Fresh {
    fn ident(&mut self, base: &str, span: Span) -> Ident {
        let mut name = base.to_owned();
        while self.taken.contains(&name) {
            name.push('_');
        }
        self.taken.insert(name.clone());
        Ident::new(&name, span)
    }
}

/// One option field, with its generated names.
struct Planned<'a> {
    field: &'a Field,
    /// The setter of each name (the serde name, then the aliases) that is a Rust identifier.
    setters: Vec<Ident>,
    /// The trait bounding the setters' value.
    value_trait: Ident,
    /// For a required option: its position among the required ones, the impl's type
    /// parameter for it, and the trait `__build` requires of that parameter.
    required: Option<(usize, Ident, Ident)>,
}

/// Expands the model into the `Options` impl and its hidden builder.
pub(crate) fn expand(model: &Model) -> TokenStream {
    let krate = &model.krate;
    let ty = &model.ident;
    let type_name = ty.unraw().to_string();
    let mut fresh = Fresh {
        taken: model.taken.clone(),
    };
    let call = Span::call_site();
    let builder = fresh.ident(&format!("{type_name}Options"), ty.span());
    let state = fresh.ident("Required", call);
    let required_field = fresh.ident("__required", call);
    let value_param = fresh.ident("V", call);
    let default_var = fresh.ident("__default", call);
    let container_default = model.container_default.is_some();

    let mut errors: Option<syn::Error> = None;
    let mut seen_setters: Vec<(String, String)> = Vec::new();
    let mut planned = Vec::new();
    let mut required_count = 0;
    for field in model.fields.iter().filter(|f| f.is_option()) {
        let mut setters = Vec::new();
        for name in &field.names {
            let Some(setter) = setter_ident(name, field.member.span()) else {
                continue;
            };
            let written = setter.unraw().to_string();
            if let Some((_, other)) = seen_setters.iter().find(|(w, _)| *w == written) {
                let e = syn::Error::new(
                    field.member.span(),
                    format!(
                        "the options `{other}` and `{name}` are both written `{written}` in `resolvers!`"
                    ),
                );
                match &mut errors {
                    Some(all) => all.combine(e),
                    None => errors = Some(e),
                }
                continue;
            }
            seen_setters.push((written, name.clone()));
            setters.push(setter);
        }
        let camel = camel(&field.names[0]);
        let value_trait = fresh.ident(&format!("{camel}Value"), call);
        let required = field.is_required(container_default).then(|| {
            let at = required_count;
            required_count += 1;
            (
                at,
                fresh.ident(&format!("S{at}"), call),
                fresh.ident(&format!("Needs{camel}"), call),
            )
        });
        planned.push(Planned {
            field,
            setters,
            value_trait,
            required,
        });
    }
    if let Some(e) = errors {
        return e.to_compile_error();
    }

    let required: Vec<&Planned<'_>> = planned.iter().filter(|p| p.required.is_some()).collect();
    let params: Vec<&Ident> = required
        .iter()
        .filter_map(|p| p.required.as_ref().map(|(_, param, _)| param))
        .collect();
    let stored: Vec<&Planned<'_>> = planned.iter().filter(|p| p.required.is_none()).collect();

    // The builder: the required options in a tuple type parameter, the others as `Option`s.
    let stored_fields = stored.iter().map(|p| {
        let (member, ty) = (&p.field.member, &p.field.ty);
        quote!(#member: ::core::option::Option<#ty>)
    });
    let builder_struct = if required.is_empty() {
        quote! {
            pub struct #builder { #(#stored_fields,)* }
        }
    } else {
        quote! {
            pub struct #builder<#state> { #required_field: #state, #(#stored_fields,)* }
        }
    };
    let self_ty = if required.is_empty() {
        quote!(#builder)
    } else {
        quote!(#builder<(#(#params,)*)>)
    };
    let impl_params = if required.is_empty() {
        quote!()
    } else {
        quote!(<#(#params,)*>)
    };

    // Per option: the value trait, and for a required one the trait `__build` needs.
    let mut traits = Vec::new();
    for p in &planned {
        let value_ty = p.field.value_ty();
        let shown = type_text(value_ty.to_token_stream());
        let written = p
            .setters
            .first()
            .map_or_else(|| p.field.names[0].clone(), |s| s.unraw().to_string());
        let message =
            format!("option `{written}` of `{type_name}` takes `{shown}`, not `{{Self}}`");
        let label = format!("expected `{shown}`");
        let value_trait = &p.value_trait;
        traits.push(quote! {
            #[diagnostic::on_unimplemented(message = #message, label = #label)]
            pub trait #value_trait: #krate::OptionValue<#value_ty> {}
            #[diagnostic::do_not_recommend]
            impl<#value_param: #krate::OptionValue<#value_ty>> #value_trait for #value_param {}
        });
        if let Some((_, _, needs)) = &p.required {
            let field_ty = &p.field.ty;
            let message = format!("`{type_name}` needs the option `{written}`");
            let label = format!("missing `{written} = ...`");
            traits.push(quote! {
                #[diagnostic::on_unimplemented(message = #message, label = #label)]
                pub trait #needs {
                    fn __take(self) -> #field_ty;
                }
                #[diagnostic::do_not_recommend]
                impl #needs for #field_ty {
                    fn __take(self) -> #field_ty {
                        self
                    }
                }
            });
        }
    }

    // The setters.
    let mut setters = Vec::new();
    for p in &planned {
        let value_ty = p.field.value_ty();
        let value_trait = &p.value_trait;
        let converted =
            quote!(<#value_param as #krate::OptionValue<#value_ty>>::into_option(value));
        let converted = if p.field.option_of.is_some() {
            quote!(::core::option::Option::Some(#converted))
        } else {
            converted
        };
        for setter in &p.setters {
            let tokens = match &p.required {
                None => {
                    let member = &p.field.member;
                    quote! {
                        pub fn #setter<#value_param: #value_trait>(mut self, value: #value_param) -> Self {
                            self.#member = ::core::option::Option::Some(#converted);
                            self
                        }
                    }
                }
                Some((at, _, _)) => {
                    // The tuple with this position replaced by the value.
                    let bindings: Vec<Ident> = (0..required.len())
                        .map(|i| format_ident!("__s{}", i))
                        .collect();
                    let out_types = required.iter().map(|r| match &r.required {
                        Some((i, _, _)) if i == at => r.field.ty.to_token_stream(),
                        Some((_, param, _)) => param.to_token_stream(),
                        None => TokenStream::new(),
                    });
                    let values = bindings.iter().enumerate().map(|(i, b)| {
                        if i == *at {
                            quote!(#converted)
                        } else {
                            quote!(#b)
                        }
                    });
                    let patterns = bindings
                        .iter()
                        .enumerate()
                        .map(|(i, b)| if i == *at { quote!(_) } else { quote!(#b) });
                    let moved = stored.iter().map(|s| {
                        let member = &s.field.member;
                        quote!(#member: self.#member)
                    });
                    quote! {
                        pub fn #setter<#value_param: #value_trait>(self, value: #value_param)
                            -> #builder<(#(#out_types,)*)>
                        {
                            let (#(#patterns,)*) = self.#required_field;
                            #builder {
                                #required_field: (#(#values,)*),
                                #(#moved,)*
                            }
                        }
                    }
                }
            };
            setters.push(tokens);
        }
    }

    // `__build`: every field, from the builder or from serde's default.
    let bounds = required.iter().filter_map(|p| {
        p.required
            .as_ref()
            .map(|(_, param, needs)| quote!(#param: #needs))
    });
    let take_required = if required.is_empty() {
        quote!()
    } else {
        let bindings = (0..required.len()).map(|i| format_ident!("__s{}", i));
        quote!(let (#(#bindings,)*) = self.#required_field;)
    };
    let make_default = match &model.container_default {
        None => quote!(),
        Some(DefaultFrom::Trait) => {
            quote!(let #default_var: #ty = ::core::default::Default::default();)
        }
        Some(DefaultFrom::Path(path)) => quote!(let #default_var: #ty = #path();),
    };
    let inits = model.fields.iter().map(|field| {
        let member = &field.member;
        let missing = missing_value(field, model.container_default.is_some(), &default_var);
        match planned.iter().find(|p| std::ptr::eq(p.field, field)) {
            Some(Planned {
                required: Some((at, _, needs)),
                ..
            }) => {
                let binding = format_ident!("__s{}", at);
                quote!(#member: #needs::__take(#binding))
            }
            Some(_) => quote! {
                #member: match self.#member {
                    ::core::option::Option::Some(value) => value,
                    ::core::option::Option::None => #missing,
                }
            },
            None => quote!(#member: #missing),
        }
    });
    let construct = if model.unit {
        quote!(#ty)
    } else {
        quote!(#ty { #(#inits,)* })
    };
    let build_where = if required.is_empty() {
        quote!()
    } else {
        quote!(where #(#bounds,)*)
    };

    // The `Options` impl.
    let names = planned.iter().map(|p| &p.field.names[0]);
    let required_names = required.iter().map(|p| &p.field.names[0]);
    let unset = required.iter().map(|_| quote!(#krate::__private::Unset));
    let unset_values = required.iter().map(|_| quote!(#krate::__private::Unset));
    let empty_stored = stored.iter().map(|s| {
        let member = &s.field.member;
        quote!(#member: ::core::option::Option::None)
    });
    let (builder_ty, builder_value) = if required.is_empty() {
        (quote!(#builder), quote!(#builder { #(#empty_stored,)* }))
    } else {
        (
            quote!(#builder<(#(#unset,)*)>),
            quote!(#builder { #required_field: (#(#unset_values,)*), #(#empty_stored,)* }),
        )
    };

    quote! {
        #[allow(
            non_camel_case_types,
            non_snake_case,
            missing_docs,
            missing_debug_implementations,
            unreachable_pub,
            unused_mut,
            unused_variables,
            clippy::all
        )]
        const _: () = {
            #builder_struct

            #(#traits)*

            impl #impl_params #self_ty {
                #(#setters)*

                pub fn __build(self) -> #ty #build_where {
                    #take_required
                    #make_default
                    #construct
                }
            }

            impl #krate::Options for #ty {
                const NAMES: &'static [&'static str] = &[#(#names),*];
                const REQUIRED: &'static [&'static str] = &[#(#required_names),*];
                type __Builder = #builder_ty;
                fn __builder() -> Self::__Builder {
                    #builder_value
                }
            }
        };
    }
}

/// The value of a field that was not given: the field's serde default, the container's,
/// `None` for an `Option`, else (for a field serde never reads) `Default::default()`.
fn missing_value(field: &Field, container_default: bool, default_var: &Ident) -> TokenStream {
    let member = &field.member;
    match &field.default {
        Some(DefaultFrom::Trait) => quote!(::core::default::Default::default()),
        Some(DefaultFrom::Path(path)) => quote!(#path()),
        None if container_default => quote!(#default_var.#member),
        None if field.option_of.is_some() && field.is_option() => {
            quote!(::core::option::Option::None)
        }
        None => quote!(::core::default::Default::default()),
    }
}

/// The setter written for option `name`: the name itself (raw for a keyword), with `-` as
/// `_`; `None` when that is not an identifier.
fn setter_ident(name: &str, span: Span) -> Option<Ident> {
    let written = name.replace('-', "_");
    let mut ident = syn::parse_str::<Ident>(&written)
        .or_else(|_| syn::parse_str::<Ident>(&format!("r#{written}")))
        .ok()?;
    if ident == "__build" {
        return None;
    }
    ident.set_span(span);
    Some(ident)
}

/// `max_count`, `maxCount` and `max-count` as `MaxCount`.
fn camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = true;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'O');
    }
    out
}

/// A type as a person writes it: `Vec<String>`, `&'static str`, `[u8; 4]`, `(u32, bool)`.
fn type_text(tokens: TokenStream) -> String {
    let mut out = String::new();
    let mut word_before = false;
    for tree in tokens {
        match tree {
            TokenTree::Ident(i) => {
                if word_before {
                    out.push(' ');
                }
                out.push_str(&i.to_string());
                word_before = true;
            }
            TokenTree::Literal(l) => {
                if word_before {
                    out.push(' ');
                }
                out.push_str(&l.to_string());
                word_before = true;
            }
            TokenTree::Punct(p) => {
                let c = p.as_char();
                out.push(c);
                if c == ',' || c == ';' {
                    out.push(' ');
                }
                word_before = false;
            }
            TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::Brace => ("{", "}"),
                    Delimiter::None => ("", ""),
                };
                if word_before && g.delimiter() == Delimiter::None {
                    out.push(' ');
                }
                out.push_str(open);
                out.push_str(&type_text(g.stream()));
                out.push_str(close);
                word_before = g.delimiter() == Delimiter::None;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::{camel, type_text};

    #[test]
    fn types_read_as_written() {
        assert_eq!(type_text(quote!(Vec<String>)), "Vec<String>");
        assert_eq!(type_text(quote!(&'static str)), "&'static str");
        assert_eq!(
            type_text(quote!(std::collections::BTreeMap<String, Vec<u32>>)),
            "std::collections::BTreeMap<String, Vec<u32>>"
        );
        assert_eq!(type_text(quote!([u8; 4])), "[u8; 4]");
        assert_eq!(type_text(quote!((u32, bool))), "(u32, bool)");
    }

    #[test]
    fn option_names_in_camel_case() {
        assert_eq!(camel("max_count"), "MaxCount");
        assert_eq!(camel("maxCount"), "MaxCount");
        assert_eq!(camel("max-count"), "MaxCount");
        assert_eq!(camel("2fa"), "O2fa");
    }
}
