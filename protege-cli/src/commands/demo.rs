//! `demo`: migrate the database, import the demo data, resolve the support persona for the
//! newest inbound message with `--explain`, print the request.

use protege::{Engine, ResolveInput};

use super::{CliResult, Env, Failure, explain, output, resolve};

const FIXTURE: &str = "examples/data/demo.json";
const CUSTOMERS: &str = "examples/data/customers.sql";
const PERSONA: &str = "support";

pub(crate) async fn run(env: &Env) -> CliResult {
    let engine = env.engine().await?;
    engine.migrate().await?;
    output::err(&format!(
        "database: {}\n",
        protege::db::redact_url(&env.database)
    ))?;
    // The demo's own table: the application's side of the database.
    ensure_customers(env, &engine).await?;
    let conn = engine.db().await?;
    let summary = engine.import_fixture(&env.root.join(FIXTURE)).await?;
    output::err(&format!("demo data: {summary}\n"))?;
    let newest = protege::db::newest_inbound_message(conn)
        .await?
        .ok_or_else(|| Failure::invalid("the demo data holds no inbound message"))?;
    output::err(&format!(
        "resolving persona `{PERSONA}` for the newest inbound message {} ({:?})\n\n",
        newest.email.message_id, newest.email.subject
    ))?;
    let input = ResolveInput::reply(PERSONA, newest.email.message_id).explain(true);
    let out = resolve::resolve(&engine, &input).await?;
    output::err(&format!("{}\n", explain::table(&out)))?;
    let text = serde_json::to_string_pretty(&out.body)
        .map_err(|e| Failure::invalid(format!("cannot serialise the request: {e}")))?;
    output::out(&format!("{text}\n"))
}

/// Creates and fills the `customers` table from the demo SQL once, when it is missing.
async fn ensure_customers(env: &Env, engine: &Engine) -> CliResult {
    if engine.has_table("customers").await? {
        return Ok(());
    }
    let path = env.root.join(CUSTOMERS);
    let sql = std::fs::read_to_string(&path)
        .map_err(|e| Failure::invalid(format!("cannot read `{}`: {e}", path.display())))?;
    engine
        .run_sql_script(&sql)
        .await
        .map_err(|e| Failure::invalid(format!("`{}`: {e}", path.display())))
}
