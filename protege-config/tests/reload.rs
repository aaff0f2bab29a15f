//! Hot reload against a real folder: every test waits on events, never on a timer.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use protege_config::{Event, PersonaSet, Watch};
use protege_core::{AppConfig, Chain, Context, PersonaInfo, Responsibility, Trigger};

/// A persona whose two messages both carry `version`: a mix of versions would show a
/// partially loaded persona.
fn persona(name: &str, version: usize) -> String {
    format!(
        "name = \"{name}\"\ninstructions = \"v{version}\"\n\n[[message_resolvers]]\nuse = \"LoadText\"\ntemplate = \"{{{{ persona.instructions }}}} a\"\n\n[[message_resolvers]]\nuse = \"LoadText\"\ntemplate = \"v{version} b\"\n"
    )
}

const INVALID: &str = "name = \"support\"\n\n[[message_resolvers]]\nuse = \"ThreadHistroy\"\n";

fn write_atomic(path: &Path, text: &str) {
    let tmp = path.with_file_name(format!(
        ".{}.tmp",
        path.file_name().unwrap().to_str().unwrap()
    ));
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

async fn next(watch: &mut Watch) -> Event {
    tokio::time::timeout(Duration::from_secs(20), watch.next())
        .await
        .expect("no event within 20 s")
        .expect("the watch stopped")
}

/// Waits for events until `done` holds, returning the events seen.
async fn until(watch: &mut Watch, mut done: impl FnMut(&Event) -> bool) -> Vec<Event> {
    let mut seen = Vec::new();
    loop {
        let e = next(watch).await;
        let stop = done(&e);
        seen.push(e);
        if stop {
            return seen;
        }
    }
}

fn lines(events: &[Event]) -> Vec<String> {
    events.iter().map(Event::to_json_line).collect()
}

fn context(info: Arc<PersonaInfo>, root: &Path) -> Context {
    let responsibility = Responsibility {
        name: "check".into(),
        schedule: "0 8 * * *".into(),
        instructions: String::new(),
        ..Responsibility::default()
    };
    Context::builder(
        info,
        AppConfig::new(root),
        Trigger::Responsibility(responsibility),
    )
    .build()
}

async fn resolve(set: &PersonaSet, name: &str, root: &Path) -> Vec<String> {
    let persona = set.get(name).expect("persona present");
    let ctx = context(persona.info.clone(), root);
    let messages = persona.message_chain.resolve(&ctx).await.expect("resolve");
    messages
        .iter()
        .map(|m| {
            serde_json::to_value(m).unwrap()["content"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
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

fn loaded(dir: &Path, name: &str, file: &str) -> String {
    format!(
        r#"{{"event":"loaded","persona":"{name}","path":"{}"}}"#,
        dir.join(file).display()
    )
}

fn line(event: &str, dir: &Path, name: &str, file: &str) -> String {
    format!(
        r#"{{"event":"{event}","persona":"{name}","path":"{}"}}"#,
        dir.join(file).display()
    )
}

async fn start(f: &Folder) -> (PersonaSet, Watch, Vec<Event>) {
    let (set, diagnostics) = PersonaSet::load(&f.dir).unwrap();
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let mut watch = set.watch().unwrap();
    let n = set.len();
    let mut initial = Vec::new();
    for _ in 0..n {
        initial.push(next(&mut watch).await);
    }
    (set, watch, initial)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starts_with_one_loaded_event_per_persona() {
    let f = folder(&[
        ("a.toml", persona("alpha", 1)),
        ("b.toml", persona("beta", 1)),
    ]);
    let (_set, _watch, initial) = start(&f).await;
    assert_eq!(
        lines(&initial),
        [
            loaded(&f.dir, "alpha", "a.toml"),
            loaded(&f.dir, "beta", "b.toml")
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_edit_swaps_in_and_running_snapshots_keep_theirs() {
    let f = folder(&[("support.toml", persona("support", 1))]);
    let (set, mut watch, _) = start(&f).await;
    let snapshot = set.get("support").unwrap();
    std::fs::write(f.dir.join("support.toml"), persona("support", 2)).unwrap();
    let events = until(&mut watch, |_| true).await;
    assert_eq!(
        lines(&events),
        [line("reloaded", &f.dir, "support", "support.toml")]
    );
    assert_eq!(resolve(&set, "support", &f.dir).await, ["v2 a", "v2 b"]);
    assert_eq!(snapshot.info.instructions, "v1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_edit_keeps_the_last_good_version() {
    let f = folder(&[("support.toml", persona("support", 1))]);
    let (set, mut watch, _) = start(&f).await;
    std::fs::write(f.dir.join("support.toml"), INVALID).unwrap();
    let events = until(&mut watch, |_| true).await;
    let path = f.dir.join("support.toml");
    assert_eq!(
        lines(&events),
        [serde_json::json!({
            "event": "rejected",
            "path": path.display().to_string(),
            "error": format!("{}:4:7: error: unknown resolver `ThreadHistroy`, did you mean `ThreadHistory`?", path.display()),
        })
        .to_string()]
    );
    assert_eq!(resolve(&set, "support", &f.dir).await, ["v1 a", "v1 b"]);
    // Fixing the file brings the new version in.
    std::fs::write(&path, persona("support", 3)).unwrap();
    let events = until(&mut watch, |_| true).await;
    assert_eq!(
        lines(&events),
        [line("reloaded", &f.dir, "support", "support.toml")]
    );
    assert_eq!(resolve(&set, "support", &f.dir).await, ["v3 a", "v3 b"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_file_removes_and_a_new_file_adds() {
    let f = folder(&[("support.toml", persona("support", 1))]);
    let (set, mut watch, _) = start(&f).await;
    std::fs::remove_file(f.dir.join("support.toml")).unwrap();
    let events = until(&mut watch, |_| true).await;
    assert_eq!(
        lines(&events),
        [line("removed", &f.dir, "support", "support.toml")]
    );
    assert!(set.get("support").is_none());
    std::fs::write(f.dir.join("sales.toml"), persona("sales", 1)).unwrap();
    let events = until(&mut watch, |_| true).await;
    assert_eq!(
        lines(&events),
        [line("added", &f.dir, "sales", "sales.toml")]
    );
    assert_eq!(set.names(), ["sales"]);
    assert_eq!(resolve(&set, "sales", &f.dir).await, ["v1 a", "v1 b"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_save_through_a_temporary_file_reloads() {
    let f = folder(&[("support.toml", persona("support", 1))]);
    let (set, mut watch, _) = start(&f).await;
    write_atomic(&f.dir.join("support.toml"), &persona("support", 2));
    let events = until(&mut watch, |_| true).await;
    assert_eq!(
        lines(&events),
        [line("reloaded", &f.dir, "support", "support.toml")]
    );
    assert_eq!(resolve(&set, "support", &f.dir).await, ["v2 a", "v2 b"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renaming_a_persona_inside_its_file_removes_the_old_name() {
    let f = folder(&[("support.toml", persona("support", 1))]);
    let (set, mut watch, _) = start(&f).await;
    std::fs::write(f.dir.join("support.toml"), persona("helpdesk", 1)).unwrap();
    let events = until(&mut watch, |e| matches!(e, Event::Added { .. })).await;
    assert_eq!(
        lines(&events),
        [
            line("removed", &f.dir, "support", "support.toml"),
            line("added", &f.dir, "helpdesk", "support.toml")
        ]
    );
    assert_eq!(set.names(), ["helpdesk"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_name_in_a_new_file_is_rejected() {
    let f = folder(&[("a.toml", persona("support", 1))]);
    let (set, mut watch, _) = start(&f).await;
    std::fs::write(f.dir.join("b.toml"), persona("support", 2)).unwrap();
    let events = until(&mut watch, |_| true).await;
    let b = f.dir.join("b.toml");
    assert_eq!(
        events[0].error_text().unwrap(),
        format!(
            "{}:1:8: error: duplicate persona name `support`: also defined in `{}`",
            b.display(),
            f.dir.join("a.toml").display()
        )
    );
    assert_eq!(resolve(&set, "support", &f.dir).await, ["v1 a", "v1 b"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_writes_ends_in_the_last_version() {
    let f = folder(&[("support.toml", persona("support", 0))]);
    let (set, mut watch, _) = start(&f).await;
    let path = f.dir.join("support.toml");
    for v in 1..=30 {
        std::fs::write(&path, persona("support", v)).unwrap();
    }
    until(&mut watch, |_| {
        set.get("support").unwrap().info.instructions == "v30"
    })
    .await;
    assert_eq!(resolve(&set, "support", &f.dir).await, ["v30 a", "v30 b"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_rapid_edits_while_resolving_never_fail_or_mix_versions() {
    let f = folder(&[("support.toml", persona("support", 0))]);
    let (set, mut watch, _) = start(&f).await;
    let stop = Arc::new(AtomicBool::new(false));
    let resolves = Arc::new(AtomicUsize::new(0));
    let reader = {
        let (set, stop, resolves, root) =
            (set.clone(), stop.clone(), resolves.clone(), f.dir.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let got = resolve(&set, "support", &root).await;
                let version = got[0].strip_suffix(" a").expect("first message").to_owned();
                assert_eq!(got, [format!("{version} a"), format!("{version} b")]);
                resolves.fetch_add(1, Ordering::Relaxed);
                tokio::task::yield_now().await;
            }
        })
    };
    let path = f.dir.join("support.toml");
    let mut last_valid = 0;
    for i in 1..=200 {
        if i % 3 == 0 {
            std::fs::write(&path, INVALID).unwrap();
        } else {
            last_valid = i;
            if i % 4 == 0 {
                std::fs::write(&path, persona("support", i)).unwrap();
            } else {
                write_atomic(&path, &persona("support", i));
            }
        }
        if i % 10 == 0 {
            tokio::task::yield_now().await;
        }
    }
    assert_eq!(last_valid, 200);
    let expected = format!("v{last_valid}");
    until(&mut watch, |_| {
        set.get("support").unwrap().info.instructions == expected
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    reader.await.expect("no resolve failed");
    assert!(resolves.load(Ordering::Relaxed) > 0);
    assert_eq!(resolve(&set, "support", &f.dir).await, ["v200 a", "v200 b"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_edit_after_a_burst_keeps_the_last_live_version() {
    let f = folder(&[("support.toml", persona("support", 0))]);
    let (set, mut watch, _) = start(&f).await;
    let path = f.dir.join("support.toml");
    for i in 1..=20 {
        write_atomic(&path, &persona("support", i));
    }
    until(&mut watch, |_| {
        set.get("support").unwrap().info.instructions == "v20"
    })
    .await;
    std::fs::write(&path, INVALID).unwrap();
    let events = until(&mut watch, |_| true).await;
    assert!(matches!(events[0], Event::Rejected { .. }), "{events:?}");
    assert_eq!(resolve(&set, "support", &f.dir).await, ["v20 a", "v20 b"]);
}

/// A persona file that is a symlink to a file elsewhere (a dotfile setup): an edit of the
/// target reloads the persona.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_through_a_symlinked_persona_file_reloads() {
    let f = folder(&[]);
    let elsewhere = f.dir.parent().unwrap().join("dotfiles");
    std::fs::create_dir(&elsewhere).unwrap();
    let target = elsewhere.join("support.toml");
    std::fs::write(&target, persona("support", 1)).unwrap();
    std::os::unix::fs::symlink(&target, f.dir.join("support.toml")).unwrap();
    let (set, mut watch, _) = start(&f).await;
    std::fs::write(&target, persona("support", 2)).unwrap();
    let events = until(&mut watch, |_| true).await;
    assert_eq!(
        lines(&events),
        [line("reloaded", &f.dir, "support", "support.toml")]
    );
    assert_eq!(resolve(&set, "support", &f.dir).await, ["v2 a", "v2 b"]);
    // An editor's save of the target through a temporary file reloads too.
    write_atomic(&target, &persona("support", 3));
    until(&mut watch, |_| true).await;
    assert_eq!(resolve(&set, "support", &f.dir).await, ["v3 a", "v3 b"]);
}

/// A symlink made while the folder is watched is followed too: an edit of its target
/// reloads the persona it added.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlink_made_while_watching_is_followed() {
    let f = folder(&[("a.toml", persona("alpha", 1))]);
    let elsewhere = f.dir.parent().unwrap().join("dotfiles");
    std::fs::create_dir(&elsewhere).unwrap();
    let target = elsewhere.join("support.toml");
    std::fs::write(&target, persona("support", 1)).unwrap();
    let (set, mut watch, _) = start(&f).await;
    std::os::unix::fs::symlink(&target, f.dir.join("support.toml")).unwrap();
    let events = until(&mut watch, |_| true).await;
    assert_eq!(
        lines(&events),
        [line("added", &f.dir, "support", "support.toml")]
    );
    // The link is followed once the watch has read the folder again, just after the event:
    // an edit made before that is not seen, so edit until one is (each waited for 2 s).
    let mut version = 2;
    loop {
        std::fs::write(&target, persona("support", version)).unwrap();
        let seen = tokio::time::timeout(Duration::from_secs(2), watch.next()).await;
        if let Ok(Some(event)) = seen {
            assert_eq!(
                lines(&[event]),
                [line("reloaded", &f.dir, "support", "support.toml")]
            );
            break;
        }
        version += 1;
        assert!(version < 10, "the target's edits are never seen");
    }
    assert_eq!(
        resolve(&set, "support", &f.dir).await,
        [format!("v{version} a"), format!("v{version} b")]
    );
}
