//! The command-line grammar (clap derive).

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use clap::{Args, Parser, Subcommand, ValueEnum};

const EXAMPLES: &str = "\
Examples:
  protege demo                                   import the demo data and resolve the support persona
  protege check                                  validate every persona in ./personas
  protege db import examples/data/demo.json      import a fixture into ./protege.db
  protege resolve --persona support --message '<m1@example.com>' --format anthropic";

/// The version and the git commit the binary was built from: `0.1.0 (1a2b3c4d5e6f)`.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("PROTEGE_GIT_COMMIT"),
    ")"
);

/// Assemble what a language model sees before it answers an email.
#[derive(Debug, Parser)]
#[command(name = "protege", version = VERSION, after_help = EXAMPLES)]
pub(crate) struct Cli {
    /// App root for relative paths (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) root: Option<PathBuf>,
    /// Persona folder (default: <root>/personas).
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) personas: Option<PathBuf>,
    /// Database URL (default: $PROTEGE_DATABASE_URL, else sqlite://<root>/protege.db, created if missing).
    // The URL may hold a password: `--help` names the variable, never its value.
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "PROTEGE_DATABASE_URL",
        hide_env_values = true
    )]
    pub(crate) database: Option<String>,
    /// Read replica URL: every read of a resolve goes to it, a message it lacks is read from
    /// the primary; never migrated (default: $PROTEGE_READ_DATABASE_URL, else none).
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "PROTEGE_READ_DATABASE_URL",
        hide_env_values = true
    )]
    pub(crate) read_database: Option<String>,
    /// Seconds to wait for a database connection, fractions allowed, at most 86400
    /// (default: $PROTEGE_CONNECT_TIMEOUT, else 10).
    #[arg(
        long,
        global = true,
        value_name = "SECONDS",
        env = "PROTEGE_CONNECT_TIMEOUT"
    )]
    pub(crate) connect_timeout: Option<String>,
    /// Where `connect_timeout` came from: its error names the variable or the flag, as the
    /// user wrote it.
    #[arg(skip)]
    pub(crate) connect_timeout_from_env: bool,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Validate every persona; exit 1 when any is invalid.
    ///
    /// With a database named (--database or PROTEGE_DATABASE_URL), also check what the
    /// personas read without a message: each LoadFile's fixed path, and each LoadRecord's
    /// table and the columns its `where` and `order_by` name.
    ///
    /// The environment variables a persona names (`[model] api_key_env`, a tool's
    /// `secret_env` or `token_env` with an `[agent]` table; `[outbox] password_env` with an
    /// `[agent]` table or an `[outbox] smtp` server) must be set, unless --no-env. The
    /// personas' MCP servers are reached and their tools printed with the descriptions the
    /// model reads (unless --no-mcp or --no-env): a server that is down is a warning, a tool
    /// whose name another tool of the persona has is an error.
    #[command(
        after_help = "Examples:\n  protege check --personas personas/\n  protege check --database postgres://app@db.internal/app\n  protege check --no-env                         in CI, without the secrets\n  protege check --no-mcp                         without starting MCP servers"
    )]
    Check {
        /// Skip the checks of environment variables (for CI without secrets); MCP servers
        /// are not reached either.
        #[arg(long)]
        no_env: bool,
        /// Do not start or reach the personas' MCP servers (their tools are not listed).
        #[arg(long)]
        no_mcp: bool,
    },
    /// Create or upgrade the schema, import fixtures.
    Db {
        #[command(subcommand)]
        command: DbCommand,
    },
    /// Print the request for a reply run or a scheduled run as JSON on stdout.
    #[command(
        after_help = "Examples:\n  protege resolve --persona support --message '<m1@example.com>'\n  protege resolve --persona digest --responsibility daily-digest --format openai --explain"
    )]
    Resolve(ResolveArgs),
    /// Resolve the reply run for every inbound message of a thread and print what a
    /// provider's prompt cache would serve of each request; with --from-runs, the cache
    /// share the provider reported for each recorded run next to the simulated one.
    #[command(
        name = "cache-report",
        after_help = "Examples:\n  protege cache-report --persona support --thread 1 --format anthropic\n  protege cache-report --from-runs --persona support --since 2026-03-01T00:00:00Z"
    )]
    CacheReport(CacheReportArgs),
    /// Erase a correspondent: every message whose From, To or Cc holds the address, with
    /// its attachments, tool uses and runs, the summaries of its threads and the threads
    /// left empty; print the rows removed per table.
    #[command(
        after_help = "Examples:\n  protege forget --address ann@example.com --dry-run\n  protege forget --address 'Ann <ann@example.com>'"
    )]
    Forget {
        /// The address (any case; a display name is allowed).
        #[arg(long, value_name = "ADDR")]
        address: String,
        /// Print what would be removed and change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Also when the address is a persona's own (every thread of that persona goes).
        #[arg(long)]
        force: bool,
    },
    /// Start a run, record its rounds, show it: the loop of an agent, one round at a time.
    Run {
        #[command(subcommand)]
        command: RunCommand,
    },
    /// The replies waiting, queued, sent or failed: list, show, approve, reject, retry,
    /// hold, release, and deliver what may leave (§18).
    Outbox {
        #[command(subcommand)]
        command: OutboxCommand,
    },
    /// The agent (§17): list and retry its jobs, run one trigger in the foreground, or work
    /// through the queued jobs without `serve`.
    Agent {
        #[command(subcommand)]
        command: AgentCommand,
    },
    /// Mail in over IMAP (§19): read a persona's `[inbox]` once, as `serve --agent` does
    /// continuously.
    Inbox {
        #[command(subcommand)]
        command: InboxCommand,
    },
    /// Resolve each persona's recent messages with the live persona folder and with
    /// another one, and print what changes; exit 1 when anything does.
    #[command(
        after_help = "Examples:\n  protege diff --to personas.new/\n  protege diff --to personas.new/ --persona support --messages 50\n  protege diff --to personas.new/ --since 7d --format json"
    )]
    Diff(DiffArgs),
    /// Print a completion script for a shell on stdout.
    #[command(
        after_help = "Examples:\n  protege completions bash > ~/.local/share/bash-completion/completions/protege\n  protege completions zsh > ~/.zfunc/_protege\n  protege completions fish > ~/.config/fish/completions/protege.fish\n  protege completions powershell >> $PROFILE"
    )]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) on stdout, or write every command's page into a folder.
    #[command(
        after_help = "Examples:\n  protege man > protege.1 && man ./protege.1\n  protege man --dir /usr/local/share/man/man1"
    )]
    Man {
        /// Write `protege.1` and a page per command (`protege-db-migrate.1`, ...) into
        /// this existing folder, and list them.
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
    /// Print the JSON Schema of a persona file (or, with --fixture, of the fixture format).
    #[command(
        after_help = "Examples:\n  protege schema > persona.schema.json    then start a persona file with `#:schema ./persona.schema.json`\n  protege schema --fixture > fixture.schema.json"
    )]
    Schema {
        /// The schema of the fixture format of `db import` and `db export` instead.
        #[arg(long)]
        fixture: bool,
    },
    /// Hot-reload the persona folder and print one JSON line per event.
    #[command(after_help = "Example:\n  protege watch --personas personas/")]
    Watch,
    /// Migrate the database, import the demo data and resolve the support persona with --explain.
    #[command(after_help = "Example:\n  cargo run --release -- demo")]
    Demo,
    /// Serve the engine over HTTP: resolve requests, ingest mail, hot-reload personas.
    #[command(
        after_help = "Examples:\n  protege serve\n  PROTEGE_SERVE_TOKEN=secret protege serve --listen 0.0.0.0:8080 --log-format json"
    )]
    Serve(ServeArgs),
}

#[derive(Debug, Subcommand)]
pub(crate) enum DbCommand {
    /// Create or upgrade the schema.
    #[command(
        after_help = "Example:\n  protege --database postgres://postgres@127.0.0.1/test db migrate"
    )]
    Migrate,
    /// Import a JSON fixture; idempotent by message_id, all or nothing.
    #[command(after_help = "Example:\n  protege db import examples/data/demo.json")]
    Import {
        /// The fixture file.
        file: PathBuf,
    },
    /// Import RFC 5322 messages (`.eml` files, mbox files, or folders of them), threading
    /// by References/In-Reply-To; exit 1 when any file failed (the others are imported).
    #[command(
        name = "import-eml",
        after_help = "Examples:\n  protege db import-eml inbox/\n  protege db import-eml archive.mbox --persona support\n  protege db import-eml inbox/ --trusted-authserv-id mx.acme.test"
    )]
    ImportEml(ImportEmlArgs),
    /// Store FILE's text as the running summary of a thread, through one of its messages.
    #[command(
        after_help = "Example:\n  protege db summary --message '<refund-2@acme.test>' --file summary.txt"
    )]
    Summary {
        /// The last message the summary covers, by Message-ID.
        #[arg(long, value_name = "MESSAGE_ID")]
        message: String,
        /// The file holding the summary (UTF-8 text, at most 1 MiB).
        #[arg(long, value_name = "FILE")]
        file: PathBuf,
    },
    /// Drop every thread whose newest message is older than DURATION, with its messages,
    /// attachments, tool uses, runs and summaries; print the rows removed per table.
    #[command(
        after_help = "Examples:\n  protege db prune --older-than 365d --dry-run\n  protege db prune --older-than 12w --now 2026-06-01T00:00:00Z"
    )]
    Prune {
        /// The age past which a thread goes: a whole number above zero and `h` (hours),
        /// `d` (days) or `w` (weeks), e.g. `365d`.
        #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true)]
        older_than: std::time::Duration,
        /// Print what would be removed and change nothing.
        #[arg(long)]
        dry_run: bool,
        /// The time the age is counted from, RFC 3339 (default: now).
        #[arg(long, value_name = "RFC3339", value_parser = parse_now)]
        now: Option<DateTime<Utc>>,
    },
    /// Write every stored thread as a fixture that `db import` reads back: a backup, or a
    /// move to another database.
    #[command(
        after_help = "Examples:\n  protege db export backup.json\n  protege --database sqlite://app.db db export - | gzip > backup.json.gz\n  protege --database postgres://postgres@127.0.0.1/app db import backup.json"
    )]
    Export {
        /// The file to write (replaced whole once the export is complete), or `-` for
        /// stdout.
        file: PathBuf,
    },
    /// List the threads that hold messages, the one with the newest message first.
    #[command(
        after_help = "Examples:\n  protege db threads\n  protege db threads --limit 5 --format json"
    )]
    Threads {
        /// At most this many threads.
        #[arg(long, value_name = "N", default_value_t = 50)]
        limit: u64,
        /// A table, or JSON for scripts.
        #[arg(long, value_enum, default_value_t = ListFormat::Table)]
        format: ListFormat,
    },
    /// List the messages of a thread, oldest first, with their attachments and the tool
    /// calls recorded under them.
    #[command(
        after_help = "Examples:\n  protege db messages --thread 2\n  protege db messages --thread 2 --format json"
    )]
    Messages {
        /// The thread's id (the first column of `protege db threads`).
        #[arg(long, value_name = "ID")]
        thread: i64,
        /// A table, or JSON for scripts.
        #[arg(long, value_enum, default_value_t = ListFormat::Table)]
        format: ListFormat,
    },
}

#[derive(Debug, Args)]
pub(crate) struct DiffArgs {
    /// The candidate persona folder, compared with the live one (`--personas`).
    #[arg(long, value_name = "DIR")]
    pub(crate) to: PathBuf,
    /// Only this persona.
    #[arg(long, value_name = "NAME")]
    pub(crate) persona: Option<String>,
    /// The most recent inbound messages addressed to each persona, at most this many.
    #[arg(long, value_name = "N", default_value_t = 20, conflicts_with = "since")]
    pub(crate) messages: u64,
    /// Instead of a number: the inbound messages of the last DURATION (`48h`, `7d`,
    /// `2w`), at most 1000.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub(crate) since: Option<std::time::Duration>,
    /// A table of changes then the first changed request of each persona as a unified
    /// diff, or JSON for scripts.
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub(crate) format: ListFormat,
    /// The time of every run, RFC 3339 (default: now).
    #[arg(long, value_name = "RFC3339", value_parser = parse_now)]
    pub(crate) now: Option<DateTime<Utc>>,
}

/// How `db threads` and `db messages` print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ListFormat {
    /// Aligned columns, one row per thread or message.
    Table,
    /// A JSON array, one object per thread or message.
    Json,
}

#[derive(Debug, Subcommand)]
pub(crate) enum RunCommand {
    /// Start a run: resolve like `resolve` (in a provider's format) and print
    /// `{"run_id","round","body"}`.
    #[command(
        after_help = "Example:\n  protege run start --persona support --message '<m1@example.com>' --format anthropic"
    )]
    Start(ResolveArgs),
    /// Record the provider's response to a round and the results of its tool calls; print
    /// the next body (`"status":"continue"`) or the final answer (`"done"`, `"stopped"`).
    /// With `--pending`, store the response alone and print the calls to make
    /// (`"status":"pending"`); recording the round with its results completes it.
    #[command(
        after_help = "Examples:\n  protege run record run_01JG... --round 0 --response response.json --results results.json\n  protege run record run_01JG... --round 0 --response response.json --pending"
    )]
    Record {
        /// The run's id.
        run_id: String,
        /// The round the response answers (0 for the body of `run start`).
        #[arg(long)]
        round: u32,
        /// The provider's whole response body (JSON).
        #[arg(long, value_name = "FILE")]
        response: PathBuf,
        /// The tool results: a JSON array of {"tool_call_id","content","is_error"}.
        #[arg(long, value_name = "FILE")]
        results: Option<PathBuf>,
        /// Store the response alone, its results to come: the round is pending.
        #[arg(long, conflicts_with = "results")]
        pending: bool,
    },
    /// Print a run and its rounds as JSON.
    #[command(after_help = "Example:\n  protege run show run_01JG...")]
    Show {
        /// The run's id.
        run_id: String,
    },
    /// Print the runs of a message, oldest first, as JSON: `{"runs":[...]}`.
    #[command(after_help = "Example:\n  protege run list --message '<m1@example.com>'")]
    List {
        /// The message's Message-ID.
        #[arg(long, value_name = "ID")]
        message: String,
    },
    /// Give up a run that goes on: it becomes `abandoned`, its tool rounds are never
    /// replayed into its thread, and no round can be recorded any more; print the run.
    #[command(after_help = "Example:\n  protege run abandon run_01JG...")]
    Abandon {
        /// The run's id.
        run_id: String,
    },
    /// Compose the reply of a finished run and store it in the outbox (once: a second call
    /// prints the same row); print `{"status":"reply","outbox":{...}}` or
    /// `{"status":"skipped","reason"}`.
    #[command(after_help = "Example:\n  protege run reply run_01JG...")]
    Reply {
        /// The run's id.
        run_id: String,
    },
}

/// `protege inbox ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum InboxCommand {
    /// One pass over the persona's `[inbox]` folders: store the new mail (making the
    /// agent's jobs), mark it, and print what was done as JSON. Fails while a `serve
    /// --agent` reads the mailbox.
    #[command(
        after_help = "Example (from cron, or to debug a mailbox):\n  protege inbox fetch --persona support"
    )]
    Fetch {
        /// The persona whose `[inbox]` is read.
        #[arg(long)]
        persona: String,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum AgentCommand {
    /// List the jobs, newest first, as JSON: `{"jobs":[...]}`.
    #[command(after_help = "Example:\n  protege agent jobs --state failed")]
    Jobs {
        /// Only jobs in this state (queued, running, waiting, done, skipped, failed).
        #[arg(long)]
        state: Option<String>,
        /// Only jobs of this persona.
        #[arg(long)]
        persona: Option<String>,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: u64,
    },
    /// Queue a failed job again, due now, and print it; or, with `--state failed`, every
    /// failed job (of one persona, since a time) and print how many.
    #[command(
        after_help = "Examples:\n  protege agent retry 12\n  protege agent retry --state failed --persona support --since 2026-12-01T00:00:00Z"
    )]
    Retry {
        /// The job's id.
        #[arg(required_unless_present = "state", conflicts_with = "state")]
        job: Option<i64>,
        /// Every job in this state (only `failed` can be retried).
        #[arg(long, value_parser = ["failed"])]
        state: Option<String>,
        /// With --state: only this persona's jobs.
        #[arg(long, requires = "state")]
        persona: Option<String>,
        /// With --state: only the jobs that failed at or after this time.
        #[arg(long, value_name = "RFC3339", value_parser = parse_now, requires = "state")]
        since: Option<DateTime<Utc>>,
    },
    /// Answer one message in the foreground, printing each round: the provider and the
    /// tools are called, the run recorded, and the reply stored `waiting` (unless `--send`).
    #[command(
        after_help = "Example:\n  protege agent run --persona support --message '<m1@example.com>' --no-tools"
    )]
    Run {
        /// The persona that answers.
        #[arg(long)]
        persona: String,
        /// The message's Message-ID.
        #[arg(long, value_name = "ID")]
        message: String,
        /// Answer every tool call `not called: dry run` instead of calling the tool.
        #[arg(long)]
        no_tools: bool,
        /// Queue the reply as the persona says instead of storing it `waiting`.
        #[arg(long)]
        send: bool,
        /// Answer a message whose job is done again.
        #[arg(long)]
        again: bool,
    },
    /// Work through the jobs that may run now, then exit (`--once`: one job at most).
    #[command(after_help = "Example (from cron):\n  protege agent work")]
    Work {
        /// Run one job at most.
        #[arg(long)]
        once: bool,
    },
    /// List the responsibilities' slots due now, one line each: the persona, the
    /// responsibility, the wall-clock time with its zone, and the instant in UTC. A
    /// responsibility seen for the first time is recorded as seen now.
    #[command(
        after_help = "Examples:\n  protege agent due\n  protege agent due --now 2026-03-29T06:00:00Z"
    )]
    Due {
        /// The clock, for everything the command does (default: now).
        #[arg(long, value_name = "RFC3339", value_parser = parse_now)]
        now: Option<DateTime<Utc>>,
    },
    /// Fire the slots due now (each a job), then work through the jobs that may run, in the
    /// foreground: for deployments driven by cron instead of `serve --agent`. Prints the
    /// jobs made and the jobs run, as JSON.
    #[command(
        after_help = "Examples (from cron, each minute):\n  protege agent tick\n  protege agent tick --now 2026-03-29T06:00:00Z"
    )]
    Tick {
        /// The clock for the slots, the agent's first look at a responsibility included
        /// (default: now).
        #[arg(long, value_name = "RFC3339", value_parser = parse_now)]
        now: Option<DateTime<Utc>>,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum OutboxCommand {
    /// List the rows, newest first, as JSON.
    #[command(after_help = "Example:\n  protege outbox list --state waiting")]
    List {
        /// Only rows in this state (waiting, queued, sending, sent, failed, rejected).
        #[arg(long)]
        state: Option<String>,
        /// Only rows of this persona.
        #[arg(long)]
        persona: Option<String>,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: u64,
    },
    /// Print a row with its bytes (`raw`).
    Show {
        /// The row's id.
        id: i64,
    },
    /// Approve a waiting reply: it is queued with a new Date and `Auto-Submitted: no`.
    #[command(
        after_help = "Examples:\n  protege outbox approve 7 --by ann\n  protege outbox approve 7 --by ann --text-file edited.txt"
    )]
    Approve {
        /// The row's id.
        id: i64,
        /// Who approves.
        #[arg(long)]
        by: String,
        /// A file holding the edited text that replaces the model's.
        #[arg(long, value_name = "FILE")]
        text_file: Option<PathBuf>,
    },
    /// Reject a waiting reply: it is never sent.
    Reject {
        /// The row's id.
        id: i64,
        /// Who rejects.
        #[arg(long)]
        by: String,
        /// Why.
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Queue a failed reply again, with the same bytes.
    Retry {
        /// The row's id.
        id: i64,
        /// Who asks.
        #[arg(long)]
        by: String,
    },
    /// Hold the queued replies no person approved (of one persona, or of all).
    Hold {
        /// Only this persona's.
        #[arg(long)]
        persona: Option<String>,
    },
    /// Release what `hold` held.
    Release {
        /// Only this persona's.
        #[arg(long)]
        persona: Option<String>,
    },
    /// One delivery pass: send what may leave now over each persona's `[outbox] smtp`.
    #[command(after_help = "Example (from cron):\n  protege outbox deliver")]
    Deliver {
        /// Only this persona's.
        #[arg(long)]
        persona: Option<String>,
    },
}

/// How `import-eml` threads a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ThreadByArg {
    /// A reply joins the thread of a message it references when its sender is a
    /// participant of that thread (the safe rule for mail strangers send).
    Participants,
    /// A reply joins the thread of a message it references whoever sent it: only for an
    /// archive whose headers you trust, such as a mailing list's.
    References,
}

/// How `import-eml` gives a message its direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DirectionArg {
    /// Outbound only when From is a persona address alone and the message did not arrive
    /// from outside (no `Received` header, or a trusted `Authentication-Results` with
    /// `dmarc=pass`); everything else inbound.
    Auto,
    /// Every message inbound.
    Inbound,
    /// Every message outbound (each must be From a persona address alone).
    Outbound,
}

#[derive(Debug, Args)]
pub(crate) struct ImportEmlArgs {
    /// Files or folders to import.
    #[arg(required = true, value_name = "FILE|DIR")]
    pub(crate) paths: Vec<PathBuf>,
    /// Whose mail this is: messages from this persona's `addresses` may be outbound
    /// (default: the addresses of every persona in the folder).
    #[arg(long, value_name = "NAME")]
    pub(crate) persona: Option<String>,
    /// Attachment data larger than this many bytes is not stored (the attachment keeps
    /// its name, type and size; a warning names it).
    #[arg(long, value_name = "BYTES", default_value_t = protege::db::DEFAULT_MAX_ATTACHMENT_BYTES)]
    pub(crate) max_attachment_bytes: u64,
    /// The direction of the messages.
    #[arg(long, value_enum, default_value_t = DirectionArg::Auto)]
    pub(crate) direction: DirectionArg,
    /// Who may join a thread.
    #[arg(long, value_enum, default_value_t = ThreadByArg::Participants)]
    pub(crate) thread_by: ThreadByArg,
    /// An authserv-id whose `Authentication-Results` headers are trusted (repeatable;
    /// added to the personas' `[mail] trusted_authserv_ids`).
    #[arg(long = "trusted-authserv-id", value_name = "ID", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub(crate) trusted_authserv_ids: Vec<String>,
    /// Before the totals, list each message stored: its thread, direction, Message-ID and
    /// the file it came from, in file order.
    #[arg(long)]
    pub(crate) list: bool,
}

/// The output of `resolve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// protege's canonical JSON: `{"messages":[...],"tools":[...]}`.
    Messages,
    /// An OpenAI Chat Completions request body.
    Openai,
    /// An OpenAI Responses request body.
    OpenaiResponses,
    /// An Anthropic Messages request body.
    Anthropic,
    /// The body of the persona's `[model] provider` (and `api`).
    Provider,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("trigger").required(true).args(["message", "responsibility"])))]
pub(crate) struct ResolveArgs {
    /// The persona's name.
    #[arg(long)]
    pub(crate) persona: String,
    /// Reply run: the Message-ID of the inbound message, e.g. '<m1@example.com>'.
    #[arg(long, value_name = "MESSAGE_ID")]
    pub(crate) message: Option<String>,
    /// Scheduled run: the responsibility's name.
    #[arg(long, value_name = "NAME")]
    pub(crate) responsibility: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Messages)]
    pub(crate) format: Format,
    /// Model name for a wire format (overrides the persona's [model] name).
    #[arg(long, value_name = "NAME", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub(crate) model: Option<String>,
    /// The time of the run, RFC 3339 (default: now), for reproducible output.
    #[arg(long, value_name = "RFC3339", value_parser = parse_now)]
    pub(crate) now: Option<DateTime<Utc>>,
    /// Print a per-resolver table (messages, characters, tokens, time, source) on stderr;
    /// `--explain=json` prints it as JSON, with the source of every message and the
    /// request's SHA-256.
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "table"
    )]
    pub(crate) explain: Option<ExplainFormat>,
}

/// How `--explain` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ExplainFormat {
    /// A table, one row per resolver.
    Table,
    /// One JSON object: `explain` (the rows), `sources`, `message_tokens` and `request_sha256`.
    Json,
}

/// The wire format of a cache report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum WireFormat {
    /// OpenAI Chat Completions bodies.
    Openai,
    /// OpenAI Responses bodies.
    OpenaiResponses,
    /// Anthropic Messages bodies.
    Anthropic,
}

#[derive(Debug, Args)]
pub(crate) struct CacheReportArgs {
    /// The persona's name.
    #[arg(long)]
    pub(crate) persona: String,
    /// The thread's id (`email_threads.id`).
    #[arg(long, value_name = "THREAD_ID", required_unless_present = "from_runs")]
    pub(crate) thread: Option<i64>,
    /// The wire format (default: the persona's `[model] provider`).
    #[arg(long, value_enum, conflicts_with = "from_runs")]
    pub(crate) format: Option<WireFormat>,
    /// Model name of the requests (overrides the persona's [model] name).
    #[arg(long, value_name = "NAME", value_parser = clap::builder::NonEmptyStringValueParser::new(), conflicts_with = "from_runs")]
    pub(crate) model: Option<String>,
    /// Report the persona's recorded runs instead: per run the cache share the provider
    /// reported next to the simulated one.
    #[arg(long, conflicts_with = "thread")]
    pub(crate) from_runs: bool,
    /// With --from-runs: only the runs started at or after this time.
    #[arg(long, value_name = "RFC3339", value_parser = parse_now, conflicts_with = "thread")]
    pub(crate) since: Option<DateTime<Utc>>,
}

fn parse_now(text: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| format!("`{text}` is not an RFC 3339 timestamp such as 2026-01-05T10:00:00Z"))
}

fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    protege::db::parse_duration(text).map_err(|e| e.to_string())
}

/// The log line format of `serve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogFormat {
    /// One human-readable line per event.
    Text,
    /// One JSON object per line.
    Json,
}

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The address to listen on (port 0 picks a free port; the address is logged).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub(crate) listen: String,
    /// Do not hot-reload the persona folder.
    #[arg(long)]
    pub(crate) no_watch: bool,
    /// Serve without authentication on an address other than loopback (needed when
    /// `PROTEGE_SERVE_TOKEN` is not set and ADDR is not 127.0.0.1 or ::1).
    #[arg(long)]
    pub(crate) no_auth: bool,
    /// The format of the log lines on stderr.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub(crate) log_format: LogFormat,
    /// The per-request deadline in seconds, above 0 and at most 86400 (a request over it
    /// answers 504).
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0, value_parser = parse_seconds)]
    pub(crate) deadline: f64,
    /// How long a client may take to send a complete request head, from its first byte.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0, value_parser = parse_seconds)]
    pub(crate) header_timeout: f64,
    /// How long a connection may stay open with no request in flight and no byte sent.
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0, value_parser = parse_seconds)]
    pub(crate) idle_timeout: f64,
    /// The most connections open at once; one more is answered 503 and closed [default:
    /// what the file-descriptor limit leaves after 128 for the database and files, at most
    /// 1024, at least 16].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_connections: Option<u32>,
    /// The most connections one client address may hold open at once; one more is answered
    /// 503 and closed, so one client's idle connections cannot lock the others out (behind
    /// a proxy every client shares its address: raise it) [default: a quarter of
    /// `--max-connections`, at least 1].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_connections_per_client: Option<u32>,
    /// An authserv-id whose `Authentication-Results` headers `POST /v1/mail?direction=auto`
    /// trusts (repeatable; added to the personas' `[mail] trusted_authserv_ids`).
    #[arg(long = "trusted-authserv-id", value_name = "ID", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub(crate) trusted_authserv_ids: Vec<String>,
    /// How long a reply this process claimed for delivery stays its own, in seconds (renewed
    /// every third of it while the SMTP exchange lasts): when the process dies, another
    /// sends the reply once the lease has run out.
    #[arg(long, value_name = "SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub(crate) delivery_lease: u64,
    /// Run the agent (§17): answer the mail posted to the personas with an `[agent]` table,
    /// calling their provider and tools, and store each reply in the outbox.
    #[arg(long)]
    pub(crate) agent: bool,
    /// How long a job this process claimed stays its own, in seconds (renewed every third of
    /// it while the job runs): when the process dies, another resumes the job once the
    /// lease has run out.
    #[arg(long, value_name = "SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub(crate) job_lease: u64,
    /// How long a mailbox folder this process reads stays its own, in seconds (renewed every
    /// third of it): when the process dies, another replica reads the folder once the lease
    /// has run out.
    #[arg(long, value_name = "SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub(crate) inbox_lease: u64,
}

/// The longest `--deadline`, `--header-timeout` or `--idle-timeout`: one day. A request is not meant to run longer, and every
/// value up to it is a valid `Duration`.
const MAX_DEADLINE_SECS: f64 = 86_400.0;

fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= MAX_DEADLINE_SECS => Ok(s),
        _ => Err(format!(
            "`{text}` is not a number of seconds above 0 and at most {MAX_DEADLINE_SECS} (one day)"
        )),
    }
}
