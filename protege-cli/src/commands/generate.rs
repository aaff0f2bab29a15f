//! `protege completions SHELL` and `protege man [--dir DIR]`: what clap knows of the
//! command line, written for a shell's completion and for `man`; `protege schema
//! [--fixture]`: what the persona reader knows of a persona file, written for an editor.

use std::path::Path;

use clap::CommandFactory;
use protege::config::Registry;

use super::{Cli, CliResult, Command, Failure};

/// What `command` prints, when it is one of the commands generated from the command-line
/// grammar or the persona schema (they need no runtime, persona or database); `None` for
/// the rest.
pub(crate) fn generated(command: &Command, registry: &Registry) -> Option<CliResult<String>> {
    match command {
        Command::Schema { fixture: false } => Some(Ok(json(&registry.json_schema()))),
        Command::Schema { fixture: true } => Some(Ok(protege::db::FIXTURE_SCHEMA.to_owned())),
        Command::Completions { shell } => {
            let mut out = Vec::new();
            clap_complete::generate(*shell, &mut Cli::command(), "protege", &mut out);
            Some(Ok(String::from_utf8_lossy(&out).into_owned()))
        }
        Command::Man { dir: None } => Some(Ok(page(manual_root()))),
        Command::Man { dir: Some(dir) } => Some(write_pages(dir)),
        _ => None,
    }
}

/// The command line as the manual shows it: without clap's `help` command, which has no
/// page, and with every command's name built (`protege-db-migrate`).
fn manual_root() -> clap::Command {
    let mut root = Cli::command().disable_help_subcommand(true);
    root.build();
    root
}

/// The manual page of `command`, in roff.
fn page(command: clap::Command) -> String {
    let mut out = Vec::new();
    // Rendering into a `Vec` cannot fail.
    let _ = clap_mangen::Man::new(command).render(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Writes the page of `protege` and of every command under it (`protege-db-migrate.1`) into
/// `dir`, which must exist, and lists the files written. Each page is written to a new file
/// in `dir` and renamed over its name: a symlink of that name is replaced, never followed to
/// overwrite its target, and a FIFO is replaced rather than opened (which would block).
fn write_pages(dir: &Path) -> CliResult<String> {
    let mut pages = Vec::new();
    collect(manual_root(), &mut pages);
    let mut listing = String::new();
    if let Err(e) = std::fs::metadata(dir) {
        return Err(Failure::invalid(format!(
            "cannot write the manual page {}: {e}",
            dir.join("protege.1").display()
        )));
    }
    for (name, text) in pages {
        let path = dir.join(name);
        let cannot = |e: &dyn std::fmt::Display| {
            Failure::invalid(format!(
                "cannot write the manual page {}: {e}",
                path.display()
            ))
        };
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            return Err(cannot(&"a directory has its name"));
        }
        let mut file = tempfile::NamedTempFile::new_in(dir).map_err(|e| cannot(&e))?;
        std::io::Write::write_all(&mut file, text.as_bytes()).map_err(|e| cannot(&e))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            // A page anyone may read, as a page written by `fs::write` would be.
            let readable = std::fs::Permissions::from_mode(0o644);
            file.as_file()
                .set_permissions(readable)
                .map_err(|e| cannot(&e))?;
        }
        file.persist(&path).map_err(|e| cannot(&e.error))?;
        listing.push_str(&format!("wrote {}\n", path.display()));
    }
    Ok(listing)
}

/// The pages of `command` and of the commands under it, parents first, each with its
/// file name (`protege-run-start.1`).
fn collect(command: clap::Command, pages: &mut Vec<(String, String)>) {
    let name = format!(
        "{}.1",
        command.get_display_name().unwrap_or(command.get_name())
    );
    let children: Vec<clap::Command> = command
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .cloned()
        .collect();
    pages.push((name, page(command)));
    for child in children {
        collect(child, pages);
    }
}

/// `value` as pretty JSON (two spaces) and a newline.
fn json(value: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}
