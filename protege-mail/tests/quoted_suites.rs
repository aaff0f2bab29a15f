//! `strip_quoted` against the published expectations of two widely used reply parsers,
//! with an empty prior index (their suites hold one message at a time): GitHub's
//! email_reply_parser (MIT) and Mailgun's talon (Apache-2.0), vendored under
//! `tests/fixtures/` with their licences. Each test prints its agreement as `N of M` and
//! asserts the exact list of cases that disagree, so it fails when the agreement
//! changes either way; the reasons are in the comments of each list.
//!
//! Both sides are compared as the parsers produce them: the parsers drop the trailing
//! whitespace of every line and the blank lines around the text, `strip_quoted` keeps
//! the lines that stay untouched, so that whitespace is ignored.

use std::fs;
use std::path::{Path, PathBuf};

use protege_mail::eml::MessageParser;
use protege_mail::{PriorBodies, strip_quoted};

fn fixtures(suite: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(suite)
}

fn read(path: PathBuf) -> String {
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn normalise(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    lines.join("\n").trim_matches('\n').to_owned()
}

/// Runs every case; prints the agreement and each disagreement; returns the names of
/// the cases that disagree.
fn disagreements(suite: &str, cases: &[(String, String, String)]) -> Vec<String> {
    let prior = PriorBodies::new();
    let mut differ = Vec::new();
    for (name, body, expected) in cases {
        let got = normalise(&strip_quoted(body, &prior).text);
        if got != normalise(expected) {
            println!(
                "--- {name}: expected\n{}\n--- got\n{got}\n",
                normalise(expected)
            );
            differ.push(name.clone());
        }
    }
    println!(
        "{suite}: {} of {} agree",
        cases.len() - differ.len(),
        cases.len()
    );
    differ
}

/// github/email_reply_parser, `test/email_reply_parser_test.rb`: the explicit
/// `parse_reply` expectations, and the author's text of every fixture whose fragments
/// the tests pin: the parser's `visible_text` of those fragments (`visible/`), or, where
/// it shows a quoted fragment above an answer as context, the fragments that are
/// neither quoted nor hidden (`authored/`). The agreement with `visible_text` itself is
/// printed and asserted too.
#[test]
fn email_reply_parser_visible_text() {
    const PARSE_REPLY: &[&str] = &[
        "email_2_1",
        "email_2_2",
        "email_2_3",
        "email_iPhone",
        "email_BlackBerry",
        "email_multi_word_sent_from_my_mobile_device",
        "email_sent_from_my_not_signature",
        "email_bullets",
    ];
    const FRAGMENTS: &[&str] = &[
        "correct_sig",
        "email_1_1",
        "email_1_2",
        "email_1_3",
        "email_1_4",
        "email_1_5",
        "email_1_6",
        "email_1_7",
        "email_1_8",
        "email_one_is_not_on",
        "greedy_on",
        "email_sig_delimiter_in_middle_of_line",
    ];
    let dir = fixtures("email_reply_parser");
    let mut visible_cases: Vec<(String, String, String)> = PARSE_REPLY
        .iter()
        .chain(FRAGMENTS)
        .map(|name| {
            let body = read(dir.join(format!("{name}.txt")));
            let visible = read(dir.join("visible").join(format!("{name}.txt")));
            (name.to_string(), body, visible)
        })
        .collect();
    // test_handles_non_ascii_characters
    visible_cases.push((
        "non_ascii".into(),
        "Here’s a test.".into(),
        "Here’s a test.".into(),
    ));
    let cases: Vec<(String, String, String)> = visible_cases
        .iter()
        .map(|(name, body, visible)| {
            let authored = dir.join("authored").join(format!("{name}.txt"));
            let expected = fs::read_to_string(authored).unwrap_or_else(|_| visible.clone());
            (name.clone(), body.clone(), expected)
        })
        .collect();
    let differ = disagreements("github/email_reply_parser", &cases);
    let explicit = PARSE_REPLY.len() + 1;
    let explicit_differ = differ
        .iter()
        .filter(|d| PARSE_REPLY.contains(&d.as_str()))
        .count();
    println!(
        "  of which parse_reply: {} of {explicit} agree",
        explicit - explicit_differ
    );
    assert_eq!(
        differ,
        [
            // Only a blank line: the answer's paragraph follows "Hi," directly, as the
            // blank line below a removed quote goes with it (talon agrees); the parser
            // keeps it.
            "email_1_2",
        ]
    );
    let differ_visible = disagreements("github/email_reply_parser visible_text", &visible_cases);
    assert_eq!(
        differ_visible,
        [
            // The parser shows the quoted fragments above the answers as context; they
            // are not the author's words.
            "email_1_2",
            "email_1_8",
        ]
    );
}

/// Parses `text_quotations.txt`: cases opened by `### name`, body, `=== expected`,
/// expected text.
fn talon_text_cases(text: &str) -> Vec<(String, String, String)> {
    text.split("### ")
        .skip(1)
        .map(|case| {
            let (name, rest) = case.split_once('\n').expect("a case name line");
            let (body, expected) = rest
                .split_once("\n=== expected\n")
                .expect("an expected part");
            let expected = expected.strip_suffix('\n').unwrap_or(expected);
            (name.to_owned(), body.to_owned(), expected.to_owned())
        })
        .collect()
}

/// mailgun/talon, `tests/text_quotations_test.py`: every `extract_from_plain`
/// expectation (`text_quotations.txt`), and `test_standard_replies` (the text part of
/// each `standard_replies/*.eml`, expected "Hello" or its `*_reply_text`).
#[test]
fn talon_extract_from_plain() {
    let dir = fixtures("talon");
    let mut cases = talon_text_cases(&read(dir.join("text_quotations.txt")));
    let mut emls: Vec<PathBuf> = fs::read_dir(dir.join("standard_replies"))
        .expect("standard_replies")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "eml"))
        .collect();
    emls.sort();
    let parser = MessageParser::default();
    for path in emls {
        let raw = fs::read(&path).expect("eml");
        let message = parser.parse(&raw).expect("a message");
        let body = message.body_text(0).expect("a text part").into_owned();
        let stem = path.file_stem().and_then(|s| s.to_str()).expect("a name");
        let expected = fs::read_to_string(path.with_file_name(format!("{stem}_reply_text")))
            .map_or_else(|_| "Hello".to_owned(), |t| t.trim().to_owned());
        cases.push((format!("standard_replies/{stem}"), body, expected));
    }
    let differ = disagreements("mailgun/talon", &cases);
    assert_eq!(
        differ,
        [
            // Talon keeps forwarded messages; §14 removes a forward header with what
            // follows it.
            "test_dont_parse_quotations_for_forwarded_messages",
            // Talon leaves taglines and signatures to its signature module; §14 removes
            // them.
            "standard_replies/iphone",
            "standard_replies/sparrow",
        ]
    );
}

/// crisp-oss/email-reply-parser (MIT), `test/test.js`: its multi-language cases whose
/// expectation is the first fragment, the author's text (`COMMON_FIRST_FRAGMENT`), above
/// a reply header in English, French, German, Italian, Dutch, Polish, Portuguese, Russian,
/// Norwegian, Finnish, Danish and from Gmail, Outlook, iOS, MSN and Hotmail, vendored under
/// `tests/fixtures/crisp/` with its licence and `cases.txt` (the test names and fixtures).
#[test]
fn crisp_email_reply_parser_first_fragment() {
    let dir = fixtures("crisp");
    let expected = read(dir.join("expected_first_fragment.txt"));
    let cases: Vec<(String, String, String)> = read(dir.join("cases.txt"))
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|line| {
            let fixture = line
                .split_whitespace()
                .nth(1)
                .expect("a test and its fixture");
            let body = read(dir.join(format!("{fixture}.txt")));
            (fixture.to_owned(), body, expected.clone())
        })
        .collect();
    let differ = disagreements("crisp-oss/email-reply-parser", &cases);
    assert_eq!(
        differ,
        [
            // Below the Italian attribution and its quote, an unquoted line ("rhoncus
            // tortor in.") that follows a quoted line ending a sentence: an answer below
            // the quote to strip, a stray wrapped tail to the parser.
            "email_7",
        ]
    );
}
