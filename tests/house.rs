//! The house's rules, checked over the production code of every crate of the workspace
//! (each crate's `src/`, without `#[cfg(test)]` modules).

use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::Visit;

/// The most lines a production function may take, from its `fn` to its closing brace.
const MOST_LINES: usize = 100;

/// Every `.rs` file under `dir`, in order.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The `src/` folders of the workspace's crates: the root's and each `protege-*`'s.
fn source_folders() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut folders = vec![root.join("src")];
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("protege-"))
                && p.join("Cargo.toml").is_file()
        })
        .map(|p| p.join("src"))
        .collect();
    crates.sort();
    folders.extend(crates);
    folders
}

/// The functions of one file longer than [`MOST_LINES`]: `file:line name (lines)`.
struct LongFunctions<'a> {
    file: &'a str,
    found: Vec<String>,
}

impl LongFunctions<'_> {
    /// Notes function `name` when it runs from `fn_token` to `block` over the limit.
    fn measure(&mut self, name: &syn::Ident, fn_token: &syn::token::Fn, block: &syn::Block) {
        let start = fn_token.span().start().line;
        let end = block.brace_token.span.close().end().line;
        let lines = end + 1 - start;
        if lines > MOST_LINES {
            self.found
                .push(format!("{}:{start} {name} ({lines} lines)", self.file));
        }
    }
}

/// Whether `attrs` hold `#[cfg(test)]`.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "test")
    })
}

impl<'ast> Visit<'ast> for LongFunctions<'_> {
    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        if !is_test_only(&module.attrs) {
            syn::visit::visit_item_mod(self, module);
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !is_test_only(&item.attrs) {
            self.measure(&item.sig.ident, &item.sig.fn_token, &item.block);
            syn::visit::visit_item_fn(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if !is_test_only(&item.attrs) {
            self.measure(&item.sig.ident, &item.sig.fn_token, &item.block);
            syn::visit::visit_impl_item_fn(self, item);
        }
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        if let Some(block) = &item.default {
            self.measure(&item.sig.ident, &item.sig.fn_token, block);
        }
        syn::visit::visit_trait_item_fn(self, item);
    }
}

/// No production function is longer than a hundred lines: a longer one does several
/// things, each of which deserves its name.
#[test]
fn no_production_function_is_over_a_hundred_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for folder in source_folders() {
        rust_files(&folder, &mut files);
    }
    assert!(files.len() > 100, "only {} files found", files.len());
    let mut found = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let syntax = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let shown = path.strip_prefix(root).unwrap().display().to_string();
        let mut long = LongFunctions {
            file: &shown,
            found: Vec::new(),
        };
        long.visit_file(&syntax);
        found.extend(long.found);
    }
    assert!(
        found.is_empty(),
        "functions over {MOST_LINES} lines:\n{}",
        found.join("\n")
    );
}

/// What names a database driver in code: the SQLite C library's crate, sqlx (the drivers
/// under SeaORM), the session's own paths, and SeaORM's calls that reach past it to a
/// driver's pool or row.
const DRIVER_WORDS: [&str; 8] = [
    "rusqlite",
    "sqlx",
    "embedded_write",
    "embedded_tx",
    "one_trip",
    "try_as_",
    "_connection_pool",
    "DatabaseConnectionType",
];

/// The only places that may name a driver: the session, which chooses the one that runs a
/// statement; connecting, which opens the connection of the URL's driver; and the reason of
/// a database error, which reads the driver's error.
const DRIVER_ROOMS: [&str; 3] = [
    "protege-core/src/db/session/",
    "protege-core/src/db/connect.rs",
    "protege-core/src/db/reason.rs",
];

/// No module outside the session chooses a database driver: every read and write is
/// written once, over the session's calls, whatever database runs it.
#[test]
fn no_module_outside_the_session_chooses_a_driver() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for folder in source_folders() {
        rust_files(&folder, &mut files);
    }
    let mut found = Vec::new();
    for path in &files {
        let shown = path.strip_prefix(root).unwrap().display().to_string();
        if DRIVER_ROOMS.iter().any(|room| shown.starts_with(room)) {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        for (at, line) in text.lines().enumerate() {
            // Code only: what follows `//` is a comment (or a URL, which names no driver).
            let code = line.split("//").next().unwrap_or_default();
            for word in DRIVER_WORDS {
                if code.contains(word) {
                    found.push(format!("{shown}:{} {word}", at + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "driver chosen outside the session:\n{}",
        found.join("\n")
    );
}
