//! The table: each built-in resolver, its aliases and its options — name, kind of value,
//! default, the form it applies to, and an example in TOML and in `resolvers!`.

/// `ThreadHistory`'s default `limit`: the 50 most recent prior messages.
pub const HISTORY_LIMIT: u64 = 50;

/// `ThreadHistory`'s default `result_limit`: the characters of a tool result kept.
pub const HISTORY_RESULT_LIMIT: usize = 4000;

/// `ThreadSummary`'s default `template`.
pub const SUMMARY_TEMPLATE: &str = "Summary of the conversation so far:\n{{ summary }}";

/// `CorrespondentHistory`'s default `threads`: the sender's three most recent earlier threads.
pub const CORRESPONDENT_THREADS: u64 = 3;

/// `CorrespondentHistory`'s default `messages`: the last four messages of a thread without
/// a summary.
pub const CORRESPONDENT_MESSAGES: u64 = 4;

/// `CorrespondentHistory`'s default `template`, rendered once per earlier thread.
pub const CORRESPONDENT_TEMPLATE: &str = "Earlier thread with this correspondent: {{ thread.subject }}\n{% if thread.summary %}\nSummary: {{ thread.summary }}{% else %}{% for m in thread.messages %}\n{{ m }}\n{% endfor %}{% endif %}";

/// `OpenThreads`' default `within`: threads whose newest message is older are left out.
pub const OPEN_THREADS_WITHIN: &str = "7d";

/// `OpenThreads`' default `limit`: the most threads listed.
pub const OPEN_THREADS_LIMIT: u64 = 20;

/// `OpenThreads`' default `template`, rendered once per open thread: one line each.
pub const OPEN_THREADS_TEMPLATE: &str = "- {{ thread.subject }} ({{ thread.messages }} message{% if thread.messages != 1 %}s{% endif %}, waiting since {{ thread.since }}, from {{ thread.from }}, thread {{ thread.id }})";

/// The roles a `role` option takes, as written.
pub const ROLES: [&str; 4] = ["system", "user", "assistant", "tool"];

/// The windows a `window` option takes, as written.
pub const WINDOWS: [&str; 2] = ["sliding", "stable"];

/// The values a `quoted` option takes, as written.
pub const QUOTED: [&str; 2] = ["keep", "strip"];

/// How an option's value is written and read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A minijinja template: a string, compiled when the persona loads (TOML) or when the
    /// chain compiles (a string literal in `resolvers!`).
    Template,
    /// A file path: literal, or a template when it contains `{{` or `{%`.
    Path,
    /// One of [`ROLES`]: a string in TOML, a bare word in `resolvers!`.
    Role,
    /// A table name: ASCII letters, digits and `_`, not starting with a digit.
    Table,
    /// Column conditions: `{ column = value, ... }`, a string value being a template bound
    /// as text, an integer, float or boolean bound with its type.
    Where,
    /// `"column"`, `"column asc"` or `"column desc"`, or an array of them.
    OrderBy,
    /// A non-negative integer.
    Count,
    /// A non-negative integer, or "all": `false` in TOML, `None` in `resolvers!`.
    CountOrAll,
    /// A positive integer.
    Step,
    /// One of [`WINDOWS`]: a string in TOML, a bare word or a string in `resolvers!`.
    Window,
    /// One of [`QUOTED`]: a string in TOML, a bare word or a string in `resolvers!`.
    Quoted,
    /// A boolean.
    Flag,
    /// A duration: a positive integer and a unit, `s`, `m`, `h` or `d` (`"90s"`, `"7d"`),
    /// a string in TOML and a string literal (or a `std::time::Duration`) in `resolvers!`.
    Duration,
    /// A Rust closure (`resolvers!` only).
    Closure,
}

/// The form of `LoadRecord` an option belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applies {
    /// Every form.
    Always,
    /// `LoadRecord(table = ...)`: the rows of a table (the only form in TOML).
    Table,
    /// `LoadRecord(loader)`: the records of a Rust closure.
    Loader,
}

/// What an option is when the entry leaves it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Default {
    /// It must be given (in `resolvers!`, a positional argument may stand for it).
    Required,
    /// Not set; the text says what that means.
    Unset(&'static str),
    /// A number.
    Count(u64),
    /// A boolean.
    Flag(bool),
    /// A word, such as a role.
    Word(&'static str),
    /// A template.
    Text(&'static str),
}

/// One option of a built-in resolver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionSpec {
    /// The name: a TOML key and a `resolvers!` option.
    pub name: &'static str,
    /// How its value is written and read.
    pub kind: Kind,
    /// What it is when left out.
    pub default: Default,
    /// The form of the resolver it belongs to.
    pub applies: Applies,
    /// An example value in TOML; `None` for an option `resolvers!` alone has.
    pub toml: Option<&'static str>,
    /// An example value in `resolvers!`.
    pub rust: &'static str,
    /// Another option an entry needs for this one, e.g. `window` for `step`: its example
    /// goes with this one's.
    pub with: Option<&'static str>,
    /// What it does.
    pub doc: &'static str,
}

/// The positional argument of a built-in in `resolvers!`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Positional {
    /// What it is.
    pub doc: &'static str,
    /// An example.
    pub rust: &'static str,
}

/// One built-in resolver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Builtin {
    /// The name: a TOML `use` value and a `resolvers!` identifier.
    pub name: &'static str,
    /// Other names for it.
    pub aliases: &'static [&'static str],
    /// The positional argument `resolvers!` takes, when it takes one.
    pub positional: Option<Positional>,
    /// Its options, in the order the docs list them.
    pub options: &'static [OptionSpec],
}

impl Builtin {
    /// The option called `name`.
    pub fn option(&self, name: &str) -> Option<&'static OptionSpec> {
        self.options.iter().find(|o| o.name == name)
    }

    /// Whether `name` is this resolver's name or one of its aliases.
    pub fn is_named(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }

    /// The options a TOML entry may have, in order.
    pub fn toml_names(&self) -> impl Iterator<Item = &'static str> + Clone {
        self.options
            .iter()
            .filter(|o| o.toml.is_some())
            .map(|o| o.name)
    }

    /// The options `resolvers!` takes, in order.
    pub fn rust_names(&self) -> impl Iterator<Item = &'static str> + Clone {
        self.options.iter().map(|o| o.name)
    }

    /// What an example giving `option` needs besides it: the option it goes with, and the
    /// required options of its form (for an option of the loader form, the positional
    /// loader stands for them).
    fn companions(&self, option: &OptionSpec) -> Vec<&'static OptionSpec> {
        let with = option.with.and_then(|w| self.option(w));
        let required = self.options.iter().filter(|o| {
            o.name != option.name
                && o.default == Default::Required
                && option.applies != Applies::Loader
        });
        with.into_iter().chain(required).collect()
    }

    /// A TOML entry (its keys, `use` first) giving `option` with its example value and
    /// what it needs; `None` for an option TOML does not have.
    ///
    /// ```
    /// let history = protege_schema::THREAD_HISTORY;
    /// assert_eq!(
    ///     history.toml_entry(history.option("step").unwrap()).unwrap(),
    ///     "use = \"ThreadHistory\"\nwindow = \"stable\"\nstep = 5\n"
    /// );
    /// ```
    pub fn toml_entry(&self, option: &OptionSpec) -> Option<String> {
        let mut entry = format!("use = \"{}\"\n", self.name);
        for o in self.companions(option).into_iter().chain([option]) {
            entry.push_str(&format!("{} = {}\n", o.name, o.toml?));
        }
        Some(entry)
    }

    /// A `resolvers!` item giving `option` with its example value and what it needs.
    ///
    /// ```
    /// let record = protege_schema::LOAD_RECORD;
    /// assert_eq!(
    ///     record.rust_item(record.option("limit").unwrap()),
    ///     "use LoadRecord(table = \"accounts\", limit = 5);"
    /// );
    /// assert_eq!(
    ///     record.rust_item(record.option("render_with").unwrap()),
    ///     "use LoadRecord(load_accounts, render_with = |record: &Account| record.name.clone());"
    /// );
    /// ```
    pub fn rust_item(&self, option: &OptionSpec) -> String {
        let mut args = Vec::new();
        if option.applies == Applies::Loader
            && let Some(positional) = self.positional
        {
            args.push(positional.rust.to_owned());
        }
        for o in self.companions(option).into_iter().chain([option]) {
            args.push(format!("{} = {}", o.name, o.rust));
        }
        format!("use {}({});", self.name, args.join(", "))
    }
}

const fn option(
    name: &'static str,
    kind: Kind,
    default: Default,
    toml: &'static str,
    rust: &'static str,
    doc: &'static str,
) -> OptionSpec {
    OptionSpec {
        name,
        kind,
        default,
        applies: Applies::Always,
        toml: Some(toml),
        rust,
        with: None,
        doc,
    }
}

const fn role(what: &'static str) -> OptionSpec {
    option(
        "role",
        Kind::Role,
        Default::Word("system"),
        "\"user\"",
        "user",
        what,
    )
}

const fn quoted() -> OptionSpec {
    option(
        "quoted",
        Kind::Quoted,
        Default::Unset("the persona's `[mail] quoted`"),
        "\"strip\"",
        "strip",
        "`strip` removes quoted text, attributions, signatures and taglines from each body, `keep` shows it whole",
    )
}

/// `LoadText`: a rendered template.
pub const LOAD_TEXT: Builtin = Builtin {
    name: "LoadText",
    aliases: &["LoadTextResolver"],
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

/// `LoadFile`: a file's contents.
pub const LOAD_FILE: Builtin = Builtin {
    name: "LoadFile",
    aliases: &["LoadFileResolver"],
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

/// `LoadRecord`: rows of a table, or records of a Rust loader.
pub const LOAD_RECORD: Builtin = Builtin {
    name: "LoadRecord",
    aliases: &["LoadRecordResolver"],
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

/// `ThreadHistory`: the prior messages of the thread and their tool rounds.
pub const THREAD_HISTORY: Builtin = Builtin {
    name: "ThreadHistory",
    aliases: &["ThreadHistoryResolver"],
    positional: None,
    options: &[
        option(
            "limit",
            Kind::CountOrAll,
            Default::Count(HISTORY_LIMIT),
            "10",
            "10",
            "the most recent prior messages kept; `false` in TOML or `None` in Rust for all",
        ),
        option(
            "window",
            Kind::Window,
            Default::Word("sliding"),
            "\"stable\"",
            "stable",
            "`stable` moves the window's first message in jumps of `step`, so replies share their history prefix",
        ),
        OptionSpec {
            with: Some("window"),
            ..option(
                "step",
                Kind::Step,
                Default::Unset("`max(1, limit / 2)`"),
                "5",
                "5",
                "the jump of a stable window (needs `window = stable`)",
            )
        },
        option(
            "after_summary",
            Kind::Flag,
            Default::Flag(false),
            "true",
            "true",
            "only messages after the thread's running summary",
        ),
        option(
            "include_tool_calls",
            Kind::Flag,
            Default::Flag(true),
            "false",
            "false",
            "replay each message's tool rounds",
        ),
        option(
            "result_limit",
            Kind::Count,
            Default::Count(HISTORY_RESULT_LIMIT as u64),
            "2000",
            "2000",
            "the characters of a tool result kept before `[truncated: N more characters]`",
        ),
        option(
            "max_tokens",
            Kind::Count,
            Default::Unset("no budget"),
            "2000",
            "2000",
            "a token budget: whole turns are dropped oldest first until the history fits",
        ),
        quoted(),
    ],
};

/// `ThreadSummary`: the thread's running summary.
pub const THREAD_SUMMARY: Builtin = Builtin {
    name: "ThreadSummary",
    aliases: &["ThreadSummaryResolver"],
    positional: None,
    options: &[
        option(
            "template",
            Kind::Template,
            Default::Text(SUMMARY_TEMPLATE),
            "\"Earlier: {{ summary }}\"",
            "\"Earlier: {{ summary }}\"",
            "the text (variable `summary`); nothing when the thread has no summary yet",
        ),
        role("who speaks the message"),
    ],
};

/// `CorrespondentHistory`: the sender's earlier threads with the persona.
pub const CORRESPONDENT_HISTORY: Builtin = Builtin {
    name: "CorrespondentHistory",
    aliases: &["CorrespondentHistoryResolver"],
    positional: None,
    options: &[
        option(
            "threads",
            Kind::Count,
            Default::Count(CORRESPONDENT_THREADS),
            "5",
            "5",
            "the sender's most recent earlier threads with the persona shown, oldest first",
        ),
        option(
            "messages",
            Kind::Count,
            Default::Count(CORRESPONDENT_MESSAGES),
            "2",
            "2",
            "the last messages shown of an earlier thread that has no summary",
        ),
        option(
            "template",
            Kind::Template,
            Default::Text(CORRESPONDENT_TEMPLATE),
            "\"Earlier: {{ thread.subject }}\"",
            "\"Earlier: {{ thread.subject }}\"",
            "the text of each earlier thread (variable `thread`: `subject`, `summary`, `messages`), trimmed; threads are joined by a blank line",
        ),
        role("who speaks the message"),
        quoted(),
    ],
};

/// `OpenThreads`: the persona's threads waiting for an answer (for digests).
pub const OPEN_THREADS: Builtin = Builtin {
    name: "OpenThreads",
    aliases: &["OpenThreadsResolver"],
    positional: None,
    options: &[
        option(
            "within",
            Kind::Duration,
            Default::Word(OPEN_THREADS_WITHIN),
            "\"3d\"",
            "\"3d\"",
            "threads whose newest message is older than this are left out, such as `\"24h\"`",
        ),
        option(
            "limit",
            Kind::Count,
            Default::Count(OPEN_THREADS_LIMIT),
            "10",
            "10",
            "the most threads listed, longest waiting first",
        ),
        option(
            "template",
            Kind::Template,
            Default::Text(OPEN_THREADS_TEMPLATE),
            "\"- {{ thread.subject }} ({{ thread.from }})\"",
            "\"- {{ thread.subject }} ({{ thread.from }})\"",
            "the line of each open thread (variable `thread`: `id`, `subject`, `messages`, `since`, `from`), trimmed; lines are joined by a line break",
        ),
        role("who speaks the message"),
    ],
};

/// Every built-in resolver, in the order the docs and the registry list them.
pub const BUILTINS: [&Builtin; 7] = [
    &LOAD_TEXT,
    &LOAD_FILE,
    &LOAD_RECORD,
    &THREAD_HISTORY,
    &THREAD_SUMMARY,
    &CORRESPONDENT_HISTORY,
    &OPEN_THREADS,
];

/// The built-in called `name` (or one of its aliases).
pub fn builtin(name: &str) -> Option<&'static Builtin> {
    BUILTINS.into_iter().find(|b| b.is_named(name))
}

/// Whether `name` is a plain SQL identifier, as `table`, `where` columns and `order_by`
/// columns must be: ASCII letters, digits and `_`, not starting with a digit.
///
/// ```
/// assert!(protege_schema::is_identifier("accounts_2"));
/// assert!(!protege_schema::is_identifier("2accounts"));
/// assert!(!protege_schema::is_identifier("accounts; drop"));
/// ```
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_find_their_builtin() {
        for b in BUILTINS {
            assert_eq!(builtin(b.name).map(|f| f.name), Some(b.name));
            for alias in b.aliases {
                assert_eq!(builtin(alias).map(|f| f.name), Some(b.name));
            }
        }
        assert!(builtin("LoadTexts").is_none());
    }

    #[test]
    fn an_option_that_needs_another_names_an_option_of_its_resolver() {
        for b in BUILTINS {
            for o in b.options {
                if let Some(with) = o.with {
                    assert!(b.option(with).is_some(), "{}.{}", b.name, o.name);
                }
            }
        }
    }
}
