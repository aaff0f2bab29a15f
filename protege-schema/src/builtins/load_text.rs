//! `LoadText`: a rendered template, the text of a message.
//!
//! Its name, options (with docs, defaults and examples), its form in `resolvers!` and the
//! variable its `template` sees, declared once.

use super::{Builtin, Default, Form, Kind, Positional, option, role};

/// `LoadText`: a rendered template.
pub const LOAD_TEXT: Builtin = Builtin {
    name: "LoadText",
    aliases: &["LoadTextResolver"],
    form: Form::Template,
    provides: None,
    positional: Some(Positional {
        doc: "the template as a string literal, or a closure returning the text",
        rust: "|ctx: &Context| Ok(ctx.persona().name.clone())",
    }),
    options: &[
        option(
            "template",
            Kind::Template,
            Default::Required,
            "\"You are {{ persona.name }}.\"",
            "\"You are {{ persona.name }}.\"",
            "the text, rendered and trimmed; nothing when blank",
        ),
        role("who speaks the message"),
    ],
};
