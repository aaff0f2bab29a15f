//! A mailbox's first connect over IMAP against a real Dovecot (`PROTEGE_TEST_DOVECOT`,
//! installed by `scripts/dovecot-install`; without it the bench says so and stops): a folder
//! of 1,000 messages read with `[inbox] since` by `Engine::fetch_inbox` (list, batched
//! fetches, each message through the write path of `POST /v1/mail`) into a new SQLite
//! database, against importing the same 1,000 messages from `.eml` files with
//! `Engine::import_eml` (the batched import, no IMAP), in the same run. Prints both rates and
//! their ratio (target: the IMAP first connect at 200 messages/s or more).

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::Criterion;
use protege::Engine;

#[path = "../tests/common/dovecot.rs"]
#[allow(dead_code)]
mod dovecot;

const USER: &str = "support@acme.test";
const PASSWORD: &str = "bench-pass-0123";
const PASSWORD_ENV: &str = "PROTEGE_BENCH_IMAP_PASSWORD";
const MESSAGES: usize = 1_000;

/// Message `n`: a customer's question of a few hundred bytes, as most support mail is.
fn mail(n: usize) -> String {
    format!(
        "Received: from mail.example.com by mx.acme.test; Tue, 10 Mar 2026 09:00:01 +0000\r\n\
         Message-ID: <inbox-bench-{n}@example.com>\r\nFrom: Customer {n} <c{n}@example.com>\r\n\
         To: Acme Support <support@acme.test>\r\nSubject: Order A-{n}\r\n\
         Date: Tue, 10 Mar 2026 09:00:00 +0000\r\nContent-Type: text/plain; charset=utf-8\r\n\
         \r\nHello,\r\n\r\nmy order A-{n} has not arrived yet. Could you tell me where it is?\r\n\
         \r\nThank you,\r\nCustomer {n}\r\n"
    )
}

/// An engine on a new SQLite database in `dir`.
async fn engine(root: &Path, dir: &Path) -> Engine {
    let url = format!("sqlite://{}?mode=rwc", dir.join("inbox.db").display());
    Engine::builder()
        .root(root)
        .database(&url)
        .build()
        .await
        .unwrap()
}

fn rate(elapsed: Duration) -> f64 {
    MESSAGES as f64 / elapsed.as_secs_f64()
}

fn main() {
    let Some(dovecot) = dovecot::Dovecot::start_with_users(&[(USER, PASSWORD)]) else {
        println!("inbox bench skipped: set PROTEGE_TEST_DOVECOT=/usr/sbin/dovecot");
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // The folder, appended over IMAP, and the same messages as `.eml` files.
    let root = tempfile::tempdir().unwrap();
    let emls = root.path().join("emls");
    std::fs::create_dir_all(&emls).unwrap();
    for n in 0..MESSAGES {
        dovecot.append(USER, "INBOX", mail(n).as_bytes());
        std::fs::write(emls.join(format!("{n:05}.eml")), mail(n)).unwrap();
    }
    std::fs::create_dir_all(root.path().join("personas")).unwrap();
    std::fs::write(
        root.path().join("personas/support.toml"),
        format!(
            "name = \"support\"\naddresses = [\"support@acme.test\"]\n\n[inbox]\n\
             imap = \"imap://127.0.0.1:{}/INBOX\"\ntls = \"none\"\nuser = \"{USER}\"\n\
             password_env = \"{PASSWORD_ENV}\"\nsince = \"2000-01-01\"\n\n\
             [[message_resolvers]]\nuse = \"ThreadHistory\"\n",
            dovecot.imap_port()
        ),
    )
    .unwrap();
    let env = |name: &str| (name == PASSWORD_ENV).then(|| PASSWORD.to_owned());
    let first_connect = || {
        let db = tempfile::tempdir().unwrap();
        rt.block_on(async {
            let engine = engine(root.path(), db.path()).await;
            let start = Instant::now();
            let passes = engine.fetch_inbox("support", "bench", env).await.unwrap();
            let elapsed = start.elapsed();
            assert_eq!(passes[0].stored, MESSAGES, "{passes:?}");
            elapsed
        })
    };
    let import = || {
        let db = tempfile::tempdir().unwrap();
        rt.block_on(async {
            let engine = engine(root.path(), db.path()).await;
            let start = Instant::now();
            let done = engine
                .import_eml(std::slice::from_ref(&emls), &Default::default())
                .await
                .unwrap();
            let elapsed = start.elapsed();
            assert_eq!(done.summary.imported, MESSAGES, "{}", done.summary);
            elapsed
        })
    };

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("inbox_first_connect_1000");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(30));
    group.bench_function("fetch_inbox", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| first_connect()).sum())
    });
    group.bench_function("import_eml_same_messages", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| import()).sum())
    });
    group.finish();

    // The rates, over the same messages, interleaved.
    let (mut fetched, mut imported) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        fetched.push(first_connect());
        imported.push(import());
    }
    fetched.sort();
    imported.sort();
    let (f, i) = (fetched[2], imported[2]);
    println!(
        "inbox first connect: {:.0} messages/s over IMAP (target >= 200), {:.0} messages/s imported from files; ratio {:.2}",
        rate(f),
        rate(i),
        f.as_secs_f64() / i.as_secs_f64()
    );
    c.final_summary();
}
