//! `protege db export FILE|-` and `Engine::export_fixture`: the database as a fixture that
//! `db import` reads back, the same bytes from every backend, and a move from SQLite to the
//! servers the environment names.

use std::path::Path;

mod common;
use common::server::every_backend;
use common::{project, run_on as protege};

const NOT_EXPORTED: &str = "running summaries, runs and settings are not part of a fixture";

/// Exports `url` to stdout; asserts the summary line.
fn export(url: &str, summary: &str) -> String {
    let (code, stdout, stderr) = protege(url, &["db", "export", "-"]);
    assert_eq!(
        (code, stderr.as_str()),
        (0, format!("{summary}; {NOT_EXPORTED}\n").as_str()),
        "{url}"
    );
    stdout
}

#[tokio::test]
async fn an_export_imports_back_to_the_same_bytes_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let sources = every_backend(&dir.path().join("a"), "export_a").await;
    let targets = every_backend(&dir.path().join("b"), "export_b").await;
    std::fs::create_dir_all(dir.path().join("a")).unwrap();
    std::fs::create_dir_all(dir.path().join("b")).unwrap();
    let demo = "exported 6 threads, 12 messages, 5 attachments, 5 tool uses";
    let mut first: Option<String> = None;
    for (url, _) in &sources {
        let (code, _, stderr) = protege(url, &["db", "import", "examples/data/demo.json"]);
        assert_eq!((code, stderr.as_str()), (0, ""), "{url}");
        let text = export(url, demo);
        // Every backend exports the same bytes.
        match &first {
            None => first = Some(text),
            Some(first) => assert_eq!(&text, first, "{url}"),
        }
    }
    let exported = first.unwrap();
    // What the demo fixture holds, in the fixture's own order, with `cc` always written.
    let mut fixture: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(project().join("examples/data/demo.json")).unwrap(),
    )
    .unwrap();
    fixture["threads"][0]["messages"][0]["cc"] = serde_json::json!([]);
    let back: serde_json::Value = serde_json::from_str(&exported).unwrap();
    assert_eq!(
        back["threads"][0]["messages"][0],
        fixture["threads"][0]["messages"][0]
    );
    assert_eq!(back["threads"].as_array().unwrap().len(), 6);
    // Written to a file, imported into every backend: the same bytes again.
    let file = dir.path().join("backup.json");
    let (code, stdout, stderr) = protege(
        &sources[0].0,
        &["db", "export", &file.display().to_string()],
    );
    assert_eq!(
        (code, stdout.as_str(), stderr),
        (0, "", format!("{demo}; {NOT_EXPORTED}\n"))
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), exported);
    for (url, _) in &targets {
        let (code, stdout, stderr) = protege(url, &["db", "import", &file.display().to_string()]);
        assert_eq!(
            (code, stdout.as_str(), stderr.as_str()),
            (
                0,
                "imported 6 threads, 12 messages (0 already present)\n",
                ""
            ),
            "{url}"
        );
        assert_eq!(export(url, demo), exported, "{url}");
    }
    for (_, server) in sources.iter().chain(&targets) {
        if let Some(server) = server {
            for name in ["export_a", "export_b"] {
                common::server::execute(server, &format!("DROP DATABASE IF EXISTS {name}")).await;
            }
        }
    }
}

#[tokio::test]
async fn real_mail_moves_from_sqlite_to_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let from = format!("sqlite://{}?mode=rwc", dir.path().join("mail.db").display());
    let (code, _, stderr) = protege(&from, &["db", "import-eml", "tests/corpus/notmuch"]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    let summary = "exported 125 threads, 228 messages, 13 attachments, 0 tool uses";
    let exported = export(&from, summary);
    let file = dir.path().join("mail.json");
    std::fs::write(&file, &exported).unwrap();
    let targets = every_backend(&dir.path().join("to"), "export_mail").await;
    std::fs::create_dir_all(dir.path().join("to")).unwrap();
    for (url, _) in &targets {
        let (code, stdout, stderr) = protege(url, &["db", "import", &file.display().to_string()]);
        assert_eq!(
            (code, stdout.as_str(), stderr.as_str()),
            (
                0,
                "imported 125 threads, 228 messages (0 already present)\n",
                ""
            ),
            "{url}"
        );
        assert_eq!(export(url, summary), exported, "{url}");
    }
    for (_, server) in &targets {
        if let Some(server) = server {
            common::server::execute(server, "DROP DATABASE IF EXISTS export_mail").await;
        }
    }
}

#[test]
fn a_file_that_cannot_be_written_is_one_sentence_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let missing = dir.path().join("missing/backup.json");
    let (code, stdout, stderr) = protege(&url, &["db", "export", &missing.display().to_string()]);
    assert_eq!(
        (code, stdout.as_str(), stderr),
        (
            1,
            "",
            format!(
                "error: cannot write `{}`: No such file or directory (os error 2)\n",
                missing.display()
            )
        )
    );
    // An existing file stays whole until the new export replaces it; an empty database
    // exports an empty fixture that imports as nothing.
    let file = dir.path().join("backup.json");
    std::fs::write(&file, "previous").unwrap();
    let (code, _, _) = protege(&url, &["db", "export", &file.display().to_string()]);
    assert_eq!(code, 0);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "{\n  \"threads\": []\n}\n"
    );
    // A link is followed: the file it names is replaced, the link stays (also when the
    // file is not there yet).
    #[cfg(unix)]
    {
        let link = dir.path().join("latest.json");
        std::os::unix::fs::symlink("backup-2.json", &link).unwrap();
        for _ in 0..2 {
            let (code, _, _) = protege(&url, &["db", "export", &link.display().to_string()]);
            assert_eq!(code, 0);
            assert!(
                std::fs::symlink_metadata(&link)
                    .unwrap()
                    .file_type()
                    .is_symlink()
            );
            assert_eq!(
                std::fs::read_to_string(dir.path().join("backup-2.json")).unwrap(),
                "{\n  \"threads\": []\n}\n"
            );
        }
        std::fs::remove_file(&link).unwrap();
        std::fs::remove_file(dir.path().join("backup-2.json")).unwrap();
    }
    // A device is written in place, never replaced by a file: `/dev/full` refuses it.
    if Path::new("/dev/full").exists() {
        let (code, _, stderr) = protege(&url, &["db", "export", "/dev/full"]);
        assert_eq!(
            (code, stderr.as_str()),
            (
                1,
                "error: cannot write `/dev/full`: No space left on device (os error 28)\n"
            )
        );
        let kind = std::fs::metadata("/dev/full").unwrap().file_type();
        assert!(!kind.is_file(), "/dev/full was replaced by a file");
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "t.db" && n != "backup.json" && !n.starts_with("t.db-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
