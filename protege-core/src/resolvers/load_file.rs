//! `LoadFile`: a file's contents verbatim, from a literal or templated path.

use std::path::{Component, Path, PathBuf};

use crate::context::Context;
use crate::error::{Error, ErrorKind, Result};
use crate::file::{LOAD_FILE_MAX_BYTES, io_reason, read_regular_file};
use crate::message::{Message, Role, message};
use crate::resolver::{Resolved, Resolver};
use crate::source::Source;
use crate::template::{Template, is_template};
use super::{BuiltinResolver, Given, GivenOptions, Refused};

enum PathSource {
    Literal(String),
    Template(Template),
    Broken(Error),
}

/// Contributes a file's contents verbatim; nothing when the file is blank.
///
/// A path containing `{{` or `{%` is a template and must stay inside the app root once
/// rendered, symlinks followed; a literal path is trusted (relative to the root, or
/// absolute as is) unless [`AppConfig::confine_paths`](crate::AppConfig::confine_paths)
/// is set, as it is for personas that come from a request. Only regular files of at most 8 MiB are read.
#[must_use = "a resolver does nothing until it is part of a chain"]
pub struct LoadFile {
    path: PathSource,
    role: Role,
}

impl std::fmt::Debug for LoadFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = match &self.path {
            PathSource::Literal(p) => p.clone(),
            PathSource::Template(t) => t.source().to_owned(),
            PathSource::Broken(e) => format!("broken: {e}"),
        };
        f.debug_struct("LoadFile")
            .field("path", &path)
            .field("role", &self.role)
            .finish()
    }
}

impl LoadFile {
    /// A file at `path` (literal or template); a template syntax error is returned.
    pub fn try_new(path: &str) -> Result<Self> {
        Self::try_named(path, "LoadFile.path")
    }

    /// Like [`try_new`](Self::try_new), naming the template `name` in errors.
    pub fn try_named(path: &str, name: &str) -> Result<Self> {
        let path = if is_template(path) {
            PathSource::Template(Template::compile(name, path)?)
        } else {
            PathSource::Literal(path.to_owned())
        };
        Ok(Self {
            path,
            role: Role::System,
        })
    }

    /// A file at the path `template` renders to (it must stay inside the app root).
    pub fn from_template(template: Template) -> Self {
        Self {
            path: PathSource::Template(template),
            role: Role::System,
        }
    }

    /// A file at `path`; a template syntax error is reported when the chain runs (the
    /// `resolvers!` macro checks literal paths at compile time).
    pub fn new(path: &str) -> Self {
        Self::try_new(path).unwrap_or_else(|e| Self {
            path: PathSource::Broken(e),
            role: Role::System,
        })
    }

    /// Sets the role of the contributed message (default `system`).
    pub fn role(mut self, role: Role) -> Self {
        self.role = role;
        self
    }

    /// The file this resolver reads in `ctx`: the path as written (or rendered) and the
    /// path to open. A templated path is rendered, must stay inside the app root
    /// lexically, and, when the file exists, once its symlinks are followed (the returned
    /// path is then the canonical one).
    pub fn resolve_path(&self, ctx: &Context) -> Result<(String, PathBuf)> {
        let root = &ctx.config().root;
        match &self.path {
            PathSource::Literal(p) if !ctx.config().confine_paths => Ok((p.clone(), root.join(p))),
            PathSource::Literal(p) => confined(root, p.clone(), None),
            PathSource::Template(t) => {
                let rendered = t.render_in(ctx, ctx.template_vars())?;
                confined(root, rendered, Some(t.source()))
            }
            PathSource::Broken(e) => Err(e.clone()),
        }
    }
}

/// `path` (rendered from the template `source`, when it is one) as a path inside `root`:
/// it must stay inside lexically and, when the file exists, once its symlinks are followed
/// (the returned path is then the canonical one).
fn confined(root: &Path, path: String, source: Option<&str>) -> Result<(String, PathBuf)> {
    let from = source.map_or_else(String::new, |s| format!(" (rendered from `{s}`)"));
    let inside = inside_root(&path).ok_or_else(|| {
        Error::new(
            ErrorKind::PathOutsideRoot,
            format!(
                "path outside root: `{path}`{from} leaves the app root `{}`",
                root.display()
            ),
        )
    })?;
    let full = root.join(inside);
    let cannot_resolve = |what: &Path, e: std::io::Error| {
        Error::new(
            ErrorKind::Io,
            format!("cannot resolve `{}`: {}", what.display(), io_reason(&e)),
        )
    };
    let real = match full.canonicalize() {
        Ok(real) => real,
        // Reading it reports `file not found` with the path tried.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((path, full)),
        Err(e) => return Err(cannot_resolve(&full, e)),
    };
    let real_root = root.canonicalize().map_err(|e| cannot_resolve(root, e))?;
    if !real.starts_with(&real_root) {
        return Err(Error::new(
            ErrorKind::PathOutsideRoot,
            format!(
                "path outside root: `{path}`{from} leads to `{}`, outside the app root `{}`",
                real.display(),
                root.display()
            ),
        ));
    }
    Ok((path, real))
}

/// Normalises a relative path lexically; `None` when it is absolute or climbs out.
fn inside_root(path: &str) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in Path::new(path).components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

impl LoadFile {
    /// The file's message (`None` when it is blank) and its source: the path as written,
    /// relative to the app root, and the SHA-256 of the bytes read.
    fn load(&self, ctx: &Context) -> Result<Option<(Message, Source)>> {
        let (written, full) = self.resolve_path(ctx)?;
        let shown = format!("`{written}` (`{}`)", full.display());
        // Prompt files are small: a blocking read is cheaper than a hop to a thread pool.
        let bytes = read_regular_file(&full, &shown, LOAD_FILE_MAX_BYTES)?.ok_or_else(|| {
            Error::new(
                ErrorKind::FileNotFound,
                format!("file not found: `{written}` (tried `{}`)", full.display()),
            )
        })?;
        let sha256 = Source::sha256_hex(&bytes);
        let text = String::from_utf8(bytes).map_err(|_| {
            Error::new(
                ErrorKind::Io,
                format!("file `{written}` (`{}`) is not valid UTF-8", full.display()),
            )
        })?;
        if text.trim().is_empty() {
            return Ok(None);
        }
        let path = match inside_root(&written) {
            Some(inside) => inside
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/"),
            None => written,
        };
        Ok(Some((
            message(self.role, text),
            Source::File { path, sha256 },
        )))
    }
}

impl Resolver for LoadFile {
    type Output = Option<Message>;

    async fn resolve(&self, ctx: &Context) -> Result<Option<Message>> {
        Ok(self.load(ctx)?.map(|(m, _)| m))
    }

    async fn resolve_sourced(&self, ctx: &Context) -> Result<Resolved> {
        Ok(match self.load(ctx)? {
            Some((m, source)) => Resolved::new(vec![m]).with_sources(vec![source]),
            None => Resolved::none(),
        })
    }

    fn name(&self) -> &str {
        "LoadFile"
    }
}

impl BuiltinResolver for LoadFile {
    const SPEC: &'static protege_schema::Builtin = &protege_schema::LOAD_FILE;

    fn from_given(given: GivenOptions) -> std::result::Result<Option<Self>, Refused> {
        let mut file = None;
        let mut role = None;
        for (name, value) in given {
            match (name, value) {
                ("path", Given::Path(f)) => file = Some(f),
                ("role", Given::Role(r)) => role = Some(r),
                _ => {}
            }
        }
        Ok(file.map(|file| match role {
            Some(role) => file.role(role),
            None => file,
        }))
    }
}
