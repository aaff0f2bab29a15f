//! LoadFile stays in its sandbox: templated paths cannot leave the app root through
//! symlinks, and only regular files of at most 8 MiB are read, never a blocking FIFO.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use protege_core::{
    AppConfig, Chain, Context, DynChain, LoadFile, Message, PersonaInfo, Responsibility, Trigger,
};

/// A scheduled-run context whose persona has `page` in its `[vars]`.
fn ctx(root: &Path, page: &str) -> Context {
    let mut persona = PersonaInfo::new("support");
    persona.vars.insert("page".into(), page.into());
    Context::builder(
        persona,
        AppConfig::new(root),
        Trigger::Responsibility(Responsibility {
            name: "digest".into(),
            schedule: "0 8 * * *".into(),
            instructions: String::new(),
            ..Responsibility::default()
        }),
    )
    .build()
}

/// Runs `resolver` alone in a chain, on its own thread, failing the test if it takes
/// longer than 30 s (a blocking read would otherwise hang the suite).
fn run(resolver: LoadFile, ctx: Context) -> Result<Vec<Message>, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let chain = DynChain::new().with(resolver);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let out = runtime.block_on(chain.resolve(&ctx));
        let _ = tx.send(out.map_err(|e| e.to_string()));
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("LoadFile did not return within 30 s")
}

/// An app root `app/` with `prompts/hello.md`, next to a folder `outside/` holding
/// `secret.md`.
fn layout() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("app");
    std::fs::create_dir_all(root.join("prompts")).unwrap();
    std::fs::write(root.join("prompts/hello.md"), "hello\n").unwrap();
    std::fs::create_dir(dir.path().join("outside")).unwrap();
    std::fs::write(dir.path().join("outside/secret.md"), "secret\n").unwrap();
    (dir, root)
}

fn contents(out: &[Message]) -> Vec<String> {
    out.iter()
        .map(|m| {
            serde_json::to_value(m).unwrap()["content"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[test]
fn templated_path_through_a_symlinked_file_pointing_outside_is_rejected() {
    let (dir, root) = layout();
    let outside = dir.path().join("outside/secret.md");
    std::os::unix::fs::symlink(&outside, root.join("prompts/leak.md")).unwrap();
    let err = run(
        LoadFile::new("prompts/{{ persona.vars.page }}.md"),
        ctx(&root, "leak"),
    )
    .unwrap_err();
    assert_eq!(
        err,
        format!(
            "resolver 1 `LoadFile` failed: path outside root: `prompts/leak.md` (rendered from `prompts/{{{{ persona.vars.page }}}}.md`) leads to `{}`, outside the app root `{}`",
            outside.canonicalize().unwrap().display(),
            root.display()
        )
    );
}

#[test]
fn templated_path_through_a_symlinked_directory_pointing_outside_is_rejected() {
    let (dir, root) = layout();
    std::os::unix::fs::symlink(dir.path().join("outside"), root.join("shared")).unwrap();
    let err = run(
        LoadFile::new("shared/{{ persona.vars.page }}.md"),
        ctx(&root, "secret"),
    )
    .unwrap_err();
    assert_eq!(
        err,
        format!(
            "resolver 1 `LoadFile` failed: path outside root: `shared/secret.md` (rendered from `shared/{{{{ persona.vars.page }}}}.md`) leads to `{}`, outside the app root `{}`",
            dir.path()
                .join("outside/secret.md")
                .canonicalize()
                .unwrap()
                .display(),
            root.display()
        )
    );
}

#[test]
fn templated_path_through_a_symlink_inside_the_root_is_read() {
    let (_dir, root) = layout();
    std::os::unix::fs::symlink(root.join("prompts"), root.join("alias")).unwrap();
    std::os::unix::fs::symlink("hello.md", root.join("prompts/greeting.md")).unwrap();
    let out = run(
        LoadFile::new("alias/{{ persona.vars.page }}.md"),
        ctx(&root, "greeting"),
    )
    .unwrap();
    assert_eq!(contents(&out), ["hello\n"]);
}

#[test]
fn templated_path_with_a_missing_file_keeps_the_not_found_wording() {
    let (_dir, root) = layout();
    let err = run(
        LoadFile::new("prompts/{{ persona.vars.page }}.md"),
        ctx(&root, "nope"),
    )
    .unwrap_err();
    assert_eq!(
        err,
        format!(
            "resolver 1 `LoadFile` failed: file not found: `prompts/nope.md` (tried `{}`)",
            root.join("prompts/nope.md").display()
        )
    );
}

#[test]
fn literal_paths_written_by_the_author_stay_trusted() {
    let (dir, root) = layout();
    std::os::unix::fs::symlink(dir.path().join("outside"), root.join("shared")).unwrap();
    let out = run(LoadFile::new("../outside/secret.md"), ctx(&root, "")).unwrap();
    assert_eq!(contents(&out), ["secret\n"]);
    let out = run(LoadFile::new("shared/secret.md"), ctx(&root, "")).unwrap();
    assert_eq!(contents(&out), ["secret\n"]);
}

#[test]
fn a_fifo_is_an_error_and_never_a_blocking_read() {
    let (_dir, root) = layout();
    let fifo = root.join("prompts/pipe.md");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let expected = format!(
        "resolver 1 `LoadFile` failed: not a regular file: `prompts/pipe.md` (`{}`) is a FIFO",
        fifo.display()
    );
    assert_eq!(
        run(LoadFile::new("prompts/pipe.md"), ctx(&root, "")).unwrap_err(),
        expected
    );
    // Through a template, the canonical path is the one shown.
    assert_eq!(
        run(
            LoadFile::new("prompts/{{ persona.vars.page }}.md"),
            ctx(&root, "pipe")
        )
        .unwrap_err(),
        format!(
            "resolver 1 `LoadFile` failed: not a regular file: `prompts/pipe.md` (`{}`) is a FIFO",
            fifo.canonicalize().unwrap().display()
        )
    );
}

#[test]
fn a_directory_is_an_error() {
    let (_dir, root) = layout();
    assert_eq!(
        run(LoadFile::new("prompts"), ctx(&root, "")).unwrap_err(),
        format!(
            "resolver 1 `LoadFile` failed: not a regular file: `prompts` (`{}`) is a directory",
            root.join("prompts").display()
        )
    );
}

#[test]
fn a_symlink_to_dev_zero_is_an_error() {
    let (_dir, root) = layout();
    std::os::unix::fs::symlink("/dev/zero", root.join("prompts/zero.md")).unwrap();
    assert_eq!(
        run(LoadFile::new("prompts/zero.md"), ctx(&root, "")).unwrap_err(),
        format!(
            "resolver 1 `LoadFile` failed: not a regular file: `prompts/zero.md` (`{}`) is a character device",
            root.join("prompts/zero.md").display()
        )
    );
}

#[test]
fn a_file_over_8_mib_is_an_error_and_8_mib_is_read() {
    let (_dir, root) = layout();
    let big = std::fs::File::create(root.join("prompts/big.md")).unwrap();
    big.set_len(8 * 1024 * 1024 + 1).unwrap();
    assert_eq!(
        run(LoadFile::new("prompts/big.md"), ctx(&root, "")).unwrap_err(),
        format!(
            "resolver 1 `LoadFile` failed: file too large: `prompts/big.md` (`{}`) is over the limit of 8 MiB (8388608 bytes)",
            root.join("prompts/big.md").display()
        )
    );
    std::fs::write(root.join("prompts/full.md"), "x".repeat(8 * 1024 * 1024)).unwrap();
    let out = run(LoadFile::new("prompts/full.md"), ctx(&root, "")).unwrap();
    assert_eq!(contents(&out)[0].len(), 8_388_608);
}

#[test]
fn templated_path_that_cannot_be_resolved_names_it() {
    let (_dir, root) = layout();
    assert_eq!(
        run(
            LoadFile::new("prompts/hello.md/{{ persona.vars.page }}"),
            ctx(&root, "x")
        )
        .unwrap_err(),
        format!(
            "resolver 1 `LoadFile` failed: cannot resolve `{}`: not a directory",
            root.join("prompts/hello.md/x").display()
        )
    );
    // A dangling symlink is a missing file.
    std::os::unix::fs::symlink("/nonexistent/file.md", root.join("prompts/gone.md")).unwrap();
    assert_eq!(
        run(
            LoadFile::new("prompts/{{ persona.vars.page }}.md"),
            ctx(&root, "gone")
        )
        .unwrap_err(),
        format!(
            "resolver 1 `LoadFile` failed: file not found: `prompts/gone.md` (tried `{}`)",
            root.join("prompts/gone.md").display()
        )
    );
}
