//! Hot reload: watching the persona folder and reporting what changed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify::RecommendedWatcher;
use notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use tokio::sync::mpsc;

use crate::error::{Error, ErrorKind, Result};
use crate::event::Event;
use crate::set::{PersonaSet, is_persona_file};

/// A running watch of a persona folder; dropping it stops watching.
///
/// Events arrive in order: first one [`Event::Loaded`] per persona, then the changes.
/// The watch survives its folder being deleted and recreated, renamed away and back, or
/// swapped through a symlink (a Kubernetes ConfigMap's `..data` link): personas that went
/// away are reported [`Event::Removed`], and [`Event::Added`] as their files return.
#[must_use = "dropping the Watch stops watching: keep it alive for as long as the personas should reload"]
pub struct Watch {
    events: mpsc::UnboundedReceiver<Event>,
    control: std::sync::mpsc::Sender<Control>,
}

/// What the thread that owns the file watcher is asked to do.
enum Control {
    /// The folder itself changed: watch it again where it now is, then rescan.
    Rearm,
    /// A file of the folder changed: follow the symlinks among the persona files again
    /// (a link made, removed or pointed elsewhere).
    Links,
    /// The [`Watch`] was dropped.
    Stop,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch").finish_non_exhaustive()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.control.send(Control::Stop);
    }
}

impl Watch {
    /// The next event; `None` once watching has stopped.
    pub async fn next(&mut self) -> Option<Event> {
        self.events.recv().await
    }

    /// The next event, blocking the thread (for callers outside an async runtime; it
    /// panics when called from async code, like tokio's `blocking_recv`).
    pub fn blocking_next(&mut self) -> Option<Event> {
        self.events.blocking_recv()
    }

    /// The next event if one is ready.
    pub fn try_next(&mut self) -> Option<Event> {
        self.events.try_recv().ok()
    }
}

/// The default quiet period before a burst of file events is applied.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(50);

impl PersonaSet {
    /// Starts watching the folder with the default debounce ([`DEFAULT_DEBOUNCE`]); events
    /// are delivered through the returned [`Watch`]. Works inside or outside a tokio runtime.
    /// Keep the [`Watch`]: dropping it stops hot reload.
    pub fn watch(&self) -> Result<Watch> {
        self.watch_with(DEFAULT_DEBOUNCE)
    }

    /// Starts watching, applying a burst of file events once the folder has been quiet for
    /// `debounce`.
    ///
    /// The folder is watched together with its parent, so its own disappearance and
    /// return are seen (when the parent goes too, the nearest ancestor still there is
    /// watched until the way back exists); any change in the folder that is not a persona
    /// file (a symlink swap, a new subfolder) rescans every file.
    pub fn watch_with(&self, debounce: Duration) -> Result<Watch> {
        let (tx, rx) = mpsc::unbounded_channel();
        let dir = self.dir().to_owned();
        let cannot = |e: &dyn std::fmt::Display| {
            format!("cannot watch the persona folder `{}`: {e}", dir.display())
        };
        let folder =
            std::path::absolute(&dir).map_err(|e| Error::new(ErrorKind::Watch, cannot(&e)))?;
        let canonical =
            std::fs::canonicalize(&dir).map_err(|e| Error::new(ErrorKind::Watch, cannot(&e)))?;
        for persona in self.personas() {
            let _ = tx.send(Event::Loaded {
                persona: persona.info.name.clone(),
                path: persona.path.clone(),
            });
        }
        let (control, orders) = std::sync::mpsc::channel();
        let names = [folder.clone(), canonical.clone()];
        // Persona files that are symlinks to files elsewhere (a dotfile setup): an edit of
        // the target changes nothing in the folder, so the target's folder is watched too.
        let targets = Arc::new(std::sync::Mutex::new(linked_targets(self, &names)));
        let link_names = names.clone();
        let handler = Handler {
            set: self.clone(),
            sender: tx.clone(),
            rearm: control.clone(),
            links: targets.clone(),
            names,
        };
        let handler = move |result: DebounceEventResult| handler.handle(result);
        let mut debouncer = new_debouncer(debounce, None, handler)
            .map_err(|e| Error::new(ErrorKind::Watch, cannot(&e)))?;
        debouncer
            .watch(&folder, RecursiveMode::NonRecursive)
            .map_err(|e| Error::new(ErrorKind::Watch, cannot(&e)))?;
        if let Some(parent) = folder.parent() {
            // Without it the folder's return goes unseen; the folder itself is still watched.
            let _ = debouncer.watch(parent, RecursiveMode::NonRecursive);
        }
        let mut linked_dirs = BTreeSet::new();
        follow_links(
            &mut debouncer,
            &targets,
            &mut linked_dirs,
            self,
            &link_names,
        );
        let set = self.clone();
        let sender = tx.clone();
        std::thread::Builder::new()
            .name("protege-watch".into())
            .spawn(move || {
                let links = Links {
                    targets,
                    dirs: linked_dirs,
                    names: link_names,
                };
                supervise(debouncer, orders, &folder, &set, &sender, links)
            })
            .map_err(|e| Error::new(ErrorKind::Watch, cannot(&e)))?;
        // Changes made between loading and watching: catch up now that events are recorded.
        for event in self.reconcile(&with_every_file(self, Vec::new())) {
            let _ = tx.send(event);
        }
        Ok(Watch {
            events: rx,
            control,
        })
    }
}

/// What the file watcher's handler works with: the set it reloads, where its events go,
/// the thread that owns the watcher, the targets of the persona files that are symlinks
/// and the folder's two names (as written and canonical).
struct Handler {
    set: PersonaSet,
    sender: mpsc::UnboundedSender<Event>,
    rearm: std::sync::mpsc::Sender<Control>,
    links: Arc<std::sync::Mutex<std::collections::HashMap<PathBuf, PathBuf>>>,
    names: [PathBuf; 2],
}

/// What a burst of file events touched.
struct Burst {
    /// The persona files changed, as the set's keys, each once.
    paths: Vec<PathBuf>,
    /// Whether every file is to be read again (an event lost, or another entry changed).
    rescan: bool,
    /// Whether the folder itself, or a folder above it, changed.
    moved: bool,
}

impl Handler {
    /// Applies a burst of file events: has the watcher rearmed when the folder moved, else
    /// reloads what changed, sends the events and has the symlinks followed again.
    fn handle(&self, result: DebounceEventResult) {
        let Burst {
            mut paths,
            rescan,
            moved,
        } = self.burst(result);
        if moved {
            // The owner of the watcher rearms it, then rescans.
            let _ = self.rearm.send(Control::Rearm);
            return;
        }
        let folder_changed = rescan || !paths.is_empty();
        if rescan {
            paths = with_every_file(&self.set, paths);
        }
        for event in self.set.reconcile(&paths) {
            let _ = self.sender.send(event);
        }
        if folder_changed {
            let _ = self.rearm.send(Control::Links);
        }
    }

    /// What the events of `result` touched.
    fn burst(&self, result: DebounceEventResult) -> Burst {
        let mut burst = Burst {
            paths: Vec::new(),
            rescan: false,
            moved: false,
        };
        let Ok(events) = result else {
            burst.rescan = true;
            return burst;
        };
        for event in events {
            if event.need_rescan() {
                burst.rescan = true;
            }
            // Opening and reading files (ours included) changes nothing.
            if event.kind.is_access() {
                continue;
            }
            for p in &event.paths {
                let linked = self
                    .links
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .get(p)
                    .cloned();
                if let Some(key) = linked {
                    if !burst.paths.contains(&key) {
                        burst.paths.push(key);
                    }
                    continue;
                }
                match classify(&self.names, &self.set.shared.dir, p) {
                    Seen::Folder => burst.moved = true,
                    Seen::Persona(key) if !burst.paths.contains(&key) => burst.paths.push(key),
                    Seen::Persona(_) | Seen::Elsewhere => {}
                    Seen::OtherEntry => burst.rescan = true,
                }
            }
        }
        burst
    }
}

/// Owns the watcher: rewatches the folder when it moved, until the [`Watch`] is dropped.
fn supervise(
    mut debouncer: Debouncer<RecommendedWatcher, RecommendedCache>,
    orders: std::sync::mpsc::Receiver<Control>,
    folder: &Path,
    set: &PersonaSet,
    sender: &mpsc::UnboundedSender<Event>,
    mut links: Links,
) {
    let mut ancestor = folder.parent().map(Path::to_owned);
    loop {
        match orders.recv() {
            Ok(Control::Rearm) => {}
            Ok(Control::Links) => {
                follow_links(
                    &mut debouncer,
                    &links.targets,
                    &mut links.dirs,
                    set,
                    &links.names,
                );
                continue;
            }
            Ok(Control::Stop) | Err(_) => return,
        }
        // Watched again even under an unchanged path: the old watches follow the inodes
        // wherever they went, or are gone with them. A folder or ancestor created while
        // arming is armed in the next round.
        for _ in 0..ARM_ROUNDS {
            let _ = debouncer.unwatch(folder);
            if let Some(old) = &ancestor {
                let _ = debouncer.unwatch(old);
            }
            ancestor = nearest_ancestor(folder);
            if let Some(new) = &ancestor {
                let _ = debouncer.watch(new, RecursiveMode::NonRecursive);
            }
            let present = folder.is_dir();
            if present {
                let _ = debouncer.watch(folder, RecursiveMode::NonRecursive);
            }
            if nearest_ancestor(folder) == ancestor && folder.is_dir() == present {
                break;
            }
        }
        for event in set.reconcile(&with_every_file(set, Vec::new())) {
            if sender.send(event).is_err() {
                return;
            }
        }
    }
}

/// The most times the folder is armed in a row while its path keeps changing.
const ARM_ROUNDS: usize = 8;

/// The closest existing folder above `folder`: its parent, or, when a deploy removed the
/// parent too, the nearest ancestor still there, whose events show the way back.
fn nearest_ancestor(folder: &Path) -> Option<PathBuf> {
    folder
        .ancestors()
        .skip(1)
        .find(|a| a.is_dir())
        .map(Path::to_owned)
}

/// What a path reported by the watcher is to the persona folder.
enum Seen {
    /// The folder itself or a folder above it (deleted, created, renamed).
    Folder,
    /// A persona file of the folder, as the set's key.
    Persona(PathBuf),
    /// Anything else in the folder: a ConfigMap's `..data` link, a subfolder.
    OtherEntry,
    /// A sibling of the folder in its parent.
    Elsewhere,
}

fn classify(names: &[PathBuf; 2], dir: &Path, reported: &Path) -> Seen {
    if names.iter().any(|n| n.starts_with(reported)) {
        return Seen::Folder;
    }
    let Some(parent) = reported.parent() else {
        return Seen::Elsewhere;
    };
    if !names.iter().any(|n| n == parent) {
        return Seen::Elsewhere;
    }
    match reported.file_name().and_then(|n| n.to_str()) {
        Some(name) if is_persona_file(name) => Seen::Persona(dir.join(name)),
        _ => Seen::OtherEntry,
    }
}

/// What the watch knows of the persona files that are symlinks: their targets (path →
/// the persona file's key), the folders watched for them, the folder's two names.
struct Links {
    targets: Arc<std::sync::Mutex<std::collections::HashMap<PathBuf, PathBuf>>>,
    dirs: BTreeSet<PathBuf>,
    names: [PathBuf; 2],
}

/// Reads the symlinks among `set`'s files again and watches the folders of their targets
/// not watched yet (a folder no link leads to any more is left watched: its events match
/// no target and are ignored).
fn follow_links(
    debouncer: &mut Debouncer<RecommendedWatcher, RecommendedCache>,
    targets: &std::sync::Mutex<std::collections::HashMap<PathBuf, PathBuf>>,
    dirs: &mut BTreeSet<PathBuf>,
    set: &PersonaSet,
    names: &[PathBuf; 2],
) {
    let now = linked_targets(set, names);
    for dir in now.keys().filter_map(|t| t.parent()) {
        if !names.iter().any(|n| n == dir) && dirs.insert(dir.to_owned()) {
            let _ = debouncer.watch(dir, RecursiveMode::NonRecursive);
        }
    }
    *targets
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = now;
}

/// The files that the persona files of `set` which are symlinks lead to, outside the folder
/// (`names`, as written and canonical), each with the persona file's key: edits there
/// reload the persona. Read again whenever a file of the folder changes.
fn linked_targets(
    set: &PersonaSet,
    names: &[PathBuf; 2],
) -> std::collections::HashMap<PathBuf, PathBuf> {
    set.files()
        .unwrap_or_default()
        .into_iter()
        .filter(|key| std::fs::symlink_metadata(key).is_ok_and(|m| m.file_type().is_symlink()))
        .filter_map(|key| {
            let target = std::fs::canonicalize(&key).ok()?;
            let outside = !target
                .parent()
                .is_some_and(|p| names.iter().any(|n| n == p));
            outside.then_some((target, key))
        })
        .collect()
}

/// `paths`, then every other persona file on disk or loaded, each once.
fn with_every_file(set: &PersonaSet, mut paths: Vec<PathBuf>) -> Vec<PathBuf> {
    let known: BTreeSet<PathBuf> = paths.iter().cloned().collect();
    let mut rest: BTreeSet<PathBuf> = set.files().unwrap_or_default().into_iter().collect();
    rest.extend(set.loaded_paths());
    paths.extend(rest.into_iter().filter(|p| !known.contains(p)));
    paths
}
