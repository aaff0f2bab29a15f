//! The inspector page (`/ui`) in a real browser: headless Chromium against a running
//! `protege serve`, the rendered DOM checked, waiting drafts decided, the agent's failed
//! jobs retried and the tool calls its runs wait for approved or rejected through the page
//! (over the DevTools protocol), and screenshots saved under `target/inspector/`. Chromium
//! is `PROTEGE_TEST_CHROMIUM` (a path), else `/usr/bin/chromium`; without either the test
//! says it was skipped and passes.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use protege_agent::standin::{self, Scripted, StandIn};

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
            "support · message <refund-3@example.com> · 12 messages · 655 tokens · sha256 ",
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
            "6 messages · 274 tokens",
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
        [112, 97, 32, 37, 106, 12, 26, 17, 14, 99, 29, 74].map(|n| format!("{n} tokens"))
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

/// A page of headless Chromium driven over the DevTools protocol: a minimal WebSocket
/// client (text frames, client-masked) on a plain TCP stream, so the test needs no
/// WebSocket crate.
struct DevTools {
    child: std::process::Child,
    stream: std::net::TcpStream,
    session: String,
    next_id: u64,
    _profile: tempfile::TempDir,
}

impl DevTools {
    /// Starts Chromium with a DevTools port, and opens `url` in a new page of `width` ×
    /// `height`.
    fn open(chromium: &Path, url: &str, width: u32, height: u32) -> DevTools {
        use std::io::{BufRead as _, Read as _, Write as _};
        let profile = tempfile::tempdir().unwrap();
        let mut child = Command::new(chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-extensions",
                "--remote-debugging-port=0",
                "--remote-allow-origins=*",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start `{}`: {e}", chromium.display()));
        let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut endpoint = None;
        let mut line = String::new();
        while stderr.read_line(&mut line).unwrap() > 0 {
            if let Some(at) = line.find("ws://") {
                endpoint = Some(line[at..].trim().to_owned());
                break;
            }
            line.clear();
        }
        let endpoint = endpoint.expect("Chromium printed no DevTools address");
        // Drain the rest of stderr so the browser never blocks on it.
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = stderr.read_to_end(&mut sink);
        });
        let rest = endpoint.strip_prefix("ws://").unwrap();
        let (host, path) = rest.split_at(rest.find('/').unwrap());
        let mut stream = std::net::TcpStream::connect(host).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&head);
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        let mut tools = DevTools {
            child,
            stream,
            session: String::new(),
            next_id: 0,
            _profile: profile,
        };
        let target = tools.call(
            "Target.createTarget",
            serde_json::json!({"url": "about:blank"}),
        );
        let attached = tools.call(
            "Target.attachToTarget",
            serde_json::json!({"targetId": target["targetId"], "flatten": true}),
        );
        tools.session = attached["sessionId"].as_str().unwrap().to_owned();
        tools.call(
            "Emulation.setDeviceMetricsOverride",
            serde_json::json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}),
        );
        tools.call("Page.navigate", serde_json::json!({"url": url}));
        tools
    }

    fn send_frame(&mut self, text: &str) {
        use std::io::Write as _;
        let payload = text.as_bytes();
        let mut frame = vec![0x81u8];
        match payload.len() {
            n if n < 126 => frame.push(0x80 | n as u8),
            n if n <= 0xffff => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        let mask = [0x5a, 0x17, 0xc3, 0x8e];
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.stream.write_all(&frame).unwrap();
    }

    /// The next whole text message (continuation frames joined; pings and other control
    /// frames skipped).
    fn read_message(&mut self) -> String {
        use std::io::Read as _;
        let mut message = Vec::new();
        loop {
            let mut head = [0u8; 2];
            self.stream.read_exact(&mut head).unwrap();
            let len = match head[1] & 0x7f {
                126 => {
                    let mut n = [0u8; 2];
                    self.stream.read_exact(&mut n).unwrap();
                    u16::from_be_bytes(n) as usize
                }
                127 => {
                    let mut n = [0u8; 8];
                    self.stream.read_exact(&mut n).unwrap();
                    u64::from_be_bytes(n) as usize
                }
                n => n as usize,
            };
            let mut payload = vec![0u8; len];
            self.stream.read_exact(&mut payload).unwrap();
            let opcode = head[0] & 0x0f;
            if opcode >= 0x8 {
                assert_ne!(opcode, 0x8, "the browser closed the DevTools connection");
                continue;
            }
            message.extend_from_slice(&payload);
            if head[0] & 0x80 != 0 {
                return String::from_utf8(message).unwrap();
            }
        }
    }

    /// Calls `method` (on the page once attached) and answers its result.
    fn call(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut command = serde_json::json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            command["sessionId"] = serde_json::json!(self.session);
        }
        self.send_frame(&command.to_string());
        loop {
            let answer: serde_json::Value = serde_json::from_str(&self.read_message()).unwrap();
            if answer["id"] == id {
                assert!(answer.get("error").is_none(), "{method}: {answer}");
                return answer["result"].clone();
            }
        }
    }

    /// The value of `expression` in the page (a promise awaited).
    fn eval(&mut self, expression: &str) -> serde_json::Value {
        let result = self.call(
            "Runtime.evaluate",
            serde_json::json!({"expression": expression, "awaitPromise": true, "returnByValue": true}),
        );
        assert!(
            result.get("exceptionDetails").is_none(),
            "{expression}: {result}"
        );
        result["result"]["value"].clone()
    }

    /// Waits until `expression` is true in the page (at most 30 s); an exception (the page
    /// not loaded yet) counts as false.
    fn wait_for(&mut self, expression: &str) {
        let start = Instant::now();
        let probe = format!(
            "(() => {{ try {{ return Boolean({expression}); }} catch (_) {{ return false; }} }})()"
        );
        while self.eval(&probe) != serde_json::json!(true) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "waited 30 s for {expression}; status: {}",
                self.eval("document.getElementById('status').textContent")
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for DevTools {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `value` as a JavaScript string literal.
fn js(value: &str) -> String {
    serde_json::json!(value).to_string()
}

#[tokio::test]
async fn the_token_typed_once_unlocks_the_page_and_a_pasted_persona_is_diffed() {
    let Some(chromium) = chromium() else {
        return;
    };
    let (_dir, url) = demo_db();
    let server = Server::start(&project(), &url, Some(TOKEN), &[]);
    let page = preselected(
        &server,
        &[
            ("persona", "support"),
            ("message", "<refund-3@example.com>"),
            ("now", NOW),
        ],
    );
    let mut tools = DevTools::open(&chromium, &page, 360, 800);
    tools.wait_for("!document.getElementById('token-panel').hidden");
    assert_eq!(
        tools.eval("document.getElementById('status').textContent"),
        "This service needs its token."
    );
    // No data: the only options are the jobs' state filter's, written in the page.
    assert_eq!(
        tools.eval("document.querySelectorAll('select:not(#jobs-state) option').length"),
        0
    );

    // A wrong token is refused and the form comes back; the right one unlocks the page.
    tools.eval(
        "document.getElementById('token').value = 'wrong'; \
         document.getElementById('token-form').requestSubmit()",
    );
    tools.wait_for(
        "document.getElementById('status').textContent === 'The token was refused: type it again.'",
    );
    tools.eval(&format!(
        "document.getElementById('token').value = {}; \
         document.getElementById('token-form').requestSubmit()",
        js(TOKEN)
    ));
    tools.wait_for("document.getElementById('status').textContent === 'Resolved.'");
    assert_eq!(tools.eval("sessionStorage.getItem('protege-token')"), TOKEN);
    assert_eq!(tools.eval("location.href.includes('s3cret')"), false);
    assert_eq!(tools.eval("document.getElementById('token').value"), "");
    assert_eq!(tools.eval("document.querySelectorAll('.group').length"), 7);
    assert_eq!(
        tools.eval(
            "[...document.querySelectorAll('.block .tokens')].map(e => e.textContent).join(',')"
        ),
        "112 tokens,97 tokens,32 tokens,37 tokens,106 tokens,12 tokens,26 tokens,17 tokens,14 tokens,99 tokens,29 tokens,74 tokens"
    );
    // 360 px wide: nothing wider than the window.
    assert_eq!(
        tools.eval("document.documentElement.scrollWidth <= window.innerWidth"),
        true,
        "{}",
        tools.eval("document.documentElement.scrollWidth")
    );

    // The thread and message pickers list what the routes list.
    tools.eval(
        "const t = document.getElementById('thread'); t.value = '1'; \
         t.dispatchEvent(new Event('change'))",
    );
    tools.wait_for("document.getElementById('message').options.length === 4");
    tools.eval(
        "const m = document.getElementById('message'); m.value = '<refund-1@example.com>'; \
         m.dispatchEvent(new Event('change'))",
    );
    assert_eq!(
        tools.eval("document.getElementById('message-id').value"),
        "<refund-1@example.com>"
    );

    // A pasted persona: the page's diff is the route's.
    let live = std::fs::read_to_string(project().join("personas/support.toml")).unwrap();
    let edited = live.replace("briefly and politely.", "briefly, politely and warmly.");
    assert_ne!(live, edited);
    let res = server
        .client
        .post(server.url("/v1/diff"))
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({"personas": {"support.toml": edited}, "persona": "support", "now": NOW}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let answer: serde_json::Value = res.json().await.unwrap();
    let diff = &answer["personas"][0];
    assert_eq!(diff["status"], "changed");
    let (before, after) = (
        diff["tokens_before"].as_i64().unwrap(),
        diff["tokens_after"].as_i64().unwrap(),
    );
    tools.eval(&format!(
        "document.getElementById('diff-file').value = 'support.toml'; \
         document.getElementById('diff-text').value = {}; \
         document.getElementById('diff-form').requestSubmit()",
        js(&edited)
    ));
    tools.wait_for("document.querySelector('#diff-result .diff')");
    assert_eq!(
        tools.eval("document.getElementById('status').textContent"),
        "The pasted persona changes requests."
    );
    assert_eq!(
        tools.eval("[...document.querySelectorAll('#diff-result .block-head span')].map(e => e.textContent)"),
        serde_json::json!([
            "support",
            "changed",
            format!("{before} → {after} tokens (+{})", after - before)
        ])
    );
    assert_eq!(
        tools.eval("document.querySelector('#diff-result .unified').textContent"),
        diff["first_change"]["diff"].as_str().unwrap().to_owned() + "\n"
    );
    assert_eq!(
        tools.eval("[...document.querySelectorAll('#diff-result .unified .add')].some(e => e.textContent.includes('warmly'))"),
        true
    );
    assert_eq!(
        tools.eval("document.documentElement.scrollWidth <= window.innerWidth"),
        true
    );
}

/// The model's answer of the fixture `good-loop-round-1.json`.
const ANSWER: &str = "Hello Zoe,\n\nyour order A-1042 left our warehouse on 9 March; the carrier has it in transit.\n\nBest,\nAcme Support";

/// A model answer with markup in it, and a line long enough to be folded when encoded.
const HOSTILE: &str = "Hello Zoe,\n\n<img src=x onerror=\"document.title='pwned'\"> <script>document.title='pwned'</script>\n\nGrüße aus Köln — a line long enough for the quoted-printable encoder to fold it once.\n\nAcme Support";

/// An app root of two personas whose replies all wait for a person: `agent`
/// (support@acme.test, text only) and `letters` (letters@acme.test, text and HTML).
fn drafting_root() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    let personas = root.path().join("personas");
    let agent = format!("{}\n[agent]\nreply = \"draft\"\n", common::AGENT);
    std::fs::write(personas.join("agent.toml"), &agent).unwrap();
    let letters = format!(
        "{}html = true\n",
        agent.replace("support@acme.test", "letters@acme.test")
    );
    std::fs::write(personas.join("letters.toml"), letters).unwrap();
    root
}

/// Zoe's mail `id` to `to`, answering `parent` when given; answers its thread's id.
async fn mail(server: &Server, id: &str, to: &str, parent: Option<&str>, date: &str) -> i64 {
    let threading = parent
        .map(|p| format!("In-Reply-To: {p}\r\nReferences: {p}\r\n"))
        .unwrap_or_default();
    let subject = if parent.is_some() {
        "Re: Where is my order?"
    } else {
        "Where is my order?"
    };
    let raw = format!(
        "Message-ID: {id}\r\nFrom: Zoe Lee <zoe@example.com>\r\nTo: {to}\r\n\
         Subject: {subject}\r\nDate: {date}\r\n{threading}\r\nWhere is order A-1042?\r\n"
    );
    let (status, text) = server.post("/v1/mail", "message/rfc822", raw).await;
    assert_eq!(status, 201, "{text}");
    let answer: serde_json::Value = serde_json::from_str(&text).unwrap();
    answer["thread_id"].as_i64().unwrap()
}

/// A run of `persona` answering `trigger` with `text`, and its reply composed: the outbox
/// row, which waits.
async fn drafted(server: &Server, persona: &str, trigger: &str, text: &str) -> serde_json::Value {
    let post = |path: String, body: serde_json::Value| async move {
        let (status, text) = server
            .post(&path, "application/json", body.to_string())
            .await;
        (
            status,
            serde_json::from_str::<serde_json::Value>(&text)
                .unwrap_or_else(|e| panic!("{e}: {text}")),
        )
    };
    let input = serde_json::json!({"persona": persona, "message_id": trigger, "format": "anthropic", "now": "2026-03-10T10:00:00Z"});
    let (status, run) = post("/v1/runs".to_owned(), input).await;
    assert_eq!(status, 201, "{run}");
    let run = run["run_id"].as_str().unwrap().to_owned();
    let fixture =
        project().join("protege-cli/tests/fixtures/responses/anthropic/good-loop-round-1.json");
    let mut response: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    assert_eq!(response["content"][0]["text"], ANSWER);
    response["content"][0]["text"] = serde_json::json!(text);
    let (status, step) = post(
        format!("/v1/runs/{run}/rounds"),
        serde_json::json!({"round": 0, "response": response}),
    )
    .await;
    assert_eq!(
        (status, &step["status"]),
        (200, &serde_json::json!("done")),
        "{step}"
    );
    let (status, composed) = post(format!("/v1/runs/{run}/reply"), serde_json::json!({})).await;
    assert_eq!(status, 201, "{composed}");
    let row = composed["outbox"].clone();
    assert_eq!(
        (&row["state"], &row["reason"]),
        (&serde_json::json!("waiting"), &serde_json::json!("draft")),
        "{composed}"
    );
    row
}

/// The outbox row `id` with its bytes.
async fn outbox_row(server: &Server, id: i64) -> serde_json::Value {
    let (status, text) = server.get(&format!("/v1/outbox/{id}"), Some(TOKEN)).await;
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

/// The `Date` of a reply's bytes as the page shows it: `YYYY-MM-DD HH:MM UTC`.
fn written(raw: &str) -> String {
    let date = raw
        .split("\r\n")
        .find_map(|line| line.strip_prefix("Date: "))
        .unwrap_or_else(|| panic!("no Date: {raw}"));
    chrono::DateTime::parse_from_rfc2822(date)
        .unwrap()
        .with_timezone(&chrono::Utc)
        .format("%Y-%m-%d %H:%M UTC")
        .to_string()
}

/// The text of a single-part reply's bytes: its quoted-printable body decoded, line ends
/// LF, without the line ends that close it.
fn reply_text(raw: &str) -> String {
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let fields: Vec<&str> = head.split("\r\n").collect();
    assert!(
        fields.contains(&"Content-Type: text/plain; charset=utf-8")
            && fields.contains(&"Content-Transfer-Encoding: quoted-printable"),
        "{head}"
    );
    let body = body.replace("=\r\n", "");
    let mut bytes = Vec::new();
    let mut rest = body.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b == b'=' {
            let hex = std::str::from_utf8(&tail[..2]).unwrap();
            bytes.push(u8::from_str_radix(hex, 16).unwrap());
            rest = &tail[2..];
        } else {
            bytes.push(b);
            rest = tail;
        }
    }
    String::from_utf8(bytes)
        .unwrap()
        .replace("\r\n", "\n")
        .trim_end_matches('\n')
        .to_owned()
}

/// Saves the page's viewport as `file` and checks it is a PNG of `size`.
fn capture(tools: &mut DevTools, file: &Path, size: (u32, u32)) {
    use base64::Engine as _;
    let shot = tools.call(
        "Page.captureScreenshot",
        serde_json::json!({"format": "png"}),
    );
    let png = base64::engine::general_purpose::STANDARD
        .decode(shot["data"].as_str().unwrap())
        .unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{}", file.display());
    let dimension = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    assert_eq!((dimension(16), dimension(20)), size, "{}", file.display());
    std::fs::write(file, png).unwrap();
}

#[tokio::test]
async fn waiting_drafts_are_shown_as_text_and_decided_in_the_page() {
    let Some(chromium) = chromium() else {
        return;
    };
    let root = drafting_root();
    let db = format!(
        "sqlite://{}?mode=rwc",
        root.path().join("drafts.db").display()
    );
    let server = Server::start(root.path(), &db, Some(TOKEN), &["--no-watch"]);
    let date = "Tue, 10 Mar 2026 09:00:00 +0000";
    let thread_a = mail(
        &server,
        "<order-a@example.com>",
        "support@acme.test",
        None,
        date,
    )
    .await;
    let thread_b = mail(
        &server,
        "<order-b@example.com>",
        "support@acme.test",
        None,
        date,
    )
    .await;
    mail(
        &server,
        "<order-c@example.com>",
        "letters@acme.test",
        None,
        date,
    )
    .await;
    // The drafts come from runs of the runs API, as an application owning its loop makes
    // them. Mail to a persona with an `[agent]` table gets a job, and a message with a job
    // is the agent's to answer; no agent runs here, so those jobs are taken away first.
    common::server::execute(&db, "DELETE FROM agent_jobs").await;
    let a = drafted(&server, "agent", "<order-a@example.com>", ANSWER).await;
    let b = drafted(&server, "agent", "<order-b@example.com>", ANSWER).await;
    let c = drafted(&server, "letters", "<order-c@example.com>", HOSTILE).await;
    // Zoe writes again in B's thread: B's draft is no longer its thread's newest message.
    let later = "Thu, 01 Jan 2099 09:00:00 +0000";
    assert_eq!(
        mail(
            &server,
            "<order-b2@example.com>",
            "support@acme.test",
            Some("<order-b@example.com>"),
            later
        )
        .await,
        thread_b
    );
    let id = |row: &serde_json::Value| row["id"].as_i64().unwrap();
    let (a_raw, b_raw, c_raw) = (
        outbox_row(&server, id(&a)).await["raw"]
            .as_str()
            .unwrap()
            .to_owned(),
        outbox_row(&server, id(&b)).await["raw"]
            .as_str()
            .unwrap()
            .to_owned(),
        outbox_row(&server, id(&c)).await["raw"]
            .as_str()
            .unwrap()
            .to_owned(),
    );
    assert_eq!(reply_text(&a_raw), ANSWER);
    assert!(
        c_raw.contains("Content-Type: multipart/alternative;"),
        "{c_raw}"
    );
    assert!(c_raw.contains("=\r\n"), "a folded line: {c_raw}");

    let mut tools = DevTools::open(&chromium, &server.url("/ui"), 1280, 900);
    tools.wait_for("!document.getElementById('token-panel').hidden");
    tools.eval(&format!(
        "document.getElementById('token').value = {}; \
         document.getElementById('token-form').requestSubmit()",
        js(TOKEN)
    ));
    tools.wait_for(
        "document.querySelectorAll('.draft-pick').length === 3 && \
         [...document.querySelectorAll('.draft-when')].every(e => e.textContent !== '')",
    );
    assert_eq!(
        tools.eval("document.getElementById('drafts-summary').textContent"),
        "3 drafts wait."
    );
    // Newest first: persona, reason, the reply's Message-ID, when it was written.
    let listed = |row: &serde_json::Value, raw: &str| {
        serde_json::json!([row["persona"], "draft", row["message_id"], written(raw)])
    };
    assert_eq!(
        tools.eval(
            "[...document.querySelectorAll('.draft-pick')].map(b => [...b.children].map(c => c.textContent))"
        ),
        serde_json::json!([listed(&c, &c_raw), listed(&b, &b_raw), listed(&a, &a_raw)])
    );

    // A: its text exactly, beside its thread; edited and approved.
    tools.eval(&format!(
        "document.querySelector('.draft-pick[data-id=\"{}\"]').click()",
        id(&a)
    ));
    tools.wait_for("document.querySelectorAll('#draft-thread li').length === 2");
    assert_eq!(
        tools.eval("document.getElementById('draft-text').textContent"),
        ANSWER
    );
    assert_eq!(
        tools.eval("document.getElementById('draft-edit').value"),
        ANSWER
    );
    assert_eq!(
        tools.eval("document.getElementById('draft-head').textContent"),
        format!("#{} · agent · waiting (draft)", id(&a))
    );
    assert_eq!(
        tools.eval("document.getElementById('draft-thread-summary').textContent"),
        format!("#{thread_a} Where is my order? · 2 messages")
    );
    assert_eq!(
        tools.eval("[...document.querySelectorAll('#draft-thread .thread-direction')].map(e => e.textContent)"),
        serde_json::json!(["inbound", "this draft"])
    );
    assert_eq!(
        tools.eval("document.getElementById('draft-note').hidden"),
        true
    );
    let edited = "Hello Zoe,\n\nyour order A-1042 is on its way: the carrier expects to deliver it on Thursday, 12 March.\n\nHerzliche Grüße,\nAna";
    tools.eval(&format!(
        "document.getElementById('draft-edit').value = {}; \
         document.getElementById('draft-by').value = 'Ana Operator'; \
         document.getElementById('draft-approve').click()",
        js(edited)
    ));
    tools.wait_for("document.getElementById('draft-answer').textContent.startsWith('Approved')");
    assert_eq!(
        tools.eval("document.getElementById('draft-answer').textContent"),
        format!("Approved with the edited text: #{} is queued.", id(&a))
    );
    let approved = outbox_row(&server, id(&a)).await;
    assert_eq!(
        (&approved["state"], &approved["approved_by"]),
        (
            &serde_json::json!("queued"),
            &serde_json::json!("Ana Operator")
        ),
        "{approved}"
    );
    assert_eq!(reply_text(approved["raw"].as_str().unwrap()), edited);
    tools.wait_for("document.querySelectorAll('.draft-pick').length === 2");

    // B: its thread found though a later mail is its newest; rejected with a reason, its
    // text untouched.
    tools.eval(&format!(
        "document.querySelector('.draft-pick[data-id=\"{}\"]').click()",
        id(&b)
    ));
    tools.wait_for("document.querySelectorAll('#draft-thread li').length === 3");
    assert_eq!(
        tools.eval("document.getElementById('draft-text').textContent"),
        ANSWER
    );
    assert_eq!(
        tools.eval("[...document.querySelectorAll('#draft-thread .thread-direction')].map(e => e.textContent)"),
        serde_json::json!(["inbound", "this draft", "inbound"])
    );
    tools.eval(
        "document.getElementById('draft-reason').value = 'The order number is wrong'; \
         document.getElementById('draft-reject').click()",
    );
    tools.wait_for("document.getElementById('draft-answer').textContent.startsWith('Rejected')");
    assert_eq!(
        tools.eval("document.getElementById('draft-answer').textContent"),
        format!("Rejected: #{} is rejected.", id(&b))
    );
    let rejected = outbox_row(&server, id(&b)).await;
    assert_eq!(
        (
            &rejected["state"],
            &rejected["approved_by"],
            &rejected["reason"]
        ),
        (
            &serde_json::json!("rejected"),
            &serde_json::json!("Ana Operator"),
            &serde_json::json!("The order number is wrong")
        ),
        "{rejected}"
    );
    assert_eq!(reply_text(rejected["raw"].as_str().unwrap()), ANSWER);
    tools.wait_for("document.querySelectorAll('.draft-pick').length === 1");

    // C: markup in the model's answer is text; the HTML part is not shown at all.
    tools.eval(&format!(
        "document.querySelector('.draft-pick[data-id=\"{}\"]').click()",
        id(&c)
    ));
    tools.wait_for("document.querySelectorAll('#draft-thread li').length === 2");
    assert_eq!(
        tools.eval("document.getElementById('draft-text').textContent"),
        HOSTILE
    );
    assert_eq!(
        tools.eval("document.getElementById('draft-edit').value"),
        HOSTILE
    );
    assert_eq!(
        tools.eval("document.getElementById('draft-text').children.length"),
        0
    );
    assert_eq!(
        tools.eval(
            "document.querySelectorAll('img, iframe, object, embed, script:not([src])').length"
        ),
        0
    );
    assert_eq!(
        tools.eval("document.getElementById('draft-note').textContent"),
        "It also carries an HTML part made from this text; the HTML is not shown."
    );

    // Someone else approves C first: the page's approval is refused and says why.
    let res = server
        .client
        .post(server.url(&format!("/v1/outbox/{}/approve", id(&c))))
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({"by": "Bo Backup"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let res = server
        .client
        .post(server.url(&format!("/v1/outbox/{}/approve", id(&c))))
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({"by": "Bo Backup"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 409);
    let conflict: serde_json::Value = res.json().await.unwrap();
    let message = conflict["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("`queued`"), "{conflict}");
    tools.eval("document.getElementById('draft-approve').click()");
    tools.wait_for("document.getElementById('draft-answer').textContent.startsWith('Refused')");
    assert_eq!(
        tools.eval("document.getElementById('draft-answer').textContent"),
        format!("Refused (409): {message}")
    );
    assert_eq!(
        tools.eval("document.getElementById('draft-approve').disabled"),
        true
    );
    tools.wait_for("document.getElementById('draft-head').textContent.includes('queued')");
    assert_eq!(
        tools.eval("document.getElementById('draft-head').textContent"),
        format!(
            "#{} · letters · queued (draft) · decided by Bo Backup",
            id(&c)
        )
    );
    assert_eq!(
        outbox_row(&server, id(&c)).await["approved_by"],
        "Bo Backup"
    );
    tools.wait_for("document.getElementById('drafts-summary').textContent === 'No draft waits.'");
    assert_eq!(tools.eval("document.title"), "protege inspector");

    let dir = screenshots();
    tools.eval("document.getElementById('draft').scrollIntoView()");
    capture(&mut tools, &dir.join("drafts.png"), (1280, 900));
    tools.call(
        "Emulation.setDeviceMetricsOverride",
        serde_json::json!({"width": 360, "height": 800, "deviceScaleFactor": 1, "mobile": true}),
    );
    tools.wait_for("window.innerWidth === 360");
    assert_eq!(
        tools.eval("document.documentElement.scrollWidth <= window.innerWidth"),
        true,
        "{}",
        tools.eval("document.documentElement.scrollWidth")
    );
    capture(&mut tools, &dir.join("drafts-narrow.png"), (360, 800));
}

/// A provider's error body holding markup, long enough to be cut in its row.
const PROVIDER_ERROR: &str = "provider answered 400: {\"error\":{\"message\":\"<img src=x onerror=alert(1)> is no valid input\",\"type\":\"invalid_request_error\"}}";

/// Zoe's mail `id` to `to`, dated `date`, with `extra` header lines (each closed by CRLF),
/// posted as inbound mail: the agent receives it.
async fn inbound(server: &Server, id: &str, to: &str, date: &str, extra: &str) {
    let raw = format!(
        "Message-ID: {id}\r\nFrom: Zoe Lee <zoe@example.com>\r\nTo: {to}\r\n\
         Subject: Order {id}\r\nDate: {date}\r\n{extra}\r\nWhere is my order?\r\n"
    );
    let (status, text) = server
        .post("/v1/mail?direction=inbound", "message/rfc822", raw)
        .await;
    assert_eq!(status, 201, "{text}");
}

/// The jobs of `GET /v1/agent/jobs?QUERY`, newest first.
async fn listed_jobs(server: &Server, query: &str) -> Vec<serde_json::Value> {
    let (status, text) = server
        .get(&format!("/v1/agent/jobs?{query}"), Some(TOKEN))
        .await;
    assert_eq!(status, 200, "{text}");
    let answer: serde_json::Value = serde_json::from_str(&text).unwrap();
    answer["jobs"].as_array().unwrap().clone()
}

/// The cells of the rows of the jobs table, as the page shows them.
const JOB_CELLS: &str = "[...document.querySelectorAll('#jobs-rows tr')].map(tr => [...tr.cells].map(c => c.textContent))";

/// The cells of `job`'s row, as the page shows them: `error` is its error as cut, `retry`
/// whether the row has a Retry button.
fn job_cells(job: &serde_json::Value, error: &str, retry: bool) -> serde_json::Value {
    let updated = job["updated_at"].as_str().unwrap();
    serde_json::json!([
        format!("#{}", job["id"]),
        job["persona"],
        job["state"],
        job["reason"].as_str().unwrap_or(""),
        job["attempts"].to_string(),
        job["message_id"],
        job["run_id"].as_str().unwrap_or(""),
        format!("{} UTC", updated[..16].replace('T', " ")),
        error,
        if retry { "Retry" } else { "" },
    ])
}

#[tokio::test]
async fn agent_jobs_are_listed_filtered_and_retried_in_the_page() {
    let Some(chromium) = chromium() else {
        return;
    };
    let root = drafting_root();
    let db = format!(
        "sqlite://{}?mode=rwc",
        root.path().join("jobs.db").display()
    );
    let server = Server::start(root.path(), &db, Some(TOKEN), &["--no-watch"]);
    let now = chrono::Utc::now();
    let date = now.to_rfc2822();
    let old = (now - chrono::Duration::days(30)).to_rfc2822();
    let support = "support@acme.test";
    inbound(&server, "<job-queued@example.com>", support, &date, "").await;
    inbound(
        &server,
        "<job-auto@example.com>",
        support,
        &date,
        "Auto-Submitted: auto-replied\r\n",
    )
    .await;
    inbound(&server, "<job-stale@example.com>", support, &old, "").await;
    inbound(&server, "<job-running@example.com>", support, &date, "").await;
    inbound(&server, "<job-hostile@example.com>", support, &date, "").await;
    inbound(
        &server,
        "<job-letters@example.com>",
        "letters@acme.test",
        &date,
        "",
    )
    .await;
    let all = listed_jobs(&server, "").await;
    let id_of = |message: &str| {
        all.iter()
            .find(|j| j["message_id"] == message)
            .unwrap_or_else(|| panic!("no job of {message}: {all:?}"))["id"]
            .as_i64()
            .unwrap()
    };
    let (running, hostile, letters) = (
        id_of("<job-running@example.com>"),
        id_of("<job-hostile@example.com>"),
        id_of("<job-letters@example.com>"),
    );
    // No provider is called: a worker's states are written as a worker would leave them.
    common::server::execute(
        &db,
        &format!("UPDATE agent_jobs SET state='running', attempts=1 WHERE id={running}"),
    )
    .await;
    common::server::execute(
        &db,
        &format!(
            "UPDATE agent_jobs SET state='failed', reason='provider', attempts=1, error='{PROVIDER_ERROR}' WHERE id={hostile}"
        ),
    )
    .await;
    common::server::execute(
        &db,
        &format!(
            "UPDATE agent_jobs SET state='failed', reason='crashed', attempts=3, error='claimed 3 times without finishing' WHERE id={letters}"
        ),
    )
    .await;
    let all = listed_jobs(&server, "").await;
    assert_eq!(
        all.iter()
            .map(|j| (
                j["persona"].as_str().unwrap(),
                j["state"].as_str().unwrap(),
                j["reason"].as_str()
            ))
            .collect::<Vec<_>>(),
        [
            ("letters", "failed", Some("crashed")),
            ("agent", "failed", Some("provider")),
            ("agent", "running", None),
            ("agent", "skipped", Some("stale")),
            (
                "agent",
                "skipped",
                Some("automated (Auto-Submitted: auto-replied)")
            ),
            ("agent", "queued", None),
        ],
        "{all:?}"
    );
    // The provider's error is cut after 80 characters; its markup is in the part shown.
    let cut: String = PROVIDER_ERROR.chars().take(80).collect::<String>() + "…";
    assert!(cut.contains("<img src=x onerror=alert(1)>"), "{cut}");
    let error_of = |job: &serde_json::Value| match job["error"].as_str() {
        Some(e) if e == PROVIDER_ERROR => cut.clone(),
        Some(e) => e.to_owned(),
        None => String::new(),
    };
    let rows = |jobs: &[serde_json::Value]| {
        serde_json::Value::Array(
            jobs.iter()
                .map(|j| job_cells(j, &error_of(j), j["state"] == "failed"))
                .collect(),
        )
    };

    let mut tools = DevTools::open(&chromium, &server.url("/ui"), 1280, 900);
    tools.wait_for("!document.getElementById('token-panel').hidden");
    tools.eval(&format!(
        "document.getElementById('token').value = {}; \
         document.getElementById('token-form').requestSubmit()",
        js(TOKEN)
    ));
    tools.wait_for("document.querySelectorAll('#jobs-rows tr').length === 6");
    assert_eq!(
        tools.eval("document.getElementById('jobs-summary').textContent"),
        "6 jobs."
    );
    assert_eq!(tools.eval(JOB_CELLS), rows(&all));
    // The error is text: no element made of it, the whole of it on hover.
    let cell = format!("document.querySelector('#jobs-rows tr[data-id=\"{hostile}\"] .job-error')");
    assert_eq!(tools.eval(&format!("{cell}.title")), PROVIDER_ERROR);
    assert_eq!(tools.eval(&format!("{cell}.children.length")), 0);
    assert_eq!(
        tools.eval(
            "document.querySelectorAll('img, iframe, object, embed, script:not([src])').length"
        ),
        0
    );
    assert_eq!(
        tools.eval("[...document.querySelectorAll('#jobs-rows .job-retry')].map(b => [b.dataset.id, b.getAttribute('aria-label'), b.type])"),
        serde_json::json!([
            [letters.to_string(), format!("Retry job #{letters}"), "button"],
            [hostile.to_string(), format!("Retry job #{hostile}"), "button"]
        ])
    );

    let dir = screenshots();
    tools.eval("document.getElementById('jobs-panel').scrollIntoView()");
    capture(&mut tools, &dir.join("jobs.png"), (1280, 900));

    // The state filter lists what the route lists.
    let pick = |state: &str| {
        format!(
            "{{ const s = document.getElementById('jobs-state'); s.value = {}; \
             s.dispatchEvent(new Event('change')); }}",
            js(state)
        )
    };
    tools.eval(&pick("skipped"));
    tools.wait_for("document.getElementById('jobs-summary').textContent === '2 skipped jobs.'");
    assert_eq!(
        tools.eval(JOB_CELLS),
        rows(&listed_jobs(&server, "state=skipped").await)
    );
    tools.eval(&pick("running"));
    tools.wait_for("document.getElementById('jobs-summary').textContent === '1 running job.'");
    assert_eq!(
        tools.eval(JOB_CELLS),
        rows(&listed_jobs(&server, "state=running").await)
    );
    tools.eval(&pick("waiting"));
    tools.wait_for("document.getElementById('jobs-summary').textContent === 'No waiting job.'");
    assert_eq!(tools.eval(JOB_CELLS), serde_json::json!([]));
    assert_eq!(tools.eval("document.getElementById('jobs').hidden"), true);
    tools.eval(&pick("failed"));
    tools.wait_for("document.getElementById('jobs-summary').textContent === '2 failed jobs.'");
    assert_eq!(tools.eval(JOB_CELLS), rows(&all[..2]));

    // Retry: the failed job is queued again, and the list says so.
    tools.eval(&format!(
        "document.querySelector('.job-retry[data-id=\"{hostile}\"]').click()"
    ));
    tools.wait_for("document.getElementById('jobs-answer').textContent.startsWith('Retried')");
    assert_eq!(
        tools.eval("document.getElementById('jobs-answer').textContent"),
        format!("Retried: #{hostile} is queued.")
    );
    tools.wait_for("document.getElementById('jobs-summary').textContent === '1 failed job.'");
    assert_eq!(tools.eval(JOB_CELLS), rows(&all[..1]));
    let retried = listed_jobs(&server, "").await;
    let job = retried.iter().find(|j| j["id"] == hostile).unwrap();
    assert_eq!(
        (
            &job["state"],
            &job["reason"],
            &job["error"],
            &job["attempts"]
        ),
        (
            &serde_json::json!("queued"),
            &serde_json::Value::Null,
            &serde_json::Value::Null,
            &serde_json::json!(0)
        ),
        "{job}"
    );
    tools.eval(&pick(""));
    tools.wait_for("document.getElementById('jobs-summary').textContent === '6 jobs.'");
    assert_eq!(tools.eval(JOB_CELLS), rows(&retried));
    assert_eq!(
        tools.eval(&format!(
            "document.querySelector('#jobs-rows tr[data-id=\"{hostile}\"] .job-state').textContent"
        )),
        "queued"
    );

    // Someone else retries the other failed job first: the page's retry is refused, says
    // why as text, and the list shows the job as it is now.
    let res = server
        .client
        .post(server.url(&format!("/v1/agent/jobs/{letters}/retry")))
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let res = server
        .client
        .post(server.url(&format!("/v1/agent/jobs/{letters}/retry")))
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 409);
    let conflict: serde_json::Value = res.json().await.unwrap();
    let message = conflict["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("`queued`"), "{conflict}");
    tools.eval(&format!(
        "{{ const b = document.querySelector('.job-retry[data-id=\"{letters}\"]'); \
         b.focus(); b.click(); }}"
    ));
    tools.wait_for("document.getElementById('jobs-answer').textContent.startsWith('Refused')");
    assert_eq!(
        tools.eval("document.getElementById('jobs-answer').textContent"),
        format!("Refused (409): {message}")
    );
    assert_eq!(
        tools.eval("document.getElementById('jobs-answer').classList.contains('error')"),
        true
    );
    tools.wait_for("document.querySelectorAll('#jobs-rows .job-retry').length === 0");
    assert_eq!(tools.eval(JOB_CELLS), rows(&listed_jobs(&server, "").await));
    assert_eq!(tools.eval("document.activeElement.id"), "jobs-refresh");

    // A job's Message-ID links to the request its persona would send for it.
    assert_eq!(
        tools.eval(&format!(
            "document.querySelector('#jobs-rows tr[data-id=\"{}\"] .job-message a').getAttribute('href')",
            id_of("<job-queued@example.com>")
        )),
        "#persona=agent&message=%3Cjob-queued%40example.com%3E"
    );
    tools.eval(&format!(
        "document.querySelector('#jobs-rows tr[data-id=\"{}\"] .job-message a').click()",
        id_of("<job-queued@example.com>")
    ));
    tools.wait_for("document.getElementById('status').textContent === 'Resolved.'");
    assert_eq!(
        tools.eval("document.getElementById('message-id').value"),
        "<job-queued@example.com>"
    );
    let summary = tools.eval("document.getElementById('request-summary').textContent");
    assert!(
        summary
            .as_str()
            .unwrap()
            .starts_with("agent · message <job-queued@example.com> · "),
        "{summary}"
    );
    assert_eq!(tools.eval("document.title"), "protege inspector");

    tools.call(
        "Emulation.setDeviceMetricsOverride",
        serde_json::json!({"width": 360, "height": 800, "deviceScaleFactor": 1, "mobile": true}),
    );
    tools.wait_for("window.innerWidth === 360");
    assert_eq!(
        tools.eval("document.documentElement.scrollWidth <= window.innerWidth"),
        true,
        "{}",
        tools.eval("document.documentElement.scrollWidth")
    );
    tools.eval("document.getElementById('jobs-panel').scrollIntoView()");
    capture(&mut tools, &dir.join("jobs-narrow.png"), (360, 800));
}

/// The key the provider stand-in is called with.
const KEY: &str = "sk-test-inspector-key-0123456789";
/// The secret the `issue_refund` tool's calls are signed with.
const SECRET: &str = "tool-secret-inspector-0123456789";
/// The address of the persona of the approvals' test, [`approving_root`].
const SUPPORT: &str = "support@acme.test";

/// The environment of a `serve --agent` whose persona names these.
const AGENT_ENV: [(&str, &str); 2] = [
    ("PROTEGE_TEST_AGENT_KEY", KEY),
    ("PROTEGE_TEST_TOOL_SECRET", SECRET),
];

/// One call the refund tool received: its call id, its input, and whether its signature
/// held.
type Refund = (String, serde_json::Value, bool);

/// A tool server whose `/refund` records each call it receives and answers a refund.
async fn refund_server() -> (String, Arc<Mutex<Vec<Refund>>>) {
    let received = Arc::new(Mutex::new(Vec::new()));
    let record = received.clone();
    let refund = move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
        let record = record.clone();
        async move {
            let now = chrono::Utc::now().timestamp();
            let valid = protege::agent::verify_headers(SECRET, &headers, &body, now).is_ok();
            let id = headers
                .get("x-protege-tool-call")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            let input = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
            record.lock().unwrap().push((id, input, valid));
            r#"{"refund":"R-7","status":"issued"}"#
        }
    };
    let app = axum::Router::new().route("/refund", axum::routing::post(refund));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, received)
}

/// An app root whose `support` persona answers mail through the model at `provider`, and
/// whose one tool, `issue_refund` at `tools`, needs a person's approval.
fn approving_root(provider: &str, tools: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    let persona = format!(
        r#"addresses = ["support@acme.test"]

[model]
provider = "anthropic"
name = "claude-sonnet-4-5"
max_tokens = 1024
base_url = "{provider}"
api_key_env = "PROTEGE_TEST_AGENT_KEY"

[agent]
unauthenticated = "send"

[[tools]]
name = "issue_refund"
description = "Refund an order"
input_schema = {{ type = "object", properties = {{ order = {{ type = "string" }}, amount = {{ type = "number" }}, note = {{ type = "string" }} }}, required = ["order", "amount"] }}
http = {{ url = "{tools}/refund", secret_env = "PROTEGE_TEST_TOOL_SECRET" }}
approval = true

[[message_resolvers]]
use = "LoadText"
template = "You are Acme's support agent."

[[message_resolvers]]
use = "ThreadHistory"
"#
    );
    std::fs::write(root.path().join("personas/support.toml"), persona).unwrap();
    root
}

/// An Anthropic answer calling `issue_refund` once with `input`, as call `id`.
fn refund_call(id: &str, input: serde_json::Value) -> serde_json::Value {
    let mut answer = standin::anthropic_tool_use(&[("issue_refund", input)]);
    answer["content"][0]["id"] = serde_json::json!(id);
    answer
}

/// Polls the jobs of `server` until the job of `message` is in `state` (at most 60 s):
/// the job.
async fn job_in_state(server: &Server, message: &str, state: &str) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let jobs = listed_jobs(server, "").await;
        if let Some(job) = jobs
            .iter()
            .find(|j| j["message_id"] == message && j["state"] == state)
        {
            return job.clone();
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the job of {message} never became {state}: {jobs:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The waiting calls as the page lists them: the item's call id, the tool's name, the call
/// id shown, the input's text, its label, and whether the label names the text area.
const CALL_ITEMS: &str = "[...document.querySelectorAll('#calls-list .waiting-call')].map(li => { \
     const input = li.querySelector('textarea'); const label = li.querySelector('label'); \
     return [li.dataset.id, li.querySelector('.call-name').textContent, \
       li.querySelector('.call-id').textContent, input.value, label.textContent, \
       label.htmlFor === input.id]; })";

/// The text of the element with `id` in the page, as a JavaScript expression.
fn text_js(id: &str) -> String {
    format!("document.getElementById({}).textContent", js(id))
}

/// Clicks job `job`'s Review button (focused first, as a keyboard would) and waits for the
/// calls its run waits for.
fn review(tools: &mut DevTools, job: i64) {
    tools.wait_for(&format!(
        "document.querySelector('.job-review[data-id=\"{job}\"]') !== null"
    ));
    tools.eval(&format!(
        "{{ const b = document.querySelector('.job-review[data-id=\"{job}\"]'); b.focus(); b.click(); }}"
    ));
    tools.wait_for(
        "!document.getElementById('calls-form').hidden && \
         document.querySelectorAll('#calls-list .waiting-call').length > 0",
    );
}

/// Sets the text of the first call's input as a person typing it would.
fn type_input(tools: &mut DevTools, text: &str) {
    tools.eval(&format!(
        "{{ const t = document.getElementById('call-input-0'); t.value = {}; \
         t.dispatchEvent(new Event('input')); }}",
        js(text)
    ));
}

/// The model's input of every `issue_refund` call of the stand-in: markup in its note.
fn asked() -> serde_json::Value {
    serde_json::json!({"amount": 25, "note": "<img src=x onerror=alert(1)>", "order": "A-1042"})
}

/// The call id of the stand-in's call for the mail tagged `tag`.
fn call_id(tag: char) -> String {
    format!("toolu_01{tag}{:020}", 1)
}

/// The id and run of the job of `message` once it waits.
async fn waiting_job(server: &Server, message: &str) -> (i64, String) {
    let job = job_in_state(server, message, "waiting").await;
    (
        job["id"].as_i64().unwrap(),
        job["run_id"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_calls_a_run_waits_for_are_approved_edited_or_rejected_in_the_page() {
    let Some(chromium) = chromium() else {
        return;
    };
    let answer = |text: &str| Scripted::Json(200, standin::anthropic_text(text));
    let provider = StandIn::start([
        Scripted::Json(200, refund_call(&call_id('R'), asked())),
        answer("Hello Zoe,\n\nyour refund of 20 is issued.\n\nAcme Support"),
        Scripted::Json(200, refund_call(&call_id('S'), asked())),
        answer("Hello Zoe,\n\nyour order was refunded on 9 March already.\n\nAcme Support"),
        Scripted::Json(200, refund_call(&call_id('T'), asked())),
        answer("Hello Zoe,\n\nno refund is due.\n\nAcme Support"),
    ])
    .await
    .unwrap();
    let (tools_url, refunds) = refund_server().await;
    let root = approving_root(&provider.base_url(), &tools_url);
    let db = format!(
        "sqlite://{}?mode=rwc",
        root.path().join("calls.db").display()
    );
    let server = Server::start_env(
        root.path(),
        &db,
        Some(TOKEN),
        &["--agent", "--no-watch"],
        &AGENT_ENV,
    );
    let date = chrono::Utc::now().to_rfc2822();
    inbound(&server, "<refund-r@example.com>", SUPPORT, &date, "").await;
    let job = job_in_state(&server, "<refund-r@example.com>", "waiting").await;

    let mut tools = DevTools::open(&chromium, &server.url("/ui"), 1280, 900);
    tools.wait_for("!document.getElementById('token-panel').hidden");
    tools.eval(&format!(
        "document.getElementById('token').value = {}; \
         document.getElementById('token-form').requestSubmit()",
        js(TOKEN)
    ));
    tools.wait_for("document.querySelectorAll('#jobs-rows tr').length === 1");
    let mut cells = job_cells(&job, "", false);
    cells[9] = serde_json::json!("Review calls");
    assert_eq!(tools.eval(JOB_CELLS), serde_json::json!([cells]));
    let id = job["id"].as_i64().unwrap();
    assert_eq!(
        tools.eval("[...document.querySelectorAll('.job-review')].map(b => [b.dataset.id, b.getAttribute('aria-label'), b.getAttribute('aria-controls'), b.getAttribute('aria-expanded'), b.type])"),
        serde_json::json!([[
            id.to_string(),
            format!("Review the calls job #{id} waits for"),
            "calls",
            "false",
            "button"
        ]])
    );
    assert_eq!(tools.eval("document.getElementById('calls').hidden"), true);

    edited_and_approved(&mut tools, &server, &refunds).await;
    rejected_with_a_reason(&mut tools, &server, &provider, &date).await;
    decided_elsewhere_first(&mut tools, &server, &date).await;
    assert_eq!(refunds.lock().unwrap().len(), 1);

    // Closed: the job no longer waits, so the focus goes to the panel's Refresh button.
    tools.eval("document.getElementById('jobs-refresh').click()");
    tools.wait_for("document.querySelectorAll('.job-review').length === 0");
    tools.eval("document.getElementById('calls-close').click()");
    assert_eq!(tools.eval("document.getElementById('calls').hidden"), true);
    assert_eq!(tools.eval("document.activeElement.id"), "jobs-refresh");
    assert_eq!(tools.eval("document.title"), "protege inspector");
    assert_eq!(provider.wire_failures(), Vec::<String>::new());
}

/// The first mail's call, reviewed: shown as the model asked for it, its markup as text;
/// refused with no one named, with an input that is no JSON and with one the schema
/// refuses; then approved with an edited input, which the tool receives exactly, once.
async fn edited_and_approved(tools: &mut DevTools, server: &Server, refunds: &Mutex<Vec<Refund>>) {
    let (job, run) = waiting_job(server, "<refund-r@example.com>").await;
    let first = call_id('R');
    review(tools, job);
    assert_eq!(tools.eval(CALL_ITEMS), call_items(&first));
    assert_eq!(
        tools.eval(&text_js("calls-head")),
        format!("Calls job #{job} waits for")
    );
    assert_eq!(
        tools.eval(&text_js("calls-summary")),
        format!("support · run {run} · round 0 · 1 call waits.")
    );
    assert_eq!(tools.eval("document.activeElement.id"), "calls-head");
    assert_eq!(
        tools.eval(&format!(
            "document.querySelector('.job-review[data-id=\"{job}\"]').getAttribute('aria-expanded')"
        )),
        "true"
    );
    assert_eq!(
        tools.eval(
            "document.querySelectorAll('img, iframe, object, embed, script:not([src])').length"
        ),
        0
    );
    // The item's own elements only: head, name, id, field, label, text area, error.
    assert_eq!(
        tools.eval(
            "document.querySelector('#calls-list .waiting-call').querySelectorAll('*').length"
        ),
        7
    );

    // Nobody named: nothing is sent.
    tools.eval("document.getElementById('calls-approve').click()");
    assert_eq!(
        tools.eval(&text_js("calls-answer")),
        "Type who decides in “Decided by”."
    );
    assert_eq!(tools.eval("document.activeElement.id"), "calls-by");
    tools.eval("document.getElementById('calls-by').value = 'Ana Operator'");

    // An input that is no JSON: its error shown, nothing sent.
    let broken = "{\"order\": \"A-1042\", amount: 20}";
    type_input(tools, broken);
    tools.eval("document.getElementById('calls-approve').click()");
    let parse_error = tools.eval(&format!(
        "(() => {{ try {{ JSON.parse({}); }} catch (e) {{ return e.message; }} }})()",
        js(broken)
    ));
    assert_eq!(
        tools.eval(&text_js("calls-answer")),
        format!("Nothing was sent: the input of issue_refund ({first}) is no valid JSON.")
    );
    assert_eq!(
        tools.eval(&text_js("call-error-0")),
        format!(
            "This input is no valid JSON: {}",
            parse_error.as_str().unwrap()
        )
    );
    assert_eq!(
        tools.eval("[document.activeElement.id, document.activeElement.getAttribute('aria-invalid'), document.activeElement.getAttribute('aria-describedby')]"),
        serde_json::json!(["call-input-0", "true", "call-error-0"])
    );

    // An input the tool's schema refuses: the route's answer, the run still waiting.
    let refused = serde_json::json!({"amount": "twenty", "note": "<img src=x onerror=alert(1)>", "order": "A-1042"});
    type_input(tools, &serde_json::to_string_pretty(&refused).unwrap());
    assert_eq!(
        tools.eval("document.getElementById('call-error-0').hidden"),
        true
    );
    tools.eval("document.getElementById('calls-approve').click()");
    tools.wait_for("document.getElementById('calls-answer').textContent.startsWith('Refused')");
    assert_eq!(
        tools.eval(&text_js("calls-answer")),
        format!(
            "Refused (422): the input of call `{first}` (issue_refund) does not match the tool's schema: $.amount: \"twenty\" is not of type \"number\""
        )
    );
    assert_eq!(
        tools.eval("document.getElementById('calls-answer').classList.contains('error')"),
        true
    );
    assert_eq!(
        tools.eval("document.getElementById('calls-approve').disabled"),
        false
    );
    let (status, body) = server
        .get(&format!("/v1/runs/{run}/waiting"), Some(TOKEN))
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(refunds.lock().unwrap().is_empty());
    screenshots_of_the_calls(tools);

    // Approved with an input the schema accepts: the tool receives exactly it, once.
    let edited = serde_json::json!({"amount": 20, "note": "<img src=x onerror=alert(1)>", "order": "A-1042"});
    type_input(tools, &serde_json::to_string_pretty(&edited).unwrap());
    tools.eval("document.getElementById('calls-approve').click()");
    tools.wait_for("document.getElementById('calls-answer').textContent.startsWith('Approved')");
    assert_eq!(
        tools.eval(&text_js("calls-answer")),
        format!("Approved with 1 edited input: run {run} goes on, job #{job} is queued.")
    );
    assert_eq!(
        tools.eval(&text_js("calls-summary")),
        format!("support · run {run} · round 0 · approved by Ana Operator.")
    );
    assert_eq!(
        tools.eval("document.getElementById('calls-form').hidden"),
        true
    );
    assert_eq!(tools.eval("document.activeElement.id"), "calls-head");
    job_in_state(server, "<refund-r@example.com>", "done").await;
    assert_eq!(*refunds.lock().unwrap(), [(first, edited, true)]);
    tools.eval("document.getElementById('jobs-refresh').click()");
    tools.wait_for(
        "document.querySelectorAll('.job-review').length === 0 && \
         document.querySelector('#jobs-rows .job-state').textContent === 'done'",
    );
}

/// The calls section as the page shows it with a refused input, at 1280 and 360 px wide
/// (where it fits the window): `waiting-calls.png` and `waiting-calls-narrow.png`.
fn screenshots_of_the_calls(tools: &mut DevTools) {
    let dir = screenshots();
    tools.eval("document.getElementById('calls').scrollIntoView()");
    capture(tools, &dir.join("waiting-calls.png"), (1280, 900));
    let metrics = |width: u32, height: u32| serde_json::json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600});
    tools.call("Emulation.setDeviceMetricsOverride", metrics(360, 800));
    tools.wait_for("window.innerWidth === 360");
    assert_eq!(
        tools.eval("document.documentElement.scrollWidth <= window.innerWidth"),
        true,
        "{}",
        tools.eval("document.documentElement.scrollWidth")
    );
    tools.eval("document.getElementById('calls').scrollIntoView()");
    capture(tools, &dir.join("waiting-calls-narrow.png"), (360, 800));
    tools.call("Emulation.setDeviceMetricsOverride", metrics(1280, 900));
    tools.wait_for("window.innerWidth === 1280");
}

/// The calls the page lists for the stand-in's call `id`, as [`CALL_ITEMS`] reads them.
fn call_items(id: &str) -> serde_json::Value {
    serde_json::json!([[
        id,
        "issue_refund",
        id,
        serde_json::to_string_pretty(&asked()).unwrap(),
        format!("Input of issue_refund ({id}), as JSON"),
        true
    ]])
}

/// A second mail's call rejected in the page with a reason, which the model is told in
/// the tool's result; who decides is remembered from the first decision.
async fn rejected_with_a_reason(
    tools: &mut DevTools,
    server: &Server,
    provider: &StandIn,
    date: &str,
) {
    inbound(server, "<refund-s@example.com>", SUPPORT, date, "").await;
    let (job, run) = waiting_job(server, "<refund-s@example.com>").await;
    let second = call_id('S');
    tools.eval("document.getElementById('jobs-refresh').click()");
    review(tools, job);
    assert_eq!(tools.eval(CALL_ITEMS), call_items(&second));
    assert_eq!(
        tools.eval("document.getElementById('calls-by').value"),
        "Ana Operator"
    );
    tools.eval("document.getElementById('calls-reject').click()");
    assert_eq!(
        tools.eval(&text_js("calls-answer")),
        "Type the reason of the rejection: the model is told it."
    );
    assert_eq!(tools.eval("document.activeElement.id"), "calls-reason");
    let reason = "the order was refunded on 9 March";
    tools.eval(&format!(
        "document.getElementById('calls-reason').value = {}; \
         document.getElementById('calls-reject').click()",
        js(reason)
    ));
    tools.wait_for("document.getElementById('calls-answer').textContent.startsWith('Rejected')");
    assert_eq!(
        tools.eval(&text_js("calls-answer")),
        format!("Rejected: run {run} goes on, job #{job} is queued.")
    );
    job_in_state(server, "<refund-s@example.com>", "done").await;
    let requests = provider.requests();
    assert_eq!(requests.len(), 4);
    let told = requests[3].json();
    let last = told["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        last,
        serde_json::json!({"role": "user", "content": [{
            "type": "tool_result",
            "tool_use_id": second,
            "content": format!("rejected by an operator: {reason}"),
            "is_error": true,
            "cache_control": {"type": "ephemeral"}
        }]}),
        "{told}"
    );
}

/// A third mail's call, reviewed in the page but rejected through the route first: the
/// page's approval is refused, says why, and leaves nothing to decide.
async fn decided_elsewhere_first(tools: &mut DevTools, server: &Server, date: &str) {
    inbound(server, "<refund-t@example.com>", SUPPORT, date, "").await;
    let (job, run) = waiting_job(server, "<refund-t@example.com>").await;
    tools.eval("document.getElementById('jobs-refresh').click()");
    review(tools, job);
    let (status, body) = server
        .post(
            &format!("/v1/runs/{run}/reject"),
            "application/json",
            serde_json::json!({"by": "Bo Backup", "reason": "no refund is due"}).to_string(),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    tools.eval("document.getElementById('calls-approve').click()");
    tools.wait_for("document.getElementById('calls-answer').textContent.startsWith('Refused')");
    // The run goes on meanwhile: `started`, or already `done`.
    let conflict = tools.eval(&text_js("calls-answer"));
    assert!(
        ["started", "done"].iter().any(|status| conflict
            == format!(
                "Refused (409): run `{run}` is `{status}`: only a `waiting` run can be approved"
            )
            .as_str()),
        "{conflict}"
    );
    assert_eq!(
        tools.eval(&text_js("calls-summary")),
        format!("support · run {run} · round 0 · no longer waiting.")
    );
    assert_eq!(
        tools.eval("[...document.querySelectorAll('#calls-form .decide')].map(b => b.disabled)"),
        serde_json::json!([true, true])
    );
    job_in_state(server, "<refund-t@example.com>", "done").await;
}
