//! What a persona file names outside itself that can be checked before any message comes:
//! the fixed path of a `LoadFile` entry, and the table and columns of a `LoadRecord` entry.
//! `protege check --database URL` checks them against the app root and the database's
//! catalogue; a templated path waits for a message (`resolve` reports it).

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use protege_schema::{LOAD_FILE, LOAD_RECORD, builtin, suggestion};
use toml::de::{DeTable, DeValue};

use crate::diagnostic::Diagnostic;
use crate::reader::get;

/// A name written in the file, and where.
#[derive(Debug, Clone)]
struct Named {
    text: String,
    span: Range<usize>,
}

/// A `LoadRecord` entry's table and the columns its `where` and `order_by` name.
#[derive(Debug, Clone)]
struct TableUse {
    table: Named,
    columns: Vec<Named>,
}

/// The resources one persona file names, read from its text.
#[derive(Debug, Clone)]
pub struct Resources {
    path: PathBuf,
    source: String,
    files: Vec<Named>,
    tables: Vec<TableUse>,
}

/// What the database holds, as far as the resources need: every table's name, and the
/// columns of the tables the personas name.
#[derive(Debug, Clone, Default)]
pub struct Catalogue {
    /// The tables (and views) of the database.
    pub tables: Vec<String>,
    /// The columns of each named table that exists, in table order.
    pub columns: HashMap<String, Vec<String>>,
}

impl Resources {
    /// The resources of the persona file at `path` whose text is `source`: each chain
    /// entry of a built-in `LoadFile` with a fixed path, or of `LoadRecord` with a table.
    /// Entries the reader rejects are left to its diagnostics.
    pub fn read(path: &Path, source: &str) -> Resources {
        let mut out = Resources {
            path: path.to_owned(),
            source: source.to_owned(),
            files: Vec::new(),
            tables: Vec::new(),
        };
        let (doc, _) = DeTable::parse_recoverable(source);
        for chain in ["message_resolvers", "responsibility_resolvers"] {
            let Some(DeValue::Array(entries)) = get(doc.get_ref(), chain).map(|v| v.get_ref())
            else {
                continue;
            };
            for entry in entries.iter() {
                if let DeValue::Table(entry) = entry.get_ref() {
                    out.entry(entry);
                }
            }
        }
        out
    }

    fn entry(&mut self, entry: &DeTable<'_>) {
        let Some(resolver) = string(entry, "use").and_then(|n| builtin(&n.text)) else {
            return;
        };
        if resolver.name == LOAD_FILE.name {
            if let Some(path) = string(entry, "path")
                && !path.text.contains("{{")
                && !path.text.contains("{%")
            {
                self.files.push(path);
            }
        } else if resolver.name == LOAD_RECORD.name
            && let Some(table) = string(entry, "table")
        {
            let mut columns = Vec::new();
            if let Some(DeValue::Table(conditions)) = get(entry, "where").map(|v| v.get_ref()) {
                for (key, _) in conditions.iter() {
                    columns.push(Named {
                        text: key.get_ref().to_string(),
                        span: key.span(),
                    });
                }
            }
            let order: Vec<_> = match get(entry, "order_by") {
                Some(v) => match v.get_ref() {
                    DeValue::Array(items) => items.iter().collect(),
                    _ => vec![v],
                },
                None => Vec::new(),
            };
            for item in order {
                if let DeValue::String(text) = item.get_ref()
                    && let Some(column) = text.split_whitespace().next()
                {
                    columns.push(Named {
                        text: column.to_owned(),
                        span: item.span(),
                    });
                }
            }
            self.tables.push(TableUse { table, columns });
        }
    }

    /// The tables the file names.
    pub fn tables(&self) -> impl Iterator<Item = &str> {
        self.tables.iter().map(|t| t.table.text.as_str())
    }

    /// The problems of the resources: a fixed path with no file under `root`, a table the
    /// `catalogue` lacks, a column its table lacks; each with a suggestion from what exists.
    pub fn diagnostics(&self, root: &Path, catalogue: &Catalogue) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        let mut error = |span: &Range<usize>, message: String| {
            out.push(Diagnostic::new(
                &self.path,
                &self.source,
                span.clone(),
                message,
            ));
        };
        for file in &self.files {
            let full = root.join(&file.text);
            match std::fs::metadata(&full) {
                Ok(m) if m.is_file() => {}
                Ok(_) => error(
                    &file.span,
                    format!("`{}` is not a file (tried `{}`)", file.text, full.display()),
                ),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let hint = sibling_hint(&file.text, &full);
                    error(
                        &file.span,
                        format!(
                            "file not found: `{}` (tried `{}`){hint}",
                            file.text,
                            full.display()
                        ),
                    );
                }
                Err(e) => error(&file.span, format!("cannot read `{}`: {e}", full.display())),
            }
        }
        for table in &self.tables {
            let name = &table.table.text;
            let Some(columns) = catalogue.columns.get(name) else {
                let hint = suggestion(name, catalogue.tables.iter().map(String::as_str));
                error(
                    &table.table.span,
                    format!("table `{name}` does not exist in the database{hint}"),
                );
                continue;
            };
            for column in &table.columns {
                if columns.contains(&column.text) {
                    continue;
                }
                let hint = suggestion(&column.text, columns.iter().map(String::as_str));
                let hint = if hint.is_empty() {
                    format!("; its columns are {}", listed(columns))
                } else {
                    hint
                };
                error(
                    &column.span,
                    format!(
                        "column `{}` does not exist in table `{name}`{hint}",
                        column.text
                    ),
                );
            }
        }
        out
    }
}

/// `, did you mean `prompts/x.md`?` when a file beside the missing one has a close name.
fn sibling_hint(written: &str, full: &Path) -> String {
    let (Some(dir), Some(name)) = (full.parent(), full.file_name()) else {
        return String::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return String::new();
    };
    let names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    let Some(close) =
        protege_schema::did_you_mean(&name.to_string_lossy(), names.iter().map(String::as_str))
    else {
        return String::new();
    };
    let written_dir = written.rsplit_once('/').map_or("", |(dir, _)| dir);
    if written_dir.is_empty() {
        format!(", did you mean `{close}`?")
    } else {
        format!(", did you mean `{written_dir}/{close}`?")
    }
}

/// Up to ten names in backquotes, then how many more.
fn listed(names: &[String]) -> String {
    let shown: Vec<String> = names.iter().take(10).map(|n| format!("`{n}`")).collect();
    match names.len().saturating_sub(10) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

fn string(table: &DeTable<'_>, key: &str) -> Option<Named> {
    let v = get(table, key)?;
    match v.get_ref() {
        DeValue::String(text) => Some(Named {
            text: text.to_string(),
            span: v.span(),
        }),
        _ => None,
    }
}
