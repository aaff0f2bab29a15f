//! `PersonaSet`: the personas of a folder, swapped atomically as files change.

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use foldhash::quality::RandomState;

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::env::{EnvLookup, process_env};
use crate::error::{Error, ErrorKind, Result};
use crate::event::Event;
use crate::persona::Persona;
use crate::registry::Registry;
use crate::templates::Templates;

/// The personas of a folder (`*.toml` files), looked up by name.
///
/// Cheap to clone (one `Arc`). [`get`](Self::get) returns a snapshot: a reload swaps in a
/// new `Arc<Persona>` atomically and never changes one already handed out.
#[derive(Clone)]
pub struct PersonaSet {
    pub(crate) shared: Arc<Shared>,
}

pub(crate) struct Shared {
    pub(crate) dir: PathBuf,
    registry: Registry,
    /// Where the environment variables the personas name are read, when they are checked.
    env: Option<Arc<EnvLookup>>,
    state: ArcSwap<State>,
    /// Serialises writers (readers never wait) and remembers the rejected files.
    write: Mutex<Rejections>,
    /// The keys of the file fingerprints, random per set so that no file can be made to
    /// look unchanged.
    keys: RandomState,
}

/// What a file held: its length and a 64-bit hash of its text. Enough to tell a save that
/// changed nothing from a change without keeping every file's text.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Fingerprint {
    len: usize,
    hash: u64,
}

/// What a persona file held when it was read.
enum File {
    /// Its text.
    Text(String, Fingerprint),
    /// No file (any more).
    Gone,
    /// A file that cannot be a persona: too large, not UTF-8, not a regular file.
    Unreadable(Diagnostic),
}

/// A persona, or the problems of its file.
type Parsed = Result<Persona, Diagnostics>;

/// The fewest files for which a load starts another thread.
const FILES_PER_THREAD: usize = 64;

/// The rejected files of a set.
#[derive(Default)]
struct Rejections {
    /// What each rejected file held, so a rejection is reported once per content.
    sources: BTreeMap<PathBuf, Fingerprint>,
    /// The files rejected only because their persona name was taken, with that name:
    /// checked again once the name is free.
    duplicates: BTreeMap<PathBuf, String>,
}

#[derive(Clone, Default)]
struct State {
    by_name: BTreeMap<String, Arc<Persona>>,
    /// For each loaded file: the persona's name and what the file held. Hashed:
    /// ordering paths compares them component by component, a cost a load of many files
    /// paid at every insert.
    by_path: HashMap<PathBuf, (String, Fingerprint)>,
}

impl State {
    /// Loads `persona`, read at `path` from what `fingerprint` names; `previous` is the
    /// name and fingerprint of the persona the file held before, if any. The events: the
    /// persona reloaded, or added (after the old name removed, when it was renamed).
    fn install(
        &mut self,
        path: &Path,
        previous: Option<(String, Fingerprint)>,
        persona: Persona,
        fingerprint: Fingerprint,
    ) -> Vec<Event> {
        let name = persona.info.name.clone();
        let mut events = Vec::new();
        if let Some((old, _)) = &previous
            && *old != name
        {
            self.by_name.remove(old);
            events.push(Event::Removed {
                persona: old.clone(),
                path: path.to_owned(),
            });
        }
        let renamed = !events.is_empty();
        self.by_name.insert(name.clone(), Arc::new(persona));
        self.by_path
            .insert(path.to_owned(), (name.clone(), fingerprint));
        events.push(if previous.is_some() && !renamed {
            Event::Reloaded {
                persona: name,
                path: path.to_owned(),
            }
        } else {
            Event::Added {
                persona: name,
                path: path.to_owned(),
            }
        });
        events
    }
}

impl std::fmt::Debug for PersonaSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersonaSet")
            .field("dir", &self.shared.dir)
            .field("personas", &self.names())
            .finish()
    }
}

/// How a [`PersonaSet`] loads: its folder, its resolvers, and whether the environment
/// variables its personas name are checked.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(
///     dir.path().join("support.toml"),
///     "[model]\nprovider = \"openai\"\napi_key_env = \"SUPPORT_KEY\"\n\n[agent]\n",
/// )
/// .unwrap();
/// let (set, problems) = protege::config::PersonaSet::builder(dir.path())
///     .env(|_| None)
///     .load()
///     .unwrap();
/// assert!(set.is_empty());
/// assert!(problems[0].message().contains("`SUPPORT_KEY`, which is not set"));
/// ```
#[derive(Clone)]
pub struct PersonaSetBuilder {
    dir: PathBuf,
    registry: Registry,
    env: Option<Arc<EnvLookup>>,
}

impl std::fmt::Debug for PersonaSetBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersonaSetBuilder")
            .field("dir", &self.dir)
            .field("check_env", &self.env.is_some())
            .finish_non_exhaustive()
    }
}

impl PersonaSetBuilder {
    /// The resolvers the personas may name (default: the built-ins).
    #[must_use = "returns the changed builder"]
    pub fn registry(mut self, registry: Registry) -> Self {
        self.registry = registry;
        self
    }

    /// Whether a persona naming an environment variable this process does not have is
    /// rejected, at load and at every reload (default: false, the environment is not
    /// read). See [`Persona::env_diagnostics`] for which variables count.
    #[must_use = "returns the changed builder"]
    pub fn check_env(mut self, check: bool) -> Self {
        self.env = check.then(|| Arc::new(process_env) as Arc<EnvLookup>);
        self
    }

    /// Checks the environment variables with `lookup` instead of this process's
    /// environment (implies [`check_env`](Self::check_env)).
    #[must_use = "returns the changed builder"]
    pub fn env(mut self, lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        self.env = Some(Arc::new(lookup));
        self
    }

    /// Loads every `*.toml` file of the folder, as [`PersonaSet::load`] does.
    pub fn load(self) -> Result<(PersonaSet, Diagnostics)> {
        PersonaSet::from_builder(self).load_files()
    }
}

impl PersonaSet {
    /// Loads every `*.toml` file of `dir` with the built-in resolvers. Returns the set of
    /// valid personas and the problems of the invalid files (sorted by file, then line).
    /// Only an unreadable folder is an error.
    pub fn load(dir: impl Into<PathBuf>) -> Result<(PersonaSet, Diagnostics)> {
        Self::load_with(dir, Registry::new())
    }

    /// Like [`load`](Self::load), with custom resolvers registered in `registry`.
    pub fn load_with(
        dir: impl Into<PathBuf>,
        registry: Registry,
    ) -> Result<(PersonaSet, Diagnostics)> {
        Self::builder(dir).registry(registry).load()
    }

    /// How to load `dir` with more settings than [`load_with`](Self::load_with) takes:
    /// the built-in resolvers and no check of the environment unless set.
    pub fn builder(dir: impl Into<PathBuf>) -> PersonaSetBuilder {
        PersonaSetBuilder {
            dir: dir.into(),
            registry: Registry::new(),
            env: None,
        }
    }

    fn from_builder(builder: PersonaSetBuilder) -> PersonaSet {
        PersonaSet {
            shared: Arc::new(Shared {
                dir: builder.dir,
                registry: builder.registry,
                env: builder.env,
                state: ArcSwap::from_pointee(State::default()),
                write: Mutex::new(Rejections::default()),
                keys: RandomState::default(),
            }),
        }
    }

    /// Reads every file of the folder into this new set.
    fn load_files(self) -> Result<(PersonaSet, Diagnostics)> {
        let set = self;
        let mut diagnostics = Diagnostics::default();
        let mut state = State::default();
        let mut rejected = Rejections::default();
        let files = set.files()?;
        // Reading and parsing, the bulk of a load, run on several threads; the files are
        // then applied one by one in name order, so a duplicate name loses to the file
        // that sorts first, as when they are applied alone.
        for (path, (file, parsed)) in files.iter().zip(set.read_and_parse(&files)) {
            let events = set.apply_file(&mut state, &mut rejected, path, file, |source| {
                parsed.unwrap_or_else(|| set.parse(path, source, &mut Templates::default()))
            });
            for event in events {
                if let Event::Rejected { diagnostics: d, .. } = event {
                    diagnostics.extend(d);
                }
            }
        }
        set.shared.state.store(Arc::new(state));
        *set.shared.write.lock().unwrap_or_else(|p| p.into_inner()) = rejected;
        Ok((set, diagnostics))
    }

    /// A set of no personas for `dir`, without reading it: what an engine serves when its
    /// persona folder is missing and it only writes the database.
    pub fn empty(dir: impl Into<PathBuf>, registry: Registry) -> PersonaSet {
        Self::from_builder(Self::builder(dir).registry(registry))
    }

    /// The folder this set reads.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// The registry resolvers are built from.
    pub fn registry(&self) -> &Registry {
        &self.shared.registry
    }

    /// A snapshot of the persona called `name`.
    pub fn get(&self, name: &str) -> Option<Arc<Persona>> {
        self.shared.state.load().by_name.get(name).cloned()
    }

    /// The names of the loaded personas, sorted.
    pub fn names(&self) -> Vec<String> {
        self.shared.state.load().by_name.keys().cloned().collect()
    }

    /// Snapshots of all loaded personas, sorted by name.
    pub fn personas(&self) -> Vec<Arc<Persona>> {
        self.shared.state.load().by_name.values().cloned().collect()
    }

    /// The number of loaded personas.
    pub fn len(&self) -> usize {
        self.shared.state.load().by_name.len()
    }

    /// Whether no persona is loaded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The persona files of the folder, sorted (hidden files are editors' temporaries).
    pub(crate) fn files(&self) -> Result<Vec<PathBuf>> {
        let dir = &self.shared.dir;
        let entries = std::fs::read_dir(dir).map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("cannot read the persona folder `{}`: {e}", dir.display()),
            )
        })?;
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            // Whatever the entry is: reading reports a directory, FIFO or device by name.
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|name| is_persona_file(name))
            .collect();
        // Names of one folder sort as their paths do, without comparing paths.
        names.sort_unstable();
        Ok(names.into_iter().map(|name| dir.join(name)).collect())
    }

    /// The paths of the loaded files, in no particular order.
    pub(crate) fn loaded_paths(&self) -> Vec<PathBuf> {
        self.shared.state.load().by_path.keys().cloned().collect()
    }

    /// Brings the set in line with the files at `paths` as they are now on disk, swapping
    /// in the new state once, and returns what changed. Unchanged files yield nothing.
    pub(crate) fn reconcile(&self, paths: &[PathBuf]) -> Vec<Event> {
        let mut rejected = self
            .shared
            .write
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let current = self.shared.state.load_full();
        let mut next = (*current).clone();
        let mut events = Vec::new();
        let mut templates = Templates::default();
        for path in paths {
            events.extend(self.apply(&mut next, &mut rejected, &mut templates, path));
        }
        // A file that lost only on its name gets another chance once the name is free.
        loop {
            let ready: Vec<PathBuf> = rejected
                .duplicates
                .iter()
                .filter(|(_, name)| !next.by_name.contains_key(*name))
                .map(|(path, _)| path.clone())
                .collect();
            if ready.is_empty() {
                break;
            }
            for path in ready {
                rejected.duplicates.remove(&path);
                rejected.sources.remove(&path);
                events.extend(self.apply(&mut next, &mut rejected, &mut templates, &path));
            }
        }
        if events.iter().any(|e| !matches!(e, Event::Rejected { .. })) {
            self.shared.state.store(Arc::new(next));
        }
        events
    }

    /// Applies the file at `path` to `state`.
    fn apply(
        &self,
        state: &mut State,
        rejected: &mut Rejections,
        templates: &mut Templates,
        path: &Path,
    ) -> Vec<Event> {
        let file = self.read(path);
        self.apply_file(state, rejected, path, file, |source| {
            self.parse(path, source, templates)
        })
    }

    /// What the file at `path` holds now.
    fn read(&self, path: &Path) -> File {
        match crate::source::read_source(path) {
            Ok(Some(source)) => {
                let fingerprint = Fingerprint {
                    len: source.len(),
                    hash: self.shared.keys.hash_one(&source),
                };
                File::Text(source, fingerprint)
            }
            Ok(None) => File::Gone,
            Err(diagnostic) => File::Unreadable(diagnostic),
        }
    }

    /// The persona of the file at `path` holding `source`.
    fn parse(&self, path: &Path, source: &str, templates: &mut Templates) -> Parsed {
        if source.trim().is_empty() {
            // Also what a half-written save looks like: never replace a persona with it.
            Err(vec![Diagnostic::whole_file(path, "the persona file is empty")].into())
        } else {
            let persona = Persona::parse_sharing(path, source, &self.shared.registry, templates)?;
            match &self.shared.env {
                Some(env) => {
                    let problems = persona.env_diagnostics(source, env.as_ref());
                    if problems.is_empty() {
                        Ok(persona)
                    } else {
                        Err(problems.into())
                    }
                }
                None => Ok(persona),
            }
        }
    }

    /// Reads and parses `files`, on several threads when there are many (each sharing
    /// templates within its files), in the order of `files`; a file that holds no text has
    /// no persona (`None`).
    fn read_and_parse(&self, files: &[PathBuf]) -> Vec<(File, Option<Parsed>)> {
        let one = |path: &PathBuf, templates: &mut Templates| {
            let file = self.read(path);
            let parsed = match &file {
                File::Text(source, _) => Some(self.parse(path, source, templates)),
                File::Gone | File::Unreadable(_) => None,
            };
            (file, parsed)
        };
        let threads = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(files.len() / FILES_PER_THREAD)
            .max(1);
        if threads == 1 {
            let mut templates = Templates::default();
            return files.iter().map(|path| one(path, &mut templates)).collect();
        }
        let chunk = files.len().div_ceil(threads);
        let one = &one;
        std::thread::scope(|scope| {
            let workers: Vec<_> = files
                .chunks(chunk)
                .map(|part| {
                    let job = move || {
                        let mut templates = Templates::default();
                        part.iter()
                            .map(|path| one(path, &mut templates))
                            .collect::<Vec<_>>()
                    };
                    // A thread the system refuses leaves its files to this one.
                    std::thread::Builder::new()
                        .spawn_scoped(scope, job)
                        .map_err(|_| job())
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|worker| match worker {
                    Ok(thread) => thread
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                    Err(done) => done,
                })
                .collect()
        })
    }

    /// Applies `file`, read at `path`, to `state`; `parse` gives the persona of its text
    /// when the text changed.
    fn apply_file(
        &self,
        state: &mut State,
        rejected: &mut Rejections,
        path: &Path,
        file: File,
        parse: impl FnOnce(&str) -> Parsed,
    ) -> Vec<Event> {
        let previous = state.by_path.get(path).cloned();
        let (source, fingerprint) = match file {
            File::Text(source, fingerprint) => (source, fingerprint),
            File::Gone => {
                rejected.sources.remove(path);
                rejected.duplicates.remove(path);
                let Some((name, _)) = previous else {
                    return Vec::new();
                };
                state.by_path.remove(path);
                state.by_name.remove(&name);
                return vec![Event::Removed {
                    persona: name,
                    path: path.to_owned(),
                }];
            }
            File::Unreadable(diagnostic) => {
                return vec![Event::Rejected {
                    path: path.to_owned(),
                    diagnostics: vec![diagnostic].into(),
                }];
            }
        };
        if previous.as_ref().is_some_and(|(_, f)| *f == fingerprint)
            || rejected.sources.get(path) == Some(&fingerprint)
        {
            return Vec::new();
        }
        rejected.duplicates.remove(path);
        let persona = match parse(&source) {
            Ok(p) => p,
            Err(diagnostics) => {
                rejected.sources.insert(path.to_owned(), fingerprint);
                return vec![Event::Rejected {
                    path: path.to_owned(),
                    diagnostics,
                }];
            }
        };
        if let Some((diagnostic, duplicate)) = clash(&state.by_name, &persona, path, &source) {
            rejected.sources.insert(path.to_owned(), fingerprint);
            if let Some(name) = duplicate {
                rejected.duplicates.insert(path.to_owned(), name);
            }
            return vec![Event::Rejected {
                path: path.to_owned(),
                diagnostics: vec![diagnostic].into(),
            }];
        }
        rejected.sources.remove(path);
        state.install(path, previous, persona, fingerprint)
    }
}

/// Whether a file name in the folder is a persona: `*.toml`, not hidden.
pub(crate) fn is_persona_file(name: &str) -> bool {
    name.ends_with(".toml") && !name.starts_with('.') && name.len() > ".toml".len()
}

/// Why `persona`, read from `source` at `path`, cannot join the `loaded` personas of
/// other files: its name is taken (the name comes with the error, to be checked again once
/// it is free), or its `[inbox]` reads another's mailbox.
fn clash(
    loaded: &BTreeMap<String, Arc<Persona>>,
    persona: &Persona,
    path: &Path,
    source: &str,
) -> Option<(Diagnostic, Option<String>)> {
    let name = &persona.info.name;
    if let Some(other) = loaded.get(name)
        && other.path != path
    {
        let span = Persona::name_span(source);
        let diagnostic = Diagnostic::new(
            path,
            source,
            span,
            format!(
                "duplicate persona name `{name}`: also defined in `{}`",
                other.path.display()
            ),
        );
        return Some((diagnostic, Some(name.clone())));
    }
    shared_mailbox(loaded, persona, path, source).map(|diagnostic| (diagnostic, None))
}

/// The error of a persona whose `[inbox]` reads a folder another loaded persona (of another
/// file) reads: one mailbox has one reader, or its mail would be answered twice (§17).
fn shared_mailbox(
    loaded: &BTreeMap<String, Arc<Persona>>,
    persona: &Persona,
    path: &Path,
    source: &str,
) -> Option<Diagnostic> {
    let folders = |p: &Persona| -> Vec<String> {
        p.info
            .inbox
            .iter()
            .flat_map(|i| std::iter::once(i.key()).chain(i.sent.as_deref().map(|s| i.key_of(s))))
            .collect()
    };
    let mine = folders(persona);
    if mine.is_empty() {
        return None;
    }
    let (other, folder) = loaded.values().filter(|o| o.path != path).find_map(|o| {
        folders(o)
            .into_iter()
            .find(|f| mine.contains(f))
            .map(|f| (o, f))
    })?;
    let (doc, _) = toml::de::DeTable::parse_recoverable(source);
    let span = crate::reader::get(doc.get_ref(), "inbox")
        .and_then(|t| t.get_ref().as_table())
        .and_then(|t| crate::reader::get(t, "imap"))
        .map_or(0..0, |v| v.span());
    Some(Diagnostic::new(
        path,
        source,
        span,
        format!(
            "the mailbox `{folder}` is read by persona `{}` too (`{}`): one mailbox has one persona, or its mail would be answered twice",
            other.info.name,
            other.path.display()
        ),
    ))
}
