//! Writing to stdout and stderr without panicking.
//!
//! A closed pipe (`protege check | head -1`) ends the output quietly: later writes to that
//! stream are skipped and the command keeps its normal exit code. Any other write failure
//! (`> /dev/full`) is the error `cannot write output: <reason>`, exit 1.

use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use super::{CliResult, Failure};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
static STDERR_CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `text` to stdout and flushes it.
pub(crate) fn out(text: &str) -> CliResult {
    write(std::io::stdout().lock(), &STDOUT_CLOSED, text)
}

/// Writes `text` to stderr.
pub(crate) fn err(text: &str) -> CliResult {
    write(std::io::stderr().lock(), &STDERR_CLOSED, text)
}

/// Whether stdout's reader has gone away.
pub(crate) fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

fn write(mut stream: impl Write, closed: &AtomicBool, text: &str) -> CliResult {
    if closed.load(Ordering::Relaxed) {
        return Ok(());
    }
    match stream
        .write_all(text.as_bytes())
        .and_then(|()| stream.flush())
    {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::BrokenPipe => {
            closed.store(true, Ordering::Relaxed);
            Ok(())
        }
        Err(e) => Err(Failure::invalid(format!(
            "cannot write output: {}",
            lowercase_first(&e.to_string())
        ))),
    }
}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}
