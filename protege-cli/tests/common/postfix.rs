//! A private Postfix instance for the tests that deliver mail over SMTP to a real server.
//!
//! [`Postfix::start`] runs one when `PROTEGE_TEST_POSTFIX` names the `postfix` binary
//! (`scripts/postfix-install` installs it and prints its path); without the variable the
//! tests that need it are skipped. Each instance lives in a temporary directory of its own:
//!
//! ```text
//! DIR/config/   main.cf, master.cf, the tables below (and an empty SQLite database)
//! DIR/queue/    queue_directory (created by `postfix start`)
//! DIR/data/     data_directory (the master's lock)
//! DIR/mail/     virtual_mailbox_base: DIR/mail/DOMAIN/LOCAL/{tmp,new,cur}, one Maildir per address
//! DIR/maillog   maillog_file, written by the postlogd service (no syslog)
//! ```
//!
//! Its smtpd listens on a free port of 127.0.0.1 only. Every recipient domain is a virtual
//! mailbox domain (`virtual_mailbox_domains = static:all`), so mail to any address is
//! delivered by the virtual(8) agent into that address's Maildir, `DOMAIN/LOCAL/` in lower
//! case. The mailbox path comes from an `sqlite:` table whose query computes it from the
//! address (`SELECT lower('%d') || '/' || lower('%u') || '/'`, no table read): virtual(8)
//! refuses `$1` substitutions of `regexp:`/`pcre:` tables in a path, and a fixed table would
//! have to list every address in advance; hence the `postfix-sqlite` package
//! (`scripts/postfix-install` installs both). An address with a `/`, or a part starting with
//! a dot, has no mailbox and is refused with 550 at `RCPT TO`. Nothing is relayed: the
//! default and relay transports are `error`, and no lookup goes to DNS. A bounce (a delivery
//! that failed after the message was accepted) goes to the sender's Maildir here, like any
//! other mail. The server offers neither STARTTLS nor AUTH: clients speak plain SMTP.
//! Several instances run at once (the tests of one binary run in parallel threads): they
//! share nothing but the Postfix binaries.
//!
//! [`Postfix::start_with_lmtp`] starts an instance that hands every message to an LMTP
//! server on 127.0.0.1 instead (`virtual_transport = lmtp:inet:127.0.0.1:PORT`), such as a
//! private Dovecot (`common::dovecot`): the recipients are accepted and refused at
//! `RCPT TO` as above, and the LMTP server stores the mail (nothing is in the Maildirs
//! [`Postfix::delivered`] reads); a recipient the LMTP server refuses is bounced, like any
//! failed delivery.
//!
//! Postfix must be started as root (its master binds the port and its daemons switch to the
//! `postfix` user); the tests run as root locally and in CI.

use std::fs;
use std::io::Write as _;
use std::net::TcpListener;
use std::os::unix::fs::{PermissionsExt as _, chown};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// The environment variable naming the `postfix` binary (e.g. `/usr/sbin/postfix`).
pub(crate) const ENV: &str = "PROTEGE_TEST_POSTFIX";

/// The uid and gid the virtual(8) agent delivers as: `nobody`/`nogroup`. Root cannot be
/// used (virtual(8) refuses uids below `virtual_minimum_uid`, at least 1), and a uid that
/// is neither root nor Postfix's own `mail_owner` keeps the mail files apart from the queue.
/// The Maildirs are then owned by 65534 with mode 0700/0600, which root reads.
const MAIL_UID: u32 = 65534;
const MAIL_GID: u32 = 65534;

/// How many ports [`Postfix::start_with`] tries when the one it picked is taken meanwhile.
const PORT_ATTEMPTS: usize = 8;

/// The options of an instance; [`Options::default`] is Postfix's own behaviour.
#[derive(Debug, Clone, Default)]
pub(crate) struct Options {
    /// `message_size_limit` in bytes (advertised as `SIZE N` in the EHLO reply): a message
    /// over it is refused with 552, at `MAIL FROM` with
    /// `552 5.3.4 Message size exceeds fixed limit` when the client declares a larger
    /// `SIZE=`, otherwise after the final `.` of `DATA` with
    /// `552 5.3.4 Error: message file too big`. The limit counts the message as Postfix
    /// stores it, its `Received:` header included. `None` keeps Postfix's default
    /// (10 240 000 bytes); `Some(0)` means no limit.
    pub(crate) message_size_limit: Option<u64>,
}

/// A running private Postfix instance; stopped, and its directory removed, when dropped.
///
/// Besides delivering to any address, it refuses every recipient whose local part starts
/// with `refused` (`refused@example.com`, `refused-kim@acme.test`, in any case) at
/// `RCPT TO` with `550 5.1.1 <ADDRESS>: Recipient address rejected: User unknown`, through
/// a `check_recipient_access regexp:` table in `smtpd_recipient_restrictions`; the other
/// recipients of the same transaction are still accepted.
///
/// Delivered messages are stored as virtual(8) writes them: Postfix's `Return-Path:`,
/// `X-Original-To:` and `Delivered-To:` headers and smtpd's `Received:` header on top of the
/// message as the client sent it, with every line ending in a bare LF (Postfix keeps mail
/// with LF line endings; the CRLF of SMTP is not stored) and the dot-stuffing undone.
/// Headers are not rewritten for 127.0.0.1 (`local_header_rewrite_clients` is empty), so
/// the sender's headers are stored as sent, and none is added when missing.
#[derive(Debug)]
pub(crate) struct Postfix {
    dir: tempfile::TempDir,
    binary: PathBuf,
    port: u16,
    /// `sh` waiting for its stdin to close, then stopping the master and removing the
    /// directory: closed by `Drop`, or by the kernel when the test process dies.
    guardian: Child,
    guardian_stdin: Option<ChildStdin>,
}

impl Postfix {
    /// Starts a private Postfix instance when `PROTEGE_TEST_POSTFIX` names the postfix binary
    /// (e.g. `/usr/sbin/postfix`); `None` (the test is skipped, with a line on stderr) when
    /// the variable is unset or empty. When the variable is set and the instance does not
    /// come up, it panics with Postfix's log.
    pub(crate) fn start() -> Option<Postfix> {
        Self::start_with(Options::default())
    }

    /// [`Postfix::start`] with [`Options`].
    pub(crate) fn start_with(options: Options) -> Option<Postfix> {
        Self::start_delivering(options, None)
    }

    /// [`Postfix::start_with`], every message handed to the LMTP server on
    /// `127.0.0.1:lmtp_port` (`virtual_transport`) instead of virtual(8).
    pub(crate) fn start_with_lmtp(options: Options, lmtp_port: u16) -> Option<Postfix> {
        Self::start_delivering(options, Some(lmtp_port))
    }

    fn start_delivering(options: Options, lmtp_port: Option<u16>) -> Option<Postfix> {
        let binary = match std::env::var_os(ENV) {
            Some(binary) if !binary.is_empty() => PathBuf::from(binary),
            _ => {
                eprintln!(
                    "skipped: {ENV} is not set (run scripts/postfix-install as root, then \
                     {ENV}=/usr/sbin/postfix cargo test ...)"
                );
                return None;
            }
        };
        assert!(
            binary.is_file(),
            "{ENV}={} is not a file (scripts/postfix-install installs Postfix)",
            binary.display()
        );
        let dir = tempfile::Builder::new()
            .prefix("protege-postfix-")
            .tempdir()
            .expect("a temporary directory for Postfix");
        let daemon_directory =
            command_output(Command::new(binary.with_file_name("postconf")).args([
                "-d",
                "-h",
                "daemon_directory",
            ]));
        let guardian = guardian(dir.path(), daemon_directory.trim());
        let mut postfix = Postfix {
            dir,
            binary,
            port: 0,
            guardian_stdin: None,
            guardian,
        };
        postfix.guardian_stdin = postfix.guardian.stdin.take();
        // From here on a panic drops `postfix`, which stops whatever was started.
        postfix.configure(&options, lmtp_port);
        postfix.boot();
        Some(postfix)
    }

    /// The port of its smtpd on 127.0.0.1.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// The messages delivered so far to `address`'s Maildir (`new/` and `cur/`), raw bytes,
    /// oldest first, with Postfix's own added headers (`Return-Path`, `X-Original-To`,
    /// `Delivered-To`, `Received`) as delivered. The domain and the local part are compared
    /// without regard to ASCII case, as Postfix looks addresses up.
    pub(crate) fn delivered(&self, address: &str) -> Vec<Vec<u8>> {
        let (local, domain) = address
            .rsplit_once('@')
            .unwrap_or_else(|| panic!("not an address: {address:?}"));
        let mut messages = Vec::new();
        for domain_dir in matching_dirs(&self.mail_dir(), domain) {
            for maildir in matching_dirs(&domain_dir, local) {
                for sub in ["new", "cur"] {
                    let Ok(entries) = fs::read_dir(maildir.join(sub)) else {
                        continue;
                    };
                    for entry in entries.flatten() {
                        let name = entry.file_name().to_string_lossy().into_owned();
                        let bytes = fs::read(entry.path())
                            .unwrap_or_else(|e| panic!("read {}: {e}", entry.path().display()));
                        messages.push((delivery_order(&name), name, bytes));
                    }
                }
            }
        }
        messages.sort();
        messages.into_iter().map(|(_, _, bytes)| bytes).collect()
    }

    /// Waits (polling, at most `timeout`) until `address` has at least `n` messages, then
    /// returns them all; panics with the log when they have not come by then.
    pub(crate) fn wait_for(&self, address: &str, n: usize, timeout: Duration) -> Vec<Vec<u8>> {
        let deadline = Instant::now() + timeout;
        loop {
            let messages = self.delivered(address);
            if messages.len() >= n {
                return messages;
            }
            if Instant::now() >= deadline {
                panic!(
                    "{} message(s) delivered to {address} after {timeout:?}, {n} expected; \
                     Postfix's log:\n{}",
                    messages.len(),
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The body of a delivered message with the headers Postfix added on top removed
    /// (everything before the first header the sender wrote): the bytes the client sent,
    /// line endings as stored (LF), dot-stuffing undone.
    ///
    /// The headers removed are the leading `Return-Path:`, `X-Original-To:` and
    /// `Delivered-To:` of the delivery agent and the one `Received:` header of smtpd below
    /// them (with their continuation lines); a `Received:` header the sender wrote stays.
    pub(crate) fn as_sent(raw: &[u8]) -> Vec<u8> {
        const AGENT: [&[u8]; 3] = [b"Return-Path", b"X-Original-To", b"Delivered-To"];
        let mut rest = raw;
        while let Some(colon) = rest.iter().position(|&b| b == b':') {
            let name = &rest[..colon];
            if AGENT.iter().any(|added| name.eq_ignore_ascii_case(added)) {
                rest = after_header(rest);
            } else {
                if name.eq_ignore_ascii_case(b"Received") {
                    rest = after_header(rest);
                }
                break;
            }
        }
        rest.to_vec()
    }

    /// Postfix's log file (`maillog_file`), for assertion messages.
    pub(crate) fn log(&self) -> String {
        fs::read(self.dir.path().join("maillog"))
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_else(|e| format!("(no log: {e})"))
    }

    fn config_dir(&self) -> PathBuf {
        self.dir.path().join("config")
    }

    fn mail_dir(&self) -> PathBuf {
        self.dir.path().join("mail")
    }

    /// Writes `main.cf`, the tables, and the Maildir base.
    fn configure(&self, options: &Options, lmtp_port: Option<u16>) {
        let root = self.dir.path();
        // Postfix's daemons run as `postfix` and virtual(8) as `nobody`: both go through it.
        fs::set_permissions(root, fs::Permissions::from_mode(0o755)).expect("chmod the directory");
        let config = self.config_dir();
        fs::create_dir(&config).expect("mkdir config");
        // The queue directory must exist (`postfix` starts in it); `postfix start` makes
        // its subdirectories and the data directory with their owners.
        fs::create_dir(root.join("queue")).expect("mkdir queue");
        fs::create_dir(self.mail_dir()).expect("mkdir mail");
        chown(self.mail_dir(), Some(MAIL_UID), Some(MAIL_GID)).expect("chown mail");
        let root = root.to_str().expect("a UTF-8 temporary directory");
        let size_limit = match options.message_size_limit {
            Some(limit) => format!("message_size_limit = {limit}\n"),
            None => String::new(),
        };
        let transport = match lmtp_port {
            Some(port) => format!(
                "# Every message goes to the LMTP server on 127.0.0.1:{port}, not to virtual(8).\n\
                 virtual_transport = lmtp:inet:127.0.0.1:{port}\n"
            ),
            None => String::new(),
        };
        let main_cf = format!(
            "\
# A private instance of the protege tests: everything under {root}.
compatibility_level = 3.6
queue_directory = {root}/queue
data_directory = {root}/data
mail_owner = postfix
setgid_group = postdrop
maillog_file = {root}/maillog
maillog_file_prefixes = {root}
syslog_name = postfix-test

myhostname = mx.protege.test
mydomain = protege.test
myorigin = $myhostname
mydestination =
local_recipient_maps =
alias_maps =
alias_database =
relay_domains =
relayhost =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
append_dot_mydomain = no
biff = no
readme_directory = no

# Every domain is delivered here, into a Maildir per address; nothing leaves.
virtual_mailbox_domains = static:all
virtual_mailbox_maps = sqlite:{root}/config/virtual_mailboxes.cf
virtual_mailbox_base = {root}/mail
virtual_uid_maps = static:{MAIL_UID}
virtual_gid_maps = static:{MAIL_GID}
virtual_mailbox_limit = 0
mailbox_size_limit = 0
default_transport = error:5.7.1 this test server relays nothing
relay_transport = error:5.7.1 this test server relays nothing
local_transport = error:5.1.1 this test server has no local users
notify_classes =
# Mail deferred (the LMTP server restarting under it) is tried again within seconds, not
# the default five minutes.
queue_run_delay = 1s
minimal_backoff_time = 1s
maximal_backoff_time = 2s
{size_limit}{transport}
# No DNS anywhere.
smtp_host_lookup = native
lmtp_host_lookup = native
smtp_dns_support_level = disabled
disable_dns_lookups = yes
smtpd_peername_lookup = no

# Accept from anyone on 127.0.0.1, refuse the `refused*` recipients.
smtpd_banner = $myhostname ESMTP Postfix (protege tests)
smtpd_relay_restrictions = permit_mynetworks, reject_unauth_destination
smtpd_recipient_restrictions = check_recipient_access regexp:{root}/config/recipient_access
# Headers as the client wrote them: no rewriting, no missing header added.
local_header_rewrite_clients =
"
        );
        write_config(&config.join("main.cf"), &main_cf);
        // An empty file is an empty SQLite database: the query reads no table.
        write_config(&config.join("empty.sqlite"), "");
        write_config(
            &config.join("virtual_mailboxes.cf"),
            &format!(
                "# LOCAL@DOMAIN -> DIR/mail/domain/local/ (a Maildir), for any address without a\n\
                 # `/`, an empty part or a part starting with a dot.\n\
                 dbpath = {root}/config/empty.sqlite\n\
                 query = SELECT lower('%d') || '/' || lower('%u') || '/' \
                 WHERE instr('%s', '/') = 0 AND '%u' <> '' AND '%d' <> '' \
                 AND substr('%u', 1, 1) <> '.' AND substr('%d', 1, 1) <> '.'\n"
            ),
        );
        write_config(
            &config.join("recipient_access"),
            "/^refused[^@]*@/\t550 5.1.1 User unknown\n",
        );
    }

    /// Writes `master.cf` with a free port and starts the master, trying another port when
    /// smtpd cannot bind the one picked.
    fn boot(&mut self) {
        let mut failures = String::new();
        for _ in 0..PORT_ATTEMPTS {
            self.port = free_port();
            let logged = self.log().len();
            write_config(&self.config_dir().join("master.cf"), &master_cf(self.port));
            let out = Command::new(&self.binary)
                .arg("-c")
                .arg(self.config_dir())
                .arg("start")
                .stdin(Stdio::null())
                .output()
                .unwrap_or_else(|e| panic!("run {} start: {e}", self.binary.display()));
            if out.status.success() {
                return;
            }
            let output = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            let log = self.log();
            let attempt_log = log.get(logged..).unwrap_or(&log);
            failures.push_str(&format!(
                "--- port {} ({}):\n{output}",
                self.port, out.status
            ));
            // Another process took the port meanwhile: the master could not bind it.
            let taken = "Address already in use";
            if !(output.contains(taken) || attempt_log.contains(taken)) {
                break;
            }
        }
        panic!(
            "Postfix did not start ({} -c {} start):\n{failures}--- its log:\n{}",
            self.binary.display(),
            self.config_dir().display(),
            self.log()
        );
    }
}

impl Drop for Postfix {
    /// Closes the guardian's stdin and waits for it: it stops the master as `postfix stop`
    /// does (SIGTERM, which the master passes on to its daemons; SIGKILL to its process
    /// group after 5 seconds), waits for the daemons to leave, and removes the directory.
    fn drop(&mut self) {
        drop(self.guardian_stdin.take());
        let _ = self.guardian.wait();
    }
}

/// `master.cf`: smtpd on 127.0.0.1:PORT and the services delivery needs, none chrooted (a
/// chroot would need copies of system files in every queue directory), with the postlogd
/// service `maillog_file` needs and the lmtp client of [`Postfix::start_with_lmtp`].
fn master_cf(port: u16) -> String {
    format!(
        "\
# service type  private unpriv  chroot  wakeup  maxproc command
127.0.0.1:{port} inet n  -       n       -       -       smtpd
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
verify    unix  -       -       n       -       1       verify
flush     unix  n       -       n       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
proxywrite unix -       -       n       -       1       proxymap
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
virtual   unix  -       n       n       -       -       virtual
lmtp      unix  -       -       n       -       -       lmtp
anvil     unix  -       -       n       -       1       anvil
scache    unix  -       -       n       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
"
    )
}

/// Writes a configuration file dated a minute ago: Postfix reads a file modified within the
/// last second or two again and again, 300 ms apart, until it is older (it could still be
/// being written), which would add two seconds to every start and to the first use of each
/// daemon.
fn write_config(path: &Path, contents: &str) {
    let file = fs::File::create(path).unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
    (&file)
        .write_all(contents.as_bytes())
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    file.set_modified(SystemTime::now() - Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("date {}: {e}", path.display()));
}

/// A port of 127.0.0.1 free a moment ago (the kernel's pick, released at once).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

/// The stdout of `command`, which must succeed.
fn command_output(command: &mut Command) -> String {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("run {command:?}: {e}"));
    assert!(
        out.status.success(),
        "{command:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// Starts the process that stops the instance once its stdin closes: when the `Postfix` is
/// dropped, or when the test process ends in any way (a panic while panicking, an abort, a
/// signal), so no master outlives the tests. It ignores SIGINT and SIGHUP, which a Ctrl-C
/// sends to the whole foreground process group, to outlive the tests in that case too.
fn guardian(dir: &Path, daemon_directory: &str) -> Child {
    const SCRIPT: &str = r#"
trap '' INT HUP
cat >/dev/null
dir=$1 master=$2/master
running() { ! "$master" -c "$dir/config" -t 2>/dev/null; }
# Whether a process of the master's session (it is a session leader) is alive; with no
# procps `ps`, a moment's wait.
alive() {
  if command -v ps >/dev/null; then ps -o stat= --sid "$pid" | grep -qv '^Z'; else [ $i -lt 5 ]; fi
}
if [ -f "$dir/config/main.cf" ] && read -r pid <"$dir/queue/pid/master.pid" 2>/dev/null && running; then
  # As `postfix stop`: SIGTERM to the master, which passes it on to its daemons and exits.
  kill "$pid" 2>/dev/null
  i=0
  while running && [ $i -lt 250 ]; do sleep 0.02; i=$((i + 1)); done
  running && kill -9 -- "-$pid" 2>/dev/null
  i=0
  while alive && [ $i -lt 100 ]; do sleep 0.02; i=$((i + 1)); done
fi
rm -rf -- "$dir"
"#;
    let mut command = Command::new("sh");
    command
        .args(["-c", SCRIPT, "postfix-guardian"])
        .arg(dir)
        .arg(daemon_directory)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    // Nothing is ever written: the guardian only waits for the end of its stdin.
    command.spawn().expect("spawn sh")
}

/// The subdirectories of `parent` named `name` in any ASCII case.
fn matching_dirs(parent: &Path, name: &str) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .eq_ignore_ascii_case(name)
        })
        .map(|entry| entry.path())
        .collect();
    dirs.sort();
    dirs
}

/// The delivery time of a Maildir file from its name, as virtual(8) writes it:
/// `SECONDS.VdevIinodeMmicroseconds.host[:2,flags]` (microseconds in decimal).
fn delivery_order(name: &str) -> (u64, u64) {
    let mut parts = name.split('.');
    let seconds = parts
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(u64::MAX);
    let micros = parts
        .next()
        .and_then(|unique| unique.rsplit_once('M'))
        .and_then(|(_, micros)| micros.parse().ok())
        .unwrap_or(0);
    (seconds, micros)
}

/// `header` without its first header field: the line and its continuation lines.
fn after_header(header: &[u8]) -> &[u8] {
    let mut rest = header;
    loop {
        match rest.iter().position(|&b| b == b'\n') {
            Some(end) => rest = &rest[end + 1..],
            None => return &[],
        }
        if !matches!(rest.first(), Some(b' ' | b'\t')) {
            return rest;
        }
    }
}
