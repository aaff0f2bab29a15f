//! Reading trusted files safely: regular files only, never more than a cap.

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::Path;

use crate::error::{Error, ErrorKind, Result};

/// The most a file read by `LoadFile` may hold: 8 MiB.
pub const LOAD_FILE_MAX_BYTES: u64 = 8 << 20;

/// Reads the regular file at `path`, at most `cap` bytes; `Ok(None)` when it does not
/// exist (a dangling symlink included).
///
/// `shown` names the file in errors, as the caller wants it quoted (e.g. `` `a.md` ``).
/// A directory, FIFO, socket or device is an error, never a blocking read: the file is
/// opened without blocking and its type checked (symlinks followed) before anything is
/// read. A file over `cap` is an error naming the cap, whether its
/// size shows in its metadata or only while reading (a growing file).
pub fn read_regular_file(path: &Path, shown: &str, cap: u64) -> Result<Option<Vec<u8>>> {
    let io_error = |e: std::io::Error| {
        Error::new(
            ErrorKind::Io,
            format!("cannot read {shown}: {}", io_reason(&e)),
        )
    };
    let file = match open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            // A socket, say, cannot be opened at all: name what the path is when it can
            // be told, as for a directory or FIFO.
            if let Ok(meta) = std::fs::metadata(path) {
                check(&meta, shown, cap)?;
            }
            return Err(io_error(e));
        }
    };
    let meta = file.metadata().map_err(io_error)?;
    check(&meta, shown, cap)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > cap {
        return Err(too_large(shown, cap));
    }
    Ok(Some(bytes))
}

/// Opens `path` for reading without ever blocking on it.
///
/// On Unix the open itself cannot block (`O_NONBLOCK`: a FIFO without a writer opens at
/// once; `O_NOCTTY`: a terminal never becomes the controlling one), and the caller checks
/// the type on the opened file before reading. Elsewhere the type is checked by path
/// first.
fn open(path: &Path) -> std::io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
    }
    #[cfg(not(unix))]
    {
        if !std::fs::metadata(path)?.is_file() {
            return Err(std::io::Error::other("not a regular file"));
        }
        File::open(path)
    }
}

fn check(meta: &Metadata, shown: &str, cap: u64) -> Result<()> {
    if !meta.is_file() {
        return Err(Error::new(
            ErrorKind::NotRegularFile,
            format!(
                "not a regular file: {shown} is {}",
                describe(&meta.file_type())
            ),
        ));
    }
    if meta.len() > cap {
        return Err(too_large(shown, cap));
    }
    Ok(())
}

fn too_large(shown: &str, cap: u64) -> Error {
    Error::new(
        ErrorKind::FileTooLarge,
        format!("file too large: {shown} is over the limit of {}", size(cap)),
    )
}

/// `8 MiB (8388608 bytes)`, `1000 bytes`.
fn size(bytes: u64) -> String {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB ({bytes} bytes)", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB ({bytes} bytes)", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// What a non-regular file is, with its article: `a directory`, `a FIFO`, ...
fn describe(kind: &std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
    }
    "a special file"
}

/// An I/O error's text starting lowercase, without the `(os error N)` tail.
pub(crate) fn io_reason(err: &std::io::Error) -> String {
    let mut text = err.to_string();
    if let Some(code) = err.raw_os_error() {
        // The standard library's own tail, composed from the code it holds.
        let tail = format!(" (os error {code})");
        if text.ends_with(&tail) {
            text.truncate(text.len() - tail.len());
        }
    }
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::size;

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(size(8 << 20), "8 MiB (8388608 bytes)");
        assert_eq!(size(1 << 20), "1 MiB (1048576 bytes)");
        assert_eq!(size(4096), "4 KiB (4096 bytes)");
        assert_eq!(size(1000), "1000 bytes");
    }
}
