//! The table: each built-in resolver, its aliases and its options — name, kind of value,
//! default, the form it applies to, and an example in TOML and in `resolvers!`.
//!
//! Each built-in is declared once, in its own file below (its [`Builtin`] and the defaults
//! it names), and registered by one line of the `builtins!` list below. The TOML reader, the JSON
//! Schema, the `resolvers!` macro, the guide's options table and the check of the names a
//! template uses all read that declaration.

/// Declares each built-in's module (`module::DECLARATION`, one line each), re-exports what
/// the module declares and lists the declaration in [`BUILTINS`], in the order given.
macro_rules! builtins {
    ($($module:ident::$builtin:ident),* $(,)?) => {
        $(
            mod $module;
            pub use $module::*;
        )*

        /// Every built-in resolver, in the order the docs and the registry list them.
        pub const BUILTINS: &[&Builtin] = &[$(&$module::$builtin),*];
    };
}

// Each built-in's file: its declaration and the defaults it names.
builtins! {
    load_text::LOAD_TEXT,
    load_file::LOAD_FILE,
    load_record::LOAD_RECORD,
    thread_history::THREAD_HISTORY,
    thread_summary::THREAD_SUMMARY,
    correspondent_history::CORRESPONDENT_HISTORY,
    open_threads::OPEN_THREADS,
}

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

/// How `resolvers!` constructs a built-in: what its positional argument stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `T::template(literal)` or `T::from_fn(closure)`: the positional argument or the
    /// `template` option is the text (`LoadText`).
    Template,
    /// `T::new(path)`: the positional argument or the `path` option is the file
    /// (`LoadFile`).
    Path,
    /// `T::from_loader(closure)` or `T::table(name)`: a loader closure or the `table`
    /// option, each with the options of its form (`LoadRecord`).
    Source,
    /// `T::new()`, then one builder call per option: named options only.
    Named,
}

/// The variable a built-in's `template` option sees besides a run's own, e.g. `summary`
/// in `ThreadSummary`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Provided {
    /// The variable's name, one of [`VARIABLES`](crate::names::VARIABLES).
    pub variable: &'static str,
    /// Its attributes; `None` when its contents are free (a record's columns), empty when
    /// it is a string.
    pub attributes: Option<&'static [&'static str]>,
    /// The option where it exists, as the message naming it elsewhere says: "the
    /// `template`", "the per-record `template`".
    pub place: &'static str,
}

/// One built-in resolver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Builtin {
    /// The name: a TOML `use` value and a `resolvers!` identifier.
    pub name: &'static str,
    /// Other names for it.
    pub aliases: &'static [&'static str],
    /// How `resolvers!` constructs it.
    pub form: Form,
    /// The variable its `template` option sees besides a run's own.
    pub provides: Option<Provided>,
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

/// The built-ins whose `template` sees `variable`, in the order of [`BUILTINS`].
pub fn providers(variable: &str) -> impl Iterator<Item = &'static Builtin> + '_ {
    BUILTINS
        .iter()
        .copied()
        .filter(move |b| b.provides.is_some_and(|p| p.variable == variable))
}

/// The built-in called `name` (or one of its aliases).
pub fn builtin(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().copied().find(|b| b.is_named(name))
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
    fn a_provided_variable_is_a_template_variable_of_a_resolver_with_a_template() {
        for b in BUILTINS {
            if let Some(p) = b.provides {
                assert!(crate::names::VARIABLES.contains(&p.variable), "{}", b.name);
                assert_eq!(
                    b.option("template").map(|o| o.kind),
                    Some(Kind::Template),
                    "{}",
                    b.name
                );
            }
        }
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
