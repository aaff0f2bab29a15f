//! `protege diff --to DIR` (and `Engine::diff`): the requests of each persona's recent
//! messages with the live persona folder and a candidate one, on every backend the
//! environment names.

use std::path::Path;

mod common;
use common::server::every_backend;
use common::{FENCE_KEY, project, protege_command};

const NOW: &str = "2026-03-10T08:00:00Z";

/// Runs `protege --root ROOT --database URL ARGS` with the examples' fence key: (exit
/// code, stdout, stderr with ROOT written `<root>`).
fn protege(root: &Path, url: &str, args: &[&str]) -> (i32, String, String) {
    let out = protege_command()
        .current_dir(root)
        .arg("--root")
        .arg(root)
        .arg("--database")
        .arg(url)
        .args(args)
        .env_remove("PROTEGE_DATABASE_URL")
        .env("PROTEGE_FENCE_KEY", FENCE_KEY)
        .output()
        .unwrap();
    let shown = |bytes: Vec<u8>| {
        String::from_utf8(bytes)
            .unwrap()
            .replace(&root.display().to_string(), "<root>")
    };
    (
        out.status.code().unwrap(),
        shown(out.stdout),
        shown(out.stderr),
    )
}

/// A copy of the shipped app (personas, prompts, demo data) in a temporary folder.
fn app() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for dir in ["personas", "prompts", "examples/data"] {
        copy_dir(&project().join(dir), &root.path().join(dir));
    }
    root
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

const EDITED: &str = "\
billing: removed, 0 of 0 requests change, tokens 0 -> 0 (+0)
digest: invalid, 0 of 0 requests change, tokens 0 -> 0 (+0)
  new/digest.toml:2:10: error: invalid TOML: string values must be quoted, expected literal string
sales: added, 3 of 3 requests change, tokens 0 -> 323 (+323)
support: changed, 3 of 3 requests change, tokens 1495 -> 1507 (+12)
";

#[tokio::test]
async fn a_persona_edit_shows_its_changes_before_it_goes_live() {
    let dir = tempfile::tempdir().unwrap();
    let urls = every_backend(dir.path(), "persona_diff").await;
    for (url, _) in &urls {
        let root = app();
        let root = root.path();
        let (code, _, stderr) = protege(root, url, &["demo"]);
        assert_eq!(code, 0, "{url}: {stderr}");
        // The same folder: nothing changes, exit 0.
        copy_dir(&root.join("personas"), &root.join("new"));
        let same = protege(root, url, &["diff", "--to", "new", "--now", NOW]);
        assert_eq!(
            same,
            (
                0,
                "billing: unchanged, 0 of 0 requests change, tokens 0 -> 0 (+0)\n\
                 digest: unchanged, 0 of 0 requests change, tokens 0 -> 0 (+0)\n\
                 support: unchanged, 0 of 8 requests change, tokens 4781 -> 4781 (+0)\n"
                    .to_owned(),
                String::new()
            ),
            "{url}"
        );
        // An edited instruction, a broken file, a persona removed and one added.
        let support = std::fs::read_to_string(root.join("new/support.toml")).unwrap();
        std::fs::write(
            root.join("new/support.toml"),
            support.replace(
                "briefly and politely.",
                "briefly, politely and in plain words.",
            ),
        )
        .unwrap();
        std::fs::write(
            root.join("new/digest.toml"),
            "name = \"digest\"\nbroken = \n",
        )
        .unwrap();
        std::fs::remove_file(root.join("new/billing.toml")).unwrap();
        std::fs::write(
            root.join("new/sales.toml"),
            "addresses = [\"support@acme.test\"]\n\n[[message_resolvers]]\nuse = \"ThreadHistory\"\nlimit = 1\n",
        )
        .unwrap();
        let (code, stdout, stderr) = protege(
            root,
            url,
            &["diff", "--to", "new", "--now", NOW, "--messages", "3"],
        );
        assert_eq!(
            (code, stderr.as_str()),
            (
                1,
                "error: 4 of 4 personas change: billing, digest, sales, support\n"
            ),
            "{url}"
        );
        assert!(stdout.starts_with(EDITED), "{url}: {stdout}");
        // The first changed request of each persona, one hunk per message that differs.
        let support_diff = "\n--- live/support <refund-3@example.com>\n\
            +++ candidate/support <refund-3@example.com>\n\
            @@ message 1 (system) @@\n {\n   \"role\": \"system\",\n\
            -  \"content\": \"You are Acme's support agent. Answer in the customer's language, briefly and politely.\\n";
        assert!(stdout.contains(support_diff), "{url}: {stdout}");
        assert!(
            stdout.contains("+  \"content\": \"You are Acme's support agent. Answer in the customer's language, briefly, politely and in plain words.\\n"),
            "{url}: {stdout}"
        );
        assert!(
            stdout.contains("\n--- live/sales <refund-3@example.com>\n+++ candidate/sales <refund-3@example.com>\n@@ request @@\n-error: persona `sales` is not live\n+{\n"),
            "{url}: {stdout}"
        );
        // One persona, one message; JSON for scripts.
        let (code, stdout, _) = protege(
            root,
            url,
            &[
                "diff",
                "--to",
                "new",
                "--now",
                NOW,
                "--persona",
                "support",
                "--messages",
                "1",
            ],
        );
        assert_eq!(code, 1, "{url}");
        assert!(
            stdout.starts_with("support: changed, 1 of 1 request change, tokens 655 -> 659 (+4)\n"),
            "{url}: {stdout}"
        );
        let (code, stdout, _) = protege(
            root,
            url,
            &[
                "diff",
                "--to",
                "new",
                "--now",
                NOW,
                "--messages",
                "2",
                "--format",
                "json",
            ],
        );
        assert_eq!(code, 1, "{url}");
        let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        let summary: Vec<(&str, &str, u64, u64)> = json
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                (
                    d["persona"].as_str().unwrap(),
                    d["status"].as_str().unwrap(),
                    d["requests"].as_u64().unwrap(),
                    d["changed"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("billing", "removed", 0, 0),
                ("digest", "invalid", 0, 0),
                ("sales", "added", 2, 2),
                ("support", "changed", 2, 2)
            ],
            "{url}"
        );
        assert_eq!(
            json[1]["diagnostics"],
            serde_json::json!([
                "new/digest.toml:2:10: error: invalid TOML: string values must be quoted, expected literal string"
            ]),
            "{url}"
        );
        // Mistakes: a folder that is not one (exit 2), a persona neither side has (exit 1).
        assert_eq!(
            protege(root, url, &["diff", "--to", "missing"]),
            (
                2,
                String::new(),
                "error: --to `missing` is not a persona folder (a directory of persona files)\n"
                    .to_owned()
            ),
            "{url}"
        );
        let (code, _, stderr) = protege(root, url, &["diff", "--to", "new", "--persona", "nobody"]);
        assert_eq!(code, 1, "{url}");
        assert!(
            stderr.starts_with("error: unknown persona `nobody`"),
            "{url}: {stderr}"
        );
        assert_eq!(
            protege(
                root,
                url,
                &["diff", "--to", "new", "--messages", "2", "--since", "7d"]
            )
            .0,
            2,
            "{url}"
        );
    }
    for (_, server) in &urls {
        if let Some(server) = server {
            common::server::execute(server, "DROP DATABASE IF EXISTS persona_diff").await;
        }
    }
}
