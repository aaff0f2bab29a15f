//! Argument parsing and dispatch; each command lives in its own module.

pub(crate) mod agent;
pub(crate) mod args;
pub(crate) mod cache_report;
pub(crate) mod db;
pub(crate) mod demo;
pub(crate) mod diff;
pub(crate) mod explain;
mod generate;
pub(crate) mod outbox;
pub(crate) mod output;
pub(crate) mod personas;
pub(crate) mod resolve;
pub(crate) mod run;
pub(crate) mod watch;

use std::path::PathBuf;
use std::time::Duration;

use protege::config::Registry;
use protege::{Engine, EngineBuilder};

pub(crate) use args::{Cli, Command, DbCommand, LogFormat, ServeArgs};
pub(crate) use generate::generated;

/// A failed command: the one sentence printed to stderr and the exit code.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) code: u8,
    pub(crate) message: String,
}

impl Failure {
    /// Invalid input (exit code 1).
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self {
            code: 1,
            message: message.into(),
        }
    }

    /// A usage error (exit code 2): the arguments or the environment contradict each other.
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self {
            code: 2,
            message: message.into(),
        }
    }
}

impl From<protege::Error> for Failure {
    fn from(e: protege::Error) -> Self {
        Failure::invalid(e.to_string())
    }
}

pub(crate) type CliResult<T = ()> = Result<T, Failure>;

/// The paths, database settings and resolvers every command works with.
#[derive(Debug, Clone)]
pub(crate) struct Env {
    pub(crate) root: PathBuf,
    pub(crate) personas: PathBuf,
    pub(crate) database: String,
    /// The database was named (`--database` or `PROTEGE_DATABASE_URL`), not defaulted.
    pub(crate) database_given: bool,
    /// The read replica's URL (`--read-database`), when set and not empty.
    pub(crate) read_database: Option<String>,
    pub(crate) connect_timeout: Duration,
    pub(crate) registry: Registry,
    /// `PROTEGE_FENCE_KEY`, when set and not empty.
    pub(crate) fence_key: Option<String>,
}

impl Env {
    pub(crate) fn from_cli(cli: &Cli, registry: Registry) -> CliResult<Env> {
        let cwd = std::env::current_dir()
            .map_err(|e| Failure::invalid(format!("cannot read the current directory: {e}")))?;
        // `join` keeps an absolute path as it is.
        let root = match &cli.root {
            Some(r) => cwd.join(r),
            None => cwd.clone(),
        };
        if !root.is_dir() {
            return Err(Failure::invalid(format!(
                "app root `{}` is not a directory",
                root.display()
            )));
        }
        let personas = match &cli.personas {
            Some(p) => cwd.join(p),
            None => root.join("personas"),
        };
        // Set but empty (`PROTEGE_DATABASE_URL=`) means unset.
        let given = cli.database.clone().filter(|url| !url.is_empty());
        let database_given = given.is_some();
        let database =
            given.unwrap_or_else(|| format!("sqlite://{}", root.join("protege.db").display()));
        let read_database = cli.read_database.clone().filter(|url| !url.is_empty());
        let connect_timeout = match &cli.connect_timeout {
            Some(text) => {
                let name = if cli.connect_timeout_from_env {
                    "PROTEGE_CONNECT_TIMEOUT"
                } else {
                    "--connect-timeout"
                };
                protege::db::parse_connect_timeout(text, name)
                    .map_err(|e| Failure::usage(e.to_string()))?
            }
            None => protege::db::DEFAULT_CONNECT_TIMEOUT,
        };
        let fence_key = std::env::var("PROTEGE_FENCE_KEY")
            .ok()
            .filter(|k| !k.is_empty());
        Ok(Env {
            root,
            personas,
            database,
            database_given,
            read_database,
            connect_timeout,
            registry,
            fence_key,
        })
    }

    /// The engine of these settings, not yet built.
    pub(crate) fn engine_builder(&self) -> EngineBuilder {
        let builder = Engine::builder()
            .root(&self.root)
            .personas(&self.personas)
            .database(&self.database)
            .connect_timeout(self.connect_timeout)
            .registry(self.registry.clone());
        let builder = match &self.read_database {
            Some(url) => builder.read_database(url.clone()),
            None => builder,
        };
        match &self.fence_key {
            Some(key) => builder.fence_key(key.clone()),
            None => builder,
        }
    }

    /// The engine of these settings.
    pub(crate) async fn engine(&self) -> CliResult<Engine> {
        Ok(self.engine_builder().build().await?)
    }
}
