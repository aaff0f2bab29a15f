//! `LoadFile`: a file's contents as a message.
//!
//! Its name, options (with docs, defaults and examples), its form in `resolvers!` and the
//! variable its `template` sees, declared once.

use super::{Builtin, Default, Form, Kind, Positional, option, role};

/// `LoadFile`: a file's contents.
pub const LOAD_FILE: Builtin = Builtin {
    name: "LoadFile",
    aliases: &["LoadFileResolver"],
    form: Form::Path,
    provides: None,
    positional: Some(Positional {
        doc: "the path",
        rust: "\"prompts/agent.md\"",
    }),
    options: &[
        option(
            "path",
            Kind::Path,
            Default::Required,
            "\"prompts/{{ persona.name | slugify }}.md\"",
            "\"prompts/{{ persona.name | slugify }}.md\"",
            "the file, relative to the app root; a template when it contains `{{` or `{%`",
        ),
        role("who speaks the message"),
    ],
};
