//! The `protege` command line, as a library: [`main`] is the shipped binary, and
//! [`main_with`] the same command with resolvers of your own, so a team whose personas use
//! custom resolvers gets `check`, `resolve`, `watch`, `cache-report` and `serve` for them.
//!
//! ```no_run
//! use protege::config::Registry;
//!
//! fn main() -> std::process::ExitCode {
//!     let mut registry = Registry::new();
//!     // registry.register::<OpenOrders>("OpenOrders");
//!     protege_cli::main_with(registry)
//! }
//! ```
//!
//! The commands live in `commands/`, one module each; the HTTP service's connection loop
//! in `serve/` (its routes are the library's `protege::serve`).

mod commands;
mod serve;
mod telemetry;

// The guide's commands and requests, checked against this grammar and the routes.
#[cfg(test)]
mod guide;

use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{CommandFactory as _, FromArgMatches as _};
use commands::{
    Cli, CliResult, Command, DbCommand, Env, cache_report, db, demo, output, personas, resolve,
    watch,
};
use protege::config::Registry;

/// Runs the `protege` command with the built-in resolvers: parses the process's arguments,
/// runs the command and returns its exit code.
pub fn main() -> ExitCode {
    main_with(Registry::new())
}

/// Runs the `protege` command with the resolvers of `registry`: every command that loads
/// personas (`check`, `resolve`, `cache-report`, `watch`, `serve`, `demo`, `db import-eml`)
/// accepts personas that use them.
pub fn main_with(registry: Registry) -> ExitCode {
    run_main(registry)
}

/// Parses the arguments, runs the command with the resolvers of `registry` and maps the
/// outcome to an exit code.
fn run_main(registry: Registry) -> ExitCode {
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|matches| Ok((Cli::from_arg_matches(&matches)?, matches)));
    let cli = match parsed {
        Ok((mut cli, matches)) => {
            cli.connect_timeout_from_env =
                matches.value_source("connect_timeout") == Some(ValueSource::EnvVariable);
            cli
        }
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
    // The commands that only print what clap knows need no runtime, persona or database.
    if let Some(text) = commands::generated(&cli.command, &registry) {
        return match text.and_then(|text| output::out(&text)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(failure) => {
                let _ = output::err(&format!("error: {}\n", failure.message));
                ExitCode::from(failure.code)
            }
        };
    }
    let logs = match &cli.command {
        Command::Serve(args) => Some(args.log_format),
        _ => None,
    };
    // One TLS stack for every HTTP client of the process (providers, tools, the trace
    // exporter): rustls over ring, installed before any client is built.
    protege::agent::install_crypto_provider();
    let telemetry = telemetry::init(logs);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = output::err(&format!("error: cannot start the async runtime: {e}\n"));
            telemetry.shutdown();
            return ExitCode::from(1);
        }
    };
    let mut database = String::new();
    let mut read_database = String::new();
    let outcome = runtime.block_on(async {
        let env = Env::from_cli(&cli, registry)?;
        database = env.database.clone();
        read_database = env.read_database.clone().unwrap_or_default();
        run(cli.command, &env).await
    });
    // The spans still buffered are exported before the exit.
    telemetry.shutdown();
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            // Whatever a message quotes, the database password never reaches the screen.
            let message = protege::db::redact_text(
                &protege::db::redact_text(&failure.message, &database),
                &read_database,
            );
            // Nothing more can be said when stderr itself fails.
            let _ = output::err(&format!("error: {message}\n"));
            ExitCode::from(failure.code)
        }
    }
}

async fn run(command: Command, env: &Env) -> CliResult {
    match command {
        Command::Check { no_env, no_mcp } => {
            personas::check(env, !no_env, !no_env && !no_mcp).await
        }
        Command::Db { command } => match command {
            DbCommand::Migrate => db::migrate(env).await,
            DbCommand::Import { file } => db::import(env, &file).await,
            DbCommand::Summary { message, file } => db::summary(env, &message, &file).await,
            DbCommand::ImportEml(args) => db::import_eml(env, &args).await,
            DbCommand::Prune {
                older_than,
                dry_run,
                now,
            } => db::prune(env, older_than, now, dry_run).await,
            DbCommand::Export { file } => db::export(env, &file).await,
            DbCommand::Threads { limit, format } => db::threads(env, limit, format).await,
            DbCommand::Messages { thread, format } => db::messages(env, thread, format).await,
        },
        Command::Forget {
            address,
            dry_run,
            force,
        } => db::forget(env, &address, dry_run, force).await,
        Command::Resolve(args) => resolve::run(env, &args).await,
        Command::CacheReport(args) => cache_report::run(env, &args).await,
        Command::Run { command } => commands::run::run(env, &command).await,
        Command::Outbox { command } => commands::outbox::run(env, &command).await,
        Command::Agent { command } => commands::agent::run(env, &command).await,
        Command::Inbox { command } => commands::agent::inbox(env, &command).await,
        Command::Watch => watch::run(env).await,
        Command::Demo => demo::run(env).await,
        Command::Serve(args) => serve::run(env, &args).await,
        Command::Diff(args) => commands::diff::run(env, &args).await,
        // Printed before, see `run_main`.
        Command::Completions { .. } | Command::Man { .. } | Command::Schema { .. } => Ok(()),
    }
}
