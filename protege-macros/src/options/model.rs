//! Reading: the struct and what serde's attributes say about each field — the names a TOML
//! entry uses, the default of an omitted option, whether it is an option at all.

use std::collections::BTreeSet;

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::ext::IdentExt;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{
    Data, DeriveInput, ExprPath, Fields, GenericArgument, Ident, LitStr, PathArguments, Type,
};

use crate::ctxt::Ctxt;

/// The struct, read.
pub(crate) struct Model {
    /// The struct's name.
    pub(crate) ident: Ident,
    /// The path generated code reaches the `Options` trait through (`::protege`).
    pub(crate) krate: syn::Path,
    /// Where omitted fields come from when the container says `#[serde(default)]`.
    pub(crate) container_default: Option<DefaultFrom>,
    /// The fields, in declaration order; empty for a unit struct.
    pub(crate) fields: Vec<Field>,
    /// Whether the struct is a unit struct (`struct Signature;`).
    pub(crate) unit: bool,
    /// Every identifier of the input, so generated names avoid them.
    pub(crate) taken: BTreeSet<String>,
}

/// A default: `Default::default()` or a function.
pub(crate) enum DefaultFrom {
    /// `#[serde(default)]`.
    Trait,
    /// `#[serde(default = "path")]`, the path spanned at the literal.
    Path(ExprPath),
}

/// One field.
pub(crate) struct Field {
    /// The field's identifier.
    pub(crate) member: Ident,
    /// The field's type.
    pub(crate) ty: Type,
    /// `T` when the type is written `Option<T>`.
    pub(crate) option_of: Option<Type>,
    /// The serde name, then the aliases; empty for a skipped field.
    pub(crate) names: Vec<String>,
    /// `#[serde(default)]` or `#[serde(default = "...")]` on the field.
    pub(crate) default: Option<DefaultFrom>,
    /// `#[serde(deserialize_with = "...")]` or `#[serde(with = "...")]`: a missing value is
    /// an error for serde even when the type is an `Option`.
    pub(crate) custom_deserialize: bool,
}

impl Field {
    /// Whether serde deserialises the field at all.
    pub(crate) fn is_option(&self) -> bool {
        !self.names.is_empty()
    }

    /// Whether an entry must give the field: serde has no default for it.
    pub(crate) fn is_required(&self, container_default: bool) -> bool {
        self.is_option()
            && self.default.is_none()
            && !container_default
            && (self.option_of.is_none() || self.custom_deserialize)
    }

    /// The type a setter takes (the inner type of an `Option`).
    pub(crate) fn value_ty(&self) -> &Type {
        self.option_of.as_ref().unwrap_or(&self.ty)
    }
}

/// serde's `rename_all` rules, applied to a field name as serde does.
#[derive(Clone, Copy)]
enum RenameRule {
    Lower,
    Upper,
    Pascal,
    Camel,
    Snake,
    ScreamingSnake,
    Kebab,
    ScreamingKebab,
}

impl RenameRule {
    const ALL: [(&'static str, Self); 8] = [
        ("lowercase", Self::Lower),
        ("UPPERCASE", Self::Upper),
        ("PascalCase", Self::Pascal),
        ("camelCase", Self::Camel),
        ("snake_case", Self::Snake),
        ("SCREAMING_SNAKE_CASE", Self::ScreamingSnake),
        ("kebab-case", Self::Kebab),
        ("SCREAMING-KEBAB-CASE", Self::ScreamingKebab),
    ];

    fn parse(lit: &LitStr) -> syn::Result<Self> {
        let text = lit.value();
        Self::ALL
            .iter()
            .find(|(name, _)| *name == text)
            .map(|(_, rule)| *rule)
            .ok_or_else(|| {
                let valid: Vec<String> = Self::ALL.iter().map(|(n, _)| format!("`{n}`")).collect();
                syn::Error::new(
                    lit.span(),
                    format!(
                        "unknown `rename_all` rule `{text}` (rules: {})",
                        valid.join(", ")
                    ),
                )
            })
    }

    fn apply(self, field: &str) -> String {
        match self {
            Self::Lower | Self::Snake => field.to_owned(),
            Self::Upper | Self::ScreamingSnake => field.to_ascii_uppercase(),
            Self::Pascal => {
                let mut out = String::with_capacity(field.len());
                let mut capitalize = true;
                for c in field.chars() {
                    if c == '_' {
                        capitalize = true;
                    } else if capitalize {
                        out.push(c.to_ascii_uppercase());
                        capitalize = false;
                    } else {
                        out.push(c);
                    }
                }
                out
            }
            Self::Camel => {
                let pascal = Self::Pascal.apply(field);
                let mut chars = pascal.chars();
                match chars.next() {
                    Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
                    None => pascal,
                }
            }
            Self::Kebab => field.replace('_', "-"),
            Self::ScreamingKebab => field.to_ascii_uppercase().replace('_', "-"),
        }
    }
}

/// What the container's attributes say: the path to the crate, serde's `rename_all` and
/// `default`.
struct ContainerAttrs {
    krate: syn::Path,
    rename_all: Option<RenameRule>,
    default: Option<DefaultFrom>,
}

impl ContainerAttrs {
    /// Reads `#[protege(crate = "...")]` and the `#[serde(...)]` keys the derive needs,
    /// reporting each attribute that cannot be read or is not supported.
    fn read(ctxt: &Ctxt, input: &DeriveInput) -> Self {
        let mut attrs = Self {
            krate: syn::parse_quote!(::protege),
            rename_all: None,
            default: None,
        };
        for attr in &input.attrs {
            if attr.path().is_ident("protege") {
                ctxt.extend(attr.parse_nested_meta(|meta| attrs.protege_key(&meta)));
            } else if attr.path().is_ident("serde") {
                ctxt.extend(attr.parse_nested_meta(|meta| attrs.serde_key(&meta)));
            }
        }
        attrs
    }

    /// One key of `#[protege(...)]`: `crate = "path"`.
    fn protege_key(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        if meta.path.is_ident("crate") {
            self.krate = meta.value()?.parse::<LitStr>()?.parse()?;
            Ok(())
        } else {
            Err(meta.error("expected `crate = \"path\"`"))
        }
    }

    /// One key of the container's `#[serde(...)]`.
    fn serde_key(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        let Some(key) = meta.path.get_ident().map(Ident::to_string) else {
            return skip(meta);
        };
        match key.as_str() {
            "rename_all" => {
                if let Some(lit) = deserialize_name(meta)? {
                    self.rename_all = Some(RenameRule::parse(&lit)?);
                }
                Ok(())
            }
            "default" => {
                self.default = Some(default_from(meta)?);
                Ok(())
            }
            "from" | "try_from" | "transparent" | "remote" => Err(meta.error(format!(
                "`protege::Options` sets the struct's own fields, so it does not \
                 support `#[serde({key})]`"
            ))),
            _ => skip(meta),
        }
    }
}

impl Model {
    /// Reads the struct and its serde attributes, reporting every problem to `ctxt`;
    /// `None` when the input is not a struct with named fields (or a unit struct).
    pub(crate) fn read(ctxt: &Ctxt, input: &DeriveInput) -> Option<Self> {
        if !input.generics.params.is_empty() || input.generics.where_clause.is_some() {
            ctxt.error(
                input.generics.span(),
                "`protege::Options` is derived for structs without generic parameters",
            );
        }
        let attrs = ContainerAttrs::read(ctxt, input);
        let Some((named, unit)) = named_fields(input) else {
            ctxt.error(
                input.ident.span(),
                "`protege::Options` needs a struct with named fields: one option per field",
            );
            return None;
        };
        let mut taken = BTreeSet::new();
        collect_idents(quote::ToTokens::to_token_stream(input), &mut taken);
        let fields = named
            .into_iter()
            .filter_map(|field| ctxt.ok(read_field(field, attrs.rename_all, &mut taken)))
            .collect();
        if let Some(DefaultFrom::Path(p)) = &attrs.default {
            collect_idents(quote::ToTokens::to_token_stream(p), &mut taken);
        }
        Some(Self {
            ident: input.ident.clone(),
            krate: attrs.krate,
            container_default: attrs.default,
            fields,
            unit,
            taken,
        })
    }
}

/// The fields of a struct with named fields, or none of a unit struct (and `true`);
/// `None` for any other input.
fn named_fields(input: &DeriveInput) -> Option<(Vec<&syn::Field>, bool)> {
    let Data::Struct(s) = &input.data else {
        return None;
    };
    match &s.fields {
        Fields::Named(named) => Some((named.named.iter().collect(), false)),
        Fields::Unit => Some((Vec::new(), true)),
        Fields::Unnamed(_) => None,
    }
}

/// Reads one field: its serde names, its default, and whether serde reads it at all.
fn read_field(
    field: &syn::Field,
    rename_all: Option<RenameRule>,
    taken: &mut BTreeSet<String>,
) -> syn::Result<Field> {
    let member = field
        .ident
        .clone()
        .ok_or_else(|| syn::Error::new(field.span(), "a named field"))?;
    let mut rename = None;
    let mut aliases = Vec::new();
    let mut default = None;
    let mut skipped = false;
    let mut custom_deserialize = false;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| {
            let Some(key) = meta.path.get_ident().map(Ident::to_string) else {
                return skip(&meta);
            };
            match key.as_str() {
                "rename" => {
                    if let Some(lit) = deserialize_name(&meta)? {
                        rename = Some(lit.value());
                    }
                    Ok(())
                }
                "alias" => {
                    aliases.push(meta.value()?.parse::<LitStr>()?.value());
                    Ok(())
                }
                "default" => {
                    default = Some(default_from(&meta)?);
                    Ok(())
                }
                "skip" | "skip_deserializing" => {
                    skipped = true;
                    Ok(())
                }
                "deserialize_with" | "with" => {
                    custom_deserialize = true;
                    skip(&meta)
                }
                "flatten" => Err(meta.error(
                    "`protege::Options` does not support `#[serde(flatten)]`: \
                     write the flattened options as fields of this struct",
                )),
                _ => skip(&meta),
            }
        })?;
    }
    if let Some(DefaultFrom::Path(p)) = &default {
        collect_idents(quote::ToTokens::to_token_stream(p), taken);
    }
    let unraw = member.unraw().to_string();
    let names = if skipped {
        Vec::new()
    } else {
        let name = rename.unwrap_or_else(|| match rename_all {
            Some(rule) => rule.apply(&unraw),
            None => unraw.clone(),
        });
        std::iter::once(name).chain(aliases).collect()
    };
    Ok(Field {
        option_of: option_inner(&field.ty),
        member,
        ty: field.ty.clone(),
        names,
        default,
        custom_deserialize,
    })
}

/// The deserialisation name of `rename = "x"` or `rename(deserialize = "x")`; `None` when
/// only the serialisation name is given.
fn deserialize_name(meta: &ParseNestedMeta<'_>) -> syn::Result<Option<LitStr>> {
    if meta.input.peek(syn::Token![=]) {
        return Ok(Some(meta.value()?.parse()?));
    }
    let mut name = None;
    meta.parse_nested_meta(|inner| {
        if inner.path.is_ident("deserialize") {
            name = Some(inner.value()?.parse()?);
            Ok(())
        } else {
            skip(&inner)
        }
    })?;
    Ok(name)
}

/// `default` or `default = "path"`.
fn default_from(meta: &ParseNestedMeta<'_>) -> syn::Result<DefaultFrom> {
    if !meta.input.peek(syn::Token![=]) {
        return Ok(DefaultFrom::Trait);
    }
    let lit: LitStr = meta.value()?.parse()?;
    let mut path: ExprPath = lit.parse()?;
    // Spanned at the literal, so an error about the function points there.
    let tokens = respan(quote::ToTokens::to_token_stream(&path), lit.span());
    path = syn::parse2(tokens)?;
    Ok(DefaultFrom::Path(path))
}

/// Consumes an attribute argument this derive does not need (`= value` or `(...)`).
fn skip(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<TokenStream>()?;
    }
    Ok(())
}

/// `T` when `ty` is written `Option<T>` (or `std::option::Option<T>`), as serde sees it.
fn option_inner(ty: &Type) -> Option<Type> {
    let Type::Path(p) = ty else {
        return None;
    };
    if p.qself.is_some() {
        return None;
    }
    let last = p.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first() {
        Some(GenericArgument::Type(inner)) if args.args.len() == 1 => Some(inner.clone()),
        _ => None,
    }
}

fn collect_idents(tokens: TokenStream, into: &mut BTreeSet<String>) {
    for tree in tokens {
        match tree {
            TokenTree::Ident(i) => {
                into.insert(i.unraw().to_string());
            }
            TokenTree::Group(g) => collect_idents(g.stream(), into),
            _ => {}
        }
    }
}

fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tree| {
            if let TokenTree::Group(g) = &tree {
                let mut group = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                tree = TokenTree::Group(group);
            } else {
                tree.set_span(span);
            }
            tree
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{Model, RenameRule};

    fn errors(input: syn::DeriveInput) -> Vec<String> {
        let ctxt = crate::ctxt::Ctxt::new();
        Model::read(&ctxt, &input);
        match ctxt.check() {
            Ok(()) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn what_the_derive_cannot_read_is_reported_together() {
        assert_eq!(
            errors(syn::parse_quote! {
                #[serde(from = "Raw", rename_all = "Title Case")]
                struct Orders<T> {
                    #[serde(flatten)]
                    extra: T,
                }
            }),
            [
                "`protege::Options` is derived for structs without generic parameters",
                "`protege::Options` sets the struct's own fields, so it does not support `#[serde(from)]`",
                "`protege::Options` does not support `#[serde(flatten)]`: write the flattened options as fields of this struct",
            ]
        );
        assert_eq!(
            errors(syn::parse_quote! {
                #[serde(rename_all = "Title Case")]
                struct Orders(u32);
            }),
            [
                "unknown `rename_all` rule `Title Case` (rules: `lowercase`, `UPPERCASE`, `PascalCase`, `camelCase`, `snake_case`, `SCREAMING_SNAKE_CASE`, `kebab-case`, `SCREAMING-KEBAB-CASE`)",
                "`protege::Options` needs a struct with named fields: one option per field",
            ]
        );
    }

    #[test]
    fn names_defaults_and_required_options_follow_serde() {
        let ctxt = crate::ctxt::Ctxt::new();
        let model = Model::read(
            &ctxt,
            &syn::parse_quote! {
                #[serde(rename_all(serialize = "UPPERCASE", deserialize = "kebab-case"))]
                struct Orders {
                    max_count: u32,
                    #[serde(rename(deserialize = "tone"), alias = "voice")]
                    style: Option<String>,
                    #[serde(deserialize_with = "parse", default)]
                    after: Option<u64>,
                    #[serde(with = "seconds")]
                    every: Option<u64>,
                    #[serde(skip_deserializing)]
                    cache: Vec<u8>,
                }
            },
        );
        ctxt.check().unwrap_or_else(|e| panic!("{e}"));
        let model = model.expect("a struct with named fields");
        let read: Vec<(Vec<String>, bool)> = model
            .fields
            .iter()
            .map(|f| (f.names.clone(), f.is_required(false)))
            .collect();
        let expected: Vec<(Vec<String>, bool)> = vec![
            (vec!["max-count".into()], true),
            (vec!["tone".into(), "voice".into()], false),
            (vec!["after".into()], false),
            (vec!["every".into()], true),
            (vec![], false),
        ];
        assert_eq!(read, expected);
    }

    #[test]
    fn rename_rules_match_serde() {
        let cases = [
            (RenameRule::Lower, "max_count"),
            (RenameRule::Upper, "MAX_COUNT"),
            (RenameRule::Pascal, "MaxCount"),
            (RenameRule::Camel, "maxCount"),
            (RenameRule::Snake, "max_count"),
            (RenameRule::ScreamingSnake, "MAX_COUNT"),
            (RenameRule::Kebab, "max-count"),
            (RenameRule::ScreamingKebab, "MAX-COUNT"),
        ];
        for (rule, expected) in cases {
            assert_eq!(rule.apply("max_count"), expected);
        }
    }
}
