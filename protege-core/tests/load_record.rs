//! LoadRecord, declarative (TOML) and Rust forms, on every configured backend.

mod common;

use common::{expected, import, on_each_backend, reply_ctx};
use protege_core::db::entities::message;
use protege_core::{
    AppConfig, Context, DynChain, ErrorKind, LoadRecord, LoadText, PersonaInfo, Resolver, Template,
    Trigger, build_request, user_turn,
};
use protege_core::{OrderBy, WhereValue};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder,
};
use serde_json::json;

/// Imports the records fixture and creates the extra tables of `records.sql`.
async fn setup(db: &DatabaseConnection) {
    import(db, "records.json").await;
    let sql = std::fs::read_to_string(format!(
        "{}/tests/fixtures/records.sql",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let sql: String = sql
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    for stmt in sql.split(";\n").map(str::trim).filter(|s| !s.is_empty()) {
        db.execute_unprepared(stmt.trim_end_matches(';'))
            .await
            .unwrap();
    }
}

fn tpl(source: &str) -> WhereValue {
    WhereValue::Template(Template::compile("where", source).unwrap())
}

async fn text(
    r: &impl Resolver<Output = Option<protege_core::Message>>,
    ctx: &Context,
) -> Option<String> {
    r.resolve(ctx).await.unwrap().map(|m| m.content.text())
}

#[tokio::test]
async fn where_from_with_a_template_matches_the_acceptance_case() {
    on_each_backend("where_from", |db, _| async move {
        setup(&db).await;
        let ctx = reply_ctx(&db, "<acct-1@example.com>").await;
        let chain = DynChain::new()
            .with(LoadText::template("{{ persona.instructions }}"))
            .with(
                LoadRecord::table("accounts")
                    .filter("email", tpl("{{ message.from }}"))
                    .template_str("Customer: {{ record.name }} (plan: {{ record.plan }}, seats: {{ record.seats }})"),
            );
        let messages = protege_core::Chain::resolve(&chain, &ctx).await.unwrap();
        let request = build_request(Some(user_turn(ctx.message().unwrap(), ctx.mail_limits())), vec![], messages).unwrap();
        assert_eq!(serde_json::to_value(&request).unwrap(), expected("loadrecord-where-from.json"));
    })
    .await;
}

#[tokio::test]
async fn default_rendering_is_pretty_json_in_table_order() {
    on_each_backend("default_json", |db, _| async move {
        setup(&db).await;
        let ctx = reply_ctx(&db, "<acct-1@example.com>").await;
        let r = LoadRecord::table("accounts")
            .filter("plan", tpl("pro"))
            .order_by(OrderBy { column: "seats".into(), desc: true });
        assert_eq!(
            text(&r, &ctx).await.unwrap(),
            "{\n  \"id\": 3,\n  \"email\": \"carol@example.com\",\n  \"name\": \"Carol Jones\",\n  \"plan\": \"pro\",\n  \"seats\": 12,\n  \"notes\": \"Says \\\"hi\\\" to everyone\"\n}\n\n{\n  \"id\": 1,\n  \"email\": \"alice@example.com\",\n  \"name\": \"Alice Example\",\n  \"plan\": \"pro\",\n  \"seats\": 5,\n  \"notes\": \"Prefers email; owns Café Lumière\"\n}"
        );
        // Typed values are bound with their type; null matches NULL.
        let r = LoadRecord::table("accounts").filter("seats", WhereValue::Value(json!(12))).template_str("{{ record.name }}");
        assert_eq!(text(&r, &ctx).await.as_deref(), Some("Carol Jones"));
        let r = LoadRecord::table("accounts").filter("seats", WhereValue::Value(json!(null)));
        assert_eq!(
            text(&r, &ctx).await.as_deref(),
            Some("{\n  \"id\": 2,\n  \"email\": \"bob@example.com\",\n  \"name\": \"Bob Builder\",\n  \"plan\": \"free\",\n  \"seats\": null,\n  \"notes\": null\n}")
        );
    })
    .await;
}

#[tokio::test]
async fn order_by_and_limit_with_a_per_record_template() {
    on_each_backend("order_limit", |db, _| async move {
        setup(&db).await;
        let ctx = reply_ctx(&db, "<acct-1@example.com>").await;
        let r = LoadRecord::table("orders")
            .filter("email", tpl("{{ message.from }}"))
            .filter("status", tpl("shipped"))
            .order_by(OrderBy { column: "placed_on".into(), desc: true })
            .limit(2)
            .template_str("  Order {{ record.number }} ({{ record.total_cents }} cents) for {{ persona.name }}\n")
            .role(protege_core::Role::User);
        let m = r.resolve(&ctx).await.unwrap().unwrap();
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            json!({"role": "user", "content": "Order A-3 (2599 cents) for support\n\nOrder A-2 (1250 cents) for support"})
        );
    })
    .await;
}

#[tokio::test]
async fn injection_attempts_are_bound_values() {
    on_each_backend("injection", |db, backend| async move {
        setup(&db).await;
        let ctx = reply_ctx(&db, "<acct-1@example.com>").await;
        for attempt in [
            "x' OR '1'='1",
            "x\" OR \"1\"=\"1",
            "x'; DROP TABLE accounts; --",
        ] {
            let r = LoadRecord::table("accounts").filter(
                "email",
                WhereValue::Template(Template::compile("w", attempt).unwrap()),
            );
            assert_eq!(text(&r, &ctx).await, None, "{attempt}");
        }
        // A hostile column name is quoted as an identifier, not spliced as SQL.
        // (SQLite reads an unknown double-quoted identifier as a string literal: no rows.)
        let r = LoadRecord::table("accounts").filter("email = email OR 1", tpl("x"));
        match backend {
            "sqlite" => assert_eq!(r.resolve(&ctx).await.unwrap(), None),
            _ => {
                let err = r.resolve(&ctx).await.unwrap_err();
                assert!(
                    err.to_string()
                        .starts_with("cannot read table `accounts`: "),
                    "{err}"
                );
            }
        }
        let all = LoadRecord::table("accounts").template_str("{{ record.id }}");
        assert_eq!(text(&all, &ctx).await.as_deref(), Some("1\n\n2\n\n3"));
    })
    .await;
}

#[tokio::test]
async fn no_rows_no_database_unknown_table_and_bad_templates() {
    on_each_backend("errors", |db, _| async move {
        setup(&db).await;
        let ctx = reply_ctx(&db, "<acct-1@example.com>").await;
        let none = LoadRecord::table("accounts").filter("email", tpl("nobody@example.com"));
        assert_eq!(none.resolve(&ctx).await.unwrap(), None);

        let err = LoadRecord::table("nope").resolve(&ctx).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Database);
        assert!(
            err.to_string().starts_with("cannot read table `nope`: "),
            "{err}"
        );

        let broken = LoadRecord::table("accounts").template_str("{{ record.name ");
        let err = broken.resolve(&ctx).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Template);
        assert!(
            err.to_string()
                .starts_with("template `LoadRecord.template` line 1: syntax error"),
            "{err}"
        );

        let undefined = LoadRecord::table("accounts").template_str("{{ record.missing }}");
        let err = undefined.resolve(&ctx).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "template `LoadRecord.template` line 1: `record.missing` is undefined"
        );

        let m = ctx.message().unwrap().clone();
        let no_db = Context::builder(
            PersonaInfo::new("p"),
            AppConfig::new("."),
            Trigger::Message(m.into()),
        )
        .build();
        let err = LoadRecord::table("accounts")
            .resolve(&no_db)
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "LoadRecord needs a database to read table `accounts`, and none is configured"
        );
    })
    .await;
}

#[tokio::test]
async fn column_types_render_as_json_values() {
    on_each_backend("column_types", |db, backend| async move {
        let (create, insert) = match backend {
            "postgres" => (
                "CREATE TABLE kinds (id INTEGER, ratio DOUBLE PRECISION, flag BOOLEAN, data BYTEA, price NUMERIC(10,3), note TEXT)",
                "INSERT INTO kinds VALUES (1, 0.5, TRUE, '\\x616263', 12.5, NULL)",
            ),
            "mysql" => (
                "CREATE TABLE kinds (id INTEGER, ratio DOUBLE, flag BOOLEAN, data BLOB, price DECIMAL(10,3), note TEXT)",
                "INSERT INTO kinds VALUES (1, 0.5, TRUE, X'616263', 12.5, NULL)",
            ),
            _ => (
                "CREATE TABLE kinds (id INTEGER, ratio REAL, flag BOOLEAN, data BLOB, price NUMERIC, note TEXT)",
                "INSERT INTO kinds VALUES (1, 0.5, TRUE, X'616263', 12.5, NULL)",
            ),
        };
        db.execute_unprepared(create).await.unwrap();
        db.execute_unprepared(insert).await.unwrap();
        import(&db, "records.json").await;
        let ctx = reply_ctx(&db, "<acct-1@example.com>").await;
        let got = text(&LoadRecord::table("kinds"), &ctx).await.unwrap();
        let flag = if backend == "sqlite" { "1" } else { "true" };
        // An exact decimal is its text with its scale; SQLite stores a float.
        let price = if backend == "sqlite" { "12.5" } else { "\"12.500\"" };
        assert_eq!(
            got,
            format!("{{\n  \"id\": 1,\n  \"ratio\": 0.5,\n  \"flag\": {flag},\n  \"data\": \"YWJj\",\n  \"price\": {price},\n  \"note\": null\n}}")
        );
    })
    .await;
}

#[derive(serde::Serialize)]
struct Seen {
    message_id: String,
    direction: String,
}

#[tokio::test]
async fn rust_loader_with_json_template_and_renderer() {
    on_each_backend("rust_loader", |db, _| async move {
        setup(&db).await;
        let ctx = reply_ctx(&db, "<acct-1@example.com>").await;
        let loader = |ctx: Context| async move {
            let db = ctx.db().expect("db");
            let thread = ctx.message().expect("message").thread_id;
            message::Entity::find()
                .filter(message::Column::EmailThreadId.eq(thread))
                .filter(message::Column::Direction.eq("outbound"))
                .order_by_asc(message::Column::Id)
                .all(db)
                .await
                .map(|rows| {
                    rows.into_iter().map(|m| Seen {
                        message_id: m.message_id,
                        direction: m.direction,
                    })
                })
        };
        let json_form = LoadRecord::from_loader(loader);
        assert_eq!(
            text(&json_form, &ctx).await.as_deref(),
            Some("{\n  \"message_id\": \"<acct-2@acme.test>\",\n  \"direction\": \"outbound\"\n}")
        );
        let templated = LoadRecord::from_loader(loader)
            .template_str("{{ record.message_id }} answered {{ message.from }}");
        assert_eq!(
            text(&templated, &ctx).await.as_deref(),
            Some("<acct-2@acme.test> answered alice@example.com")
        );
        let rendered =
            LoadRecord::from_loader(loader).render_with(|s: &Seen| format!(" {} ", s.direction));
        assert_eq!(text(&rendered, &ctx).await.as_deref(), Some("outbound"));
        let models = LoadRecord::from_loader(|ctx: Context| async move {
            message::Entity::find()
                .filter(message::Column::MessageId.eq("<nobody@x>"))
                .all(ctx.db().unwrap())
                .await
        });
        assert_eq!(models.resolve(&ctx).await.unwrap(), None);
        let failing =
            LoadRecord::from_loader(|_ctx: Context| async move { Err::<Vec<Seen>, _>("boom") });
        let err = failing.resolve(&ctx).await.unwrap_err();
        assert_eq!(
            (err.kind(), err.to_string()),
            (
                ErrorKind::Custom,
                "LoadRecord loader failed: boom".to_owned()
            )
        );
        assert_eq!(failing.name(), "LoadRecord");
    })
    .await;
}

/// The tables of [`each_column_type_renders_as_expected`], per backend: each type LoadRecord
/// renders, in one row of values and one row of NULLs.
fn typed_table(backend: &str) -> (&'static str, &'static str, &'static str) {
    match backend {
        "postgres" => (
            "CREATE EXTENSION IF NOT EXISTS citext; CREATE DOMAIN email_addr AS TEXT; \
             CREATE DOMAIN positive AS INTEGER CHECK (VALUE > 0); \
             CREATE TYPE mood AS ENUM ('happy', 'sad'); \
             CREATE TABLE typed (id INTEGER, small SMALLINT, big BIGINT, real4 REAL, \
             ratio DOUBLE PRECISION, nan DOUBLE PRECISION, inf DOUBLE PRECISION, \
             huge DOUBLE PRECISION, flag BOOLEAN, name VARCHAR(20), code CHAR(4), note TEXT, \
             data BYTEA, stamp TIMESTAMP, stamptz TIMESTAMPTZ, day DATE, clock TIME, \
             doc JSONB, plain_json JSON, price NUMERIC(10,3), negative NUMERIC, \
             large NUMERIC, integral NUMERIC(30,0), not_a_number NUMERIC, addr email_addr, \
             count positive, feeling mood, ci CITEXT, uid UUID, tags TEXT[], ids BIGINT[], \
             flags BOOLEAN[])",
            "INSERT INTO typed VALUES (1, -32768, 9223372036854775807, 1.5, 0.25, 'NaN', \
             'Infinity', 1e308, FALSE, 'Café', 'ab', 'line\nbreak', '\\x00ff', \
             '2026-01-05 10:00:00.25', '2026-01-05 12:00:00+02', '2026-01-05', '10:00:00.5', \
             '{\"b\": [1, 2], \"a\": null}', '{\"z\": 1, \"y\": \"x\"}', 12.5, -0.005, \
             123456789012345678901234.5, 12345678901234567890, 'NaN', 'a@b.example', 7, \
             'happy', 'MiXeD', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{x,NULL,\"y z\"}', \
             '{1,-2}', '{true,NULL}')",
            "INSERT INTO typed (id) VALUES (2)",
        ),
        "mysql" => (
            "CREATE TABLE typed (id INTEGER, tiny TINYINT, small SMALLINT, medium MEDIUMINT, \
             big BIGINT, unsigned_big BIGINT UNSIGNED, unsigned_medium MEDIUMINT UNSIGNED, \
             yr YEAR, real4 FLOAT, ratio DOUBLE, huge DOUBLE, flag BOOLEAN, name VARCHAR(20), \
             code CHAR(4), note TEXT, bin VARBINARY(4), data BLOB, stamp DATETIME(6), \
             ts TIMESTAMP NULL, day DATE, clock TIME(1), doc JSON, price DECIMAL(10,3), \
             negative DECIMAL(10,3), large DECIMAL(30,1), bits BIT(8))",
            "INSERT INTO typed VALUES (1, -128, -32768, 8388607, 9223372036854775807, \
             18446744073709551615, 16777215, 2026, 1.5, 0.25, 1e308, FALSE, 'Café', 'ab', \
             'line\nbreak', X'00FF', X'616263', '2026-01-05 10:00:00.25', \
             '2026-01-05 10:00:00', '2026-01-05', '10:00:00.5', '{\"b\": [1, 2], \"a\": null}', \
             12.5, -0.005, 12345678901234567890123456789.5, b'00110101')",
            "INSERT INTO typed (id) VALUES (2)",
        ),
        _ => (
            "CREATE TABLE typed (id INTEGER, big INTEGER, ratio REAL, huge REAL, flag BOOLEAN, \
             name VARCHAR(20), note TEXT, data BLOB, stamp TIMESTAMP, stamptz DATETIME, \
             day DATE, price NUMERIC, whole NUMERIC, affinity TEXT, untyped)",
            "INSERT INTO typed VALUES (1, 9223372036854775807, 0.25, 1e308, FALSE, 'Café', \
             'line\nbreak', X'00FF', '2026-01-05 10:00:00', '2026-01-05T10:00:00+02:00', \
             '2026-01-05', 12.5, 12.0, 12, 3.5)",
            "INSERT INTO typed (id, untyped) VALUES (2, X'01')",
        ),
    }
}

/// Each column type renders as the JSON of `tests/expected/loadrecord-typed-*.txt`, SQLite
/// read through SeaORM (an in-memory database) and through the SQLite C library (a file)
/// alike.
#[tokio::test]
async fn each_column_type_renders_as_expected() {
    let dir = tempfile::tempdir().unwrap();
    let mut runs: Vec<(
        &'static str,
        String,
        Option<String>,
        Option<common::Backend>,
    )> = vec![("sqlite", "sqlite::memory:".to_owned(), None, None)];
    for backend in common::backends() {
        let (url, name) = backend.fresh_url("typed", dir.path()).await;
        runs.push((backend.name, url, name, Some(backend)));
    }
    for (backend, url, name, server) in runs {
        let db = protege_core::db::open(&url).await.unwrap();
        let (create, values, nulls) = typed_table(backend);
        for sql in [create, values, nulls] {
            db.execute_unprepared(sql).await.unwrap();
        }
        import(&db, "records.json").await;
        let ctx = reply_ctx(&db, "<acct-1@example.com>").await;
        let got = text(
            &LoadRecord::table("typed").order_by(OrderBy {
                column: "id".into(),
                desc: false,
            }),
            &ctx,
        )
        .await
        .unwrap();
        db.close().await.ok();
        if let Some(server) = server {
            server.drop_database(name).await;
        }
        let path = format!(
            "{}/tests/expected/loadrecord-typed-{backend}.txt",
            env!("CARGO_MANIFEST_DIR")
        );
        let want = std::fs::read_to_string(path).unwrap();
        assert_eq!(got, want.trim_end(), "{backend}: {url}");
    }
}

/// An address matches whatever its case (a customer writes from `Alice@Example.COM`, the
/// table holds `alice@example.com`); other text keeps an exact match. On every backend.
#[tokio::test]
async fn an_address_matches_its_row_whatever_its_case() {
    on_each_backend("where_address_case", |db, _| async move {
        setup(&db).await;
        let ctx = reply_ctx(&db, "<acct-1@example.com>").await;
        let by = |column: &str, value: &str| {
            LoadRecord::table("accounts")
                .filter(column, WhereValue::Value(json!(value)))
                .template_str("{{ record.name }}")
        };
        let found = text(&by("email", "Alice@Example.COM"), &ctx).await;
        let exact = text(&by("email", "alice@example.com"), &ctx).await;
        assert!(found.is_some());
        assert_eq!(found, exact);
        let name = exact.unwrap();
        assert_eq!(text(&by("name", &name), &ctx).await, Some(name.clone()));
        assert_eq!(
            text(&by("name", &name.to_uppercase()), &ctx).await,
            None,
            "{name}"
        );
    })
    .await;
}

/// Money stays money: a `numeric(12,2)` of 129.90 prints `129.90` through a template, on the
/// backends with exact decimals.
#[tokio::test]
async fn an_exact_decimal_prints_as_written() {
    on_each_backend("money", |db, backend| async move {
        if backend == "sqlite" {
            return;
        }
        db.execute_unprepared("CREATE TABLE invoices (id INTEGER, total NUMERIC(12,2))")
            .await
            .unwrap();
        db.execute_unprepared("INSERT INTO invoices VALUES (1, 129.90)")
            .await
            .unwrap();
        import(&db, "records.json").await;
        let ctx = reply_ctx(&db, "<acct-1@example.com>").await;
        let total = LoadRecord::table("invoices").template_str("Total: {{ record.total }} EUR");
        assert_eq!(
            text(&total, &ctx).await.as_deref(),
            Some("Total: 129.90 EUR"),
            "{backend}"
        );
    })
    .await;
}

/// A timestamp renders as the backend prints it (§2), and the `rfc3339` filter gives every
/// backend's the same RFC 3339 text in UTC: PostgreSQL's `timestamptz` in another zone,
/// MySQL's `DATETIME` (read in UTC), SQLite's stored text.
#[tokio::test]
async fn a_timestamp_reads_as_rfc3339_through_the_filter() {
    on_each_backend("rfc3339", |db, backend| async move {
        let (create, insert, printed) = match backend {
            "postgres" => (
                "CREATE TABLE orders (id INTEGER, placed timestamptz)",
                "INSERT INTO orders VALUES (1, '2026-01-05 11:00:00.25+01')",
                "2026-01-05 10:00:00.250+00",
            ),
            "mysql" => (
                "CREATE TABLE orders (id INTEGER, placed DATETIME(3))",
                "INSERT INTO orders VALUES (1, '2026-01-05 10:00:00.250')",
                "2026-01-05 10:00:00.250",
            ),
            _ => (
                "CREATE TABLE orders (id INTEGER, placed TEXT)",
                "INSERT INTO orders VALUES (1, '2026-01-05 11:00:00.25+01:00')",
                "2026-01-05 11:00:00.25+01:00",
            ),
        };
        db.execute_unprepared(create).await.unwrap();
        db.execute_unprepared(insert).await.unwrap();
        import(&db, "records.json").await;
        let ctx = reply_ctx(&db, "<acct-1@example.com>").await;
        let placed = LoadRecord::table("orders")
            .template_str("{{ record.placed }} is {{ record.placed | rfc3339 }}");
        assert_eq!(
            text(&placed, &ctx).await,
            Some(format!("{printed} is 2026-01-05T10:00:00.250Z")),
            "{backend}"
        );
    })
    .await;
}
