//! Records the git commit the binary is built from, for `protege --version`: the short
//! hash of `HEAD` (changes not committed are not marked), or `unknown` outside a git
//! checkout (a packaged source) or without git.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let commit = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(hash) if !hash.is_empty() => hash,
        _ => "unknown".to_owned(),
    };
    // A new commit, a checkout or a change of branch moves these files (a linked work
    // tree keeps its HEAD apart from the branches it shares).
    let dirs = [
        (git(&["rev-parse", "--absolute-git-dir"]), &["HEAD"][..]),
        (
            git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]),
            &["packed-refs", "refs/heads"][..],
        ),
    ];
    for (dir, files) in dirs {
        for file in files
            .iter()
            .filter_map(|f| dir.as_ref().map(|d| Path::new(d).join(f)))
        {
            if file.exists() {
                println!("cargo:rerun-if-changed={}", file.display());
            }
        }
    }
    println!("cargo:rustc-env=PROTEGE_GIT_COMMIT={commit}");
}
