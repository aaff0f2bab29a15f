//! Persona files are regular files of at most 1 MiB: anything else is reported by its
//! path, never read (a FIFO would block, a device would never end).

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use protege_config::{PersonaSet, render};

const PERSONA: &str = "name = \"support\"\n\n[[message_resolvers]]\nuse = \"LoadText\"\ntemplate = \"{{ persona.name }}\"\n";

/// Loads the folder on its own thread, failing the test after 30 s (a blocking read would
/// otherwise hang the suite); returns the loaded names and the rendered diagnostics.
fn load(dir: &Path) -> (Vec<String>, String) {
    let (tx, rx) = mpsc::channel();
    let dir = dir.to_owned();
    std::thread::spawn(move || {
        let (set, diagnostics) = PersonaSet::load(&dir).unwrap();
        let _ = tx.send((set.names(), render(&diagnostics)));
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("loading the folder did not return within 30 s")
}

#[test]
fn a_fifo_a_directory_and_a_device_are_reported_by_path() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("support.toml"), PERSONA).unwrap();
    let fifo = dir.path().join("a-fifo.toml");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::create_dir(dir.path().join("b-dir.toml")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("c-zero.toml")).unwrap();
    let (names, diagnostics) = load(dir.path());
    assert_eq!(names, ["support"]);
    let d = dir.path().display();
    assert_eq!(
        diagnostics,
        format!(
            "{d}/a-fifo.toml:1:1: error: not a regular file: `{d}/a-fifo.toml` is a FIFO\n\n\
             {d}/b-dir.toml:1:1: error: not a regular file: `{d}/b-dir.toml` is a directory\n\n\
             {d}/c-zero.toml:1:1: error: not a regular file: `{d}/c-zero.toml` is a character device"
        )
    );
}

#[test]
fn a_persona_file_over_1_mib_is_reported_and_1_mib_loads() {
    let dir = tempfile::tempdir().unwrap();
    let at_cap = format!("{PERSONA}#{}\n", "x".repeat((1 << 20) - PERSONA.len() - 2));
    assert_eq!(at_cap.len(), 1 << 20);
    std::fs::write(dir.path().join("support.toml"), &at_cap).unwrap();
    let over = format!(
        "{}#{}\n",
        PERSONA.replace("support", "big"),
        "x".repeat(1 << 20)
    );
    std::fs::write(dir.path().join("big.toml"), over).unwrap();
    let (names, diagnostics) = load(dir.path());
    assert_eq!(names, ["support"]);
    let d = dir.path().display();
    assert_eq!(
        diagnostics,
        format!(
            "{d}/big.toml:1:1: error: file too large: `{d}/big.toml` is over the limit of 1 MiB (1048576 bytes)"
        )
    );
}

#[test]
fn an_unreadable_folder_is_one_error_that_states_its_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("personas");
    std::fs::write(&file, PERSONA).unwrap();
    let err = PersonaSet::load(&file).unwrap_err();
    assert_eq!(err.kind(), protege_config::ErrorKind::Io);
    assert_eq!(
        err.clone().to_string(),
        format!(
            "cannot read the persona folder `{}`: Not a directory (os error 20)",
            file.display()
        )
    );
    assert!(std::error::Error::source(&err).is_none());
}

/// A persona linked to a file that is not TOML at all (notes, a log, a binary) is reported
/// in one line that quotes none of it.
#[test]
fn a_persona_linked_to_a_file_that_is_not_toml_quotes_none_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("support.toml"), PERSONA).unwrap();
    let notes = elsewhere.path().join("notes.txt");
    let text: String = (1..=1000)
        .map(|i| format!("Line {i} of the meeting notes: ship it.\n"))
        .collect();
    std::fs::write(&notes, text).unwrap();
    std::os::unix::fs::symlink(&notes, dir.path().join("notes.toml")).unwrap();
    let binary = elsewhere.path().join("logo.png");
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.extend((0..4096u32).map(|i| (i * 7919 % 251) as u8));
    std::fs::write(&binary, bytes).unwrap();
    std::os::unix::fs::symlink(&binary, dir.path().join("logo.toml")).unwrap();
    let (names, diagnostics) = load(dir.path());
    assert_eq!(names, ["support"]);
    let d = dir.path().display();
    let want = format!(
        "{d}/logo.toml:1:1: error: the persona file is not valid UTF-8\n\n\
         {d}/notes.toml:1:1: error: not a persona file: no line of it is TOML (`key = value`, `[table]` or a `#` comment), so none is quoted"
    );
    assert_eq!(diagnostics, want);
}
