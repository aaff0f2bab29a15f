//! Argument parsing and dispatch; each command lives in its own module.

mod args;
mod db;
mod demo;
mod explain;
mod personas;
mod resolve;
mod watch;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser as _;

pub(crate) use args::{Cli, Command, DbCommand};

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
}

impl From<protege::Error> for Failure {
    fn from(e: protege::Error) -> Self {
        Failure::invalid(e.to_string())
    }
}

pub(crate) type CliResult<T = ()> = Result<T, Failure>;

/// The paths and database URL every command works with.
#[derive(Debug, Clone)]
pub(crate) struct Env {
    pub(crate) root: PathBuf,
    pub(crate) personas: PathBuf,
    pub(crate) database: String,
}

impl Env {
    fn from_cli(cli: &Cli) -> CliResult<Env> {
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
        let database = cli
            .database
            .clone()
            .unwrap_or_else(|| format!("sqlite://{}", root.join("protege.db").display()));
        Ok(Env {
            root,
            personas,
            database,
        })
    }
}

/// Parses the arguments, runs the command and maps the outcome to an exit code.
pub(crate) fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let outcome = runtime.block_on(async {
        let env = Env::from_cli(&cli)?;
        run(cli.command, &env).await
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "error: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

async fn run(command: Command, env: &Env) -> CliResult {
    match command {
        Command::Check => personas::check(env),
        Command::Db { command } => match command {
            DbCommand::Migrate => db::migrate(env).await,
            DbCommand::Import { file } => db::import(env, &file).await,
            DbCommand::ImportEml {
                paths,
                persona,
                max_attachment_bytes,
            } => db::import_eml(env, &paths, persona.as_deref(), max_attachment_bytes).await,
        },
        Command::Resolve(args) => resolve::run(env, &args).await,
        Command::Watch => watch::run(env).await,
        Command::Demo => demo::run(env).await,
    }
}
