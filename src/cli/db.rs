//! `db migrate`, `db import` and the connection every command shares.

use std::path::{Path, PathBuf};

use protege::db;
use sea_orm::DatabaseConnection;

use super::{CliResult, Env, Failure, output, personas};

/// Connects to the configured database and brings its schema up to date (the embedded
/// SQLite default is created on first use).
pub(crate) async fn connect(env: &Env) -> CliResult<DatabaseConnection> {
    let conn = db::connect(&env.database).await?;
    db::migrate(&conn).await?;
    Ok(conn)
}

pub(crate) async fn migrate(env: &Env) -> CliResult {
    connect(env).await?;
    output::out("database schema is up to date\n")
}

/// Reads and validates a fixture before touching the database, then imports it.
pub(crate) async fn import_file(conn: &DatabaseConnection, file: &Path) -> CliResult<String> {
    Ok(db::import_fixture_file(conn, file).await?.to_string())
}

pub(crate) async fn import(env: &Env, file: &Path) -> CliResult {
    let conn = connect(env).await?;
    let summary = import_file(&conn, file).await?;
    output::out(&format!("{summary}\n"))
}

/// `db summary`: FILE's text as the summary of a thread through a message.
pub(crate) async fn summary(env: &Env, message: &str, file: &Path) -> CliResult {
    let shown = format!("`{}`", file.display());
    let bytes = protege::read_regular_file(file, &shown, protege::SUMMARY_MAX_BYTES as u64)?
        .ok_or_else(|| Failure::invalid(format!("file not found: {shown}")))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| Failure::invalid(format!("{shown} is not UTF-8 text")))?;
    let engine = super::resolve::engine(env).await?;
    let stored = engine.store_summary(message, &text).await?;
    output::out(&format!(
        "stored summary {} of thread {} through {}\n",
        stored.id, stored.thread_id, stored.through_message_id
    ))
}

pub(crate) async fn import_eml(
    env: &Env,
    paths: &[PathBuf],
    persona: Option<&str>,
    max_attachment_bytes: u64,
) -> CliResult {
    let own_addresses = match persona {
        Some(name) => personas::load_one(env, name)?.info.addresses.clone(),
        None if env.personas.is_dir() => {
            let (set, _) = personas::load(env)?;
            set.personas()
                .iter()
                .flat_map(|p| p.info.addresses.clone())
                .collect()
        }
        None => Vec::new(),
    };
    let conn = connect(env).await?;
    let mut options = db::EmlOptions::new(own_addresses, chrono::Utc::now());
    options.max_attachment_bytes = max_attachment_bytes;
    let summary = db::import_eml_paths(&conn, paths, &options).await?;
    let text = summary.to_string();
    let (notes, last) = text.rsplit_once('\n').unwrap_or(("", &text));
    if !notes.is_empty() {
        output::err(&format!("{notes}\n"))?;
    }
    if summary.failed.is_empty() {
        output::out(&format!("{last}\n"))
    } else {
        Err(Failure::invalid(last.to_owned()))
    }
}
