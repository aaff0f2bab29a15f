//! A resolver's options written once: the serde names a TOML entry uses are the names
//! `resolvers!` takes in braces, through `#[derive(protege::Options)]`.

use std::collections::{BTreeSet, HashSet};
use std::hash::Hash;
use std::path::PathBuf;

/// A type whose options `resolvers!` sets by name, with the names, defaults and types its
/// `serde::Deserialize` gives a TOML entry: derive it next to `Deserialize`.
///
/// `#[derive(protege::Options)]` reads serde's attributes (`rename`, `rename_all`, `alias`,
/// `default`, `skip`/`skip_deserializing`) and generates a hidden builder with one typed
/// setter per option. `use OpenOrders { statuses = ["packing"], heading = "Open:" };` then
/// sets those options and leaves every other one to serde's default, so the same declaration
/// works in a persona file and in Rust:
///
/// ```
/// use protege::{Chain, Context, Message, Options, Resolver, Result, Role, message, resolvers};
///
/// #[derive(serde::Deserialize, protege::Options)]
/// #[serde(deny_unknown_fields)]
/// struct Signature {
///     text: String,
///     #[serde(default)]
///     shout: bool,
/// }
///
/// impl Resolver for Signature {
///     type Output = Message;
///     async fn resolve(&self, _ctx: &Context) -> Result<Message> {
///         let text = if self.shout { self.text.to_uppercase() } else { self.text.clone() };
///         Ok(message(Role::System, text))
///     }
/// }
///
/// assert_eq!(Signature::NAMES, ["text", "shout"]);
/// assert_eq!(Signature::REQUIRED, ["text"]);
/// let chain = resolvers! {
///     use Signature { text = "Acme support" };
/// };
/// assert_eq!(chain.names(), ["Signature"]);
/// ```
///
/// In `resolvers!`, a misspelt option, a value of the wrong type and a missing required
/// option are compile errors at the option, the value and the resolver.
///
/// The generated code names the trait as `::protege::Options`; a crate that depends on
/// `protege-core` directly writes `#[protege(crate = "::protege_core")]` on the type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not derive `protege::Options`",
    label = "options in braces need `#[derive(serde::Deserialize, protege::Options)]` on `{Self}`",
    note = "to build `{Self}` with `new(..)` and builder methods instead, write its arguments in parentheses"
)]
pub trait Options: Sized {
    /// The option names as a TOML entry writes them (serde's names, aliases excluded), in
    /// declaration order.
    const NAMES: &'static [&'static str];

    /// The options among [`NAMES`](Self::NAMES) that have no default and must be given.
    const REQUIRED: &'static [&'static str];

    /// The builder `resolvers!` sets the options on.
    #[doc(hidden)]
    type __Builder;

    /// A builder with no option set.
    #[doc(hidden)]
    fn __builder() -> Self::__Builder;
}

/// A value written for an option in `resolvers!`, converted into the option's type `T`:
/// the value itself, or what a TOML entry would write for it — a string literal for a
/// `String` or `PathBuf`, an array literal for a `Vec`, `BTreeSet` or `HashSet`.
///
/// ```
/// use protege::OptionValue;
/// let statuses: Vec<String> = ["packing", "shipped"].into_option();
/// assert_eq!(statuses, ["packing", "shipped"]);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a value for an option of type `{T}`",
    label = "expected `{T}`"
)]
pub trait OptionValue<T> {
    /// The option's value.
    fn into_option(self) -> T;
}

impl<T> OptionValue<T> for T {
    fn into_option(self) -> T {
        self
    }
}

impl OptionValue<String> for &str {
    fn into_option(self) -> String {
        self.to_owned()
    }
}

impl OptionValue<PathBuf> for &str {
    fn into_option(self) -> PathBuf {
        PathBuf::from(self)
    }
}

impl OptionValue<PathBuf> for String {
    fn into_option(self) -> PathBuf {
        PathBuf::from(self)
    }
}

impl<T, U: OptionValue<T>, const N: usize> OptionValue<Vec<T>> for [U; N] {
    fn into_option(self) -> Vec<T> {
        self.into_iter().map(OptionValue::into_option).collect()
    }
}

impl<T: Ord, U: OptionValue<T>, const N: usize> OptionValue<BTreeSet<T>> for [U; N] {
    fn into_option(self) -> BTreeSet<T> {
        self.into_iter().map(OptionValue::into_option).collect()
    }
}

impl<T: Eq + Hash, U: OptionValue<T>, const N: usize> OptionValue<HashSet<T>> for [U; N] {
    fn into_option(self) -> HashSet<T> {
        self.into_iter().map(OptionValue::into_option).collect()
    }
}

/// An option of a `#[derive(protege::Options)]` builder that has not been given yet.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct Unset;

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashSet};
    use std::path::PathBuf;

    use super::OptionValue;

    #[test]
    fn literals_convert_like_their_toml_counterparts() {
        let text: String = "Open:".into_option();
        assert_eq!(text, "Open:");
        let path: PathBuf = "prompts/a.md".into_option();
        assert_eq!(path, PathBuf::from("prompts/a.md"));
        let nested: Vec<Vec<String>> = [["a", "b"], ["c", "d"]].into_option();
        assert_eq!(nested, [["a", "b"], ["c", "d"]]);
        let set: BTreeSet<String> = ["b", "a", "b"].into_option();
        assert_eq!(set.into_iter().collect::<Vec<_>>(), ["a", "b"]);
        let set: HashSet<u32> = [1, 2, 2].into_option();
        assert_eq!(set.len(), 2);
        let same: Option<u8> = Some(3).into_option();
        assert_eq!(same, Some(3));
    }
}
