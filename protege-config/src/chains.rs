//! Loading a persona, stage 4 of 4: its resolver chains. Each entry of
//! `[[message_resolvers]]` and `[[responsibility_resolvers]]` names a resolver of the
//! [`Registry`] with `use`; the resolver's factory reads the entry's other keys as its
//! options ([`builtins`](crate::builtins) for the built-ins, `serde` for the types
//! registered with [`Registry::register`]).

use protege_core::DynChain;
use protege_schema::names::Trigger;
use toml::de::DeTable;

use crate::builtins::Options;
use crate::diagnostic::{did_you_mean, suggestion};
use crate::reader::{self, Sink, entries, get};
use crate::registry::Registry;
use crate::templates::Templates;

/// The chain under `key` (`message_resolvers` or `responsibility_resolvers`) of `doc`:
/// each entry names a resolver of `registry` with `use`, whose factory reads the entry's
/// other keys as its options; `vars` are the keys of `[vars]` templates may name.
pub(crate) fn chain(
    sink: &mut Sink<'_>,
    doc: &DeTable<'_>,
    key: &str,
    registry: &Registry,
    vars: Option<&[&str]>,
    templates: &mut Templates,
) -> DynChain {
    let trigger = if key == "responsibility_resolvers" {
        Trigger::Responsibility
    } else {
        Trigger::Message
    };
    let mut chain = DynChain::new();
    let Some(value) = get(doc, key) else {
        return chain;
    };
    let items = entries(sink, value, key);
    for (entry, t) in items {
        let Some(use_value) = get(t, "use") else {
            if let Some((key, _)) = t.iter().find(|(k, _)| {
                let k: &str = k.get_ref();
                did_you_mean(k, ["use"]).is_some()
            }) {
                let k: &str = key.get_ref();
                sink.error(
                    key.span(),
                    format!("unknown key `{k}` in a resolver entry, did you mean `use`?"),
                );
                continue;
            }
            let names = registry
                .names()
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ");
            sink.error(
                entry.span(),
                format!("resolver entry needs `use`, one of {names}"),
            );
            continue;
        };
        let Some(name) = reader::text(sink, use_value, "`use`") else {
            continue;
        };
        let Some((canonical, factory)) = registry.lookup(name) else {
            let hint = suggestion(name, registry.names());
            let message = if hint.is_empty() {
                let names = registry
                    .names()
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                format!("unknown resolver `{name}`, expected one of {names}")
            } else {
                format!("unknown resolver `{name}`{hint}")
            };
            sink.error(use_value.span(), message);
            continue;
        };
        let mut options = Options {
            sink,
            table: t,
            span: entry.span(),
            name: canonical,
            trigger,
            vars,
            templates: &mut *templates,
        };
        if let Some(r) = factory(&mut options) {
            chain.push(r.named(canonical.to_owned()));
        }
    }
    chain
}
