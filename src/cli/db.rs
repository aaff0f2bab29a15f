//! `db migrate`, `db import` and the connection every command shares.

use std::path::Path;

use protege::db;
use sea_orm::DatabaseConnection;

use super::args::{DirectionArg, ImportEmlArgs};
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

/// The persona addresses and trusted authserv-ids an import uses, with a warning for each
/// invalid persona file whose addresses are used anyway.
struct Own {
    addresses: Vec<String>,
    trusted: Vec<String>,
    warnings: Vec<String>,
    invalid: Vec<String>,
}

/// What `import-eml` counts as the persona's own: `--persona`'s addresses, or those of
/// every persona of the folder, including what can be read of the `addresses` of an
/// invalid file (its replies keep their direction; the import then exits 1).
fn own(env: &Env, persona: Option<&str>) -> CliResult<Own> {
    let mut own = Own {
        addresses: Vec::new(),
        trusted: Vec::new(),
        warnings: Vec::new(),
        invalid: Vec::new(),
    };
    let personas = match persona {
        Some(name) => vec![personas::load_one(env, name)?],
        None if env.personas.is_dir() => {
            let (set, diagnostics) = personas::load(env)?;
            let mut paths: Vec<&Path> = diagnostics.iter().map(|d| d.path()).collect();
            paths.dedup();
            for path in paths {
                let shown = format!("`{}`", path.display());
                let addresses = protege::read_regular_file(
                    path,
                    &shown,
                    protege::config::PERSONA_FILE_MAX_BYTES,
                )
                .ok()
                .flatten()
                .map(|bytes| protege::config::addresses_in(&String::from_utf8_lossy(&bytes)))
                .unwrap_or_default();
                own.warnings.push(if addresses.is_empty() {
                    format!("persona file {shown} is invalid and no address could be read from it: mail it sent is imported as inbound")
                } else {
                    let list: Vec<String> = addresses.iter().map(|a| format!("`{a}`")).collect();
                    format!(
                        "persona file {shown} is invalid; its addresses {} still count as persona addresses",
                        list.join(", ")
                    )
                });
                own.invalid.push(shown);
                own.addresses.extend(addresses);
            }
            set.personas()
        }
        None => Vec::new(),
    };
    for p in personas {
        own.addresses.extend(p.info.addresses.iter().cloned());
        own.trusted
            .extend(p.info.mail.trusted_authserv_ids.iter().cloned());
    }
    Ok(own)
}

pub(crate) async fn import_eml(env: &Env, args: &ImportEmlArgs) -> CliResult {
    let own = own(env, args.persona.as_deref())?;
    for warning in &own.warnings {
        output::err(&format!("warning: {warning}\n"))?;
    }
    let conn = connect(env).await?;
    let mut options = db::EmlOptions::new(own.addresses, chrono::Utc::now());
    options.max_attachment_bytes = args.max_attachment_bytes;
    options.trusted_authserv_ids = own.trusted;
    options
        .trusted_authserv_ids
        .extend(args.trusted_authserv_ids.iter().cloned());
    options.direction = match args.direction {
        DirectionArg::Auto => None,
        DirectionArg::Inbound => Some(protege::Direction::Inbound),
        DirectionArg::Outbound => Some(protege::Direction::Outbound),
    };
    let summary = db::import_eml_paths(&conn, &args.paths, &options).await?;
    let text = summary.to_string();
    let (notes, last) = text.rsplit_once('\n').unwrap_or(("", &text));
    if !notes.is_empty() {
        output::err(&format!("{notes}\n"))?;
    }
    if !summary.failed.is_empty() {
        return Err(Failure::invalid(last.to_owned()));
    }
    output::out(&format!("{last}\n"))?;
    if own.invalid.is_empty() {
        return Ok(());
    }
    Err(Failure::invalid(format!(
        "the persona folder has {} invalid {} ({}): run `protege check`, fix {} and check the direction of the mail imported",
        own.invalid.len(),
        if own.invalid.len() == 1 {
            "file"
        } else {
            "files"
        },
        own.invalid.join(", "),
        if own.invalid.len() == 1 { "it" } else { "them" },
    )))
}
