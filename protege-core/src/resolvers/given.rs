//! A built-in resolver built from the options a persona file gives it.
//!
//! The TOML reader of `protege-config` reads an entry's options by their kinds in the
//! built-in's declaration (`protege-schema`), reports every wrong value at its place, and
//! hands the values on as [`GivenOptions`]; the built-in's own file says what it makes of
//! them ([`BuiltinResolver::from_given`]). A new built-in is read from TOML by that
//! declaration, its impl of the trait and its line in the `builtins!` list of this module's
//! parent: nothing in the reader names it.

use std::time::Duration;

use crate::context::Quoted;
use crate::message::Role;
use crate::resolver::{BoxResolver, Resolver};
use crate::template::Template;

use super::{LoadFile, OrderBy, WhereValue, Window};

/// One option's value as a persona file gives it, read by the kind its declaration names.
#[derive(Debug)]
pub enum Given {
    /// A compiled template whose names were checked.
    Template(Template),
    /// A `LoadFile` for the path, literal or a template.
    Path(LoadFile),
    /// A role.
    Role(Role),
    /// A table name, a plain SQL identifier.
    Table(String),
    /// `where` conditions, in the order written.
    Where(Vec<(String, WhereValue)>),
    /// `order_by` entries, in the order written.
    OrderBy(Vec<OrderBy>),
    /// A non-negative integer.
    Count(u64),
    /// A non-negative integer, or `None` for "all" (`false` in TOML).
    CountOrAll(Option<u64>),
    /// A positive integer.
    Step(u64),
    /// A window.
    Window(Window),
    /// A `quoted` mode.
    Quoted(Quoted),
    /// A boolean.
    Flag(bool),
    /// A duration.
    Duration(Duration),
}

/// The options of one entry, in its declaration's order: each given option with its value,
/// or without one when the value was wrong (and reported where it is written).
#[derive(Debug, Default)]
pub struct GivenOptions {
    values: Vec<(&'static str, Option<Given>)>,
}

impl GivenOptions {
    /// No option given.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds option `name`: its value, or `None` when the value was wrong.
    pub fn push(&mut self, name: &'static str, value: Option<Given>) {
        self.values.push((name, value));
    }

    /// Whether option `name` was given with a wrong value.
    pub fn failed(&self, name: &str) -> bool {
        self.values.iter().any(|(n, v)| *n == name && v.is_none())
    }

    /// Takes the value of option `name`, when it was given and valid.
    pub fn take(&mut self, name: &str) -> Option<Given> {
        self.values
            .iter_mut()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| v.take())
    }
}

impl IntoIterator for GivenOptions {
    type Item = (&'static str, Given);
    type IntoIter = std::iter::FilterMap<
        std::vec::IntoIter<(&'static str, Option<Given>)>,
        fn((&'static str, Option<Given>)) -> Option<(&'static str, Given)>,
    >;

    /// The valid values, in the declaration's order.
    fn into_iter(self) -> Self::IntoIter {
        self.values
            .into_iter()
            .filter_map(|(name, value)| Some((name, value?)))
    }
}

/// Why a built-in refuses options that are each valid but do not go together, and the
/// option whose value is reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The option whose value the message is reported at.
    pub option: &'static str,
    /// What is wrong and how to mend it, one sentence.
    pub message: String,
}

/// A built-in resolver: its declaration in `protege-schema` and how it is built from the
/// options a persona file gives.
pub trait BuiltinResolver: Resolver + Sized {
    /// Its declaration: name, aliases, options and their kinds.
    const SPEC: &'static protege_schema::Builtin;

    /// The resolver with `given`; `Ok(None)` when an option it cannot do without is absent
    /// (missing or wrong, and reported as such).
    fn from_given(given: GivenOptions) -> Result<Option<Self>, Refused>;
}

/// A built-in's declaration and its reader, as the TOML reader finds them.
#[derive(Clone, Copy)]
pub struct BuiltinReader {
    /// The declaration.
    pub spec: &'static protege_schema::Builtin,
    /// Builds the resolver from the options given.
    pub read: fn(GivenOptions) -> Result<Option<BoxResolver>, Refused>,
}

impl std::fmt::Debug for BuiltinReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("BuiltinReader")
            .field(&self.spec.name)
            .finish()
    }
}

impl BuiltinReader {
    /// The reader of `T`.
    pub const fn of<T: BuiltinResolver>() -> Self {
        Self {
            spec: T::SPEC,
            read: read::<T>,
        }
    }
}

fn read<T: BuiltinResolver>(given: GivenOptions) -> Result<Option<BoxResolver>, Refused> {
    Ok(T::from_given(given)?.map(BoxResolver::new))
}
