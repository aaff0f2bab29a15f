//! `protege completions SHELL`, `protege man` and `protege --version`: generated from the
//! command-line grammar, without a persona folder or a database.

use std::process::Command;

mod common;
use common::protege_command;

/// Runs `protege ARGS` in an empty folder with no database configured: (exit code,
/// stdout, stderr).
fn protege(args: &[&str]) -> (i32, String, String) {
    let empty = tempfile::tempdir().unwrap();
    let out = protege_command()
        .current_dir(empty.path())
        .env_remove("PROTEGE_DATABASE_URL")
        .args(args)
        .output()
        .unwrap();
    // Nothing was written where the command ran: no database file, no persona folder.
    assert_eq!(
        std::fs::read_dir(empty.path()).unwrap().count(),
        0,
        "{args:?}"
    );
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// The commit `git` says the workspace is at, as the build script records it.
fn commit() -> String {
    Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8(out.stdout).unwrap().trim().to_owned())
        .filter(|hash| !hash.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

#[test]
fn version_names_the_commit() {
    let version = format!("protege {} ({})\n", env!("CARGO_PKG_VERSION"), commit());
    assert_eq!(protege(&["--version"]), (0, version.clone(), String::new()));
    assert_eq!(protege(&["-V"]), (0, version, String::new()));
}

/// What bash's completion offers for the words typed so far (the last one being
/// completed), with the script `protege completions bash` prints sourced.
fn bash_complete(script: &str, words: &[&str]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("protege.bash");
    std::fs::write(&path, script).unwrap();
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; _protege protege '{}' '{}'; \
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        path.display(),
        quoted.join(" "),
        words.len() - 1,
        words[words.len() - 1],
        words[words.len() - 2],
    );
    let out = Command::new("bash")
        .args(["-c", &program])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn bash_completes_commands_options_and_values() {
    let (code, script, stderr) = protege(&["completions", "bash"]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert!(script.starts_with("_protege() {\n"), "{script}");
    assert_eq!(bash_complete(&script, &["protege", "re"]), ["resolve"]);
    assert_eq!(
        bash_complete(&script, &["protege", "resolve", "--for"]),
        ["--format"]
    );
    assert_eq!(bash_complete(&script, &["protege", "db", "pr"]), ["prune"]);
    assert_eq!(
        bash_complete(&script, &["protege", "completions", "p"]),
        ["powershell"]
    );
}

#[test]
fn every_shell_gets_its_script() {
    for (shell, first_line) in [
        ("bash", "_protege() {"),
        ("zsh", "#compdef protege"),
        (
            "fish",
            "# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.",
        ),
        ("powershell", "using namespace System.Management.Automation"),
        ("elvish", "use builtin;"),
    ] {
        let (code, script, stderr) = protege(&["completions", shell]);
        assert_eq!((code, stderr.as_str()), (0, ""), "{shell}");
        assert_eq!(
            script.trim_start().lines().next(),
            Some(first_line),
            "{shell}"
        );
        for command in ["resolve", "cache-report", "forget", "serve", "prune", "man"] {
            assert!(script.contains(command), "{shell} lacks {command}");
        }
    }
    let (code, stdout, stderr) = protege(&["completions", "tcsh"]);
    assert_eq!((code, stdout.as_str()), (2, ""));
    assert!(
        stderr.starts_with("error: invalid value 'tcsh' for '<SHELL>'\n  [possible values: bash, elvish, fish, powershell, zsh]\n"),
        "{stderr}"
    );
}

#[test]
fn man_prints_a_page_groff_reads_without_warnings() {
    let (code, page, stderr) = protege(&["man"]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    let head: Vec<&str> = page.lines().take(6).collect();
    assert_eq!(
        head,
        [
            r".ie \n(.g .ds Aq \(aq",
            ".el .ds Aq '",
            &format!(
                ".TH protege 1  \"protege {} ({})\" ",
                env!("CARGO_PKG_VERSION"),
                commit()
            ),
            ".SH NAME",
            r"protege \- Assemble what a language model sees before it answers an email",
            ".SH SYNOPSIS",
        ]
    );
    for command in [
        "check",
        "db",
        "resolve",
        "cache\\-report",
        "forget",
        "run",
        "serve",
    ] {
        assert!(
            page.contains(&format!("protege\\-{command}(1)")),
            "{command} missing from the SUBCOMMANDS section"
        );
    }
    // groff, where the machine has it, renders the page without a warning.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("protege.1");
    std::fs::write(&path, &page).unwrap();
    if let Ok(out) = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .arg(&path)
        .output()
    {
        assert!(out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    }
}

#[test]
fn man_writes_a_page_per_command_into_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().display().to_string();
    let (code, stdout, stderr) = protege(&["man", "--dir", &folder]);
    let pages = [
        "protege",
        "protege-check",
        "protege-db",
        "protege-db-migrate",
        "protege-db-import",
        "protege-db-import-eml",
        "protege-db-summary",
        "protege-db-prune",
        "protege-db-export",
        "protege-db-threads",
        "protege-db-messages",
        "protege-resolve",
        "protege-cache-report",
        "protege-forget",
        "protege-run",
        "protege-run-start",
        "protege-run-record",
        "protege-run-show",
        "protege-run-list",
        "protege-run-abandon",
        "protege-run-reply",
        "protege-outbox",
        "protege-outbox-list",
        "protege-outbox-show",
        "protege-outbox-approve",
        "protege-outbox-reject",
        "protege-outbox-retry",
        "protege-outbox-hold",
        "protege-outbox-release",
        "protege-outbox-deliver",
        "protege-agent",
        "protege-agent-jobs",
        "protege-agent-retry",
        "protege-agent-run",
        "protege-agent-work",
        "protege-agent-due",
        "protege-agent-tick",
        "protege-inbox",
        "protege-inbox-fetch",
        "protege-diff",
        "protege-completions",
        "protege-man",
        "protege-schema",
        "protege-watch",
        "protege-demo",
        "protege-serve",
    ];
    let listing: String = pages
        .iter()
        .map(|p| format!("wrote {folder}/{p}.1\n"))
        .collect();
    assert_eq!((code, stdout, stderr), (0, listing, String::new()));
    // The page of one command names it and its options.
    let forget = std::fs::read_to_string(dir.path().join("protege-forget.1")).unwrap();
    assert!(
        forget.contains("protege\\-forget \\- Erase a correspondent"),
        "{forget}"
    );
    assert!(forget.contains("\\fB\\-\\-dry\\-run\\fR"), "{forget}");
    // The top page stays what `protege man` prints.
    let top = std::fs::read_to_string(dir.path().join("protege.1")).unwrap();
    assert_eq!(top, protege(&["man"]).1);
    // A page's name taken by a symlink to a file elsewhere, or by a FIFO: each is replaced
    // by the page, the symlink's target is untouched and nothing blocks.
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("precious.txt");
    std::fs::write(&target, "keep me").unwrap();
    let link = dir.path().join("protege-forget.1");
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let fifo = dir.path().join("protege-man.1");
    std::fs::remove_file(&fifo).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let (code, _, stderr) = protege(&["man", "--dir", &folder]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    for page in [&link, &fifo] {
        let meta = std::fs::symlink_metadata(page).unwrap();
        assert!(meta.file_type().is_file(), "{}", page.display());
    }
    assert_eq!(std::fs::read_to_string(&link).unwrap(), forget);
    // A folder that does not exist: one sentence, exit 1, nothing written.
    let missing = dir.path().join("missing");
    let (code, stdout, stderr) = protege(&["man", "--dir", &missing.display().to_string()]);
    assert_eq!(
        (code, stdout, stderr),
        (
            1,
            String::new(),
            format!(
                "error: cannot write the manual page {}/protege.1: No such file or directory (os error 2)\n",
                missing.display()
            )
        )
    );
}
