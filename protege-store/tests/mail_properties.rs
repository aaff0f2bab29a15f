//! Property tests of hostile mail (a few hundred cases each; more with
//! `PROPTEST_CASES`): parsing mutated real messages and mbox files never panics or hangs,
//! HTML to text never panics and stays bounded, and a rendered message always starts with
//! exactly the five header lines (`From`, `To`, `Cc`, `Date`, `Subject`).

use std::path::PathBuf;

use proptest::prelude::*;
use protege::db::{self, EmlOptions, import_eml_paths};
use protege_core::{Attachment, Direction, Email, html_to_text};

fn data(name: &str) -> Vec<u8> {
    std::fs::read(PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/eml")).join(name))
        .expect("test message")
}

const SAMPLES: [&str; 8] = [
    "archive.mbox",
    "attachment.eml",
    "encoded-words.eml",
    "nested.eml",
    "forward.eml",
    "quoted-printable.eml",
    "shift-jis.eml",
    "groups.eml",
];

/// A change to a message's bytes.
#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Remove(usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let tricky = prop::sample::select(vec![
        b"\n".to_vec(),
        b"\r\n".to_vec(),
        b"\0".to_vec(),
        b"\nFrom a@b Mon Jan  5 10:00:00 2026\n".to_vec(),
        b"\n\n".to_vec(),
        b"=?utf-8?q?=0D=0A?=".to_vec(),
        b"--".to_vec(),
        b"boundary=".to_vec(),
        b"=\n".to_vec(),
        vec![0xff, 0xfe],
    ]);
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (
            any::<usize>(),
            prop_oneof![tricky, prop::collection::vec(any::<u8>(), 0..16)]
        )
            .prop_map(|(i, bytes)| Mutation::Insert(i, bytes)),
        (any::<usize>(), 0usize..64).prop_map(|(i, n)| Mutation::Remove(i, n)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(raw: &mut Vec<u8>, m: &Mutation) {
    let at = |i: usize, len: usize| if len == 0 { 0 } else { i % (len + 1) };
    match m {
        Mutation::Flip(i, b) if !raw.is_empty() => {
            let i = i % raw.len();
            raw[i] = *b;
        }
        Mutation::Flip(..) => {}
        Mutation::Insert(i, bytes) => {
            let i = at(*i, raw.len());
            raw.splice(i..i, bytes.iter().copied());
        }
        Mutation::Remove(i, n) => {
            let i = at(*i, raw.len());
            let end = (i + n).min(raw.len());
            raw.drain(i..end);
        }
        Mutation::Truncate(i) => {
            let i = at(*i, raw.len());
            raw.truncate(i);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(200)
    ))]

    #[test]
    fn mutated_messages_import_or_fail_cleanly(
        sample in prop::sample::select(SAMPLES.to_vec()),
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let mut raw = data(sample);
        for m in &mutations {
            apply(&mut raw, m);
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(sample);
        std::fs::write(&path, &raw).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let summary = runtime.block_on(async {
            let conn = db::open("sqlite::memory:").await.unwrap();
            let options = EmlOptions::new(vec!["support@acme.test".into()], "2026-07-01T12:00:00Z".parse().unwrap());
            let summary = import_eml_paths(&conn, &[path], &options).await.expect("import");
            // A second import stores nothing new.
            let again = import_eml_paths(&conn, &[dir.path().join(sample)], &options).await.expect("import");
            prop_assert_eq!(again.imported, 0);
            Ok(summary)
        })?;
        prop_assert!(summary.failed.iter().all(|f| !f.database), "{}", summary);
    }

    #[test]
    fn html_to_text_is_bounded(html in prop_oneof![
        ".{0,400}",
        prop::collection::vec(prop::sample::select(vec![
            "<div>", "</div>", "<p>", "</p>", "<li>", "<ol>", "</ol>", "<ul>", "<br>", "<pre>",
            "</pre>", "<table>", "<td>", "<script>", "</script>", "<style>", "&amp;", "&#0;",
            "&#x110000;", "text", " ", "\n", "<!--", "-->", "<title>", "</li>", "<",
        ]), 0..200).prop_map(|parts| parts.concat()),
    ]) {
        let text = html_to_text(&html);
        // Every character of output comes from the input, or from a list marker
        // (`N. ` for a 4-byte `<li>`) or a line break.
        prop_assert!(text.len() <= 4 * html.len() + 16, "{} bytes from {} bytes", text.len(), html.len());
        prop_assert_eq!(text.trim(), text.as_str());
    }

    #[test]
    fn rendering_keeps_five_header_lines(
        from in "\\PC*|[\\x00-\\x20\\u{85}\\u{2028}\\u{2029}a<>]{0,12}",
        to in prop::collection::vec("[\\x00-\\x1f a-c\\u{2028}]{0,8}", 0..3),
        cc in prop::collection::vec("\\PC{0,8}|[\\r\\n\\t ]{0,4}", 0..3),
        subject in "[\\x00-\\x20\\u{7f}-\\u{9f}\\u{2028}\\u{2029}xyz:]{0,16}",
        filename in "[\\r\\n x]{0,6}",
        body in ".{0,40}",
    ) {
        let m = Email {
            message_id: "<p@example.com>".into(),
            direction: Direction::Inbound,
            from, to, cc, subject,
            sent_at: "2026-01-05T10:00:00Z".parse().unwrap(),
            text_body: Some(body),
            html_body: None,
            html_text: None,
            in_reply_to: None,
            attachments: vec![Attachment {
                attachment_id: "att-1".into(),
                filename,
                content_type: "text/plain\r\n".into(),
                byte_size: 1,
                data: None,
            }],
            reply_headers: Default::default(),
        };
        let text = m.to_llm_text();
        let lines: Vec<&str> = text.split('\n').collect();
        prop_assert!(lines.len() >= 5);
        for (line, label) in lines.iter().zip(["From:", "To:", "Cc:", "Date:", "Subject:"]) {
            prop_assert!(line.starts_with(label), "{:?}", text);
            prop_assert!(!line.contains(['\r', '\u{2028}', '\u{2029}', '\u{85}', '\u{0}']), "{:?}", text);
        }
        prop_assert_eq!(lines.get(5).copied().unwrap_or(""), "");
        let attachments = text.rsplit("\n\nAttachments:\n").next().unwrap();
        prop_assert_eq!(attachments.lines().count(), 1, "{:?}", text);
    }
}
