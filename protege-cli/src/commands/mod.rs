//! Argument parsing and dispatch; each command lives in its own module.

mod args;
mod cache_report;
mod db;
mod demo;
mod explain;
pub(crate) mod output;
mod personas;
mod resolve;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser as _;
use protege::config::Registry;
use protege::{Engine, EngineBuilder};

pub(crate) use args::{Cli, Command, DbCommand, LogFormat, ServeArgs};

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
    pub(crate) connect_timeout: Duration,
    pub(crate) registry: Registry,
}

impl Env {
    fn from_cli(cli: &Cli, registry: Registry) -> CliResult<Env> {
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
        let database = cli
            .database
            .clone()
            .filter(|url| !url.is_empty())
            .unwrap_or_else(|| format!("sqlite://{}", root.join("protege.db").display()));
        let connect_timeout = match std::env::var("PROTEGE_CONNECT_TIMEOUT") {
            Ok(text) => protege::db::parse_connect_timeout(&text).map_err(|e| Failure {
                code: 2,
                message: e.to_string(),
            })?,
            Err(_) => protege::db::DEFAULT_CONNECT_TIMEOUT,
        };
        Ok(Env {
            root,
            personas,
            database,
            connect_timeout,
            registry,
        })
    }

    /// The engine of these settings, not yet built.
    pub(crate) fn engine_builder(&self) -> EngineBuilder {
        Engine::builder()
            .root(&self.root)
            .personas(&self.personas)
            .database(&self.database)
            .connect_timeout(self.connect_timeout)
            .registry(self.registry.clone())
    }

    /// The engine of these settings.
    pub(crate) async fn engine(&self) -> CliResult<Engine> {
        Ok(self.engine_builder().build().await?)
    }
}

/// Parses the arguments, runs the command with the resolvers of `registry` and maps the
/// outcome to an exit code.
pub(crate) fn main(registry: Registry) -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help, version and usage errors, written like every other output.
        Err(e) => {
            let text = e.render().to_string();
            let written = if e.use_stderr() {
                output::err(&text)
            } else {
                output::out(&text)
            };
            return match written {
                Ok(()) => ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2)),
                Err(failure) => {
                    let _ = output::err(&format!("error: {}\n", failure.message));
                    ExitCode::from(failure.code)
                }
            };
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = output::err(&format!("error: cannot start the async runtime: {e}\n"));
            return ExitCode::from(1);
        }
    };
    let mut database = String::new();
    let outcome = runtime.block_on(async {
        let env = Env::from_cli(&cli, registry)?;
        database = env.database.clone();
        run(cli.command, &env).await
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            // Whatever a message quotes, the database password never reaches the screen.
            let message = protege::db::redact_text(&failure.message, &database);
            // Nothing more can be said when stderr itself fails.
            let _ = output::err(&format!("error: {message}\n"));
            ExitCode::from(failure.code)
        }
    }
}

async fn run(command: Command, env: &Env) -> CliResult {
    match command {
        Command::Check => personas::check(env).await,
        Command::Db { command } => match command {
            DbCommand::Migrate => db::migrate(env).await,
            DbCommand::Import { file } => db::import(env, &file).await,
            DbCommand::Summary { message, file } => db::summary(env, &message, &file).await,
            DbCommand::ImportEml(args) => db::import_eml(env, &args).await,
        },
        Command::Resolve(args) => resolve::run(env, &args).await,
        Command::CacheReport(args) => cache_report::run(env, &args).await,
        Command::Watch => watch::run(env).await,
        Command::Demo => demo::run(env).await,
        Command::Serve(args) => crate::serve::run(env, &args).await,
    }
}
