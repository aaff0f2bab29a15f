//! The expected outputs of `tests/expected/`: insta snapshots of whole outputs (a request's
//! JSON, a printed table), compared byte for byte.
//!
//! insta compares a text snapshot without its trailing white space and with CR LF read as
//! LF; every output here ends in exactly one line break and holds no CR, which
//! [`expect`] asserts first, so the comparison is exact. A deliberate change is accepted with
//! `cargo insta review` (or `INSTA_UPDATE=always`); tests that compare something else with
//! the same output read it with [`expected_output`].
#![allow(dead_code)]

use std::path::Path;

/// Compares `actual` with the snapshot `<dir>/<name>.snap` (`name` may name a subfolder:
/// `examples/agent_loop.txt`).
pub(crate) fn expect(dir: &Path, name: &str, actual: &str) {
    assert_eq!(
        actual,
        format!("{}\n", actual.trim_end()),
        "`{name}`: an output ends in one line break with no white space before it"
    );
    assert!(!actual.contains('\r'), "`{name}`: an output holds no CR");
    let (folder, file) = name.rsplit_once('/').unwrap_or(("", name));
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(dir.join(folder));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_snapshot!(file, actual));
}

/// The output the snapshot `<dir>/<name>.snap` holds, with its line break.
pub(crate) fn expected_output(dir: &Path, name: &str) -> String {
    let path = dir.join(format!("{name}.snap"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    // insta's header: `---`, its fields, `---`.
    let body = text
        .strip_prefix("---\n")
        .and_then(|rest| rest.split_once("\n---\n"))
        .map(|(_, body)| body)
        .unwrap_or_else(|| panic!("{} has no insta header", path.display()));
    format!("{}\n", body.trim_end())
}
