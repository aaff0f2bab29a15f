//! `protege check --database URL`: besides the persona files themselves, what they read
//! without a message — a `LoadFile`'s fixed path, a `LoadRecord`'s table and columns —
//! checked against the app root and the database's catalogue, on every backend the
//! environment names.

use std::path::Path;

mod common;
use common::protege_command;
use common::server::{every_backend, execute};

const PERSONA: &str = r#"name = "a"
addresses = ["a@acme.test"]

[[message_resolvers]]
use = "LoadFile"
path = "prompts/suport.md"

[[message_resolvers]]
use = "LoadFile"
path = "prompts/{{ persona.name }}-later.md"

[[message_resolvers]]
use = "LoadRecord"
table = "custmers"

[[message_resolvers]]
use = "LoadRecord"
table = "customers"
where = { emial = "{{ message.from }}", plan = "pro" }
order_by = ["since desc", "nme", "id"]
template = "{{ record.name }}"

[[responsibility_resolvers]]
use = "LoadRecord"
table = "accounts"
"#;

/// What `check` says of the persona on a database without the application's tables.
const WITHOUT_TABLES: &str = "\
ROOT/personas/a.toml:6:8: error: file not found: `prompts/suport.md` (tried `ROOT/prompts/suport.md`), did you mean `prompts/support.md`?
  |
6 | path = \"prompts/suport.md\"
  |        ^^^^^^^^^^^^^^^^^^^

ROOT/personas/a.toml:14:9: error: table `custmers` does not exist in the database
   |
14 | table = \"custmers\"
   |         ^^^^^^^^^^

ROOT/personas/a.toml:18:9: error: table `customers` does not exist in the database
   |
18 | table = \"customers\"
   |         ^^^^^^^^^^^

ROOT/personas/a.toml:25:9: error: table `accounts` does not exist in the database
   |
25 | table = \"accounts\"
   |         ^^^^^^^^^^

error: check failed: 4 problems in 1 persona file
";

/// ... and once the application's `customers` table exists.
const WITH_CUSTOMERS: &str = "\
ROOT/personas/a.toml:6:8: error: file not found: `prompts/suport.md` (tried `ROOT/prompts/suport.md`), did you mean `prompts/support.md`?
  |
6 | path = \"prompts/suport.md\"
  |        ^^^^^^^^^^^^^^^^^^^

ROOT/personas/a.toml:14:9: error: table `custmers` does not exist in the database, did you mean `customers`?
   |
14 | table = \"custmers\"
   |         ^^^^^^^^^^

ROOT/personas/a.toml:19:11: error: column `emial` does not exist in table `customers`, did you mean `email`?
   |
19 | where = { emial = \"{{ message.from }}\", plan = \"pro\" }
   |           ^^^^^

ROOT/personas/a.toml:20:27: error: column `nme` does not exist in table `customers`, did you mean `name`?
   |
20 | order_by = [\"since desc\", \"nme\", \"id\"]
   |                           ^^^^^

ROOT/personas/a.toml:25:9: error: table `accounts` does not exist in the database
   |
25 | table = \"accounts\"
   |         ^^^^^^^^^^

error: check failed: 5 problems in 1 persona file
";

/// `protege --root ROOT [--database URL] check`: (exit code, stdout, stderr), the root
/// written `ROOT`.
fn check(root: &Path, url: Option<&str>) -> (i32, String, String) {
    let mut command = protege_command();
    command
        .arg("--root")
        .arg(root)
        .env_remove("PROTEGE_DATABASE_URL");
    if let Some(url) = url {
        command.arg("--database").arg(url);
    }
    let out = command.arg("check").output().expect("protege runs");
    let shown = |bytes: Vec<u8>| {
        String::from_utf8(bytes)
            .unwrap()
            .replace(&root.display().to_string(), "ROOT")
    };
    (
        out.status.code().unwrap_or(-1),
        shown(out.stdout),
        shown(out.stderr),
    )
}

/// The tables of the database at `url`.
async fn tables(url: &str) -> Vec<String> {
    let conn = protege::db::sea_orm::Database::connect(url).await.unwrap();
    let names = protege::db::table_names(&conn).await.unwrap();
    conn.close().await.unwrap();
    names
}

#[tokio::test]
async fn check_with_a_database_finds_missing_files_tables_and_columns_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let urls = every_backend(dir.path(), "check_resources").await;
    for (url, _) in &urls {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        std::fs::create_dir_all(root.join("personas")).unwrap();
        std::fs::create_dir_all(root.join("prompts")).unwrap();
        std::fs::write(root.join("prompts/support.md"), "Be kind.\n").unwrap();
        std::fs::write(root.join("personas/a.toml"), PERSONA).unwrap();

        // Without a database, `check` reads the persona files only, as it always has.
        assert_eq!(
            check(root, None),
            (0, "ok: 1 persona (a)\n".to_owned(), String::new()),
            "{url}"
        );
        assert_eq!(
            check(root, Some(url)),
            (1, String::new(), WITHOUT_TABLES.to_owned()),
            "{url}"
        );
        // The check read the catalogue and migrated nothing.
        assert_eq!(tables(url).await, Vec::<String>::new(), "{url}");

        execute(
            url,
            "CREATE TABLE customers (id INTEGER PRIMARY KEY, email VARCHAR(200), \
             name VARCHAR(200), plan VARCHAR(50), since VARCHAR(30))",
        )
        .await;
        assert_eq!(
            check(root, Some(url)),
            (1, String::new(), WITH_CUSTOMERS.to_owned()),
            "{url}"
        );

        // Fixed, the persona passes; the templated path waits for a message.
        let fixed = PERSONA
            .replace("prompts/suport.md", "prompts/support.md")
            .replace("custmers", "customers")
            .replace("emial", "email")
            .replace("\"nme\"", "\"name\"")
            .replace("table = \"accounts\"", "table = \"customers\"");
        std::fs::write(root.join("personas/a.toml"), fixed).unwrap();
        assert_eq!(
            check(root, Some(url)),
            (0, "ok: 1 persona (a)\n".to_owned(), String::new()),
            "{url}"
        );
        execute(url, "DROP TABLE customers").await;
    }
}

#[test]
fn an_invalid_persona_reports_its_own_problems_first_without_reading_the_database() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    std::fs::create_dir_all(root.join("personas")).unwrap();
    std::fs::write(
        root.join("personas/a.toml"),
        "[[message_resolvers]]\nuse = \"LoadFile\"\npath = \"missing.md\"\nrole = \"robot\"\n",
    )
    .unwrap();
    // The database URL names a server nobody answers: it is never opened.
    let (code, stdout, stderr) = check(root, Some("postgres://nobody@127.0.0.1:9/none"));
    assert_eq!(
        (code, stdout.as_str(), stderr.as_str()),
        (
            1,
            "",
            "ROOT/personas/a.toml:4:8: error: unknown role `robot`, expected one of `system`, `user`, `assistant`, `tool`\n  |\n4 | role = \"robot\"\n  |        ^^^^^^^\n\nerror: check failed: 1 problem in 1 persona file\n"
        )
    );
}

#[test]
fn files_alone_need_no_database_connection() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    std::fs::create_dir_all(root.join("personas")).unwrap();
    std::fs::write(
        root.join("personas/a.toml"),
        "[[message_resolvers]]\nuse = \"LoadFile\"\npath = \"prompts\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("prompts")).unwrap();
    // No persona names a table, so the unreachable server is never asked.
    let (code, stdout, stderr) = check(root, Some("postgres://nobody@127.0.0.1:9/none"));
    assert_eq!(
        (code, stdout.as_str(), stderr.as_str()),
        (
            1,
            "",
            "ROOT/personas/a.toml:3:8: error: `prompts` is not a file (tried `ROOT/prompts`)\n  |\n3 | path = \"prompts\"\n  |        ^^^^^^^^^\n\nerror: check failed: 1 problem in 1 persona file\n"
        )
    );
}

/// A check reads a database and makes none: a SQLite file that is not there is an error,
/// and is still not there afterwards.
#[test]
fn check_creates_no_missing_sqlite_file() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    std::fs::create_dir_all(root.join("personas")).unwrap();
    std::fs::write(
        root.join("personas/a.toml"),
        "addresses = [\"a@acme.test\"]\n",
    )
    .unwrap();
    let missing = root.join("typo.db");
    let (code, stdout, stderr) = check(root, Some(&format!("sqlite://{}", missing.display())));
    assert_eq!(
        (code, stdout.as_str(), stderr.as_str()),
        (
            1,
            "",
            "error: database file `ROOT/typo.db` does not exist: `check --database` reads a database and creates none\n"
        )
    );
    assert!(!missing.exists());
}

/// protege's tables in a PostgreSQL schema of their own, the application's in `public`:
/// the URL's `search_path` puts protege's tables first, and `check --database` and
/// `LoadRecord` find the application's table through it.
#[tokio::test]
async fn protege_keeps_its_tables_in_a_postgresql_schema_of_its_own() {
    let Some(server) = std::env::var("PROTEGE_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        return;
    };
    let base = common::server::fresh_server_db(&server, "own_schema").await;
    for sql in [
        "CREATE SCHEMA protege",
        "CREATE TABLE public.customers (email TEXT PRIMARY KEY, name TEXT NOT NULL)",
        "INSERT INTO public.customers VALUES ('kim@example.com', 'Kim Lee')",
    ] {
        execute(&base, sql).await;
    }
    let url = format!("{base}?options=-c%20search_path%3Dprotege%2Cpublic");
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("personas")).unwrap();
    std::fs::write(
        root.path().join("personas/support.toml"),
        "addresses = [\"support@acme.test\"]\n\n[[message_resolvers]]\nuse = \"LoadRecord\"\ntable = \"customers\"\nwhere = { email = \"{{ message.from }}\" }\ntemplate = \"Customer: {{ record.name }}\"\n",
    )
    .unwrap();
    let (code, stdout, stderr) = check(root.path(), Some(&url));
    assert_eq!(
        (code, stdout.as_str(), stderr.as_str()),
        (0, "ok: 1 persona (support)\n", "")
    );
    let engine = protege::Engine::builder()
        .root(root.path())
        .database(&url)
        .build()
        .await
        .unwrap();
    let mail = "Message-ID: <s1@example.com>\r\nFrom: Kim <kim@example.com>\r\nTo: support@acme.test\r\nSubject: Hi\r\nDate: Tue, 10 Mar 2026 09:00:00 +0000\r\n\r\nHello\r\n";
    engine
        .ingest_mail(mail.as_bytes(), Some(protege::Direction::Inbound))
        .await
        .unwrap();
    let out = engine
        .resolve(
            &protege::ResolveInput::reply("support", "<s1@example.com>")
                .format(protege::Format::Messages),
        )
        .await
        .unwrap();
    assert_eq!(out.body["messages"][0]["content"], "Customer: Kim Lee");
    let conn = engine.db().await.unwrap();
    use protege::db::sea_orm::ConnectionTrait as _;
    let rows = conn
        .query_all_raw(protege::db::sea_orm::Statement::from_string(
            conn.get_database_backend(),
            "SELECT table_schema::text, count(*) FROM information_schema.tables \
             WHERE table_schema IN ('protege', 'public') GROUP BY 1 ORDER BY 1",
        ))
        .await
        .unwrap();
    let counts: Vec<(String, i64)> = rows
        .iter()
        .map(|r| {
            (
                r.try_get_by_index(0).unwrap(),
                r.try_get_by_index(1).unwrap(),
            )
        })
        .collect();
    // protege's nineteen tables (its migrations' among them) in `protege`, the customers in
    // `public`.
    assert_eq!(
        counts,
        [("protege".to_owned(), 19), ("public".to_owned(), 1)]
    );
    conn.clone().close().await.unwrap();
}

#[test]
fn check_requires_the_environment_variables_an_agent_persona_names_unless_no_env() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    std::fs::create_dir_all(root.join("personas")).unwrap();
    std::fs::write(
        root.join("personas/a.toml"),
        "name = \"a\"\n\n[model]\nprovider = \"anthropic\"\napi_key_env = \"PROTEGE_TEST_CHECK_KEY\"\n\n[agent]\n",
    )
    .unwrap();
    let run = |args: &[&str], key: Option<&str>| {
        let mut command = protege_command();
        command
            .arg("--root")
            .arg(root)
            .env_remove("PROTEGE_DATABASE_URL")
            .env_remove("PROTEGE_TEST_CHECK_KEY");
        if let Some(key) = key {
            command.env("PROTEGE_TEST_CHECK_KEY", key);
        }
        let out = command
            .arg("check")
            .args(args)
            .output()
            .expect("protege runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr)
                .unwrap()
                .replace(&root.display().to_string(), "ROOT"),
        )
    };
    assert_eq!(
        run(&[], None),
        (
            1,
            String::new(),
            "ROOT/personas/a.toml:5:15: error: `[model] api_key_env` names `PROTEGE_TEST_CHECK_KEY`, which is not set\n  |\n5 | api_key_env = \"PROTEGE_TEST_CHECK_KEY\"\n  |               ^^^^^^^^^^^^^^^^^^^^^^^^\n\nerror: check failed: 1 problem in 1 persona file\n"
                .to_owned()
        )
    );
    let ok = (0, "ok: 1 persona (a)\n".to_owned(), String::new());
    assert_eq!(run(&["--no-env"], None), ok);
    assert_eq!(run(&[], Some("sk-test")), ok);
}

#[test]
fn check_warns_of_a_draft_persona_that_also_always_asks_for_approval() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("personas")).unwrap();
    std::fs::write(
        root.path().join("personas/a.toml"),
        "name = \"a\"\n\n[agent]\nreply = \"draft\"\napproval = \"always\"\n",
    )
    .unwrap();
    assert_eq!(
        check(root.path(), None),
        (
            0,
            "ok: 1 persona (a)\n".to_owned(),
            "ROOT/personas/a.toml:5:12: warning: `approval = \"always\"` says again what `reply = \"draft\"` says: every reply waits for approval; keep one\n".to_owned()
        )
    );
}

#[test]
fn check_places_a_bad_openai_api_and_accepts_responses() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    std::fs::create_dir_all(root.join("personas")).unwrap();
    let persona = |api: &str| {
        format!(
            "[model]\nprovider = \"openai\"\napi = \"{api}\"\nname = \"gpt-5\"\n\n[[message_resolvers]]\nuse = \"LoadText\"\ntemplate = \"Be brief.\"\n"
        )
    };
    std::fs::write(root.join("personas/a.toml"), persona("respones")).unwrap();
    assert_eq!(
        check(root, None),
        (
            1,
            String::new(),
            "ROOT/personas/a.toml:3:7: error: unknown api `respones`, did you mean `responses`?\n  |\n3 | api = \"respones\"\n  |       ^^^^^^^^^^\n\nerror: check failed: 1 problem in 1 persona file\n".to_owned()
        )
    );
    std::fs::write(root.join("personas/a.toml"), persona("responses")).unwrap();
    assert_eq!(
        check(root, None),
        (0, "ok: 1 persona (a)\n".to_owned(), String::new())
    );
}
