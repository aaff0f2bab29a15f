// Tests may stay long: one command after another, each compared with its expected output.
//! End-to-end: the built `protege` binary against the shipped example folder.
//!
//! Expected outputs are the insta snapshots of `tests/expected/`; `cargo insta review`
//! accepts a deliberate change. With `PROTEGE_WIRE_OUT=DIR`, every wire body
//! is also written there for the providers' schema check in `.ci/run`.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::{project, protege_command, snapshot};

const NOW: &str = "2026-03-10T08:00:00Z";

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn protege(db: &str, root: &Path, args: &[&str]) -> Run {
    let out: Output = protege_command()
        .arg("--root")
        .arg(root)
        .arg("--database")
        .arg(db)
        .args(args)
        .env_remove("PROTEGE_DATABASE_URL")
        .output()
        .expect("run protege");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn expect(name: &str, actual: &str) {
    snapshot::expect(&project().join("tests/expected"), name, actual);
}

fn save_wire(name: &str, provider: &str, body: &str) {
    if let Ok(dir) = std::env::var("PROTEGE_WIRE_OUT") {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            Path::new(&dir).join(format!("cli-{name}.{provider}.json")),
            body,
        )
        .unwrap();
    }
}

fn demo_db() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("demo.db").display());
    let run = protege(&url, &project(), &["demo"]);
    assert_eq!(run.code, 0, "demo failed: {}", run.stderr);
    (dir, url)
}

#[test]
fn check_accepts_the_example_personas() {
    // With a database named, `check` also reads its catalogue: the demo's has the
    // `customers` table the personas read, and an empty one has not.
    let (_dir, url) = demo_db();
    let run = protege(&url, &project(), &["check"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "ok: 3 personas (billing, digest, support)\n");
    // An empty database (`mode=rwc` asks for the file to be made: `check` makes none
    // unasked).
    let empty = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", empty.path().join("x.db").display());
    let run = protege(&url, &project(), &["check"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .ends_with("error: check failed: 3 problems in 3 persona files\n"),
        "{}",
        run.stderr
    );
}

#[test]
fn demo_is_idempotent_and_prints_the_request() {
    let (_dir, url) = demo_db();
    let again = protege(&url, &project(), &["demo"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again
            .stderr
            .contains("demo data: imported 0 threads, 0 messages (12 already present)"),
        "{}",
        again.stderr
    );
    let value: serde_json::Value = serde_json::from_str(&again.stdout).unwrap();
    assert_eq!(value["messages"][0]["role"], "system");
}

#[test]
fn example_personas_resolve_to_the_committed_requests() {
    let (_dir, url) = demo_db();
    let cases: [(&str, &[&str]); 4] = [
        (
            "support-refund",
            &[
                "--persona",
                "support",
                "--message",
                "<refund-3@example.com>",
            ],
        ),
        (
            "support-tracking",
            &["--persona", "support", "--message", "<track-3@example.com>"],
        ),
        (
            "billing-label",
            &["--persona", "billing", "--message", "<label-1@example.com>"],
        ),
        (
            "digest-daily",
            &["--persona", "digest", "--responsibility", "daily-digest"],
        ),
    ];
    for (name, trigger) in cases {
        for format in ["messages", "openai", "anthropic"] {
            let mut args = vec!["resolve"];
            args.extend_from_slice(trigger);
            args.extend_from_slice(&["--now", NOW, "--format", format]);
            let run = protege(&url, &project(), &args);
            assert_eq!(run.code, 0, "{name} {format}: {}", run.stderr);
            assert_eq!(run.stderr, "", "{name} {format}");
            expect(&format!("{name}.{format}.json"), &run.stdout);
            if format != "messages" {
                save_wire(name, format, &run.stdout);
            }
        }
    }
}

#[test]
fn explain_goes_to_stderr_and_stdout_stays_json() {
    let (_dir, url) = demo_db();
    let run = protege(
        &url,
        &project(),
        &[
            "resolve",
            "--persona",
            "support",
            "--message",
            "<refund-3@example.com>",
            "--now",
            NOW,
            "--explain",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str::<serde_json::Value>(&run.stdout).unwrap();
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(
        lines[0],
        "  #  resolver              messages     chars   tokens       time  source"
    );
    let names: Vec<&str> = lines[1..lines.len() - 1]
        .iter()
        .map(|l| l[5..27].trim())
        .collect();
    assert_eq!(
        names,
        [
            "LoadText",
            "LoadFile",
            "LoadFile",
            "LoadRecord",
            "ThreadHistory",
            "LoadText",
            "(trailing user turn)",
            "total"
        ]
    );
}

/// The `--explain` table without its times: one line per row, fields separated by one
/// space.
fn timeless(table: &str) -> Vec<String> {
    table
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let mut kept = Vec::with_capacity(fields.len());
            for (i, field) in fields.iter().enumerate() {
                let is_time = fields.get(i + 1) == Some(&"ms");
                if *field != "ms" && !is_time {
                    kept.push(*field);
                }
            }
            kept.join(" ")
        })
        .collect()
}

#[test]
fn explain_counts_openai_models_with_their_tokenizer() {
    let (_dir, url) = demo_db();
    let digest = [
        "resolve",
        "--persona",
        "digest",
        "--responsibility",
        "daily-digest",
    ];
    let support = [
        "resolve",
        "--persona",
        "support",
        "--message",
        "<refund-3@example.com>",
    ];
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        // `[model] name = "gpt-4o"`.
        (
            digest.to_vec(),
            vec![
                "# resolver messages chars tokens time source",
                "1 LoadText 1 108 28 text",
                "2 LoadFile 1 156 44 file prompts/digest.md",
                "3 LoadRecord 1 161 57 record customers",
                "4 LoadText 1 179 64 text",
                "total 4 604 193",
                "tokens are counted with o200k_base, plus 4 per message",
            ],
        ),
        // `--model` chooses the tokenizer, whatever the format.
        (
            [&digest[..], &["--model", "gpt-4"]].concat(),
            vec![
                "# resolver messages chars tokens time source",
                "1 LoadText 1 108 28 text",
                "2 LoadFile 1 156 44 file prompts/digest.md",
                "3 LoadRecord 1 161 60 record customers",
                "4 LoadText 1 179 64 text",
                "total 4 604 196",
                "tokens are counted with cl100k_base, plus 4 per message",
            ],
        ),
        // `claude-sonnet-4-5`: the estimate, as before.
        (
            support.to_vec(),
            vec![
                "# resolver messages chars tokens time source",
                "1 LoadText 1 431 112 text",
                "2 LoadFile 1 371 97 file prompts/support.md",
                "3 LoadFile 1 112 32 file prompts/teams/support-team.md",
                "4 LoadRecord 1 129 37 record customers",
                "5 ThreadHistory 6 911 274 2 messages, 4 tool uses",
                "6 LoadText 1 100 29 text",
                "- (trailing user turn) 1 278 74 1 message",
                "total 12 2332 655",
                "tokens are estimated as characters / 4, rounded up, plus 4 per message",
            ],
        ),
        (
            [&support[..], &["--model", "gpt-4.1", "--format", "openai"]].concat(),
            vec![
                "# resolver messages chars tokens time source",
                "1 LoadText 1 431 115 text",
                "2 LoadFile 1 371 90 file prompts/support.md",
                "3 LoadFile 1 112 26 file prompts/teams/support-team.md",
                "4 LoadRecord 1 129 40 record customers",
                "5 ThreadHistory 6 911 354 2 messages, 4 tool uses",
                "6 LoadText 1 100 31 text",
                "- (trailing user turn) 1 278 102 1 message",
                "total 12 2332 758",
                "tokens are counted with o200k_base, plus 4 per message",
            ],
        ),
    ];
    for (args, want) in cases {
        let run = protege(
            &url,
            &project(),
            &[&args[..], &["--now", NOW, "--explain"]].concat(),
        );
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        assert_eq!(timeless(&run.stderr), want, "{args:?}");
    }
}

#[test]
fn bad_inputs_give_exit_codes_and_one_sentence() {
    let (dir, url) = demo_db();
    let root = project();
    let cases: Vec<(Vec<&str>, i32, String)> = vec![
        (
            vec!["resolve", "--persona", "nobody", "--message", "<refund-3@example.com>"],
            1,
            "error: unknown persona `nobody`; known personas: `billing`, `digest`, `support`\n".into(),
        ),
        (
            vec!["resolve", "--persona", "support", "--message", "<nope@example.com>"],
            1,
            "error: unknown message `<nope@example.com>`: no message with this Message-ID in the database\n".into(),
        ),
        (
            vec!["resolve", "--persona", "digest", "--responsibility", "hourly"],
            1,
            "error: unknown responsibility `hourly` for persona `digest`; valid: `daily-digest`, `weekly-review`\n".into(),
        ),
    ];
    for (args, code, stderr) in cases {
        let run = protege(&url, &root, &args);
        assert_eq!(
            (run.code, run.stderr.as_str()),
            (code, stderr.as_str()),
            "{args:?}"
        );
        assert_eq!(run.stdout, "");
    }

    // Usage errors exit 2.
    let run = protege(
        &url,
        &root,
        &[
            "resolve",
            "--persona",
            "support",
            "--message",
            "<refund-3@example.com>",
            "--now",
            "yesterday",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("`yesterday` is not an RFC 3339 timestamp"),
        "{}",
        run.stderr
    );
    assert_eq!(protege(&url, &root, &["frobnicate"]).code, 2);

    // A malformed fixture names the JSON path and changes nothing.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"threads":[{"subject":"x","messages":[{"message_id":"<n@x>","direction":"sideways","from":"a@x","to":[],"subject":"x","sent_at":"2026-01-01T00:00:00Z"}]}]}"#).unwrap();
    let run = protege(&url, &root, &["db", "import", bad.to_str().unwrap()]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.starts_with("error: fixture `"), "{}", run.stderr);
    assert!(
        run.stderr.contains("threads[0].messages[0].direction"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);

    // An unreachable database.
    let run = protege(
        "postgres://nobody@127.0.0.1:1/none",
        &root,
        &["db", "migrate"],
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .starts_with("error: cannot connect to database `postgres://nobody@127.0.0.1:1/none`"),
        "{}",
        run.stderr
    );
}

#[test]
fn check_reports_every_problem_of_an_invalid_folder() {
    let dir = tempfile::tempdir().unwrap();
    let personas = dir.path().join("personas");
    std::fs::create_dir(&personas).unwrap();
    std::fs::write(
        personas.join("bad.toml"),
        "name = \"bad\"\n\n[[message_resolvers]]\nuse = \"ThreadHistroy\"\n\n[[message_resolvers]]\nuse = \"LoadText\"\ntemplat = \"x\"\n",
    )
    .unwrap();
    let url = format!("sqlite://{}", dir.path().join("x.db").display());
    let run = protege(&url, dir.path(), &["check"]);
    assert_eq!(run.code, 1);
    let path = personas.join("bad.toml");
    let first = format!(
        "{}:4:7: error: unknown resolver `ThreadHistroy`, did you mean `ThreadHistory`?",
        path.display()
    );
    assert!(run.stderr.contains(&first), "{}", run.stderr);
    let second = format!(
        "{}:8:1: error: unknown option `templat` for `LoadText`, did you mean `template`?",
        path.display()
    );
    assert!(run.stderr.contains(&second), "{}", run.stderr);
}

#[test]
fn check_reports_a_misspelt_template_variable_with_a_suggestion() {
    let dir = tempfile::tempdir().unwrap();
    let personas = dir.path().join("personas");
    std::fs::create_dir(&personas).unwrap();
    std::fs::write(
        personas.join("support.toml"),
        "[[message_resolvers]]\nuse = \"LoadText\"\ntemplate = \"Reply to {{ mesage.from }}.\"\n",
    )
    .unwrap();
    let url = format!("sqlite://{}", dir.path().join("x.db").display());
    let run = protege(&url, dir.path(), &["check"]);
    assert_eq!(run.code, 1);
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        format!(
            "{}:3:25: error: unknown template variable `mesage`, did you mean `message`?\n  |\n3 | template = \"Reply to {{{{ mesage.from }}}}.\"\n  |                         ^^^^^^\n\nerror: check failed: 1 problem in 1 persona file\n",
            personas.join("support.toml").display()
        )
    );
}

#[test]
fn import_eml_then_resolve_replays_the_thread() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("mail.db").display());
    let mail = project().join("protege-store/tests/data/eml");
    let files: Vec<String> = (1..=4)
        .map(|i| mail.join(format!("refund-{i}.eml")).display().to_string())
        .rev() // out of order on purpose
        .collect();
    let mut args = vec!["db", "import-eml"];
    args.extend(files.iter().map(String::as_str));
    let run = protege(&url, &project(), &args);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "imported 4 messages, skipped 0 duplicates, 0 failed\n"),
        "{}",
        run.stderr
    );
    let again = protege(&url, &project(), &args);
    assert_eq!(
        again.stdout,
        "imported 0 messages, skipped 4 duplicates, 0 failed\n"
    );

    let run = protege(
        &url,
        &project(),
        &[
            "resolve",
            "--persona",
            "digest",
            "--message",
            "<refund-4@example.com>",
            "--now",
            NOW,
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let value: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let roles: Vec<&str> = value["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    // digest: LoadText, then ThreadHistory(limit 5) with the three earlier mails
    // (support@acme.test is the support persona's address: outbound), then the reply.
    assert_eq!(roles, ["system", "user", "assistant", "user", "user"]);
    let subjects: Vec<String> = value["messages"].as_array().unwrap()[1..]
        .iter()
        .map(|m| {
            m["content"]
                .as_str()
                .unwrap()
                .lines()
                .nth(4)
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        subjects,
        [
            "Subject: Refund for order A-1",
            "Subject: Re: Refund for order A-1",
            "Subject: RE: Re: Refund for order A-1",
            "Subject: Re: Refund for order A-1",
        ]
    );
}

#[test]
fn watch_prints_one_json_line_per_event() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let personas = dir.path().join("personas");
    std::fs::create_dir(&personas).unwrap();
    let file = personas.join("support.toml");
    let valid =
        |text: &str| format!("[[message_resolvers]]\nuse = \"LoadText\"\ntemplate = \"{text}\"\n");
    std::fs::write(&file, valid("v1")).unwrap();
    let url = format!("sqlite://{}", dir.path().join("x.db").display());
    let mut child = protege_command()
        .arg("--root")
        .arg(dir.path())
        .arg("--database")
        .arg(&url)
        .arg("watch")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A watchdog: a missed event fails the test instead of hanging it.
    let pid = child.id().to_string();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(60));
        let _ = Command::new("kill").arg(&pid).status();
    });
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = || lines.next().unwrap().unwrap();
    let path = file.display().to_string();
    let json = |event: &str| {
        format!(
            r#"{{"event":"{event}","persona":"support","path":{}}}"#,
            serde_json::to_string(&path).unwrap()
        )
    };
    assert_eq!(next(), json("loaded"));
    std::fs::write(&file, "[[message_resolvers]]\nuse = \"LoadTxt\"\n").unwrap();
    assert_eq!(
        next(),
        serde_json::json!({
            "event": "rejected",
            "path": path,
            "error": format!("{path}:2:7: error: unknown resolver `LoadTxt`, did you mean `LoadText`?"),
        })
        .to_string()
    );
    std::fs::write(&file, valid("v2")).unwrap();
    assert_eq!(next(), json("reloaded"));
    std::fs::remove_file(&file).unwrap();
    assert_eq!(next(), json("removed"));
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Attachments become image or document parts only when their bytes are a format the
/// providers accept, with the media type detected from the bytes; anything else stays in
/// the attachments note. A persona without tools replaying tool rounds gets them as text in
/// the Anthropic body.
#[test]
fn mislabelled_attachments_stay_in_the_note_and_rounds_without_tools_are_text() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    std::fs::write(
        root.path().join("personas/plain.toml"),
        concat!(
            "[model]\nprovider = \"anthropic\"\nname = \"claude-sonnet-4-5\"\n\n",
            "[[message_resolvers]]\nuse = \"LoadText\"\ntemplate = \"Be brief.\"\n\n",
            "[[message_resolvers]]\nuse = \"ThreadHistory\"\n",
        ),
    )
    .unwrap();
    // A JPEG declared as PNG, text declared as PNG, a real PDF and HTML declared as PDF.
    let fixture = r#"{"threads":[{"subject":"Photos","messages":[
      {"message_id":"<p1@example.com>","direction":"inbound","from":"Ann <ann@example.com>",
       "to":["help@acme.test"],"subject":"Order","sent_at":"2026-03-01T09:00:00Z",
       "text_body":"Where is A-7?",
       "tool_uses":[{"run_id":"r1","turn_index":0,"position":0,"tool_call_id":"t1",
                     "name":"lookup_order","input":{"order":"A-7"},"result":"shipped"}]},
      {"message_id":"<p2@example.com>","direction":"outbound","from":"help@acme.test",
       "to":["ann@example.com"],"subject":"Re: Order","sent_at":"2026-03-01T10:00:00Z",
       "text_body":"It shipped."},
      {"message_id":"<p3@example.com>","direction":"inbound","from":"Ann <ann@example.com>",
       "to":["help@acme.test"],"subject":"Re: Order","sent_at":"2026-03-02T09:00:00Z",
       "text_body":"It arrived broken, see photos.",
       "attachments":[
         {"id":"a1","filename":"photo.png","content_type":"image/png","byte_size":12,"data_base64":"/9j/4AAQSkZJRgAB"},
         {"id":"a2","filename":"scan.png","content_type":"image/png","byte_size":12,"data_base64":"bm90IGFuIGltYWdl"},
         {"id":"a3","filename":"r.pdf","content_type":"application/pdf","byte_size":15,"data_base64":"JVBERi0xLjQKJSVFT0YK"},
         {"id":"a4","filename":"fake.pdf","content_type":"application/pdf","byte_size":6,"data_base64":"PGh0bWw+"}]}
    ]}]}"#;
    let fixture_path = root.path().join("fixture.json");
    std::fs::write(&fixture_path, fixture).unwrap();
    let url = format!("sqlite://{}", root.path().join("t.db").display());
    let run = protege(
        &url,
        root.path(),
        &["db", "import", fixture_path.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let args = |format: &'static str| {
        [
            "resolve",
            "--persona",
            "plain",
            "--message",
            "<p3@example.com>",
            "--now",
            NOW,
            "--format",
            format,
        ]
    };
    let run = protege(&url, root.path(), &args("messages"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let user = "From: Ann <ann@example.com>\\nTo: help@acme.test\\nCc:\\nDate: Mon, 2 Mar 2026 09:00:00 +0000\\nSubject: Re: Order\\n\\nIt arrived broken, see photos.\\n\\nAttachments:\\n- photo.png (image/png, 12 bytes, id: a1)\\n- scan.png (image/png, 12 bytes, id: a2)\\n- r.pdf (application/pdf, 15 bytes, id: a3)\\n- fake.pdf (application/pdf, 6 bytes, id: a4)";
    let body: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        serde_json::to_string(&body["messages"][5]).unwrap(),
        format!(
            concat!(
                r#"{{"role":"user","content":[{{"type":"text","text":"{user}"}},"#,
                r#"{{"type":"image","media_type":"image/jpeg","data":"/9j/4AAQSkZJRgAB"}},"#,
                r#"{{"type":"document","filename":"r.pdf","media_type":"application/pdf","data":"JVBERi0xLjQKJSVFT0YK"}}]}}"#
            ),
            user = user
        )
    );
    let run = protege(&url, root.path(), &args("anthropic"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    save_wire("mislabelled", "anthropic", &run.stdout);
    let body: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(body.get("tools"), None);
    assert_eq!(
        serde_json::to_string(&body["messages"]).unwrap(),
        format!(
            concat!(
                r#"[{{"role":"user","content":"From: Ann <ann@example.com>\nTo: help@acme.test\nCc:\nDate: Sun, 1 Mar 2026 09:00:00 +0000\nSubject: Order\n\nWhere is A-7?"}},"#,
                r#"{{"role":"assistant","content":"[tool call lookup_order] {{\"order\":\"A-7\"}}"}},"#,
                r#"{{"role":"user","content":"[tool result lookup_order] shipped"}},"#,
                r#"{{"role":"assistant","content":[{{"type":"text","text":"From: help@acme.test\nTo: ann@example.com\nCc:\nDate: Sun, 1 Mar 2026 10:00:00 +0000\nSubject: Re: Order\n\nIt shipped.","cache_control":{{"type":"ephemeral"}}}}]}},"#,
                r#"{{"role":"user","content":[{{"type":"text","text":"{user}"}},"#,
                r#"{{"type":"image","source":{{"type":"base64","media_type":"image/jpeg","data":"/9j/4AAQSkZJRgAB"}}}},"#,
                r#"{{"type":"document","source":{{"type":"base64","media_type":"application/pdf","data":"JVBERi0xLjQKJSVFT0YK"}},"title":"r.pdf","cache_control":{{"type":"ephemeral"}}}}]}}]"#
            ),
            user = user
        )
    );
    let run = protege(&url, root.path(), &args("openai"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    save_wire("mislabelled", "openai", &run.stdout);
}

/// `--format openai-responses` prints a Responses body, and so does `--format provider` for
/// a persona with `[model] provider = "openai"` and `api = "responses"`.
#[test]
fn the_responses_format_is_asked_for_or_the_persona_s() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    std::fs::write(
        root.path().join("personas/plain.toml"),
        "[model]\nprovider = \"openai\"\napi = \"responses\"\nname = \"gpt-5\"\nmax_tokens = 300\ncache = \"off\"\n\n[[message_resolvers]]\nuse = \"LoadText\"\ntemplate = \"Be brief.\"\n\n[[message_resolvers]]\nuse = \"ThreadHistory\"\n",
    )
    .unwrap();
    let file = root.path().join("m.eml");
    std::fs::write(
        &file,
        "Message-ID: <r1@example.com>\r\nFrom: Zoe <zoe@example.com>\r\nTo: help@acme.test\r\nSubject: Hi\r\nDate: Mon, 2 Mar 2026 09:00:00 +0000\r\n\r\nWhere is my order?\r\n",
    )
    .unwrap();
    let url = format!("sqlite://{}", root.path().join("t.db").display());
    let run = protege(
        &url,
        root.path(),
        &["db", "import-eml", file.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let resolve = |format: &str| {
        protege(
            &url,
            root.path(),
            &[
                "resolve",
                "--persona",
                "plain",
                "--message",
                "<r1@example.com>",
                "--now",
                NOW,
                "--format",
                format,
            ],
        )
    };
    let expected = concat!(
        "{\n",
        "  \"model\": \"gpt-5\",\n",
        "  \"instructions\": \"Be brief.\",\n",
        "  \"input\": [\n",
        "    {\n",
        "      \"type\": \"message\",\n",
        "      \"role\": \"user\",\n",
        "      \"content\": \"From: Zoe <zoe@example.com>\\nTo: help@acme.test\\nCc:\\nDate: Mon, 2 Mar 2026 09:00:00 +0000\\nSubject: Hi\\n\\nWhere is my order?\"\n",
        "    }\n",
        "  ],\n",
        "  \"max_output_tokens\": 300,\n",
        "  \"store\": false,\n",
        "  \"include\": [\n",
        "    \"reasoning.encrypted_content\"\n",
        "  ]\n",
        "}\n"
    );
    for format in ["openai-responses", "provider"] {
        let run = resolve(format);
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (0, expected, ""),
            "{format}"
        );
    }
    save_wire("responses-format", "openai-responses", expected);
    let run = resolve("responses");
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.starts_with(
            "error: invalid value 'responses' for '--format <FORMAT>'\n  [possible values: messages, openai, openai-responses, anthropic, provider]\n"
        ),
        "{}",
        run.stderr
    );
}

/// A persona `plain` whose `[limits]` table holds `limits`, in a fresh app root.
fn plain_root(limits: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    std::fs::write(
        root.path().join("personas/plain.toml"),
        format!(
            "[limits]\n{limits}\n\n[[message_resolvers]]\nuse = \"LoadText\"\ntemplate = \"Be brief.\"\n\n[[message_resolvers]]\nuse = \"ThreadHistory\"\n"
        ),
    )
    .unwrap();
    root
}

/// 1,000 nine-byte "PDFs" (`%PDF-1.4` and a line break) are no documents, and of the 22
/// real ones only the first 20 (`[limits] attachment_parts`, default 20) become document
/// parts: the others stay lines of the attachments note, which then says how many were
/// left out.
#[test]
fn fake_pdfs_and_parts_over_the_cap_stay_in_the_note() {
    let root = plain_root("");
    let mut mail = String::from(
        "Message-ID: <pdfs@evil.test>\r\nFrom: Eve <eve@evil.test>\r\nTo: help@acme.test\r\nSubject: Invoices\r\nDate: Mon, 2 Mar 2026 09:00:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"b\"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nSee attached.\r\n",
    );
    let part = |name: String, base64: &str| {
        format!(
            "--b\r\nContent-Type: application/pdf; name=\"{name}\"\r\nContent-Disposition: attachment; filename=\"{name}\"\r\nContent-Transfer-Encoding: base64\r\n\r\n{base64}\r\n"
        )
    };
    for i in 0..1000 {
        mail.push_str(&part(format!("fake-{i}.pdf"), "JVBERi0xLjQK"));
    }
    for i in 0..22 {
        mail.push_str(&part(format!("real-{i}.pdf"), "JVBERi0xLjQKJSVFT0YK"));
    }
    mail.push_str("--b--\r\n");
    let file = root.path().join("pdfs.eml");
    std::fs::write(&file, mail).unwrap();
    let url = format!("sqlite://{}", root.path().join("t.db").display());
    let run = protege(
        &url,
        root.path(),
        &["db", "import-eml", file.to_str().unwrap()],
    );
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "imported 1 message, skipped 0 duplicates, 0 failed\n"),
        "{}",
        run.stderr
    );
    let run = protege(
        &url,
        root.path(),
        &[
            "resolve",
            "--persona",
            "plain",
            "--message",
            "<pdfs@evil.test>",
            "--now",
            NOW,
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let body: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let parts = body["messages"][1]["content"].as_array().unwrap();
    let documents: Vec<String> = parts[1..].iter().map(|p| p.to_string()).collect();
    let expected: Vec<String> = (0..20)
        .map(|i| {
            format!(
                r#"{{"type":"document","filename":"real-{i}.pdf","media_type":"application/pdf","data":"JVBERi0xLjQKJSVFT0YK"}}"#
            )
        })
        .collect();
    assert_eq!(documents, expected);
    let text = parts[0]["text"].as_str().unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[..9],
        [
            "From: Eve <eve@evil.test>",
            "To: help@acme.test",
            "Cc:",
            "Date: Mon, 2 Mar 2026 09:00:00 +0000",
            "Subject: Invoices",
            "",
            "See attached.",
            "",
            "Attachments:"
        ]
    );
    // One line per attachment, fake or real, then the note's last line.
    assert_eq!(lines.len(), 9 + 1022 + 2);
    assert!(lines[9].starts_with("- fake-0.pdf (application/pdf, 9 bytes, id: att-"));
    assert!(lines[1030].starts_with("- real-21.pdf (application/pdf, 15 bytes, id: att-"));
    assert_eq!(
        lines[1031..],
        [
            "",
            "[not attached: 2 more attachments, over the limit of 20 per message]"
        ]
    );
}

/// `[limits] message_text_bytes` cuts each rendered message, in the history and in the
/// trailing user turn alike, with the marker counting the bytes left out; the cut never
/// splits a character.
#[test]
fn message_text_bytes_cuts_each_message_with_a_marker() {
    let root = plain_root("message_text_bytes = 120");
    let fixture = r#"{"threads":[{"subject":"Long","messages":[
      {"message_id":"<l1@example.com>","direction":"inbound","from":"Ann <ann@example.com>",
       "to":["help@acme.test"],"subject":"Long","sent_at":"2026-03-01T09:00:00Z",
       "html_body":"<p>ééééééééééééééééééééééééééééééééééééééééééé</p>"},
      {"message_id":"<l2@example.com>","direction":"inbound","from":"Ann <ann@example.com>",
       "to":["help@acme.test"],"subject":"Long","sent_at":"2026-03-02T09:00:00Z",
       "text_body":"Short."}
    ]}]}"#;
    let fixture_path = root.path().join("fixture.json");
    std::fs::write(&fixture_path, fixture).unwrap();
    let url = format!("sqlite://{}", root.path().join("t.db").display());
    let run = protege(
        &url,
        root.path(),
        &["db", "import", fixture_path.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = protege(
        &url,
        root.path(),
        &[
            "resolve",
            "--persona",
            "plain",
            "--message",
            "<l2@example.com>",
            "--now",
            NOW,
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let body: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    // The header lines take 101 bytes and the blank line 2: of the 17 bytes left, eight
    // two-byte characters fit (the ninth would be split); the other 35 (70 bytes) are cut.
    assert_eq!(
        body["messages"][1]["content"],
        "From: Ann <ann@example.com>\nTo: help@acme.test\nCc:\nDate: Sun, 1 Mar 2026 09:00:00 +0000\nSubject: Long\n\néééééééé\n[truncated: 70 more bytes]"
    );
    assert_eq!(
        body["messages"][2]["content"],
        "From: Ann <ann@example.com>\nTo: help@acme.test\nCc:\nDate: Mon, 2 Mar 2026 09:00:00 +0000\nSubject: Long\n\nShort."
    );
}

#[test]
fn cache_report_prints_one_row_per_reply_run_and_the_total() {
    let (_dir, url) = demo_db();
    // Thread 1 of the demo data: the refund thread, two inbound messages.
    for (format, file) in [
        (None, "cache-report-refund.anthropic.txt"),
        (Some("openai"), "cache-report-refund.openai.txt"),
    ] {
        let mut args = vec!["cache-report", "--persona", "support", "--thread", "1"];
        if let Some(f) = format {
            args.extend(["--format", f]);
        }
        let run = protege(&url, &project(), &args);
        assert_eq!((run.code, run.stderr.as_str()), (0, ""));
        expect(file, &run.stdout);
    }
    // The guide's example of a persona kept cache-friendly (docs/src/cost.md).
    let run = protege(
        &url,
        &project(),
        &[
            "--personas",
            "examples/cost",
            "cache-report",
            "--persona",
            "support-lean",
            "--thread",
            "1",
        ],
    );
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    expect("cache-report-refund.support-lean.txt", &run.stdout);
    let run = protege(
        &url,
        &project(),
        &["cache-report", "--persona", "support", "--thread", "99"],
    );
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            1,
            "",
            "error: unknown thread `99`: no thread with this id in the database\n"
        )
    );
    let run = protege(
        &url,
        &project(),
        &[
            "cache-report",
            "--persona",
            "support",
            "--thread",
            "1",
            "--format",
            "messages",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn db_summary_stores_a_summary_that_thread_summary_replays() {
    let (dir, url) = demo_db();
    let file = dir.path().join("summary.txt");
    std::fs::write(
        &file,
        "Alice's order A-1042 arrived broken; refund R-5531 (249.00 EUR) was started on 2 March.\n",
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let run = protege(
        &url,
        &project(),
        &[
            "db",
            "summary",
            "--message",
            "<refund-2@acme.test>",
            "--file",
            file,
        ],
    );
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            0,
            "stored summary 1 of thread 1 through <refund-2@acme.test>\n",
            ""
        )
    );
    // The summary, then only the messages after refund-2: none before the current one.
    let run = protege(
        &url,
        &project(),
        &[
            "--personas",
            "examples/cost",
            "resolve",
            "--persona",
            "support-lean",
            "--message",
            "<refund-3@example.com>",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    expect("support-lean-summary.messages.json", &run.stdout);

    let run = protege(
        &url,
        &project(),
        &[
            "db",
            "summary",
            "--message",
            "<nope@example.com>",
            "--file",
            file,
        ],
    );
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            "error: unknown message `<nope@example.com>`: no message with this Message-ID in the database\n"
        )
    );
    let missing = dir.path().join("missing.txt");
    let run = protege(
        &url,
        &project(),
        &[
            "db",
            "summary",
            "--message",
            "<refund-2@acme.test>",
            "--file",
            missing.to_str().unwrap(),
        ],
    );
    assert_eq!(
        (run.code, run.stderr.clone()),
        (
            1,
            format!("error: file not found: `{}`\n", missing.display())
        )
    );
}

/// Stores `text` as the running summary of a thread through `message`, with `db summary`
/// (the file written in `dir`).
fn store_summary(url: &str, dir: &Path, message: &str, text: &str) {
    let file = dir.join("summary.txt");
    std::fs::write(&file, text).unwrap();
    let run = protege(
        url,
        &project(),
        &[
            "db",
            "summary",
            "--message",
            message,
            "--file",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn forget_erases_a_correspondent_and_prints_the_rows_per_table() {
    let (dir, url) = demo_db();
    store_summary(
        &url,
        dir.path(),
        "<refund-2@acme.test>",
        "Alice's order A-1042 arrived broken.\n",
    );
    let alice = "messages: 3\nattachments: 1\ntool_uses: 2\nruns: 0\nrun_rounds: 0\n\
                 thread_summaries: 1\nmessage_addresses: 6\nemail_threads: 1\nagent_jobs: 0\n\
                 outbox: 0\ntool_approvals: 0\ninbox_rejects: 0\nresponsibility_slots: 0\n\
                 erased_messages: 3\n";
    // A dry run counts and changes nothing: the same counts come back.
    for _ in 0..2 {
        let run = protege(
            &url,
            &project(),
            &["forget", "--address", "ALICE@example.com", "--dry-run"],
        );
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (0, alice, "")
        );
    }
    let run = protege(
        &url,
        &project(),
        &["forget", "--address", "Alice Martin <alice@example.com>"],
    );
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (0, alice, "")
    );
    let run = protege(
        &url,
        &project(),
        &[
            "resolve",
            "--persona",
            "support",
            "--message",
            "<refund-3@example.com>",
        ],
    );
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            "error: unknown message `<refund-3@example.com>`: no message with this Message-ID in the database\n"
        )
    );
    // Bob's thread is untouched.
    let run = protege(
        &url,
        &project(),
        &[
            "resolve",
            "--persona",
            "support",
            "--message",
            "<track-3@example.com>",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = protege(
        &url,
        &project(),
        &["forget", "--address", "alice@example.com"],
    );
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (
            0,
            "messages: 0\nattachments: 0\ntool_uses: 0\nruns: 0\nrun_rounds: 0\n\
             thread_summaries: 0\nmessage_addresses: 0\nemail_threads: 0\nagent_jobs: 0\n\
             outbox: 0\ntool_approvals: 0\ninbox_rejects: 0\nresponsibility_slots: 0\n\
             erased_messages: 0\n"
        )
    );
    for (address, error) in [
        ("", "error: the address to forget is empty\n"),
        (
            "alice",
            "error: `alice` is not an email address: it has no `@`\n",
        ),
    ] {
        let run = protege(&url, &project(), &["forget", "--address", address]);
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (1, "", error)
        );
    }
    let run = protege(&url, &project(), &["forget"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn db_prune_drops_the_threads_whose_newest_message_is_older() {
    let (dir, url) = demo_db();
    store_summary(
        &url,
        dir.path(),
        "<track-3@example.com>",
        "Bob's parcel was found.\n",
    );
    let prune = |older_than: &str, dry_run: bool| {
        let mut args = vec![
            "db",
            "prune",
            "--older-than",
            older_than,
            "--now",
            "2026-03-10T00:00:00Z",
        ];
        if dry_run {
            args.push("--dry-run");
        }
        protege(&url, &project(), &args)
    };
    // The cut-off is 2026-03-06T00:00:00Z: the parcel thread (newest 03-04) and the
    // invoice address thread (03-05) go; the plan thread, whose first message is older,
    // stays for its reply of 03-07.
    let two_threads = "messages: 4\nattachments: 0\ntool_uses: 2\nruns: 0\nrun_rounds: 0\n\
                       thread_summaries: 1\nmessage_addresses: 8\nemail_threads: 2\nagent_jobs: 0\n\
                       outbox: 0\ntool_approvals: 0\ninbox_rejects: 0\nresponsibility_slots: 0\n\
                       erased_messages: 0\n";
    for _ in 0..2 {
        let run = prune("4d", true);
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (0, two_threads, "")
        );
    }
    let run = prune("96h", false);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (0, two_threads, "")
    );
    let resolve = |message: &str| {
        protege(
            &url,
            &project(),
            &["resolve", "--persona", "support", "--message", message],
        )
    };
    let run = resolve("<track-3@example.com>");
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            "error: unknown message `<track-3@example.com>`: no message with this Message-ID in the database\n"
        )
    );
    for kept in ["<plan-2@example.com>", "<refund-3@example.com>"] {
        let run = resolve(kept);
        assert_eq!(run.code, 0, "{kept}: {}", run.stderr);
    }
    let run = prune("3d", false);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            0,
            "messages: 1\nattachments: 3\ntool_uses: 0\nruns: 0\nrun_rounds: 0\n\
             thread_summaries: 0\nmessage_addresses: 4\nemail_threads: 1\nagent_jobs: 0\n\
             outbox: 0\ntool_approvals: 0\ninbox_rejects: 0\nresponsibility_slots: 0\n\
             erased_messages: 0\n",
            ""
        )
    );
    let run = prune("3d", false);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (
            0,
            "messages: 0\nattachments: 0\ntool_uses: 0\nruns: 0\nrun_rounds: 0\n\
             thread_summaries: 0\nmessage_addresses: 0\nemail_threads: 0\nagent_jobs: 0\n\
             outbox: 0\ntool_approvals: 0\ninbox_rejects: 0\nresponsibility_slots: 0\n\
             erased_messages: 0\n"
        )
    );
    // Usage errors, before anything is opened: exit 2 with clap's framing.
    let usage = |value: &str, why: &str| {
        format!(
            "error: invalid value '{value}' for '--older-than <DURATION>': {why}\n\nFor more information, try '--help'.\n"
        )
    };
    for (value, why) in [
        (
            "0d",
            "`0d` is zero: the duration must be above zero, such as `365d`, `12w` or `48h`",
        ),
        (
            "-3d",
            "`-3d` is negative: the duration must be above zero, such as `365d`, `12w` or `48h`",
        ),
        (
            "12",
            "`12` has no unit: write `12h` (hours), `12d` (days) or `12w` (weeks)",
        ),
        (
            "12x",
            "`12x` has an unknown unit `x`: use `h` (hours), `d` (days) or `w` (weeks)",
        ),
        (
            "",
            "the duration is empty: write a number and a unit, such as `365d`, `12w` or `48h`",
        ),
        (
            "99999999999999999999d",
            "`99999999999999999999d` is too long: the longest duration is 3652500d (about 10,000 years)",
        ),
    ] {
        let run = prune(value, true);
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr),
            (2, "", usage(value, why)),
            "{value:?}"
        );
    }
    let run = protege(
        &url,
        &project(),
        &["db", "prune", "--older-than", "1d", "--now", "yesterday"],
    );
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            2,
            "error: invalid value 'yesterday' for '--now <RFC3339>': `yesterday` is not an RFC 3339 timestamp such as 2026-01-05T10:00:00Z\n\nFor more information, try '--help'.\n"
        )
    );
    let run = protege(&url, &project(), &["db", "prune"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
}

/// A relayed message From `from`, carrying `auth` (extra header lines).
fn relayed(id: &str, from: &str, auth: &str) -> String {
    format!(
        "Received: from mx.example.net by mx.acme.test; Mon, 5 Jan 2026 10:00:00 +0000\n{auth}From: {from}\nTo: alice@example.com\nSubject: Re: Order\nMessage-ID: {id}\nDate: Mon, 5 Jan 2026 10:00:00 +0000\n\nDone.\n"
    )
}

#[test]
fn import_eml_decides_directions_from_trusted_authentication_results() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let personas = root.join("personas");
    std::fs::create_dir(&personas).unwrap();
    std::fs::write(
        personas.join("support.toml"),
        "addresses = [\"support@acme.test\"]\n\n[mail]\ntrusted_authserv_ids = [\"mx.acme.test\"]\n\n[[message_resolvers]]\nuse = \"LoadText\"\ntemplate = \"x\"\n",
    )
    .unwrap();
    std::fs::write(
        personas.join("billing.toml"),
        "addresses = [\"billing@acme.test\", \"invoices@acme.test\"]\nmodle = 1\n",
    )
    .unwrap();
    let url = format!("sqlite://{}", root.join("mail.db").display());
    let pass = "Authentication-Results: mx.acme.test; dmarc=pass header.from=acme.test\n";
    let files = [
        ("1.eml", relayed("<s1@acme.test>", "support@acme.test", pass)),
        ("2.eml", relayed("<s2@acme.test>", "support@acme.test", "")),
        // No Received header: a copy of what the invalid persona sent.
        ("3.eml", "From: billing@acme.test\nTo: bob@example.com\nSubject: Invoice\nMessage-ID: <b1@acme.test>\nDate: Mon, 5 Jan 2026 11:00:00 +0000\n\nAttached.\n".to_owned()),
    ];
    for (name, text) in &files {
        std::fs::write(root.join(name), text).unwrap();
    }
    let path = |name: &str| root.join(name).display().to_string();
    let run = protege(
        &url,
        root,
        &[
            "db",
            "import-eml",
            &path("1.eml"),
            &path("2.eml"),
            &path("3.eml"),
        ],
    );
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr),
        (
            1,
            "imported 3 messages, skipped 0 duplicates, 0 failed\n",
            format!(
                "warning: persona file `{}` is invalid; its addresses `billing@acme.test`, `invoices@acme.test` still count as persona addresses\n\
                 warning: {}: the From address `support@acme.test` is a persona's but the message has a `Received` header and no `Authentication-Results` header of a trusted authserv-id: stored as inbound\n\
                 error: the persona folder has 1 invalid file (`{}`): run `protege check`, fix it and check the direction of the mail imported\n",
                personas.join("billing.toml").display(),
                path("2.eml"),
                personas.join("billing.toml").display(),
            )
        )
    );
    // `<s2@acme.test>` is inbound, so it can be resolved as a reply run.
    let run = protege(
        &url,
        root,
        &[
            "resolve",
            "--persona",
            "support",
            "--message",
            "<s2@acme.test>",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = protege(
        &url,
        root,
        &[
            "resolve",
            "--persona",
            "support",
            "--message",
            "<s1@acme.test>",
        ],
    );
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            "error: message `<s1@acme.test>` was sent by the persona; a reply run answers an inbound message\n"
        )
    );
    let run = protege(
        &url,
        root,
        &[
            "resolve",
            "--persona",
            "support",
            "--message",
            "<b1@acme.test>",
        ],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);

    // A flag trusts another authserv-id; `--direction inbound` forces the direction.
    std::fs::write(
        root.join("4.eml"),
        relayed(
            "<s4@acme.test>",
            "support@acme.test",
            "Authentication-Results: mx2.acme.test; dmarc=pass header.from=acme.test\n",
        ),
    )
    .unwrap();
    std::fs::write(
        root.join("5.eml"),
        relayed("<s5@acme.test>", "support@acme.test", ""),
    )
    .unwrap();
    let run = protege(
        &url,
        root,
        &[
            "db",
            "import-eml",
            &path("4.eml"),
            "--persona",
            "support",
            "--trusted-authserv-id",
            "mx2.acme.test",
        ],
    );
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            0,
            "imported 1 message, skipped 0 duplicates, 0 failed\n",
            ""
        )
    );
    let run = protege(
        &url,
        root,
        &[
            "resolve",
            "--persona",
            "support",
            "--message",
            "<s4@acme.test>",
        ],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let run = protege(
        &url,
        root,
        &[
            "db",
            "import-eml",
            &path("5.eml"),
            "--persona",
            "support",
            "--direction",
            "inbound",
        ],
    );
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    let run = protege(
        &url,
        root,
        &[
            "db",
            "import-eml",
            &path("5.eml"),
            "--direction",
            "sideways",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn import_eml_refuses_a_message_id_stored_for_another_message() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let url = format!("sqlite://{}", root.join("mail.db").display());
    let squat = "From: Eve <eve@evil.test>\nTo: support@acme.test\nCc: alice@example.com\nSubject: Order\nMessage-ID: <next@acme.test>\nDate: Mon, 5 Jan 2026 10:00:00 +0000\n\nReply to me.\n";
    let reply = "From: support@acme.test\nTo: alice@example.com\nSubject: Re: Order\nMessage-ID: <next@acme.test>\nDate: Mon, 5 Jan 2026 11:00:00 +0000\n\nYour refund is on its way.\n";
    std::fs::write(root.join("squat.eml"), squat).unwrap();
    std::fs::write(root.join("reply.eml"), reply).unwrap();
    let path = |name: &str| root.join(name).display().to_string();
    let run = protege(&url, &project(), &["db", "import-eml", &path("squat.eml")]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    let run = protege(&url, &project(), &["db", "import-eml", &path("reply.eml")]);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr),
        (
            1,
            "",
            format!(
                "failed: {}: Message-ID `<next@acme.test>` is already stored with another direction (`inbound`), sender (`eve@evil.test`) and content: not imported, a Message-ID belongs to the message stored first\n\
                 error: imported 0 messages, skipped 0 duplicates, 1 failed\n",
                path("reply.eml")
            )
        )
    );
    let run = protege(&url, &project(), &["db", "import-eml", &path("squat.eml")]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "imported 0 messages, skipped 1 duplicate, 0 failed\n")
    );
}

#[test]
fn cache_report_takes_the_model_its_error_advises() {
    let (dir, url) = demo_db();
    let personas = dir.path().join("plain");
    std::fs::create_dir(&personas).unwrap();
    std::fs::write(
        personas.join("plain.toml"),
        "addresses = [\"support@acme.test\"]\n\n[[message_resolvers]]\nuse = \"ThreadHistory\"\n",
    )
    .unwrap();
    let personas = personas.display().to_string();
    let report = |extra: &[&str]| {
        let mut args = vec![
            "--personas",
            personas.as_str(),
            "cache-report",
            "--persona",
            "plain",
            "--thread",
            "1",
            "--format",
            "openai",
        ];
        args.extend(extra);
        protege(&url, &project(), &args)
    };
    let run = report(&[]);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            1,
            "",
            "error: no model for the wire format: set `name` in the persona's `[model]` table or pass `--model NAME`\n"
        )
    );
    let run = report(&["--model", "gpt-4o"]);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            0,
            "cache report: persona `plain`, thread 1, openai bodies, 2 reply runs\n    #  message                    input    cached  cached%       cost\n    1  <refund-1@example.com>       187         0     0.0%    $0.0005  not cached: under 1024 tokens\n    2  <refund-3@example.com>       408         0     0.0%    $0.0010  not cached: under 1024 tokens\n       total                        595         0     0.0%    $0.0015\ncost = the input cost in USD at `gpt-4o`'s prices per million tokens (input 2.5, cached input 1.25), each request sent when its message was; openai bodies carry no cache lifetime: a prefix is kept 5 minutes after its last use\n  with caching           $0.0015  saved $0.0000\n  without caching        $0.0015\ntokens are estimated as characters / 4 of each block's JSON, rounded up; a request is served from cache up to the longest prefix it shares with the previous one\n",
            ""
        )
    );
    let run = report(&["--model", ""]);
    assert_eq!(run.code, 2, "{}", run.stderr);
}

/// `check` on a folder with the mistakes a stray file brings: a link to notes that are not
/// TOML (its first five errors, then how many more), a line of 100,000 dotted keys (at its
/// line and column), and duplicate responsibility names with invalid schedules (every
/// problem).
#[test]
fn check_bounds_a_file_that_is_not_toml_and_places_every_problem() {
    let dir = tempfile::tempdir().unwrap();
    let personas = dir.path().join("personas");
    std::fs::create_dir(&personas).unwrap();
    // Notes that open with a comment, as TOML may: a broken TOML file, bounded.
    let notes: String = std::iter::once("# Calls to make\n".to_owned())
        .chain((1..=300).map(|i| format!("Note {i}: call back.\n")))
        .collect();
    std::fs::write(dir.path().join("notes.txt"), notes).unwrap();
    std::os::unix::fs::symlink(dir.path().join("notes.txt"), personas.join("a-notes.toml"))
        .unwrap();
    let keys = vec!["k"; 100_000].join(".");
    std::fs::write(
        personas.join("b-keys.toml"),
        format!("name = \"keys\"\n{keys} = 1\n"),
    )
    .unwrap();
    std::fs::write(
        personas.join("c-digest.toml"),
        "name = \"digest\"\n\n[[responsibilities]]\nname = \"daily\"\nschedule = \"0 25 * * *\"\n\n\
         [[responsibilities]]\nname = \"daily\"\nschedule = \"every day\"\n",
    )
    .unwrap();
    let url = format!("sqlite://{}", dir.path().join("x.db").display());
    let run = protege(&url, dir.path(), &["check"]);
    assert_eq!(run.code, 1);
    let p = personas.display();
    let mut want = String::new();
    for i in 1..=5 {
        let line = i + 1;
        want.push_str(&format!(
            "{p}/a-notes.toml:{line}:6: error: invalid TOML: key with no value, expected `=`\n  |\n\
             {line} | Note {i}: call back.\n  |      ^\n\n"
        ));
    }
    want.push_str(&format!(
        "{p}/a-notes.toml:7:6: error: invalid TOML: 295 more errors not shown; is this a persona file?\n  |\n\
         7 | Note 6: call back.\n  |      ^\n\n\
         {p}/b-keys.toml:2:1: error: invalid TOML: a dotted key of 100000 parts; at most 80 are allowed\n  |\n\
         2 | {}…\n  | {}\n\n",
        &keys[..158],
        "^".repeat(158)
    ));
    want.push_str(&format!(
        "{p}/c-digest.toml:5:12: error: invalid schedule `0 25 * * *`: number out of bounds\n  |\n\
         5 | schedule = \"0 25 * * *\"\n  |            ^^^^^^^^^^^^\n\n\
         {p}/c-digest.toml:8:8: error: duplicate responsibility `daily`\n  |\n\
         8 | name = \"daily\"\n  |        ^^^^^^^\n\n\
         {p}/c-digest.toml:9:12: error: invalid schedule `every day`: expected 5 fields (minute hour day-of-month month day-of-week), found 2\n  |\n\
         9 | schedule = \"every day\"\n  |            ^^^^^^^^^^^\n\n\
         error: check failed: 10 problems in 3 persona files\n"
    ));
    assert_eq!(run.stderr, want);
}

/// A `ThreadHistory` with the largest `limit` and `step` TOML can write loads, and a reply
/// run replays the whole thread from a SQLite file.
#[test]
fn a_history_with_the_largest_limit_and_step_resolves() {
    let dir = tempfile::tempdir().unwrap();
    let personas = dir.path().join("personas");
    std::fs::create_dir(&personas).unwrap();
    std::fs::write(
        personas.join("support.toml"),
        "name = \"support\"\naddresses = [\"support@acme.test\"]\n\n[[message_resolvers]]\n\
         use = \"ThreadHistory\"\nwindow = \"stable\"\nlimit = 9223372036854775807\nstep = 9223372036854775807\n",
    )
    .unwrap();
    let url = format!("sqlite://{}", dir.path().join("mail.db").display());
    let mail = project().join("protege-store/tests/data/eml");
    let files: Vec<String> = (1..=4)
        .map(|i| mail.join(format!("refund-{i}.eml")).display().to_string())
        .collect();
    let mut args = vec!["db", "import-eml"];
    args.extend(files.iter().map(String::as_str));
    let run = protege(&url, dir.path(), &args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = protege(
        &url,
        dir.path(),
        &[
            "resolve",
            "--persona",
            "support",
            "--message",
            "<refund-4@example.com>",
            "--now",
            NOW,
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let value: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let roles: Vec<&str> = value["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "user"]);
}

/// The database commands need no persona folder: an app root without one imports a
/// fixture, stores a summary and imports mail; the commands that need personas say the
/// folder is missing.
#[test]
fn database_commands_work_without_a_persona_folder() {
    let root = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", root.path().join("p.db").display());
    let fixture = project().join("examples/data/demo.json");
    let run = protege(
        &url,
        root.path(),
        &["db", "import", fixture.to_str().unwrap()],
    );
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{}", run.stdout);
    let file = root.path().join("summary.txt");
    std::fs::write(&file, "The parcel arrived damaged.\n").unwrap();
    let run = protege(
        &url,
        root.path(),
        &[
            "db",
            "summary",
            "--message",
            "<refund-2@acme.test>",
            "--file",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            0,
            "stored summary 1 of thread 1 through <refund-2@acme.test>\n",
            ""
        )
    );
    let personas = root.path().join("personas");
    let missing = format!(
        "error: persona folder `{}` does not exist\n",
        personas.display()
    );
    for args in [
        &["check"][..],
        &[
            "resolve",
            "--persona",
            "support",
            "--message",
            "<refund-3@example.com>",
        ][..],
    ] {
        let run = protege(&url, root.path(), args);
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (1, "", missing.as_str()),
            "{args:?}"
        );
    }
}

/// A `LoadRecord` whose key finds no row says so under the `--explain` table and in the
/// JSON form, instead of passing in silence.
#[tokio::test]
async fn explain_names_a_record_key_that_found_no_row() {
    let (_dir, url) = common::server::demo_db();
    common::server::execute(
        &url,
        "DELETE FROM customers WHERE email = 'kim@example.com'",
    )
    .await;
    let args = [
        "resolve",
        "--persona",
        "support",
        "--message",
        "<html-1@example.com>",
        "--now",
        "2026-03-10T08:00:00Z",
    ];
    let mut table = args.to_vec();
    table.push("--explain");
    let run = protege(&url, &project(), &table);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let note = "note, LoadRecord: no row of `customers` where email = \"kim@example.com\"";
    assert!(run.stderr.lines().any(|l| l == note), "{}", run.stderr);
    let mut json = args.to_vec();
    json.push("--explain=json");
    let run = protege(&url, &project(), &json);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The request on stdout, the explanation on stderr.
    let explained: serde_json::Value = serde_json::from_str(&run.stderr).unwrap();
    let rows = explained["explain"].as_array().unwrap();
    let record = rows.iter().find(|r| r["resolver"] == "LoadRecord").unwrap();
    assert_eq!(
        record["notes"],
        serde_json::json!(["no row of `customers` where email = \"kim@example.com\""])
    );
}
