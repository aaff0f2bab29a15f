//! protege assembles what a large language model sees before it answers an email: the
//! ordered system, user, assistant and tool messages of a request, from personas written
//! as TOML files or as Rust code.
//!
//! This crate is the facade: it re-exports [`protege_core`] (the engine) and
//! [`protege_config`] (TOML personas), and ships the `protege` command line.

pub use protege_config as config;
pub use protege_core as core;
pub use protege_core::*;

mod engine;

pub use engine::{
    Engine, EngineBuilder, EngineError, EngineErrorKind, Format, Resolution, ResolveInput,
    problem_summary,
};
