//! The resolver registry: what a TOML `use = "..."` can name.

use std::sync::Arc;

use protege_core::{BoxResolver, Resolver};
use serde::de::DeserializeOwned;

use crate::builtins::{self, Options};
use crate::custom;

pub(crate) type Factory =
    dyn for<'a, 'i, 's> Fn(&mut Options<'a, 'i, 's>) -> Option<BoxResolver> + Send + Sync;

struct Entry {
    name: String,
    aliases: Vec<String>,
    factory: Arc<Factory>,
}

/// The resolvers personas can `use`: the built-ins (`LoadText`, `LoadFile`, `LoadRecord`,
/// `ThreadHistory`, `ThreadSummary`, `CorrespondentHistory`, `OpenThreads`, with
/// `LoadTextResolver`-style
/// long names as aliases) plus the custom types registered with [`Registry::register`].
///
/// ```
/// use protege::config::Registry;
/// let registry = Registry::new();
/// assert_eq!(
///     registry.names(),
///     [
///         "LoadText",
///         "LoadFile",
///         "LoadRecord",
///         "ThreadHistory",
///         "ThreadSummary",
///         "CorrespondentHistory",
///         "OpenThreads"
///     ]
/// );
/// ```
#[derive(Clone)]
pub struct Registry {
    entries: Vec<Arc<Entry>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// The built-in resolvers only.
    pub fn new() -> Self {
        let mut registry = Self {
            entries: Vec::new(),
        };
        for builtin in protege_schema::BUILTINS {
            let Some(reader) = protege_core::BUILTIN_READERS
                .iter()
                .find(|r| r.spec.name == builtin.name)
            else {
                continue;
            };
            registry.entries.push(Arc::new(Entry {
                name: builtin.name.to_owned(),
                aliases: builtin.aliases.iter().map(|a| (*a).to_owned()).collect(),
                factory: Arc::new(move |o: &mut Options<'_, '_, '_>| builtins::read(o, reader)),
            }));
        }
        registry
    }

    /// Registers the custom resolver type `T` under `name`: a TOML entry `use = "name"`
    /// deserialises its other keys into `T` (errors point at the offending key or value).
    /// A later registration under the same name replaces the earlier one.
    ///
    /// ```
    /// use protege::config::Registry;
    /// use protege::{message, Context, Message, Resolver, Result, Role};
    ///
    /// #[derive(serde::Deserialize)]
    /// #[serde(deny_unknown_fields)]
    /// struct Signature { text: String }
    ///
    /// impl Resolver for Signature {
    ///     type Output = Message;
    ///     async fn resolve(&self, _: &Context) -> Result<Message> {
    ///         Ok(message(Role::System, self.text.clone()))
    ///     }
    /// }
    ///
    /// let mut registry = Registry::new();
    /// registry.register::<Signature>("Signature");
    /// assert!(registry.contains("Signature"));
    /// ```
    pub fn register<T>(&mut self, name: &str) -> &mut Self
    where
        T: Resolver + DeserializeOwned,
    {
        let owned = name.to_owned();
        let factory = move |o: &mut Options<'_, '_, '_>| -> Option<BoxResolver> {
            let mut table = toml::de::DeTable::new();
            for (k, v) in o.table.iter() {
                if k.get_ref() != "use" {
                    table.insert(k.clone(), v.clone());
                }
            }
            match custom::deserialize::<T>(table, o.span.clone()) {
                Ok(r) => Some(BoxResolver::new(r).named(owned.clone())),
                Err(e) => {
                    let span = e.span().unwrap_or_else(|| o.span.clone());
                    o.sink.error(span, e.message(&owned));
                    None
                }
            }
        };
        self.entries.retain(|e| e.name != name);
        self.entries.push(Arc::new(Entry {
            name: name.to_owned(),
            aliases: Vec::new(),
            factory: Arc::new(factory),
        }));
        self
    }

    /// Whether `name` (or an alias) is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    /// The registered names (aliases excluded), built-ins first.
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }

    fn find(&self, name: &str) -> Option<&Arc<Entry>> {
        self.entries
            .iter()
            .find(|e| e.name == name || e.aliases.iter().any(|a| a == name))
    }

    /// The canonical name and factory of `name` (or an alias).
    pub(crate) fn lookup(&self, name: &str) -> Option<(&str, &Factory)> {
        self.find(name).map(|e| (e.name.as_str(), &*e.factory))
    }
}

#[cfg(test)]
mod tests {
    /// Every built-in of the shared table is read from TOML, and every reader reads one.
    #[test]
    fn every_builtin_has_a_reader() {
        let registry = super::Registry::new();
        let names: Vec<&str> = protege_schema::BUILTINS.iter().map(|b| b.name).collect();
        assert_eq!(registry.names(), names);
        assert_eq!(protege_core::BUILTIN_READERS.len(), names.len());
    }
}
