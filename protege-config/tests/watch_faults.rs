//! The watch survives what happens to its folder: deleted and recreated (its parent
//! too), renamed away and back, swapped through a ConfigMap-style `..data` symlink; and a file
//! rejected only for a duplicate name comes back once the name is free. Every test waits
//! on events, never on a timer.

use std::path::{Path, PathBuf};
use std::time::Duration;

use protege_config::{Event, PersonaSet, Watch};

fn persona(name: &str, version: usize) -> String {
    format!(
        "name = \"{name}\"\ninstructions = \"v{version}\"\n\n[[message_resolvers]]\nuse = \"LoadText\"\ntemplate = \"v{version}\"\n"
    )
}

/// Writes through a hidden temporary file and a rename, as editors and deploy tools do.
fn write_atomic(path: &Path, text: &str) {
    let tmp = path.with_file_name(format!(
        ".{}.tmp",
        path.file_name().unwrap().to_str().unwrap()
    ));
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

async fn next(watch: &mut Watch) -> Event {
    tokio::time::timeout(Duration::from_secs(30), watch.next())
        .await
        .expect("no event within 30 s")
        .expect("the watch stopped")
}

/// Waits for `n` events and returns their JSON lines, sorted (files in one burst may be
/// reported in either order).
async fn take(watch: &mut Watch, n: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for _ in 0..n {
        lines.push(next(watch).await.to_json_line());
    }
    lines.sort();
    lines
}

fn line(event: &str, dir: &Path, name: &str, file: &str) -> String {
    format!(
        r#"{{"event":"{event}","persona":"{name}","path":"{}"}}"#,
        dir.join(file).display()
    )
}

struct Folder {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
}

fn folder(files: &[(&str, String)]) -> Folder {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("personas");
    std::fs::create_dir(&dir).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    Folder { _tmp: tmp, dir }
}

/// Loads the folder, starts watching it and consumes the `loaded` events.
async fn start(dir: &Path) -> (PersonaSet, Watch) {
    let (set, _) = PersonaSet::load(dir).unwrap();
    let mut watch = set.watch().unwrap();
    let n = set.len();
    take(&mut watch, n).await;
    (set, watch)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_and_recreated_folder_removes_then_adds() {
    let f = folder(&[
        ("a.toml", persona("alpha", 1)),
        ("b.toml", persona("beta", 1)),
    ]);
    let d = &f.dir;
    let (set, mut watch) = start(d).await;

    std::fs::remove_dir_all(d).unwrap();
    assert_eq!(
        take(&mut watch, 2).await,
        [
            line("removed", d, "alpha", "a.toml"),
            line("removed", d, "beta", "b.toml")
        ]
    );
    assert!(set.is_empty());

    std::fs::create_dir(d).unwrap();
    write_atomic(&d.join("a.toml"), &persona("alpha", 2));
    write_atomic(&d.join("b.toml"), &persona("beta", 2));
    assert_eq!(
        take(&mut watch, 2).await,
        [
            line("added", d, "alpha", "a.toml"),
            line("added", d, "beta", "b.toml")
        ]
    );
    // The recreated folder is watched: an edit is seen.
    write_atomic(&d.join("a.toml"), &persona("alpha", 3));
    assert_eq!(
        take(&mut watch, 1).await,
        [line("reloaded", d, "alpha", "a.toml")]
    );
    assert_eq!(set.names(), ["alpha", "beta"]);
}

/// A deploy that removes the folder's parent too and writes it all again: the watch
/// climbs to the nearest folder still there and finds its way back down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_and_recreated_parent_removes_then_adds() {
    let tmp = tempfile::tempdir().unwrap();
    let app = tmp.path().join("app");
    let d = &app.join("config").join("personas");
    std::fs::create_dir_all(d).unwrap();
    std::fs::write(d.join("a.toml"), persona("alpha", 1)).unwrap();
    let (set, mut watch) = start(d).await;

    std::fs::remove_dir_all(&app).unwrap();
    assert_eq!(
        take(&mut watch, 1).await,
        [line("removed", d, "alpha", "a.toml")]
    );

    // Level by level, as a copy creates it.
    std::fs::create_dir(&app).unwrap();
    std::fs::create_dir(app.join("config")).unwrap();
    std::fs::create_dir(d).unwrap();
    write_atomic(&d.join("a.toml"), &persona("alpha", 2));
    assert_eq!(
        take(&mut watch, 1).await,
        [line("added", d, "alpha", "a.toml")]
    );
    // The folder is watched again: an edit and a new file are seen.
    write_atomic(&d.join("a.toml"), &persona("alpha", 3));
    assert_eq!(
        take(&mut watch, 1).await,
        [line("reloaded", d, "alpha", "a.toml")]
    );
    write_atomic(&d.join("b.toml"), &persona("beta", 1));
    assert_eq!(
        take(&mut watch, 1).await,
        [line("added", d, "beta", "b.toml")]
    );
    assert_eq!(set.names(), ["alpha", "beta"]);
    assert_eq!(set.get("alpha").unwrap().info.instructions, "v3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_renamed_away_and_back_removes_then_adds() {
    let f = folder(&[
        ("a.toml", persona("alpha", 1)),
        ("b.toml", persona("beta", 1)),
    ]);
    let d = &f.dir;
    let away = d.with_file_name("personas.away");
    let (set, mut watch) = start(d).await;

    std::fs::rename(d, &away).unwrap();
    assert_eq!(
        take(&mut watch, 2).await,
        [
            line("removed", d, "alpha", "a.toml"),
            line("removed", d, "beta", "b.toml")
        ]
    );
    // Edits in the folder while it is away are not the persona folder's.
    std::fs::write(away.join("c.toml"), persona("gamma", 1)).unwrap();

    std::fs::rename(&away, d).unwrap();
    assert_eq!(
        take(&mut watch, 3).await,
        [
            line("added", d, "alpha", "a.toml"),
            line("added", d, "beta", "b.toml"),
            line("added", d, "gamma", "c.toml")
        ]
    );
    std::fs::remove_file(d.join("b.toml")).unwrap();
    assert_eq!(
        take(&mut watch, 1).await,
        [line("removed", d, "beta", "b.toml")]
    );
    assert_eq!(set.names(), ["alpha", "gamma"]);
}

/// A ConfigMap volume: `..data -> ..<version>/` and one `NAME.toml -> ..data/NAME.toml`
/// link per file.
fn configmap_version(dir: &Path, version: &str, files: &[(&str, String)]) {
    let versioned = dir.join(format!("..{version}"));
    std::fs::create_dir(&versioned).unwrap();
    for (name, text) in files {
        std::fs::write(versioned.join(name), text).unwrap();
    }
}

/// Swaps `..data` to `..version` atomically, as the kubelet does.
fn configmap_swap(dir: &Path, version: &str) {
    let tmp = dir.join("..data_tmp");
    std::os::unix::fs::symlink(format!("..{version}"), &tmp).unwrap();
    std::fs::rename(&tmp, dir.join("..data")).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configmap_symlink_swap_reloads_removes_and_adds() {
    let f = folder(&[]);
    let d = &f.dir;
    configmap_version(
        d,
        "2026_01",
        &[
            ("support.toml", persona("support", 1)),
            ("billing.toml", persona("billing", 1)),
        ],
    );
    std::os::unix::fs::symlink("..2026_01", d.join("..data")).unwrap();
    for name in ["support.toml", "billing.toml"] {
        std::os::unix::fs::symlink(format!("..data/{name}"), d.join(name)).unwrap();
    }
    let (set, mut watch) = start(d).await;
    assert_eq!(set.names(), ["billing", "support"]);

    // Version 2 changes support and drops billing (its link now dangles).
    configmap_version(d, "2026_02", &[("support.toml", persona("support", 2))]);
    configmap_swap(d, "2026_02");
    std::fs::remove_dir_all(d.join("..2026_01")).unwrap();
    assert_eq!(
        take(&mut watch, 2).await,
        [
            line("reloaded", d, "support", "support.toml"),
            line("removed", d, "billing", "billing.toml")
        ]
    );
    assert_eq!(
        set.get("support").unwrap().info.instructions,
        "v2",
        "the new version is live"
    );

    // Version 3 brings billing back.
    configmap_version(
        d,
        "2026_03",
        &[
            ("support.toml", persona("support", 2)),
            ("billing.toml", persona("billing", 3)),
        ],
    );
    configmap_swap(d, "2026_03");
    assert_eq!(
        take(&mut watch, 1).await,
        [line("added", d, "billing", "billing.toml")]
    );
    assert_eq!(set.names(), ["billing", "support"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_is_added_when_the_other_file_disappears() {
    let f = folder(&[
        ("a.toml", persona("support", 1)),
        ("b.toml", persona("support", 2)),
    ]);
    let d = &f.dir;
    let (set, diagnostics) = PersonaSet::load(d).unwrap();
    assert_eq!(diagnostics.len(), 1, "b.toml duplicates a.toml");
    let mut watch = set.watch().unwrap();
    assert_eq!(
        take(&mut watch, 1).await,
        [line("loaded", d, "support", "a.toml")]
    );
    std::fs::remove_file(d.join("a.toml")).unwrap();
    assert_eq!(
        [
            next(&mut watch).await.to_json_line(),
            next(&mut watch).await.to_json_line()
        ],
        [
            line("removed", d, "support", "a.toml"),
            line("added", d, "support", "b.toml")
        ]
    );
    assert_eq!(set.get("support").unwrap().info.instructions, "v2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_is_added_when_the_other_file_changes_its_name() {
    let f = folder(&[("a.toml", persona("support", 1))]);
    let d = &f.dir;
    let (set, mut watch) = start(d).await;
    write_atomic(&d.join("b.toml"), &persona("support", 2));
    let rejected = next(&mut watch).await;
    assert_eq!(
        rejected.error_text().unwrap(),
        format!(
            "{}:1:8: error: duplicate persona name `support`: also defined in `{}`",
            d.join("b.toml").display(),
            d.join("a.toml").display()
        )
    );
    write_atomic(&d.join("a.toml"), &persona("helpdesk", 1));
    let events: Vec<String> = vec![
        next(&mut watch).await.to_json_line(),
        next(&mut watch).await.to_json_line(),
        next(&mut watch).await.to_json_line(),
    ];
    assert_eq!(
        events,
        [
            line("removed", d, "support", "a.toml"),
            line("added", d, "helpdesk", "a.toml"),
            line("added", d, "support", "b.toml")
        ]
    );
    assert_eq!(set.names(), ["helpdesk", "support"]);
}
