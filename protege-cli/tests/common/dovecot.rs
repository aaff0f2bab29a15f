//! A private Dovecot instance for the tests that read mail from a real IMAP server.
//!
//! [`Dovecot::start`] runs one when `PROTEGE_TEST_DOVECOT` names the `dovecot` binary
//! (`scripts/dovecot-install` installs it and prints its path); without the variable the
//! tests that need it are skipped. Each instance lives in a temporary directory of its own:
//!
//! ```text
//! DIR/dovecot.conf  the whole configuration (no include of the system's)
//! DIR/users         passwd-file of the users: ADDRESS:{PLAIN}PASSWORD::::::
//! DIR/run/          base_dir: master.pid and the services' sockets
//! DIR/state/        state_dir
//! DIR/mail/         DIR/mail/DOMAIN/LOCAL/, one Maildir per user (INBOX at its root, the
//!                   other folders as Maildir++ subfolders: .Sent/, .Processed/)
//! DIR/home/         the users' home directories, DIR/home/DOMAIN/LOCAL/
//! DIR/dovecot.log   log_path: every service's log, the logins and deliveries included
//! DIR/master.out    what `dovecot` printed when it was last started
//! ```
//!
//! It listens on 127.0.0.1 only: IMAP without TLS (`ssl = no`, plaintext `LOGIN` and
//! `AUTHENTICATE PLAIN` allowed) on one free port, LMTP on another; there is no IMAPS, POP3
//! or submission listener. A user is an address given to [`Dovecot::start_with_users`] or
//! [`Dovecot::add_user`]; user names are compared in lower case (`auth_username_format = %Lu`), so `Support@Acme.test`
//! logs in as `support@acme.test`. LMTP delivers to any recipient that is a user (a
//! `+detail` is ignored: `support+x@acme.test` is `support@acme.test`) and refuses the others
//! at `RCPT TO` with `550 5.1.1 <ADDRESS> User doesn't exist: ADDRESS`; it writes
//! `Return-Path:`, `Delivered-To:` and a `Received:` header on top of the message. Every
//! user has INBOX and the folders `Sent` (special-use `\Sent`) and `Processed` from the
//! start (`auto = create`: Dovecot makes their Maildirs when they are first used); the
//! hierarchy separator is `/`. All mail is stored as
//! `nobody`/`nogroup` (65534), with LF line endings (IMAP serves it with CRLF). IDLE reports
//! a change about half a second after it is made (Dovecot watches the Maildirs with
//! inotify). A failed login is answered after Dovecot's `auth_failure_delay` (up to 2
//! seconds), and the logins after it are not delayed further (no authentication penalty:
//! the auth service logs `Error: net_connect_unix(anvil-auth-penalty) failed` once).
//!
//! The harness itself speaks IMAP to the instance for [`Dovecot::append`],
//! [`Dovecot::messages`] and the folder status, logging in with the users' passwords, and
//! uses `doveadm` for [`Dovecot::change_uidvalidity`].
//!
//! Several instances run at once (the tests of one binary run in parallel threads): they
//! share nothing but the Dovecot binaries. Dovecot must be started as root (its master
//! switches its services to the `dovecot`, `dovenull` and mail users); the tests run as
//! root locally and in CI.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::{PermissionsExt as _, chown};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use rustix::process::{Pid, Signal, kill_process, kill_process_group};

/// The environment variable naming the `dovecot` binary (e.g. `/usr/sbin/dovecot`).
pub(crate) const ENV: &str = "PROTEGE_TEST_DOVECOT";

/// The uid and gid every user's mail is stored as: `nobody`/`nogroup`, neither root nor one
/// of Dovecot's own users. The Maildirs are owned by 65534 with mode 0700/0600, which root
/// reads.
const MAIL_UID: u32 = 65534;
const MAIL_GID: u32 = 65534;

/// How many pairs of ports [`Dovecot::start`] tries when one it picked is taken meanwhile.
const PORT_ATTEMPTS: usize = 8;

/// How long a start, a stop, or an answer of the instance may take before the harness gives
/// up (a watchdog, far above what any of them takes).
const PATIENCE: Duration = Duration::from_secs(30);

/// The folder [`Dovecot::change_uidvalidity`] moves a folder's messages through.
const PARKING: &str = "protege-uidvalidity-parking";

/// A running private Dovecot instance; stopped, and its directory removed, when dropped.
#[derive(Debug)]
pub(crate) struct Dovecot {
    dir: tempfile::TempDir,
    binary: PathBuf,
    doveadm: PathBuf,
    imap_port: u16,
    lmtp_port: u16,
    /// The users (lower-case address -> password), as written to `DIR/users`.
    users: Mutex<Users>,
    /// `sh` waiting for its stdin to close, then stopping the master and removing the
    /// directory: closed by `Drop`, or by the kernel when the test process dies.
    guardian: Child,
    guardian_stdin: Option<ChildStdin>,
}

#[derive(Debug, Default)]
struct Users {
    passwords: BTreeMap<String, String>,
    /// How many times the passwd-file was written (its modification time, see `write_users`).
    writes: u64,
}

/// One message of a folder, as [`Dovecot::messages`] gives it.
pub(crate) type Message = (u32, Vec<String>, Vec<u8>);

impl Dovecot {
    /// Starts a private Dovecot instance, without users, when `PROTEGE_TEST_DOVECOT` names
    /// the dovecot binary (e.g. `/usr/sbin/dovecot`); `None` (the test is skipped, with a
    /// line on stderr) when the variable is unset or empty. When the variable is set and the
    /// instance does not come up, it panics with Dovecot's output and log.
    pub(crate) fn start() -> Option<Dovecot> {
        Self::start_with_users(&[])
    }

    /// [`Dovecot::start`] with users (address, password) already there, as
    /// [`Dovecot::add_user`] adds them but without its wait.
    pub(crate) fn start_with_users(users: &[(&str, &str)]) -> Option<Dovecot> {
        let binary = match std::env::var_os(ENV) {
            Some(binary) if !binary.is_empty() => PathBuf::from(binary),
            _ => {
                eprintln!(
                    "skipped: {ENV} is not set (run scripts/dovecot-install as root, then \
                     {ENV}=/usr/sbin/dovecot cargo test ...)"
                );
                return None;
            }
        };
        assert!(
            binary.is_file(),
            "{ENV}={} is not a file (scripts/dovecot-install installs Dovecot)",
            binary.display()
        );
        let doveadm = doveadm_beside(&binary);
        let dir = tempfile::Builder::new()
            .prefix("protege-dovecot-")
            .tempdir()
            .expect("a temporary directory for Dovecot");
        let guardian = guardian(dir.path());
        let mut dovecot = Dovecot {
            dir,
            binary,
            doveadm,
            imap_port: 0,
            lmtp_port: 0,
            users: Mutex::new(Users::default()),
            guardian_stdin: None,
            guardian,
        };
        dovecot.guardian_stdin = dovecot.guardian.stdin.take();
        // From here on a panic drops `dovecot`, which stops whatever was started.
        dovecot.prepare();
        for (address, password) in users {
            dovecot.set_user(address, password);
        }
        dovecot.boot();
        Some(dovecot)
    }

    /// The port of its IMAP service on 127.0.0.1 (no TLS).
    pub(crate) fn imap_port(&self) -> u16 {
        self.imap_port
    }

    /// The port of its LMTP service on 127.0.0.1.
    pub(crate) fn lmtp_port(&self) -> u16 {
        self.lmtp_port
    }

    /// Adds the user `address` (`LOCAL@DOMAIN`, kept in lower case) with `password`, or
    /// changes its password; it can log in and receive mail once this returns. The password
    /// must not contain `:` or a line end.
    ///
    /// Dovecot reads the passwd-file again when it has changed, but looks at it at most once
    /// a second (a lookup in the second of the previous one uses the copy in memory, even
    /// a lookup that failed): this returns after the next second has begun, up to a second
    /// later. [`Dovecot::start_with_users`] has no such wait.
    pub(crate) fn add_user(&self, address: &str, password: &str) {
        self.set_user(address, password);
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .expect("a clock after 1970");
        let next_second = Duration::from_secs(1) - Duration::from_nanos(now.subsec_nanos().into());
        std::thread::sleep(next_second + Duration::from_millis(20));
    }

    /// Writes the passwd-file with `address` added or changed.
    fn set_user(&self, address: &str, password: &str) {
        let address = address.to_ascii_lowercase();
        let valid = |s: &str| !s.is_empty() && !s.contains(['/', ':', '%']);
        assert!(
            address
                .split_once('@')
                .is_some_and(|(local, domain)| valid(local) && valid(domain))
                && !address.contains(char::is_whitespace)
                && !address.starts_with('.'),
            "not a user address for the harness: {address:?}"
        );
        assert!(
            !password.contains([':', '\r', '\n']),
            "a password of the passwd-file cannot contain ':' or a line end: {password:?}"
        );
        let mut users = self.users.lock().unwrap_or_else(|e| e.into_inner());
        users.passwords.insert(address, password.to_owned());
        users.writes += 1;
        self.write_users(&users);
    }

    /// Appends `raw` to `folder` of `user` (over IMAP, `APPEND`, no flags) and returns its
    /// UID (`APPENDUID`). `raw` should have CRLF line endings, as IMAP clients send: then
    /// `UID FETCH BODY[]` gives back the same bytes.
    pub(crate) fn append(&self, user: &str, folder: &str, raw: &[u8]) -> u32 {
        let mut session = self.session(user);
        let mut command = format!("APPEND {} {{{}+}}\r\n", quoted(folder), raw.len()).into_bytes();
        command.extend_from_slice(raw);
        let (_, done) = session.command(&command);
        session.logout();
        let text = String::from_utf8_lossy(&done);
        let appenduid = text
            .split_once("[APPENDUID ")
            .and_then(|(_, rest)| rest.split_once(']'))
            .and_then(|(codes, _)| codes.split_once(' '))
            .and_then(|(_, uid)| uid.parse().ok());
        appenduid.unwrap_or_else(|| panic!("no APPENDUID in the answer to APPEND: {text}"))
    }

    /// The messages of `folder` of `user`, oldest (lowest UID) first: (UID, flags, raw
    /// bytes as IMAP serves them, `BODY[]`: CRLF line endings). The flags are the
    /// permanent ones (`\Seen`, `\Answered`, keywords...); the session flag `\Recent` is left
    /// out. Read in a session of its own with `EXAMINE` and `BODY.PEEK[]`, which changes
    /// nothing.
    pub(crate) fn messages(&self, user: &str, folder: &str) -> Vec<Message> {
        let mut session = self.session(user);
        session.command(format!("EXAMINE {}", quoted(folder)).as_bytes());
        let (untagged, _) = session.command(b"UID FETCH 1:* (UID FLAGS BODY.PEEK[])");
        session.logout();
        let mut messages = Vec::new();
        for response in untagged {
            let Some(items) = fetch_items(&response) else {
                continue;
            };
            let mut uid = None;
            let mut flags = None;
            let mut body = None;
            let mut items = items.into_iter();
            while let (Some(Value::Atom(name)), Some(value)) = (items.next(), items.next()) {
                match (name.to_ascii_uppercase().as_slice(), value) {
                    (b"UID", Value::Atom(n)) => {
                        uid = std::str::from_utf8(&n).ok().and_then(|n| n.parse().ok());
                    }
                    (b"FLAGS", Value::List(list)) => {
                        flags = Some(
                            list.into_iter()
                                .filter_map(|flag| match flag {
                                    Value::Atom(flag) => {
                                        Some(String::from_utf8_lossy(&flag).into_owned())
                                    }
                                    _ => None,
                                })
                                .filter(|flag| !flag.eq_ignore_ascii_case("\\Recent"))
                                .collect::<Vec<_>>(),
                        );
                    }
                    (b"BODY[]", Value::Bytes(bytes)) => body = Some(bytes),
                    _ => {}
                }
            }
            if let (Some(uid), Some(flags), Some(body)) = (uid, flags, body) {
                messages.push((uid, flags, body));
            }
        }
        messages.sort_by_key(|(uid, _, _)| *uid);
        messages
    }

    /// `folder`'s UIDVALIDITY (IMAP `STATUS`).
    pub(crate) fn uidvalidity(&self, user: &str, folder: &str) -> u32 {
        self.status(user, folder, "UIDVALIDITY")
    }

    /// `folder`'s UIDNEXT, the UID its next message will get (IMAP `STATUS`).
    pub(crate) fn uidnext(&self, user: &str, folder: &str) -> u32 {
        self.status(user, folder, "UIDNEXT")
    }

    /// Gives `folder` of `user` a new UIDVALIDITY (the old one plus one) and new UIDs, as a
    /// server that rebuilt its index would, and returns the new UIDVALIDITY. The messages
    /// stay, in the same order and with their flags, renumbered from the folder's old
    /// UIDNEXT on (not from 1: Dovecot never lowers a folder's UIDNEXT).
    ///
    /// Done with `doveadm` while the server runs: the messages are moved to a parking folder,
    /// the folder's UIDVALIDITY is changed (`doveadm mailbox update --uid-validity`), and
    /// the messages are moved back. An IMAP session that has the folder selected meanwhile
    /// sees `EXPUNGE`s, then is closed with
    /// `* BYE IMAP session state is inconsistent, please relogin.` (and Dovecot logs an
    /// error about the index being reset).
    pub(crate) fn change_uidvalidity(&self, user: &str, folder: &str) -> u32 {
        let old = self.uidvalidity(user, folder);
        let new = match old.wrapping_add(1) {
            0 => 1,
            new => new,
        };
        let count = self.status(user, folder, "MESSAGES");
        let new_text = new.to_string();
        if count > 0 {
            self.doveadm(&["mailbox", "create", "-u", user, PARKING]);
            self.doveadm(&["move", "-u", user, PARKING, "mailbox", folder, "all"]);
        }
        self.doveadm(&[
            "mailbox",
            "update",
            "-u",
            user,
            "--uid-validity",
            &new_text,
            folder,
        ]);
        if count > 0 {
            self.doveadm(&["move", "-u", user, folder, "mailbox", PARKING, "all"]);
            self.doveadm(&["mailbox", "delete", "-u", user, PARKING]);
        }
        let got = self.uidvalidity(user, folder);
        assert_eq!(
            got,
            new,
            "UIDVALIDITY of {folder} after the change; Dovecot's log:\n{}",
            self.log()
        );
        new
    }

    /// Stops the instance (every session is closed) and starts it again on the same ports,
    /// with the same users and mail.
    pub(crate) fn restart(&mut self) {
        self.stop();
        let deadline = Instant::now() + PATIENCE;
        loop {
            match self.run_master() {
                Ok(()) => return,
                // The old listeners or master.pid may linger a moment.
                Err(failure)
                    if (failure.contains("Address already in use")
                        || failure.contains("already running"))
                        && Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(failure) => panic!("Dovecot did not start again:\n{failure}"),
            }
        }
    }

    /// The Maildir of `folder` of `user`: `DIR/mail/DOMAIN/LOCAL/` for INBOX,
    /// `DIR/mail/DOMAIN/LOCAL/.FOLDER/` for the others (Maildir++, a `/` of the folder's name
    /// written `.`). Its `new/` and `cur/` hold the messages, one file each.
    pub(crate) fn maildir(&self, user: &str, folder: &str) -> PathBuf {
        let user = user.to_ascii_lowercase();
        let (local, domain) = user
            .split_once('@')
            .unwrap_or_else(|| panic!("not an address: {user:?}"));
        let root = self.dir.path().join("mail").join(domain).join(local);
        if folder.eq_ignore_ascii_case("INBOX") {
            root
        } else {
            root.join(format!(".{}", folder.replace('/', ".")))
        }
    }

    /// Dovecot's log file (`log_path`), for assertion messages.
    pub(crate) fn log(&self) -> String {
        fs::read(self.dir.path().join("dovecot.log"))
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_else(|e| format!("(no log: {e})"))
    }

    fn config_path(&self) -> PathBuf {
        self.dir.path().join("dovecot.conf")
    }

    /// Makes the directories and the empty passwd-file.
    fn prepare(&self) {
        let root = self.dir.path();
        // Dovecot's services run as `dovecot`, `dovenull` and 65534: all go through it.
        fs::set_permissions(root, fs::Permissions::from_mode(0o755)).expect("chmod the directory");
        for sub in ["run", "state"] {
            fs::create_dir(root.join(sub)).unwrap_or_else(|e| panic!("mkdir {sub}: {e}"));
        }
        for sub in ["mail", "home"] {
            fs::create_dir(root.join(sub)).unwrap_or_else(|e| panic!("mkdir {sub}: {e}"));
            chown(root.join(sub), Some(MAIL_UID), Some(MAIL_GID))
                .unwrap_or_else(|e| panic!("chown {sub}: {e}"));
        }
        let users = self.users.lock().unwrap_or_else(|e| e.into_inner());
        self.write_users(&users);
    }

    /// Writes `DIR/users` whole, through a rename (the auth service never reads half a
    /// file), with a modification time of its own (Dovecot reads the file again when its
    /// modification time, counted in seconds, or its size changes).
    fn write_users(&self, users: &Users) {
        let mut text = String::new();
        for (address, password) in &users.passwords {
            text.push_str(&format!("{address}:{{PLAIN}}{password}::::::\n"));
        }
        let path = self.dir.path().join("users");
        let partial = self.dir.path().join("users.partial");
        let file = fs::File::create(&partial).expect("create the passwd-file");
        (&file)
            .write_all(text.as_bytes())
            .expect("write the passwd-file");
        file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + users.writes))
            .expect("date the passwd-file");
        // The auth service runs as `dovecot`.
        fs::set_permissions(&partial, fs::Permissions::from_mode(0o644))
            .expect("chmod the passwd-file");
        fs::rename(&partial, &path).expect("rename the passwd-file");
    }

    /// Writes `dovecot.conf` with free ports and starts the master, trying other ports when
    /// one of them cannot be bound.
    fn boot(&mut self) {
        let mut failures = String::new();
        for _ in 0..PORT_ATTEMPTS {
            (self.imap_port, self.lmtp_port) = free_ports();
            fs::write(
                self.config_path(),
                config(self.dir.path(), self.imap_port, self.lmtp_port),
            )
            .expect("write dovecot.conf");
            match self.run_master() {
                Ok(()) => return,
                Err(failure) => {
                    failures.push_str(&format!(
                        "--- ports {} and {}:\n{failure}",
                        self.imap_port, self.lmtp_port
                    ));
                    // Another process took a port meanwhile.
                    if !failure.contains("Address already in use") {
                        break;
                    }
                }
            }
        }
        panic!(
            "Dovecot did not start ({} -c {}):\n{failures}",
            self.binary.display(),
            self.config_path().display(),
        );
    }

    /// Runs `dovecot -c CONF`, which checks the configuration, binds the listeners, and
    /// leaves the master running in the background; `Err` with its output and the new lines
    /// of the log when it fails. Its output goes to `DIR/master.out`, not to a pipe: the
    /// master and its log service keep their stderr open for good.
    fn run_master(&self) -> Result<(), String> {
        let logged = self.log().len();
        let out_path = self.dir.path().join("master.out");
        let out = fs::File::create(&out_path).expect("create master.out");
        let status = Command::new(&self.binary)
            .arg("-c")
            .arg(self.config_path())
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("clone master.out"))
            .stderr(out)
            .status()
            .unwrap_or_else(|e| panic!("run {}: {e}", self.binary.display()));
        if status.success() {
            return Ok(());
        }
        let log = self.log();
        Err(format!(
            "{status}\n{}--- its log:\n{}",
            String::from_utf8_lossy(&fs::read(&out_path).unwrap_or_default()),
            log.get(logged..).unwrap_or(&log)
        ))
    }

    /// Stops the master and waits until every process of its session is gone: SIGTERM to
    /// the master, then, once it has exited, SIGTERM to its process group (a session's imap
    /// process outlives the master by 10 seconds otherwise; on SIGTERM it says
    /// `* BYE Server shutting down.` and leaves), SIGKILL to the group when it is not gone
    /// after the patience.
    fn stop(&self) {
        let Some(master) = master_pid(self.dir.path()) else {
            return;
        };
        let _ = kill_process(master, Signal::TERM);
        wait_until(PATIENCE, || !process_alive(master));
        let _ = kill_process_group(master, Signal::TERM);
        if !wait_until(PATIENCE, || !session_alive(master)) {
            let _ = kill_process_group(master, Signal::KILL);
            assert!(
                wait_until(PATIENCE, || !session_alive(master)),
                "Dovecot's master {master:?} did not stop; its log:\n{}",
                self.log()
            );
        }
        // A master killed with SIGKILL leaves its pid file.
        let _ = fs::remove_file(self.dir.path().join("run/master.pid"));
    }

    /// A logged-in IMAP session of `user`, with the password given to `add_user`.
    fn session(&self, user: &str) -> Session {
        let password = {
            let users = self.users.lock().unwrap_or_else(|e| e.into_inner());
            users
                .passwords
                .get(&user.to_ascii_lowercase())
                .cloned()
                .unwrap_or_else(|| panic!("{user} is not a user (Dovecot::add_user)"))
        };
        let stream = TcpStream::connect(("127.0.0.1", self.imap_port))
            .unwrap_or_else(|e| panic!("connect to IMAP port {}: {e}", self.imap_port));
        stream
            .set_read_timeout(Some(PATIENCE))
            .expect("a read timeout");
        let mut session = Session {
            reader: BufReader::new(stream.try_clone().expect("clone the stream")),
            stream,
            tag: 0,
            log: self.log_path(),
        };
        let greeting = session.response();
        assert!(
            greeting.starts_with(b"* OK"),
            "IMAP greeting: {}",
            String::from_utf8_lossy(&greeting)
        );
        session.command(format!("LOGIN {} {}", quoted(user), quoted(&password)).as_bytes());
        session
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("dovecot.log")
    }

    /// One item of IMAP `STATUS` of `folder`.
    fn status(&self, user: &str, folder: &str, item: &str) -> u32 {
        let mut session = self.session(user);
        let (untagged, _) =
            session.command(format!("STATUS {} ({item})", quoted(folder)).as_bytes());
        session.logout();
        for response in &untagged {
            let text = String::from_utf8_lossy(response);
            if !text.starts_with("* STATUS ") {
                continue;
            }
            let Some((_, list)) = text.rsplit_once('(') else {
                continue;
            };
            let mut words = list.trim_end().trim_end_matches(')').split(' ');
            while let (Some(name), Some(value)) = (words.next(), words.next()) {
                if name.eq_ignore_ascii_case(item) {
                    return value
                        .parse()
                        .unwrap_or_else(|_| panic!("{item} in STATUS: {text}"));
                }
            }
        }
        panic!(
            "no {item} in the answer to STATUS: {:?}",
            untagged
                .iter()
                .map(|r| String::from_utf8_lossy(r).into_owned())
                .collect::<Vec<_>>()
        );
    }

    /// Runs `doveadm -c CONF ARGS`, which must succeed; its stdout.
    fn doveadm(&self, args: &[&str]) -> String {
        let out = Command::new(&self.doveadm)
            .arg("-c")
            .arg(self.config_path())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("run {}: {e}", self.doveadm.display()));
        assert!(
            out.status.success(),
            "doveadm {args:?}: {}\n{}{}--- Dovecot's log:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.log()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Dovecot {
    /// Closes the guardian's stdin and waits for it: it stops the master (SIGTERM to the
    /// master, then to its process group; SIGKILL to the group after 10 seconds more), waits
    /// for the services to leave, and removes the directory.
    fn drop(&mut self) {
        drop(self.guardian_stdin.take());
        let _ = self.guardian.wait();
    }
}

/// `dovecot.conf` of the instance in `root`, with IMAP on `imap` and LMTP on `lmtp`.
fn config(root: &Path, imap: u16, lmtp: u16) -> String {
    let root = root.to_str().expect("a UTF-8 temporary directory");
    format!(
        "\
# A private instance of the protege tests: everything under {root}.
base_dir = {root}/run
state_dir = {root}/state
instance_name = protege-dovecot
log_path = {root}/dovecot.log
info_log_path = {root}/dovecot.log
debug_log_path = {root}/dovecot.log
hostname = imap.protege.test
login_greeting = Dovecot ready.
postmaster_address = postmaster@protege.test

protocols = imap lmtp
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_username_format = %Lu
auth_verbose = yes

# Every user's mail in a Maildir of its own, stored as {MAIL_UID}:{MAIL_GID}.
first_valid_uid = 1
first_valid_gid = 1
mail_uid = {MAIL_UID}
mail_gid = {MAIL_GID}
mail_location = maildir:{root}/mail/%d/%n

passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%Lu {root}/users
}}
userdb {{
  driver = passwd-file
  args = username_format=%Lu {root}/users
  default_fields = uid={MAIL_UID} gid={MAIL_GID} home={root}/home/%d/%n
}}

namespace inbox {{
  inbox = yes
  separator = /
  mailbox Sent {{
    auto = create
    special_use = \\Sent
  }}
  mailbox Processed {{
    auto = create
  }}
}}

service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {imap}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service lmtp {{
  inet_listener lmtp {{
    address = 127.0.0.1
    port = {lmtp}
  }}
}}
# No growing delay for the logins after a failed one (the auth service logs once that it
# cannot reach the penalty socket); Dovecot's fixed auth_failure_delay stays.
service anvil {{
  unix_listener anvil-auth-penalty {{
    mode = 0
  }}
}}
"
    )
}

/// `doveadm` of the same installation as `dovecot`: beside it, in `../bin/` (Debian:
/// `/usr/sbin/dovecot`, `/usr/bin/doveadm`), or else on the `PATH`.
fn doveadm_beside(dovecot: &Path) -> PathBuf {
    let beside = dovecot.with_file_name("doveadm");
    let bin = dovecot
        .parent()
        .and_then(Path::parent)
        .map(|prefix| prefix.join("bin/doveadm"));
    [Some(beside), bin]
        .into_iter()
        .flatten()
        .find(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from("doveadm"))
}

/// Two different ports of 127.0.0.1 free a moment ago (the kernel's picks, released at once).
fn free_ports() -> (u16, u16) {
    let bind = || TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let (first, second) = (bind(), bind());
    let port = |listener: &TcpListener| listener.local_addr().expect("local address").port();
    (port(&first), port(&second))
}

/// The pid in `DIR/run/master.pid` when it is a running master of this instance (its
/// command line names this instance's configuration).
fn master_pid(dir: &Path) -> Option<Pid> {
    let pid: i32 = fs::read_to_string(dir.join("run/master.pid"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let config = dir.join("dovecot.conf");
    let config = config.to_str()?.as_bytes();
    cmdline
        .split(|&b| b == 0)
        .any(|arg| arg == config)
        .then(|| Pid::from_raw(pid))
        .flatten()
}

/// Whether the process `pid` is alive, zombies aside.
fn process_alive(pid: Pid) -> bool {
    fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero()))
        .ok()
        .and_then(|stat| {
            let (_, rest) = stat.rsplit_once(')')?;
            Some(rest.split_whitespace().next()? != "Z")
        })
        .unwrap_or(false)
}

/// Whether a process of the session `sid` (the master is a session leader, and its services
/// stay in its session) is alive, zombies aside.
fn session_alive(sid: Pid) -> bool {
    let Ok(entries) = fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        // PID (COMM) STATE PPID PGRP SESSION ...; COMM may hold spaces and parentheses.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return false;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        fields.len() > 4
            && fields[0] != "Z"
            && fields[3].parse::<i32>().ok() == Some(sid.as_raw_nonzero().get())
    })
}

/// Polls `done` every 20 ms for at most `timeout`; whether it became true.
fn wait_until(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `text` as an IMAP quoted string (ASCII only: no modified UTF-7 here).
fn quoted(text: &str) -> String {
    assert!(
        text.is_ascii() && !text.contains(['\r', '\n']),
        "the harness quotes ASCII only: {text:?}"
    );
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// An IMAP session of the harness, one command at a time.
struct Session {
    reader: BufReader<TcpStream>,
    stream: TcpStream,
    tag: u32,
    log: PathBuf,
}

impl Session {
    /// Sends `command` (tag and CRLF added) and reads up to its tagged answer, which must be
    /// `OK`: (the untagged responses, the tagged line). A command with a literal uses the
    /// non-synchronizing form (`{N+}`, LITERAL+).
    fn command(&mut self, command: &[u8]) -> (Vec<Vec<u8>>, Vec<u8>) {
        self.tag += 1;
        let tag = format!("h{}", self.tag);
        let mut wire = format!("{tag} ").into_bytes();
        wire.extend_from_slice(command);
        wire.extend_from_slice(b"\r\n");
        self.stream
            .write_all(&wire)
            .unwrap_or_else(|e| panic!("send an IMAP command: {e}"));
        let mut untagged = Vec::new();
        loop {
            let response = self.response();
            if response.starts_with(format!("{tag} ").as_bytes()) {
                let shown = String::from_utf8_lossy(&command[..command.len().min(200)]);
                assert!(
                    response[tag.len() + 1..].starts_with(b"OK"),
                    "IMAP {shown}: {}--- Dovecot's log:\n{}",
                    String::from_utf8_lossy(&response),
                    String::from_utf8_lossy(&fs::read(&self.log).unwrap_or_default())
                );
                return (untagged, response);
            }
            untagged.push(response);
        }
    }

    /// Reads one response: a line, with the literals it announces (`{N}` at a line's end)
    /// and the rest of the line after each.
    fn response(&mut self) -> Vec<u8> {
        let mut response = Vec::new();
        loop {
            let start = response.len();
            let n = self
                .reader
                .read_until(b'\n', &mut response)
                .unwrap_or_else(|e| panic!("read an IMAP response: {e}"));
            assert!(
                n > 0 && response.ends_with(b"\n"),
                "the IMAP server closed the connection; so far: {}",
                String::from_utf8_lossy(&response)
            );
            let Some(size) = literal_size(&response[start..]) else {
                return response;
            };
            let start = response.len();
            response.resize(start + size, 0);
            self.reader
                .read_exact(&mut response[start..])
                .unwrap_or_else(|e| panic!("read an IMAP literal: {e}"));
        }
    }

    fn logout(mut self) {
        self.command(b"LOGOUT");
    }
}

/// The size of the literal a response line announces at its end (`... {123}\r\n`).
fn literal_size(line: &[u8]) -> Option<usize> {
    let line = line.strip_suffix(b"\r\n")?.strip_suffix(b"}")?;
    let open = line.iter().rposition(|&b| b == b'{')?;
    std::str::from_utf8(&line[open + 1..]).ok()?.parse().ok()
}

/// A value of an IMAP response.
enum Value {
    /// An atom, a number, `NIL`, a flag, or a section name such as `BODY[]`.
    Atom(Vec<u8>),
    /// A quoted string or a literal.
    Bytes(Vec<u8>),
    List(Vec<Value>),
}

/// The items of a `* N FETCH (...)` response, or `None` for another response.
fn fetch_items(response: &[u8]) -> Option<Vec<Value>> {
    let rest = response.strip_prefix(b"* ")?;
    let space = rest.iter().position(|&b| b == b' ')?;
    if !rest[..space].iter().all(u8::is_ascii_digit) {
        return None;
    }
    let rest = &rest[space + 1..];
    if !rest.get(..6)?.eq_ignore_ascii_case(b"FETCH ") {
        return None;
    }
    let mut parser = Parser {
        input: &rest[6..],
        at: 0,
    };
    match parser.value()? {
        Value::List(items) => Some(items),
        _ => None,
    }
}

/// A parser of one IMAP value (enough for the `FETCH` answers the harness asks for).
struct Parser<'a> {
    input: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn value(&mut self) -> Option<Value> {
        while self.input.get(self.at) == Some(&b' ') {
            self.at += 1;
        }
        match *self.input.get(self.at)? {
            b'(' => {
                self.at += 1;
                let mut items = Vec::new();
                loop {
                    while self.input.get(self.at) == Some(&b' ') {
                        self.at += 1;
                    }
                    if *self.input.get(self.at)? == b')' {
                        self.at += 1;
                        return Some(Value::List(items));
                    }
                    items.push(self.value()?);
                }
            }
            b'"' => {
                self.at += 1;
                let mut bytes = Vec::new();
                loop {
                    match *self.input.get(self.at)? {
                        b'"' => {
                            self.at += 1;
                            return Some(Value::Bytes(bytes));
                        }
                        b'\\' => {
                            bytes.push(*self.input.get(self.at + 1)?);
                            self.at += 2;
                        }
                        b => {
                            bytes.push(b);
                            self.at += 1;
                        }
                    }
                }
            }
            b'{' => {
                let close = self.at + self.input[self.at..].iter().position(|&b| b == b'}')?;
                let size: usize = std::str::from_utf8(&self.input[self.at + 1..close])
                    .ok()?
                    .trim_end_matches('+')
                    .parse()
                    .ok()?;
                let start = close + 1 + 2; // "}\r\n"
                let bytes = self.input.get(start..start + size)?.to_vec();
                self.at = start + size;
                Some(Value::Bytes(bytes))
            }
            _ => {
                let start = self.at;
                let mut depth = 0;
                while let Some(&b) = self.input.get(self.at) {
                    match b {
                        b'[' => depth += 1,
                        b']' => depth -= 1,
                        b' ' | b'(' | b')' | b'\r' | b'\n' if depth == 0 => break,
                        _ => {}
                    }
                    self.at += 1;
                }
                Some(Value::Atom(self.input[start..self.at].to_vec()))
            }
        }
    }
}

/// Starts the process that stops the instance once its stdin closes: when the `Dovecot` is
/// dropped, or when the test process ends in any way (a panic while panicking, an abort, a
/// signal), so no master outlives the tests. It ignores SIGINT and SIGHUP, which a Ctrl-C
/// sends to the whole foreground process group, and SIGTERM, which `timeout` sends to its
/// whole process group, to outlive the tests in those cases too.
fn guardian(dir: &Path) -> Child {
    const SCRIPT: &str = r#"
trap '' INT HUP TERM
cat >/dev/null
dir=$1
# The master's pid, when it is this instance's master (its command line names the config).
pid=
if read -r master <"$dir/run/master.pid" 2>/dev/null \
  && tr '\0' '\n' <"/proc/$master/cmdline" 2>/dev/null | grep -qxF "$dir/dovecot.conf"; then
  pid=$master
fi
# Whether a process of the master's session (it is a session leader) is alive; with no
# procps `ps`, a moment's wait.
alive() {
  if command -v ps >/dev/null; then
    ps -o stat= --sid "$pid" | grep -qv '^Z'
  else
    [ $i -lt 25 ]
  fi
}
if [ -n "$pid" ]; then
  # SIGTERM to the master, which exits (removing its pid file), then to what is left of
  # its process group (a session's imap process would linger for 10 seconds).
  kill "$pid" 2>/dev/null
  i=0
  while [ -f "$dir/run/master.pid" ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done
  kill -- "-$pid" 2>/dev/null
  i=0
  while alive && [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done
  alive && kill -9 -- "-$pid" 2>/dev/null
  i=0
  while alive && [ $i -lt 100 ]; do sleep 0.02; i=$((i + 1)); done
fi
rm -rf -- "$dir"
"#;
    let mut command = Command::new("sh");
    command
        .args(["-c", SCRIPT, "dovecot-guardian"])
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    // Nothing is ever written: the guardian only waits for the end of its stdin.
    command.spawn().expect("spawn sh")
}
