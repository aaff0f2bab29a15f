//! Your own `protege` command, with your resolvers: the shipped command line (`check`,
//! `resolve`, `cache-report`, `watch`, `serve`, `db …`) built around a `Registry` that
//! knows `OpenOrders`, the custom resolver of the library's `custom_resolver` example. The
//! shipped binary rejects a persona that uses it (`unknown resolver "OpenOrders"`); this
//! one checks, resolves and serves it.
//!
//! ```text
//! cargo run -p protege-cli --example own_protege -- --root APP check
//! cargo run -p protege-cli --example own_protege -- --root APP serve
//! ```
//!
//! where `APP/personas/shop.toml` is the `custom_resolver` example's persona and the
//! application's `orders` table sits in `APP/protege.db`.

use std::process::ExitCode;

use protege::config::Registry;

#[allow(dead_code)]
#[path = "../../examples/custom_resolver.rs"]
pub(crate) mod custom_resolver;

pub(crate) fn main() -> ExitCode {
    let mut registry = Registry::new();
    registry.register::<custom_resolver::OpenOrders>("OpenOrders");
    protege_cli::main_with(registry)
}
