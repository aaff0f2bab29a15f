//! Generation: the builder, its setters and the `Options` impl, inside `const _: () = {}`
//! so nothing but the impl is visible outside.

use std::collections::BTreeSet;

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote};
use syn::Ident;
use syn::ext::IdentExt;

use super::model::{DefaultFrom, Field, Model};
use crate::ctxt::Ctxt;

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

/// The names of the generated items, none of them an identifier of the input.
struct Names {
    /// The builder struct, `<Type>Options`.
    builder: Ident,
    /// The builder's type parameter holding the required options.
    state: Ident,
    /// The builder's field of that type.
    required_field: Ident,
    /// The setters' type parameter for the value.
    value_param: Ident,
    /// The binding of the container's default in `__build`.
    default_var: Ident,
}

/// The model with its generated names: what every generated piece reads.
struct Expansion<'a> {
    model: &'a Model,
    /// The struct's name as written (without `r#`), for messages.
    type_name: String,
    names: Names,
    /// Every option field, in declaration order.
    planned: Vec<Planned<'a>>,
}

/// Plans the generated names of `model`, reporting two options written alike in
/// `resolvers!`; then, when nothing was reported, expands into the `Options` impl and its
/// hidden builder.
pub(crate) fn expand(ctxt: &Ctxt, model: &Model) -> Option<TokenStream> {
    let expansion = Expansion::plan(ctxt, model);
    if ctxt.has_errors() {
        return None;
    }
    Some(expansion.tokens())
}

impl<'a> Expansion<'a> {
    /// The generated names of the builder and of each option.
    fn plan(ctxt: &Ctxt, model: &'a Model) -> Self {
        let ty = &model.ident;
        let type_name = ty.unraw().to_string();
        let mut fresh = Fresh {
            taken: model.taken.clone(),
        };
        let call = Span::call_site();
        let names = Names {
            builder: fresh.ident(&format!("{type_name}Options"), ty.span()),
            state: fresh.ident("Required", call),
            required_field: fresh.ident("__required", call),
            value_param: fresh.ident("V", call),
            default_var: fresh.ident("__default", call),
        };
        let container_default = model.container_default.is_some();
        let mut seen_setters: Vec<(String, String)> = Vec::new();
        let mut planned = Vec::new();
        let mut required_count = 0;
        for field in model.fields.iter().filter(|f| f.is_option()) {
            let setters = setters_of(ctxt, field, &mut seen_setters);
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
        Self {
            model,
            type_name,
            names,
            planned,
        }
    }

    /// The required options, in declaration order.
    fn required(&self) -> Vec<&Planned<'a>> {
        self.planned
            .iter()
            .filter(|p| p.required.is_some())
            .collect()
    }

    /// The other options, kept in the builder as `Option`s.
    fn stored(&self) -> Vec<&Planned<'a>> {
        self.planned
            .iter()
            .filter(|p| p.required.is_none())
            .collect()
    }

    /// Everything, inside `const _: () = { ... };`.
    fn tokens(&self) -> TokenStream {
        let builder_struct = self.builder_struct();
        let traits = self.planned.iter().map(|p| self.option_traits(p));
        let setters = self.planned.iter().map(|p| self.setters(p));
        let (impl_params, self_ty) = self.builder_impl_head();
        let build = self.build_fn();
        let options_impl = self.options_impl();
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

                    #build
                }

                #options_impl
            };
        }
    }

    /// The builder: the required options in a tuple type parameter, the others as
    /// `Option`s.
    fn builder_struct(&self) -> TokenStream {
        let Names {
            builder,
            state,
            required_field,
            ..
        } = &self.names;
        let stored_fields = self.stored().into_iter().map(|p| {
            let (member, ty) = (&p.field.member, &p.field.ty);
            quote!(#member: ::core::option::Option<#ty>)
        });
        if self.required().is_empty() {
            quote! {
                pub struct #builder { #(#stored_fields,)* }
            }
        } else {
            quote! {
                pub struct #builder<#state> { #required_field: #state, #(#stored_fields,)* }
            }
        }
    }

    /// The generic parameters and the type of the builder's inherent impl.
    fn builder_impl_head(&self) -> (TokenStream, TokenStream) {
        let builder = &self.names.builder;
        let required = self.required();
        if required.is_empty() {
            return (quote!(), quote!(#builder));
        }
        let params: Vec<&Ident> = required
            .iter()
            .filter_map(|p| p.required.as_ref().map(|(_, param, _)| param))
            .collect();
        (quote!(<#(#params,)*>), quote!(#builder<(#(#params,)*)>))
    }

    /// The name `resolvers!` writes the option with: its first setter, else its serde name.
    fn written(p: &Planned<'_>) -> String {
        p.setters
            .first()
            .map_or_else(|| p.field.names[0].clone(), |s| s.unraw().to_string())
    }

    /// Per option: the value trait, and for a required one the trait `__build` needs.
    fn option_traits(&self, p: &Planned<'_>) -> TokenStream {
        let krate = &self.model.krate;
        let type_name = &self.type_name;
        let value_param = &self.names.value_param;
        let value_ty = p.field.value_ty();
        let shown = type_text(value_ty.to_token_stream());
        let written = Self::written(p);
        let message =
            format!("option `{written}` of `{type_name}` takes `{shown}`, not `{{Self}}`");
        let label = format!("expected `{shown}`");
        let value_trait = &p.value_trait;
        let mut tokens = quote! {
            #[diagnostic::on_unimplemented(message = #message, label = #label)]
            pub trait #value_trait: #krate::OptionValue<#value_ty> {}
            #[diagnostic::do_not_recommend]
            impl<#value_param: #krate::OptionValue<#value_ty>> #value_trait for #value_param {}
        };
        if let Some((_, _, needs)) = &p.required {
            let field_ty = &p.field.ty;
            let message = format!("`{type_name}` needs the option `{written}`");
            let label = format!("missing `{written} = ...`");
            tokens.extend(quote! {
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
        tokens
    }

    /// The setters of one option, one per name.
    fn setters(&self, p: &Planned<'_>) -> TokenStream {
        let krate = &self.model.krate;
        let value_param = &self.names.value_param;
        let value_ty = p.field.value_ty();
        let converted =
            quote!(<#value_param as #krate::OptionValue<#value_ty>>::into_option(value));
        let converted = if p.field.option_of.is_some() {
            quote!(::core::option::Option::Some(#converted))
        } else {
            converted
        };
        p.setters
            .iter()
            .map(|setter| match &p.required {
                None => self.stored_setter(p, setter, &converted),
                Some((at, _, _)) => self.required_setter(p, setter, *at, &converted),
            })
            .collect()
    }

    /// The setter of an optional option: stores the value, same builder type.
    fn stored_setter(
        &self,
        p: &Planned<'_>,
        setter: &Ident,
        converted: &TokenStream,
    ) -> TokenStream {
        let value_param = &self.names.value_param;
        let value_trait = &p.value_trait;
        let member = &p.field.member;
        quote! {
            pub fn #setter<#value_param: #value_trait>(mut self, value: #value_param) -> Self {
                self.#member = ::core::option::Option::Some(#converted);
                self
            }
        }
    }

    /// The setter of a required option: the builder whose tuple has the value at this
    /// option's position.
    fn required_setter(
        &self,
        p: &Planned<'_>,
        setter: &Ident,
        at: usize,
        converted: &TokenStream,
    ) -> TokenStream {
        let Names {
            builder,
            required_field,
            value_param,
            ..
        } = &self.names;
        let value_trait = &p.value_trait;
        let required = self.required();
        let bindings: Vec<Ident> = (0..required.len())
            .map(|i| format_ident!("__s{}", i))
            .collect();
        let out_types = required.iter().map(|r| match &r.required {
            Some((i, _, _)) if *i == at => r.field.ty.to_token_stream(),
            Some((_, param, _)) => param.to_token_stream(),
            None => TokenStream::new(),
        });
        let values = bindings.iter().enumerate().map(|(i, b)| {
            if i == at {
                quote!(#converted)
            } else {
                quote!(#b)
            }
        });
        let patterns = bindings
            .iter()
            .enumerate()
            .map(|(i, b)| if i == at { quote!(_) } else { quote!(#b) });
        let moved = self.stored().into_iter().map(|s| {
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

    /// `__build`: every field, from the builder or from serde's default.
    fn build_fn(&self) -> TokenStream {
        let model = self.model;
        let ty = &model.ident;
        let Names {
            required_field,
            default_var,
            ..
        } = &self.names;
        let required = self.required();
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
        let inits = model.fields.iter().map(|field| self.field_init(field));
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
        quote! {
            pub fn __build(self) -> #ty #build_where {
                #take_required
                #make_default
                #construct
            }
        }
    }

    /// One field of the struct `__build` returns: a required option from the tuple, an
    /// optional one from the builder or its default, any other field from its default.
    fn field_init(&self, field: &Field) -> TokenStream {
        let member = &field.member;
        let container_default = self.model.container_default.is_some();
        let missing = missing_value(field, container_default, &self.names.default_var);
        match self.planned.iter().find(|p| std::ptr::eq(p.field, field)) {
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
    }

    /// The `Options` impl: the names, the required names, and the empty builder.
    fn options_impl(&self) -> TokenStream {
        let krate = &self.model.krate;
        let ty = &self.model.ident;
        let Names {
            builder,
            required_field,
            ..
        } = &self.names;
        let required = self.required();
        let names = self.planned.iter().map(|p| &p.field.names[0]);
        let required_names = required.iter().map(|p| &p.field.names[0]);
        let unset = required.iter().map(|_| quote!(#krate::__private::Unset));
        let unset_values = required.iter().map(|_| quote!(#krate::__private::Unset));
        let empty_stored = self.stored().into_iter().map(|s| {
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
            impl #krate::Options for #ty {
                const NAMES: &'static [&'static str] = &[#(#names),*];
                const REQUIRED: &'static [&'static str] = &[#(#required_names),*];
                type __Builder = #builder_ty;
                fn __builder() -> Self::__Builder {
                    #builder_value
                }
            }
        }
    }
}

/// The setters of `field`, one per name that is an identifier; a name written as another
/// option's setter is reported instead (`seen` holds each setter written so far and the
/// option name it came from).
fn setters_of(ctxt: &Ctxt, field: &Field, seen: &mut Vec<(String, String)>) -> Vec<Ident> {
    let mut setters = Vec::new();
    for name in &field.names {
        let Some(setter) = setter_ident(name, field.member.span()) else {
            continue;
        };
        let written = setter.unraw().to_string();
        if let Some((_, other)) = seen.iter().find(|(w, _)| *w == written) {
            ctxt.error(
                field.member.span(),
                format!(
                    "the options `{other}` and `{name}` are both written `{written}` in `resolvers!`"
                ),
            );
            continue;
        }
        seen.push((written, name.clone()));
        setters.push(setter);
    }
    setters
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
