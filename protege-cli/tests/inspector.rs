//! The inspector page (`/ui`) in a real browser: headless Chromium against a running
//! `protege serve`, the rendered DOM checked and screenshots saved under
//! `target/inspector/`. Chromium is `PROTEGE_TEST_CHROMIUM` (a path), else
//! `/usr/bin/chromium`; without either the test says it was skipped and passes.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::project;
use common::server::{Server, TOKEN, demo_db};

const NOW: &str = "2026-03-10T08:00:00Z";

/// The browser to drive, or `None` (the test is skipped) when none is installed and
/// `PROTEGE_TEST_CHROMIUM` is unset.
fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PROTEGE_TEST_CHROMIUM").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "PROTEGE_TEST_CHROMIUM is `{}`, which is no file",
            path.display()
        );
        return Some(path);
    }
    let default = Path::new("/usr/bin/chromium");
    if default.is_file() {
        return Some(default.to_owned());
    }
    println!(
        "inspector browser test skipped: no Chromium; install the Debian package `chromium` or set PROTEGE_TEST_CHROMIUM=/path/to/chromium"
    );
    None
}

/// Runs headless Chromium with `args` and `url`, in a profile of its own; its stdout. Fails
/// the test when the browser fails or takes over two minutes.
fn browse(chromium: &Path, args: &[&str], url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--hide-scrollbars",
            "--virtual-time-budget=10000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start `{}`: {e}", chromium.display()));
    // Read the pipes while the browser runs, so a full pipe never stalls it.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).unwrap();
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("Chromium ran over two minutes: {url}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = out.join().unwrap();
    let err = err.join().unwrap();
    assert!(
        status.success(),
        "Chromium failed ({status}) on {url}: {err}"
    );
    out
}

/// The page with the rendered DOM, as Chromium serialises it.
fn dump_dom(chromium: &Path, url: &str) -> String {
    let dom = browse(chromium, &["--dump-dom"], url);
    assert!(dom.contains("<title>protege inspector</title>"), "{dom}");
    dom
}

/// The texts of the elements whose `class` attribute is exactly `class`, in document order,
/// unescaped (the elements hold text only).
fn texts(dom: &str, class: &str) -> Vec<String> {
    let marker = format!("class=\"{class}\"");
    let mut out = Vec::new();
    let mut rest = dom;
    while let Some(at) = rest.find(&marker) {
        rest = &rest[at + marker.len()..];
        let start = rest.find('>').unwrap() + 1;
        let end = start + rest[start..].find('<').unwrap();
        out.push(unescape(&rest[start..end]));
        rest = &rest[end..];
    }
    out
}

/// The text of the element with `id`.
fn text_of(dom: &str, id: &str) -> String {
    let marker = format!("id=\"{id}\"");
    let at = dom
        .find(&marker)
        .unwrap_or_else(|| panic!("no #{id}: {dom}"));
    let rest = &dom[at..];
    let start = rest.find('>').unwrap() + 1;
    let end = start + rest[start..].find('<').unwrap();
    unescape(&rest[start..end])
}

/// The opening tag of the element with `id`.
fn tag_of<'a>(dom: &'a str, id: &str) -> &'a str {
    let marker = format!("id=\"{id}\"");
    let at = dom
        .find(&marker)
        .unwrap_or_else(|| panic!("no #{id}: {dom}"));
    let open = dom[..at].rfind('<').unwrap();
    &dom[open..at + dom[at..].find('>').unwrap() + 1]
}

/// The option labels of the `select` with `id`.
fn options(dom: &str, id: &str) -> Vec<String> {
    let tag = tag_of(dom, id);
    let at = dom.find(tag).unwrap();
    let end = at + dom[at..].find("</select>").unwrap();
    let select = &dom[at..end];
    select
        .split("<option")
        .skip(1)
        .map(|o| unescape(&o[o.find('>').unwrap() + 1..o.find("</option>").unwrap()]))
        .collect()
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&")
}

/// The page's address with a preselection in its fragment.
fn preselected(server: &Server, fragment: &[(&str, &str)]) -> String {
    let fragment: Vec<String> = fragment
        .iter()
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect();
    server.url(&format!("/ui#{}", fragment.join("&")))
}

/// `text` percent-encoded for a fragment's value.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b':' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Where the screenshots go: `target/inspector/`, beside the test binaries.
fn screenshots() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/debug/deps/inspector-HASH
    let target = exe.ancestors().nth(3).unwrap().to_owned();
    let dir = target.join("inspector");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Saves a screenshot of `url` at `width`×`height` to `file`, and checks its size.
fn screenshot(chromium: &Path, url: &str, file: &Path, size: (u32, u32), extra: &[&str]) {
    let _ = std::fs::remove_file(file);
    let mut args = vec![
        format!("--screenshot={}", file.display()),
        format!("--window-size={},{}", size.0, size.1),
    ];
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    browse(chromium, &args, url);
    let png = std::fs::read(file).unwrap_or_else(|e| panic!("no {}: {e}", file.display()));
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{}", file.display());
    let dimension = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    assert_eq!((dimension(16), dimension(20)), size, "{}", file.display());
}

#[tokio::test]
async fn the_page_shows_a_resolved_request_and_the_screenshots_are_saved() {
    let Some(chromium) = chromium() else {
        return;
    };
    let (_dir, url) = demo_db();
    let server = Server::start(&project(), &url, None, &[]);
    let page = preselected(
        &server,
        &[
            ("persona", "support"),
            ("message", "<refund-3@example.com>"),
            ("now", NOW),
        ],
    );
    let dom = dump_dom(&chromium, &page);

    assert_eq!(text_of(&dom, "status"), "Resolved.");
    assert!(tag_of(&dom, "token-panel").contains("hidden"));
    assert!(!tag_of(&dom, "inspector").contains("hidden"));
    assert_eq!(
        options(&dom, "persona"),
        [
            "billing (o4-mini)",
            "digest (gpt-4o)",
            "support (claude-sonnet-4-5)"
        ]
    );
    assert_eq!(options(&dom, "thread").len(), 7, "{dom}");
    let summary = text_of(&dom, "request-summary");
    let sha = summary
        .strip_prefix(
            "support · message <refund-3@example.com> · 12 messages · 639 tokens · sha256 ",
        )
        .and_then(|rest| rest.strip_suffix('…'))
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(
        sha.len() == 16 && sha.bytes().all(|b| b.is_ascii_hexdigit()),
        "{summary}"
    );
    assert_eq!(
        texts(&dom, "resolver"),
        [
            "LoadText",
            "LoadFile",
            "LoadFile",
            "LoadRecord",
            "ThreadHistory",
            "LoadText",
            "(trailing user turn)"
        ]
    );
    assert_eq!(
        texts(&dom, "group-stats"),
        [
            "1 message · 112 tokens",
            "1 message · 97 tokens",
            "1 message · 32 tokens",
            "1 message · 37 tokens",
            "6 messages · 258 tokens",
            "1 message · 29 tokens",
            "1 message · 74 tokens"
        ]
    );
    assert_eq!(
        texts(&dom, "role"),
        [
            "system",
            "system",
            "system",
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant",
            "system",
            "user"
        ]
    );
    assert_eq!(
        texts(&dom, "tokens"),
        [112, 97, 32, 37, 90, 12, 26, 17, 14, 99, 29, 74].map(|n| format!("{n} tokens"))
    );
    assert_eq!(
        texts(&dom, "breakpoint"),
        [
            "cache breakpoint: end of the thread history",
            "cache breakpoint: end of the system prompt (every system message, sent first)",
            "cache breakpoint: end of the request"
        ]
    );
    let file = |path: &str| {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(std::fs::read(project().join(path)).unwrap());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("source: file {path} (sha256 {}…)", &hex[..12])
    };
    assert_eq!(
        texts(&dom, "source"),
        [
            "source: text of LoadText".to_owned(),
            file("prompts/support.md"),
            file("prompts/teams/support-team.md"),
            "source: record customers 1".to_owned(),
            "source: message <refund-1@example.com>".to_owned(),
            "source: tool round run-refund-1 / call_refund_lookup".to_owned(),
            "source: tool round run-refund-1 / call_refund_lookup".to_owned(),
            "source: tool round run-refund-1 / call_refund_issue".to_owned(),
            "source: tool round run-refund-1 / call_refund_issue".to_owned(),
            "source: message <refund-2@acme.test>".to_owned(),
            "source: text of LoadText".to_owned(),
            "source: message <refund-3@example.com>".to_owned(),
        ]
    );
    // The bars: one per block, as wide as its tokens against the largest (112).
    assert!(
        dom.contains("<span class=\"fill\" style=\"width: 100%;\"></span>"),
        "{dom}"
    );
    assert!(
        dom.contains("<span class=\"fill\" style=\"width: 10.7%;\"></span>"),
        "{dom}"
    );

    let dir = screenshots();
    screenshot(&chromium, &page, &dir.join("desktop.png"), (1280, 900), &[]);
    screenshot(&chromium, &page, &dir.join("narrow.png"), (360, 800), &[]);
    screenshot(
        &chromium,
        &page,
        &dir.join("dark.png"),
        (1280, 900),
        &[
            "--force-dark-mode",
            "--blink-settings=preferredColorScheme=0",
        ],
    );
}

#[tokio::test]
async fn stored_mail_is_shown_as_text_never_as_markup() {
    let Some(chromium) = chromium() else {
        return;
    };
    let (_dir, url) = demo_db();
    let server = Server::start(&project(), &url, None, &[]);
    let hostile = "From: Mallory <mallory@example.com>\r\nTo: support@acme.test\r\n\
        Subject: <img src=x onerror=\"document.title='owned'\">\r\n\
        Message-ID: <hostile-1@example.com>\r\nDate: Mon, 09 Mar 2026 10:00:00 +0000\r\n\r\n\
        <script>document.title='owned'</script><b id=\"injected\">bold</b>\r\n";
    let res = server
        .client
        .post(server.url("/v1/mail"))
        .header("content-type", "message/rfc822")
        .body(hostile)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 201);
    let dom = dump_dom(
        &chromium,
        &preselected(
            &server,
            &[
                ("persona", "support"),
                ("message", "<hostile-1@example.com>"),
                ("now", NOW),
            ],
        ),
    );
    assert_eq!(text_of(&dom, "status"), "Resolved.");
    assert!(dom.contains("<title>protege inspector</title>"));
    assert!(!dom.contains("<b id=\"injected\""), "{dom}");
    assert!(
        dom.contains("&lt;b id=\"injected\"&gt;bold&lt;/b&gt;"),
        "{dom}"
    );
    assert!(!dom.contains("<img"), "{dom}");
    assert!(
        dom.contains("&lt;script&gt;document.title='owned'&lt;/script&gt;"),
        "{dom}"
    );
    assert!(
        options(&dom, "thread")
            .iter()
            .any(|o| o.contains("<img src=x onerror=\"document.title='owned'\">")),
        "{dom}"
    );
}

#[tokio::test]
async fn with_a_token_the_page_asks_for_it_and_shows_no_data() {
    let Some(chromium) = chromium() else {
        return;
    };
    let (_dir, url) = demo_db();
    let server = Server::start(&project(), &url, Some(TOKEN), &[]);
    let dom = dump_dom(
        &chromium,
        &preselected(
            &server,
            &[
                ("persona", "support"),
                ("message", "<refund-3@example.com>"),
            ],
        ),
    );
    assert_eq!(text_of(&dom, "status"), "This service needs its token.");
    assert!(!tag_of(&dom, "token-panel").contains("hidden"), "{dom}");
    assert!(tag_of(&dom, "inspector").contains("hidden"), "{dom}");
    assert!(options(&dom, "persona").is_empty(), "{dom}");
    assert!(options(&dom, "thread").is_empty(), "{dom}");
    for data in [
        "claude",
        "Refund for order",
        "alice@example.com",
        "LoadText",
    ] {
        assert!(!dom.contains(data), "{data}: {dom}");
    }
    assert!(texts(&dom, "block-head").is_empty());
}
