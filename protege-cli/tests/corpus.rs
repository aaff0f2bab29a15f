//! `[mail] quoted = "strip"` (§14) measured on real mail: the public mailing-list corpora
//! under `tests/corpus/` (see their READMEs) are imported with `protege db import-eml
//! --thread-by references` (a list's threads are its References, whoever replied) into a
//! temporary SQLite database, and every inbound message that has an earlier message in its
//! thread is resolved by two personas identical but for `quoted`, each with a
//! `ThreadHistory` of `limit = 20`. The tokens of the two histories are summed and compared
//! exactly, so a change of the stripping rules shows here with its effect on real threads.
//!
//! `cargo test --test corpus -- --ignored --nocapture` prints the sample of stripped history
//! messages that the rules were checked against by reading: what each lost, line by line.

use std::collections::{BTreeMap, HashSet};

use protege::{Engine, Format, ResolveInput};
use serde_json::Value;

mod common;

/// One vendored corpus: its folder under the workspace root and the mailing-list
/// addresses the personas answer for (every message of a list names its list in To, Cc or
/// Sender, and none is From it, so every message is inbound).
struct Corpus {
    folder: &'static str,
    addresses: &'static [&'static str],
    /// How the copy imported is made from a vendored file (its name and bytes).
    prepare: fn(&str, &[u8]) -> Vec<u8>,
}

/// A vendored file imported as it is.
fn as_is(_name: &str, bytes: &[u8]) -> Vec<u8> {
    bytes.to_vec()
}

/// A pipermail text archive with its headers as mail has them: pipermail writes
/// `From: jjl at pobox.com (John J. Lee)` and `Date: Thu Nov  1 11:19:12 2001`; in each
/// message's header the ` at ` of the `From:` line becomes `@`, and the date
/// `Thu, 1 Nov 2001 11:19:12 +0000`. Bodies and the `README.md` stay as they are.
fn pipermail(name: &str, bytes: &[u8]) -> Vec<u8> {
    if !name.ends_with(".txt") {
        return bytes.to_vec();
    }
    let text = std::str::from_utf8(bytes).unwrap();
    let mut out = String::with_capacity(text.len());
    let mut in_header = false;
    for line in text.split_inclusive('\n') {
        if line.starts_with("From ") {
            in_header = true;
        } else if line.trim_end().is_empty() {
            in_header = false;
        } else if in_header && let Some(value) = line.strip_prefix("From: ") {
            out.push_str("From: ");
            out.push_str(&value.replacen(" at ", "@", 1));
            continue;
        } else if in_header && let Some(value) = line.strip_prefix("Date: ") {
            // `Thu Nov  1 11:19:12 2001` (C's asctime, no zone) as RFC 5322 has it, in UTC.
            let parts: Vec<&str> = value.split_whitespace().collect();
            if let [weekday, month, day, time, year] = parts[..] {
                out.push_str(&format!(
                    "Date: {weekday}, {day} {month} {year} {time} +0000\n"
                ));
                continue;
            }
        }
        out.push_str(line);
    }
    out.into_bytes()
}

/// The notmuch project's test mail: LKML threads and the notmuch list's first days,
/// bottom-posted and interleaved replies to patches.
const NOTMUCH: Corpus = Corpus {
    folder: "tests/corpus/notmuch",
    addresses: &["notmuch@notmuchmail.org", "linux-kernel@vger.kernel.org"],
    prepare: as_is,
};

/// Two 3GPP working lists: Outlook replies top-posted above `-----Original Message-----`.
/// The archive kept no To or Cc, so a reply joins a thread only when its sender wrote in it
/// before (§9), and few threads form.
const THREE_GPP: Corpus = Corpus {
    folder: "tests/corpus/3gpp",
    addresses: &[
        "3GPP_TSG_SA_WG4_EVS@LIST.ETSI.ORG",
        "3GPP_TSG_RAN_WG4_NR-MIMO-OTA@LIST.ETSI.ORG",
    ],
    prepare: as_is,
};

/// The Numpy-discussion list in November 2001: questions and answers, bottom-posted and
/// interleaved, as pipermail archived them.
const NUMPY: Corpus = Corpus {
    folder: "tests/corpus/numpy",
    addresses: &["numpy-discussion@lists.sourceforge.net"],
    prepare: pipermail,
};

/// A persona of `addresses` whose only resolver is the thread's last 20 messages.
fn persona(addresses: &[&str], quoted: &str) -> String {
    let addresses: Vec<String> = addresses.iter().map(|a| format!("{a:?}")).collect();
    format!(
        "addresses = [{}]\n\n[mail]\nquoted = \"{quoted}\"\n\n\
         [[message_resolvers]]\nuse = \"ThreadHistory\"\nlimit = 20\n",
        addresses.join(", ")
    )
}

/// A stored message, as the history reads it.
struct Stored {
    message_id: String,
    thread: i64,
    inbound: bool,
    /// Neither body nor attachments: the history skips it (§6 rule 3).
    empty: bool,
}

/// The corpus imported: its database, the personas `keep` and `strip`, and the messages
/// ordered as a history orders them (thread, `sent_at`, `id`).
struct Imported {
    root: tempfile::TempDir,
    url: String,
    import_output: String,
    messages: Vec<Stored>,
}

impl Imported {
    /// An engine on the imported database, with the personas in its root now.
    async fn engine(&self) -> Engine {
        Engine::builder()
            .root(self.root.path())
            .database(&self.url)
            .build()
            .await
            .unwrap()
    }
}

fn import(corpus: &Corpus) -> Imported {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    for quoted in ["keep", "strip"] {
        std::fs::write(
            root.path().join(format!("personas/{quoted}.toml")),
            persona(corpus.addresses, quoted),
        )
        .unwrap();
    }
    let db = root.path().join("corpus.db");
    let url = format!("sqlite://{}?mode=rwc", db.display());
    // The copy imported sits at the same relative path under the temporary root, so the
    // import's report names it as it names the vendored file.
    let folder = root.path().join(corpus.folder);
    copy_prepared(
        &common::project().join(corpus.folder),
        &folder,
        corpus.prepare,
    );
    let out = common::protege_command()
        .arg("--root")
        .arg(root.path())
        .args(["--database", &url, "db", "import-eml"])
        .arg(&folder)
        .args(["--persona", "keep", "--thread-by", "references"])
        .output()
        .unwrap();
    // A message the archive exported without headers is reported and skipped, and the
    // import exits 1; the rest is imported.
    // What the import printed, the workspace's path shown as `<root>`.
    let import_output = format!(
        "exit {}\n{}{}",
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap()
    )
    .replace(&root.path().display().to_string(), "<root>");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut query = conn
        .prepare(
            "SELECT message_id, email_thread_id, direction, \
             TRIM(COALESCE(text_body, '')) = '' AND TRIM(COALESCE(html_text, '')) = '' \
             AND NOT EXISTS (SELECT 1 FROM attachments a WHERE a.message_id = messages.id) \
             FROM messages ORDER BY email_thread_id, sent_at, id",
        )
        .unwrap();
    let messages = query
        .query_map([], |row| {
            Ok(Stored {
                message_id: row.get(0)?,
                thread: row.get(1)?,
                inbound: row.get::<_, String>(2)? == "inbound",
                empty: row.get(3)?,
            })
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    Imported {
        root,
        url,
        import_output,
        messages,
    }
}

/// Copies the folder `from` to `to`, each file through `prepare`.
fn copy_prepared(
    from: &std::path::Path,
    to: &std::path::Path,
    prepare: fn(&str, &[u8]) -> Vec<u8>,
) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_prepared(&entry.path(), &target, prepare);
        } else {
            let name = entry.file_name().into_string().unwrap();
            let bytes = std::fs::read(entry.path()).unwrap();
            std::fs::write(target, prepare(&name, &bytes)).unwrap();
        }
    }
}

/// One history message rendered by both personas.
struct Rendered {
    /// The stored message it renders.
    message_id: String,
    keep: String,
    strip: String,
}

/// What resolving one trigger with both personas gave.
struct Resolved {
    keep_tokens: usize,
    strip_tokens: usize,
    quoted_chars: usize,
    history: Vec<Rendered>,
}

/// The history's messages of `body` (the chain is `ThreadHistory` alone, so all but the
/// trailing user turn).
fn history_contents(body: &Value) -> Vec<String> {
    let messages = body["messages"].as_array().unwrap();
    messages[..messages.len() - 1]
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

async fn resolve(engine: &Engine, trigger: &str, prior: &[&Stored]) -> Resolved {
    let mut outs = Vec::new();
    for persona in ["keep", "strip"] {
        let input = ResolveInput::reply(persona, trigger)
            .format(Format::Messages)
            .explain(true);
        let out = engine.resolve(&input).await.unwrap();
        let step = out
            .steps
            .iter()
            .find(|s| s.name == "ThreadHistory")
            .unwrap()
            .clone();
        outs.push((step, history_contents(&out.body)));
    }
    let (strip, strip_history) = outs.pop().unwrap();
    let (keep, keep_history) = outs.pop().unwrap();
    // The window is the 20 most recent prior messages; the history renders those with a
    // body or attachments, oldest first.
    let window: Vec<&str> = prior[prior.len().saturating_sub(20)..]
        .iter()
        .filter(|m| !m.empty)
        .map(|m| m.message_id.as_str())
        .collect();
    assert_eq!(keep_history.len(), window.len(), "{trigger}");
    assert_eq!(strip_history.len(), window.len(), "{trigger}");
    assert_eq!(keep.mail.quoted_chars, 0);
    let history = window
        .iter()
        .zip(keep_history.into_iter().zip(strip_history))
        .map(|(id, (keep, strip))| Rendered {
            message_id: (*id).to_owned(),
            keep,
            strip,
        })
        .collect();
    Resolved {
        keep_tokens: keep.tokens.unwrap(),
        strip_tokens: strip.tokens.unwrap(),
        quoted_chars: strip.mail.quoted_chars,
        history,
    }
}

/// A corpus measured.
struct Measured {
    import_output: String,
    messages: usize,
    /// Thread sizes, largest first.
    threads: Vec<usize>,
    resolves: usize,
    keep_tokens: usize,
    strip_tokens: usize,
    quoted_chars: usize,
    /// Each history message in its first history: the reply run of the next inbound message
    /// of its thread, in the order of the threads and, within one, of the history.
    first_renders: Vec<Rendered>,
    /// Per resolve: the trigger's Message-ID and the history's tokens with `keep` and
    /// `strip`.
    per_trigger: Vec<(String, usize, usize)>,
}

impl Measured {
    fn saved_percent(&self) -> f64 {
        100.0 * (self.keep_tokens - self.strip_tokens) as f64 / self.keep_tokens as f64
    }

    fn print(&self, name: &str) {
        let size =
            |lo: usize, hi: usize| self.threads.iter().filter(|&&n| n >= lo && n <= hi).count();
        println!(
            "{name}: {} messages in {} threads (1 message: {}, 2-3: {}, 4-9: {}, 10 or more: {}, \
             largest: {}); {} resolves; ThreadHistory tokens keep {} strip {} ({:.1}% fewer); \
             {} quoted chars removed",
            self.messages,
            self.threads.len(),
            size(1, 1),
            size(2, 3),
            size(4, 9),
            size(10, usize::MAX),
            self.threads[0],
            self.resolves,
            self.keep_tokens,
            self.strip_tokens,
            self.saved_percent(),
            self.quoted_chars,
        );
    }
}

async fn measure(corpus: &Corpus) -> Measured {
    let imported = import(corpus);
    let engine = imported.engine().await;
    let mut by_thread: BTreeMap<i64, Vec<&Stored>> = BTreeMap::new();
    for message in &imported.messages {
        by_thread.entry(message.thread).or_default().push(message);
    }
    let mut threads: Vec<usize> = by_thread.values().map(Vec::len).collect();
    threads.sort_unstable_by(|a, b| b.cmp(a));
    let mut measured = Measured {
        import_output: imported.import_output.clone(),
        messages: imported.messages.len(),
        threads,
        resolves: 0,
        keep_tokens: 0,
        strip_tokens: 0,
        quoted_chars: 0,
        first_renders: Vec::new(),
        per_trigger: Vec::new(),
    };
    let mut rendered: HashSet<String> = HashSet::new();
    for thread in by_thread.values() {
        for (i, trigger) in thread.iter().enumerate().skip(1) {
            if !trigger.inbound {
                continue;
            }
            let resolved = resolve(&engine, &trigger.message_id, &thread[..i]).await;
            measured.resolves += 1;
            measured.keep_tokens += resolved.keep_tokens;
            measured.strip_tokens += resolved.strip_tokens;
            measured.quoted_chars += resolved.quoted_chars;
            measured.per_trigger.push((
                trigger.message_id.clone(),
                resolved.keep_tokens,
                resolved.strip_tokens,
            ));
            for render in resolved.history {
                if rendered.insert(render.message_id.clone()) {
                    measured.first_renders.push(render);
                }
            }
        }
    }
    measured
}

/// The figures of the corpora, measured once for the tests of this file.
fn measured() -> &'static [(&'static str, Measured); 3] {
    static MEASURED: std::sync::OnceLock<[(&'static str, Measured); 3]> =
        std::sync::OnceLock::new();
    MEASURED.get_or_init(|| {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            [
                ("notmuch", measure(&NOTMUCH).await),
                ("3gpp", measure(&THREE_GPP).await),
                ("numpy", measure(&NUMPY).await),
            ]
        })
    })
}

#[test]
fn stripping_quoted_text_on_real_threads() {
    let mut figures = Vec::new();
    for (name, m) in measured() {
        m.print(name);
        figures.push((
            *name,
            m.import_output.as_str(),
            m.messages,
            m.threads.len(),
            m.resolves,
            m.keep_tokens,
            m.strip_tokens,
        ));
    }
    let (keep, strip) = figures.iter().fold((0, 0), |(k, s), f| (k + f.5, s + f.6));
    println!(
        "all: ThreadHistory tokens keep {keep} strip {strip} ({:.1}% fewer)",
        100.0 * (keep - strip) as f64 / keep as f64
    );
    assert_eq!(figures, EXPECTED);
}

/// The thread of the guide's before and after (`docs/src/mail.md`): its last reply's
/// history with `keep` and `strip`, and the second history message as each renders it,
/// verbatim in the guide.
#[test]
fn the_thread_of_the_guide() {
    let notmuch = &measured()[0].1;
    let trigger = "<0CE8B6BE3C4AD74AB97D9D29BD24E55201193609@CORPEXCH1.na.ads.idt.com>";
    let tokens = notmuch
        .per_trigger
        .iter()
        .find(|(id, ..)| id == trigger)
        .map(|&(_, keep, strip)| (keep, strip));
    assert_eq!(tokens, Some((3632, 1420)));
    let second = notmuch
        .first_renders
        .iter()
        .find(|r| {
            r.message_id == "<0CE8B6BE3C4AD74AB97D9D29BD24E552011430BC@CORPEXCH1.na.ads.idt.com>"
        })
        .unwrap();
    assert_eq!(
        second.strip,
        "From: Bounine, Alexandre <Alexandre.Bounine@idt.com>\n\
         To: Timur Tabi <timur@freescale.com>\n\
         Cc: Michael Neuling <mikey@neuling.org>, linux-kernel@vger.kernel.org, Alexandre \
         Bounine <abounine@tundra.com>, thomas.moll@sysgo.com, linuxppc-dev@lists.ozlabs.org\n\
         Date: Tue, 3 Aug 2010 13:24:47 +0000\n\
         Subject: RE: [PATCH v2 5/7] powerpc/85xx: Add MChk handler for SRIO port\n\n\
         Yang Li pointed to these patches in his post from July 23, 2010.\n\
         It would be nice to have these patches in mainline code."
    );
    let guide = std::fs::read_to_string(common::project().join("docs/src/mail.md")).unwrap();
    for text in [&second.keep, &second.strip] {
        assert!(guide.contains(&format!("```text\n{text}\n```")), "{text}");
    }
}

/// (corpus, what the import printed, messages, threads, resolves, ThreadHistory tokens
/// with `keep`, with `strip`), each archive threaded by its References
/// (`--thread-by references`): 18.5% fewer tokens on notmuch (patch series and
/// interleaved replies), 75.5% on 3gpp (top-posted), 30.1% on numpy (bottom-posted and
/// interleaved discussion), 23.4% on the three.
type Figures = (
    &'static str,
    &'static str,
    usize,
    usize,
    usize,
    usize,
    usize,
);

const EXPECTED: [Figures; 3] = [
    (
        "notmuch",
        "exit 0\nimported 228 messages, skipped 35 duplicates, 0 failed\n",
        228,
        44,
        184,
        910_233,
        742_303,
    ),
    (
        "3gpp",
        "exit 1\nfailed: <root>/tests/corpus/3gpp/3GPP_TSG_RAN_WG4_NR-MIMO-OTA.mbox#29: not an email: \
         none of the headers `From`, `To`, `Subject`, `Date`, `Message-ID`\n\
         error: imported 104 messages, skipped 4 duplicates, 1 failed\n",
        104,
        67,
        37,
        80_496,
        19_727,
    ),
    (
        "numpy",
        "exit 0\nimported 82 messages, skipped 82 duplicates, 0 failed\n",
        82,
        35,
        47,
        46_100,
        32_218,
    ),
];

/// The lines of `keep` that `strip` lacks, as runs of consecutive lines (1-based line
/// numbers of `keep`), by the longest common subsequence of the two (lines compared
/// without trailing white space, which `strip` trims from its last line). A line that `strip`
/// shows and `keep` does not (a line cut where an attribution starts inside it) joins the
/// run as `[cut to] ` and the text left.
fn removed_runs(keep: &str, strip: &str) -> Vec<(usize, Vec<String>)> {
    let a: Vec<&str> = keep.lines().collect();
    let b: Vec<&str> = strip.lines().collect();
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i].trim_end() == b[j].trim_end() {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut runs: Vec<(usize, Vec<String>)> = Vec::new();
    // The keep line a run reaches: a line removed there extends it.
    let mut reach = None;
    let mut push = |at: usize, line: String, removed: bool| {
        match runs.last_mut() {
            Some((_, lines)) if reach == Some(at) => lines.push(line),
            _ => runs.push((at, vec![line])),
        }
        reach = Some(if removed { at + 1 } else { at });
    };
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i].trim_end() == b[j].trim_end() {
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            push(i + 1, format!("[cut to] {}", b[j]), false);
            j += 1;
        } else {
            push(i + 1, a[i].to_owned(), true);
            i += 1;
        }
    }
    runs
}

#[test]
fn removed_runs_are_found_by_line() {
    assert_eq!(
        removed_runs("a\nb\nc\nd\ne", "a\nd"),
        [
            (2, vec!["b".to_owned(), "c".to_owned()]),
            (5, vec!["e".to_owned()])
        ]
    );
    assert_eq!(removed_runs("a\nb", "a\nb"), []);
    assert_eq!(
        removed_runs("a\nb\nc\nd", "a\nc"),
        [(2, vec!["b".to_owned()]), (4, vec!["d".to_owned()])]
    );
    assert_eq!(
        removed_runs("a\nOk. On Mon wrote:\n> c", "a\nOk."),
        [(
            2,
            vec![
                "[cut to] Ok.".to_owned(),
                "Ok. On Mon wrote:".to_owned(),
                "> c".to_owned()
            ]
        )]
    );
}

/// The sample read by hand: the history messages (each in its first history) from which
/// `strip` removed something, of the corpora in order, every k-th of them with k the
/// number of them divided by 50 (at least 1), so at least 50 are read when there are.
#[test]
#[ignore = "prints the sample of stripped messages for reading"]
fn print_the_sample_of_stripped_messages() {
    let mut stripped: Vec<(&str, &Rendered)> = Vec::new();
    for (name, m) in measured() {
        let of_corpus: Vec<&Rendered> = m
            .first_renders
            .iter()
            .filter(|r| r.keep != r.strip)
            .collect();
        println!(
            "== {name}: {} history messages, {} stripped",
            m.first_renders.len(),
            of_corpus.len()
        );
        // What stripping left quoted: `>` lines still in the stripped text.
        for r in &m.first_renders {
            let quoted: Vec<&str> = r.strip.lines().filter(|l| l.starts_with('>')).collect();
            if !quoted.is_empty() {
                let chars: usize = quoted.iter().map(|l| l.chars().count() + 1).sum();
                println!(
                    "quoted lines left: {} ({} lines, {chars} chars{})",
                    r.message_id,
                    quoted.len(),
                    if r.keep == r.strip {
                        ", nothing removed"
                    } else {
                        ""
                    }
                );
            }
        }
        stripped.extend(of_corpus.into_iter().map(|r| (*name, r)));
    }
    // `CORPUS_SAMPLE_EVERY=1` prints every stripped message (to compare two versions).
    let k = std::env::var("CORPUS_SAMPLE_EVERY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or((stripped.len() / 50).max(1));
    // `CORPUS_SAMPLE_OFFSET=2` reads another sample: the k-th from the third on.
    let offset: usize = std::env::var("CORPUS_SAMPLE_OFFSET")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    println!(
        "== sample: every {k}th of {}, starting at number {}",
        stripped.len(),
        offset + 1
    );
    for (name, r) in stripped.iter().skip(offset).step_by(k) {
        let removed = r.keep.chars().count() - r.strip.chars().count();
        println!("\n### {name} {} ({removed} chars removed)", r.message_id);
        println!("--- as kept:\n{}", r.keep);
        println!("--- removed:");
        for (line, lines) in removed_runs(&r.keep, &r.strip) {
            println!("@{line}");
            for l in lines {
                println!("- {l}");
            }
        }
    }
}

/// A persona answering for `addresses` in Anthropic bodies with `cache_ttl = "auto"`: a
/// policy of about 1,300 tokens as its system prompt (so its breakpoint is over the
/// model's minimum of 1,024), then the thread's last 20 messages in a stable window.
fn cost_persona(addresses: &[&str]) -> String {
    let addresses: Vec<String> = addresses.iter().map(|a| format!("{a:?}")).collect();
    let policy = "You answer questions on this list for the maintainers. Quote the part of a message you answer, keep to the facts the thread gives, and say so when it does not settle a question; never promise a release date, and point to the tracker for bugs. ".repeat(20);
    format!(
        "addresses = [{}]\n\n[model]\nprovider = \"anthropic\"\nname = \"claude-sonnet-4-5\"\ncache_ttl = \"auto\"\n\n\
         [[message_resolvers]]\nuse = \"LoadText\"\ntemplate = \"{policy}\"\n\n\
         [[message_resolvers]]\nuse = \"ThreadHistory\"\nlimit = 20\nwindow = \"stable\"\n",
        addresses.join(", ")
    )
}

/// The input cost of every thread of a database, summed, with each `cache_ttl`.
#[derive(Debug, Default, Clone, Copy)]
struct TtlCosts {
    threads: usize,
    requests: usize,
    auto: f64,
    five: f64,
    hour: f64,
    uncached: f64,
}

/// The cost report of persona `cost` over every thread of `engine`'s database.
async fn ttl_costs(engine: &Engine, threads: impl IntoIterator<Item = i64>) -> TtlCosts {
    let mut costs = TtlCosts::default();
    for thread in threads {
        let report = engine
            .cache_report("cost", thread, Format::Anthropic)
            .await
            .unwrap();
        if report.rows.is_empty() {
            continue;
        }
        costs.threads += 1;
        costs.requests += report.rows.len();
        costs.auto += report.cost(protege::CacheTtl::Auto).unwrap();
        costs.five += report.cost(protege::CacheTtl::FiveMinutes).unwrap();
        costs.hour += report.cost(protege::CacheTtl::OneHour).unwrap();
        costs.uncached += report.uncached_cost().unwrap();
    }
    costs
}

/// `cache_ttl` on real threads and the demo data: the cost of `auto`, `5m` and `1h` (each
/// request sent when its message was), so the guide's table (`docs/src/cost.md`) comes
/// from here. `auto` never costs more than the better fixed choice by more than 2%, and
/// costs less than both on at least one corpus.
#[tokio::test]
async fn cache_ttl_choices_on_real_threads() {
    let mut table = Vec::new();
    for (name, corpus) in [
        ("notmuch", &NOTMUCH),
        ("3gpp", &THREE_GPP),
        ("numpy", &NUMPY),
    ] {
        let imported = import(corpus);
        std::fs::write(
            imported.root.path().join("personas/cost.toml"),
            cost_persona(corpus.addresses),
        )
        .unwrap();
        let engine = imported.engine().await;
        let threads: std::collections::BTreeSet<i64> =
            imported.messages.iter().map(|m| m.thread).collect();
        table.push((name, ttl_costs(&engine, threads).await));
    }
    // The demo data (`examples/data/demo.json`), answered for its support address.
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    std::fs::write(
        root.path().join("personas/cost.toml"),
        cost_persona(&["support@acme.test"]),
    )
    .unwrap();
    let engine = Engine::builder()
        .root(root.path())
        .database(format!(
            "sqlite://{}?mode=rwc",
            root.path().join("demo.db").display()
        ))
        .build()
        .await
        .unwrap();
    let fixture =
        std::fs::read_to_string(common::project().join("examples/data/demo.json")).unwrap();
    protege::db::import_fixture_str(engine.db().await.unwrap(), &fixture)
        .await
        .unwrap();
    let threads = protege::db::list_threads(engine.db().await.unwrap(), 1000)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.thread);
    table.push(("demo", ttl_costs(&engine, threads).await));

    println!("| corpus | threads | requests | `auto` | `5m` | `1h` | without caching |");
    println!("| --- | --: | --: | --: | --: | --: | --: |");
    for (name, c) in &table {
        println!(
            "| {name} | {} | {} | ${:.4} | ${:.4} | ${:.4} | ${:.4} |",
            c.threads, c.requests, c.auto, c.five, c.hour, c.uncached
        );
    }
    for (name, c) in &table {
        let better = c.five.min(c.hour);
        assert!(
            c.auto <= better * 1.02,
            "{name}: auto ${:.4} is over 2% above the better fixed choice ${better:.4}",
            c.auto
        );
    }
    assert!(
        table
            .iter()
            .any(|(_, c)| c.auto < c.five && c.auto < c.hour),
        "auto beats both fixed choices on no corpus: {table:?}"
    );
}
