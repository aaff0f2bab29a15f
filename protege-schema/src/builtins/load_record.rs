//! `LoadRecord`: rows of a table, or records of a Rust loader, each rendered by `template`.
//!
//! Its name, options (with docs, defaults and examples), its form in `resolvers!` and the
//! variable its `template` sees, declared once.

use super::{
    Applies, Builtin, Default, Form, Kind, OptionSpec, Positional, Provided, option, role,
};

/// `LoadRecord`: rows of a table, or records of a Rust loader.
pub const LOAD_RECORD: Builtin = Builtin {
    name: "LoadRecord",
    aliases: &["LoadRecordResolver"],
    form: Form::Source,
    provides: Some(Provided {
        variable: "record",
        attributes: None,
        place: "the per-record `template`",
    }),
    positional: Some(Positional {
        doc: "an async loader closure taking the `Context` and returning records, instead of `table`",
        rust: "load_accounts",
    }),
    options: &[
        OptionSpec {
            applies: Applies::Table,
            ..option(
                "table",
                Kind::Table,
                Default::Required,
                "\"accounts\"",
                "\"accounts\"",
                "the table whose rows are read",
            )
        },
        OptionSpec {
            applies: Applies::Table,
            ..option(
                "where",
                Kind::Where,
                Default::Unset("every row"),
                "{ email = \"{{ message.from }}\", seats = 5 }",
                "{ email = \"{{ message.from }}\", seats = 5 }",
                "`column = value` conditions joined with AND, bound as parameters: a string is a template bound as text, a number or boolean is bound with its type",
            )
        },
        OptionSpec {
            applies: Applies::Table,
            ..option(
                "order_by",
                Kind::OrderBy,
                Default::Unset("the database's order"),
                "[\"plan\", \"id desc\"]",
                "[\"plan\", \"id desc\"]",
                "`column`, `column asc` or `column desc`, or a list of them",
            )
        },
        OptionSpec {
            applies: Applies::Table,
            ..option(
                "limit",
                Kind::Count,
                Default::Unset("every row"),
                "5",
                "5",
                "the most rows read",
            )
        },
        option(
            "template",
            Kind::Template,
            Default::Unset("pretty JSON, 2-space indent, columns in table order"),
            "\"{{ record.name }} ({{ record.plan }})\"",
            "\"{{ record.name }} ({{ record.plan }})\"",
            "the text of each record (variable `record`), trimmed; records are joined by a blank line",
        ),
        OptionSpec {
            applies: Applies::Loader,
            toml: None,
            ..option(
                "render_with",
                Kind::Closure,
                Default::Unset("`template`"),
                "",
                "|record: &Account| record.name.clone()",
                "Rust code that renders each record instead of a template",
            )
        },
        role("who speaks the message"),
    ],
};
