//! The forms of the built-ins: which arguments each one's constructor takes, which options
//! fit which form, and the builder calls its options become.

use proc_macro2::Span;
use protege_schema::{Applies, Builtin, Form as Shape, Kind, did_you_mean};
use syn::spanned::Spanned;
use syn::{Expr, Ident, Lit};

use super::calls::{
    QUOTED_MODE, WINDOW, applies, check_template, duration_call, is_template, list, option_call,
    order_calls, str_literal, where_calls, word_variant,
};
use super::{Call, CallArg, Ctor};
use crate::ast::Named;
use crate::ctxt::Ctxt;

/// The arguments of one built-in, read against the shared table: the constructor takes
/// what its form needs, the options left become builder calls.
pub(super) struct Form {
    /// The built-in's row of the shared table.
    builtin: &'static Builtin,
    /// The type's name, spanned at the user's word.
    ident: Ident,
    /// The positional argument, until the constructor takes it.
    first: Option<Expr>,
    /// The known options the constructor has not taken.
    named: Vec<Named>,
    /// Where a missing argument is reported: the delimiters, else the path.
    missing_at: Span,
    /// Builder calls the form made of the options it took (`window`, `where`, `order_by`).
    calls: Vec<Call>,
}

impl Form {
    /// Reads the arguments of `builtin`, reporting unknown options (with a suggestion from
    /// the table's names) and every positional argument past the first.
    pub(super) fn new(
        builtin: &'static Builtin,
        ident: Ident,
        positional: Vec<Expr>,
        named: Vec<Named>,
        missing_at: Span,
        ctxt: &Ctxt,
    ) -> Self {
        let named = known_options(builtin, named, ctxt);
        let mut positional = positional.into_iter();
        let first = positional.next();
        for extra in positional {
            ctxt.error(
                extra.span(),
                format!("`{}` takes at most one positional argument", builtin.name),
            );
        }
        Self {
            builtin,
            ident,
            first,
            named,
            missing_at,
            calls: Vec::new(),
        }
    }

    /// Takes the option `key` out of the ones left, if given.
    fn take(&mut self, key: &str) -> Option<Named> {
        let at = self.named.iter().position(|n| n.key == key)?;
        Some(self.named.remove(at))
    }

    /// The constructor of the built-in, by its form in the shared table; `None` when its
    /// arguments do not make one (the problem is reported).
    pub(super) fn ctor(&mut self, ctxt: &Ctxt) -> Option<Ctor> {
        match self.builtin.form {
            Shape::Template => self.load_text(ctxt),
            Shape::Path => self.load_file(ctxt),
            Shape::Source => self.load_record(ctxt),
            Shape::Named => Some(self.named_only(ctxt)),
        }
    }

    /// `LoadText`: a template (positional or `template`) or a closure.
    fn load_text(&mut self, ctxt: &Ctxt) -> Option<Ctor> {
        let ident = self.ident.clone();
        match (self.first.take(), self.take("template")) {
            (Some(_), Some(t)) => {
                ctxt.error(
                    t.key.span(),
                    "`LoadText` got both a positional argument and `template`: give one",
                );
                None
            }
            (Some(Expr::Lit(lit)), None) if matches!(lit.lit, Lit::Str(_)) => {
                check_template(&Expr::Lit(lit.clone()), "LoadText template", None, ctxt);
                Some(Ctor::TextTemplate(ident, Expr::Lit(lit)))
            }
            (Some(closure), None) => Some(Ctor::TextFn(ident, closure)),
            (None, Some(t)) => {
                check_template(&t.value, "LoadText template", None, ctxt);
                Some(Ctor::TextTemplate(ident, t.value))
            }
            (None, None) => {
                ctxt.error(
                    self.missing_at,
                    "`LoadText` needs a template or a closure, e.g. \
                     `LoadText(template = \"You are {{ persona.name }}.\")`",
                );
                None
            }
        }
    }

    /// `LoadFile`: a path (positional or `path`), checked as a template when it is one.
    fn load_file(&mut self, ctxt: &Ctxt) -> Option<Ctor> {
        let path = match (self.first.take(), self.take("path")) {
            (Some(_), Some(p)) => {
                ctxt.error(
                    p.key.span(),
                    "`LoadFile` got both a positional path and `path`: give one",
                );
                return None;
            }
            (Some(p), None) => p,
            (None, Some(p)) => p.value,
            (None, None) => {
                ctxt.error(
                    self.missing_at,
                    "`LoadFile` needs a path, e.g. `LoadFile(\"prompts/agent.md\")`",
                );
                return None;
            }
        };
        if let Some(lit) = str_literal(&path)
            && is_template(&lit.value())
        {
            check_template(&path, "LoadFile path", None, ctxt);
        }
        Some(Ctor::File(self.ident.clone(), path))
    }

    /// A built-in of named options only: no positional argument; a `window` option read as
    /// a word, and a `step` only with a stable window.
    fn named_only(&mut self, ctxt: &Ctxt) -> Ctor {
        let name = self.builtin.name;
        if let Some(p) = self.first.take() {
            let example = self
                .builtin
                .options
                .first()
                .map(|o| format!("; use named options such as `{} = {}`", o.name, o.rust))
                .unwrap_or_default();
            ctxt.error(
                p.span(),
                format!("`{name}` takes no positional argument{example}"),
            );
        }
        let window = self
            .builtin
            .options
            .iter()
            .find(|o| o.kind == Kind::Window)
            .and_then(|o| self.take(o.name));
        let stable = match window {
            Some(w) => {
                let variant = word_variant(&w.value, &WINDOW, ctxt);
                let stable = variant.as_ref().is_some_and(|v| v == "Stable");
                if let Some(variant) = variant {
                    self.calls.push(Call {
                        method: w.key,
                        arg: CallArg::Word(WINDOW.ty, variant),
                    });
                }
                stable
            }
            None => false,
        };
        let steps = self.named.iter().filter(|n| {
            self.builtin
                .option(&n.key.to_string())
                .is_some_and(|o| o.kind == Kind::Step)
        });
        for step in steps.filter(|_| !stable) {
            ctxt.error(
                step.key.span(),
                format!(
                    "`{}` applies to a stable window: add `window = stable`",
                    step.key
                ),
            );
        }
        Ctor::New(self.ident.clone())
    }

    /// `LoadRecord`: a loader closure or a table, and the options of that form only.
    fn load_record(&mut self, ctxt: &Ctxt) -> Option<Ctor> {
        let table = self.take("table");
        let order_by = self.take("order_by");
        let conditions = self.take("where");
        match (self.first.take(), table) {
            (Some(_), Some(t)) => {
                ctxt.error(
                    t.key.span(),
                    "`LoadRecord` got both a loader closure and `table`: give one",
                );
                None
            }
            (Some(loader), None) => {
                let given = self
                    .named
                    .iter()
                    .map(|n| &n.key)
                    .chain(order_by.as_ref().map(|o| &o.key))
                    .chain(conditions.as_ref().map(|c| &c.key));
                for key in given.filter(|k| applies(self.builtin, k) == Applies::Table) {
                    ctxt.error(
                        key.span(),
                        format!(
                            "`{key}` applies to `LoadRecord(table = ...)`; \
                             a loader closure decides itself which records it returns"
                        ),
                    );
                }
                Some(Ctor::RecordLoader(self.ident.clone(), loader))
            }
            (None, Some(t)) => {
                self.record_table(conditions, order_by, ctxt);
                Some(Ctor::RecordTable(self.ident.clone(), t.value))
            }
            (None, None) => {
                ctxt.error(
                    self.missing_at,
                    "`LoadRecord` needs a loader closure or a table, e.g. \
                     `LoadRecord(|ctx| async move { load(ctx).await }, template = \"{{ record.name }}\")`",
                );
                None
            }
        }
    }

    /// The table form of `LoadRecord`: no loader-only option, and the `where` and
    /// `order_by` calls.
    fn record_table(&mut self, conditions: Option<Named>, order_by: Option<Named>, ctxt: &Ctxt) {
        for n in self
            .named
            .iter()
            .filter(|n| applies(self.builtin, &n.key) == Applies::Loader)
        {
            let key = &n.key;
            ctxt.error(
                key.span(),
                format!(
                    "`{key}` applies to `LoadRecord(loader)`; \
                     a table's records are rendered by `template`"
                ),
            );
        }
        if let Some(c) = conditions {
            where_calls(c, &mut self.calls, ctxt);
        }
        if let Some(o) = order_by {
            order_calls(o, &mut self.calls, ctxt);
        }
    }

    /// The builder calls: the form's own, then the options left, each read by its kind in
    /// the shared table.
    pub(super) fn into_calls(self, ctxt: &Ctxt) -> Vec<Call> {
        let name = self.builtin.name;
        let provided = self.builtin.provides;
        let mut calls = self.calls;
        for mut n in self.named {
            let kind = self.builtin.option(&n.key.to_string()).map(|o| o.kind);
            match kind {
                Some(Kind::Template) => {
                    check_template(&n.value, &format!("{name} template"), provided, ctxt);
                    n.key = Ident::new("template_str", n.key.span());
                }
                Some(Kind::Quoted) => {
                    if let Some(variant) = word_variant(&n.value, &QUOTED_MODE, ctxt) {
                        calls.push(Call {
                            method: n.key,
                            arg: CallArg::Word(QUOTED_MODE.ty, variant),
                        });
                    }
                    continue;
                }
                Some(Kind::Duration) => {
                    calls.extend(duration_call(n, ctxt));
                    continue;
                }
                Some(Kind::Step) => {
                    if let Expr::Lit(syn::ExprLit {
                        lit: Lit::Int(int), ..
                    }) = &n.value
                        && int.base10_digits() == "0"
                    {
                        ctxt.error(int.span(), "`step` must be at least 1");
                    }
                }
                _ => {}
            }
            calls.extend(option_call(n, kind == Some(Kind::Role), ctxt));
        }
        calls
    }
}

/// The options of `named` that the built-in has; each other one is reported, with a
/// suggestion from the table's names.
fn known_options(builtin: &Builtin, named: Vec<Named>, ctxt: &Ctxt) -> Vec<Named> {
    let name = builtin.name;
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
        ctxt.error(n.key.span(), message);
    }
    known
}
