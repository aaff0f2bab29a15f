//! Compile-time behaviour of `resolvers!`: what it accepts, and the errors it reports at
//! the user's tokens (`tests/ui/fail/*.rs`, one mistake per file).
//!
//! Each case is compiled by `rustc` against the libraries this workspace's test build made
//! already (their paths asked of cargo with `cargo test --workspace --no-run
//! --message-format=json`, which finds everything fresh), so a clean run builds nothing
//! twice. A pass case (`tests/ui/pass/`) must compile and run; a fail case
//! (`tests/ui/fail/`) must be rejected with the errors of its snapshot, normalised
//! as trybuild writes them: line numbers in files outside the case dropped and the gutter
//! narrowed to the case's own, rustc's closing summary dropped, `and N others` as `and $N
//! others`. The expected errors are insta snapshots (`tests/ui/fail/<case>.stderr.snap`):
//! `cargo insta review` accepts a deliberate change.
//!
//! `tests/ui/pass/builtin_options.rs` is rendered from the shared table of built-ins
//! (`protege-schema`): every option and positional argument of every built-in, written as
//! the example the guide's table shows (`docs/src/reference.md`), so each example
//! compiles. It is a source file rustc compiles, not a snapshot: `PROTEGE_BLESS=1` rewrites
//! it after a change to the table.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use protege_schema::BUILTINS;

#[path = "support/snapshot.rs"]
mod snapshot;

/// The crates a UI case may name, as a user's crate depending on them would.
const EXTERNS: &[&str] = &[
    "protege",
    "protege_core",
    "protege_macros",
    "serde",
    "sea_orm",
    "futures",
];

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The libraries and link paths of the workspace's test build, as cargo reports them.
struct Build {
    /// Per crate name, the library files built for it (more than one when a crate is built
    /// twice, e.g. for build scripts with other features), the most features first.
    libraries: BTreeMap<String, Vec<(usize, PathBuf)>>,
    /// `-L` arguments: the dependencies' folder and the native libraries' folders.
    search: Vec<String>,
}

impl Build {
    fn of_workspace() -> Build {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut command = Command::new(cargo);
        command
            .args(["test", "--workspace", "--no-run", "--message-format=json"])
            .current_dir(workspace());
        // The profile this test was built in (`target/<profile>/deps/macro_ui-…`).
        let exe = std::env::current_exe().unwrap();
        let profile = exe
            .parent()
            .and_then(Path::parent)
            .and_then(Path::file_name);
        if profile.is_some_and(|name| name == "release") {
            command.arg("--release");
        }
        // What cargo sets for this test's process, not for the shell that ran cargo: a
        // build script that reads one of them (ring's reads `CARGO_MANIFEST_DIR`) would
        // run again and its dependents be rebuilt, twice per test run.
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            let set_for_tests = name.starts_with("CARGO_PKG_")
                || name.starts_with("CARGO_BIN_")
                || [
                    "CARGO_MANIFEST_DIR",
                    "CARGO_MANIFEST_PATH",
                    "CARGO_CRATE_NAME",
                    "CARGO_PRIMARY_PACKAGE",
                    "CARGO_TARGET_TMPDIR",
                    "CARGO_RUSTC_CURRENT_DIR",
                    "OUT_DIR",
                ]
                .contains(&name.as_ref());
            if set_for_tests {
                command.env_remove(name.as_ref());
            }
        }
        let out = command.output().expect("run cargo");
        assert!(
            out.status.success(),
            "cargo test --no-run failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut libraries: BTreeMap<String, Vec<(usize, PathBuf)>> = BTreeMap::new();
        let mut search = Vec::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            match message["reason"].as_str() {
                Some("compiler-artifact") if message["profile"]["test"] == false => {
                    let name = message["target"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .replace('-', "_");
                    let features = message["features"].as_array().map_or(0, Vec::len);
                    for file in message["filenames"].as_array().into_iter().flatten() {
                        let file = PathBuf::from(file.as_str().unwrap_or_default());
                        let library = file
                            .extension()
                            .is_some_and(|e| e == "rlib" || e == "so" || e == "dylib");
                        if library {
                            libraries
                                .entry(name.clone())
                                .or_default()
                                .push((features, file));
                        }
                    }
                }
                Some("build-script-executed") => {
                    for path in message["linked_paths"].as_array().into_iter().flatten() {
                        search.push(path.as_str().unwrap_or_default().to_owned());
                    }
                }
                _ => {}
            }
        }
        for files in libraries.values_mut() {
            files.sort_by_key(|file| std::cmp::Reverse(file.0));
        }
        let deps = libraries["protege"][0].1.parent().unwrap().to_owned();
        search.insert(0, format!("dependency={}", deps.display()));
        Build { libraries, search }
    }

    /// `rustc` with the case's crate, the search paths and the externs of `choice` (an
    /// index into each crate's files).
    fn rustc(&self, case: &Path, choice: &[usize]) -> Command {
        let mut cmd = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()));
        cmd.current_dir(workspace())
            .args([
                "--edition",
                "2024",
                "--crate-type",
                "bin",
                "--color",
                "never",
            ])
            .arg("--crate-name")
            .arg(case.file_stem().unwrap());
        for path in &self.search {
            cmd.arg("-L").arg(path);
        }
        for (name, &i) in EXTERNS.iter().zip(choice) {
            let file = &self.libraries[*name][i].1;
            cmd.arg("--extern")
                .arg(format!("{name}={}", file.display()));
        }
        cmd.arg(case);
        cmd
    }
}

fn cases(folder: &str) -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(workspace().join("tests/ui").join(folder))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .map(|path| path.strip_prefix(workspace()).unwrap().to_owned())
        .collect();
    cases.sort();
    cases
}

/// rustc's errors as trybuild writes them (see the module's documentation).
fn normalise(stderr: &str, case: &Path) -> String {
    let case = case.to_str().unwrap();
    let mut lines: Vec<&str> = stderr
        .lines()
        .filter(|line| {
            !(line.starts_with("error: aborting due to")
                || line.starts_with("Some errors have detailed explanations")
                || line.starts_with("For more information about"))
        })
        .collect();
    while lines.last().is_some_and(|line| line.trim().is_empty()) {
        lines.pop();
    }
    // One diagnostic per header line at the left margin.
    let mut diagnostics: Vec<Vec<&str>> = Vec::new();
    for line in lines {
        let header =
            (line.starts_with("error") || line.starts_with("warning")) && line.contains(": ");
        match diagnostics.last_mut() {
            Some(current) if !header => current.push(line),
            _ => diagnostics.push(vec![line]),
        }
    }
    let mut out = String::new();
    for diagnostic in diagnostics {
        for line in narrowed(&diagnostic, case) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    others(&out)
}

/// One diagnostic with the line numbers of other files dropped and the gutter as wide as
/// the case's own largest line number.
fn narrowed(diagnostic: &[&str], case: &str) -> Vec<String> {
    let arrow = |line: &str| {
        let rest = line.trim_start_matches(' ');
        rest.strip_prefix("--> ")
            .map(|path| (line.len() - rest.len(), path.to_owned()))
    };
    let Some(width) = diagnostic
        .iter()
        .find_map(|line| arrow(line))
        .map(|(w, _)| w)
    else {
        return diagnostic.iter().map(|line| (*line).to_owned()).collect();
    };
    let mut outside = false;
    let mut own_width = 1;
    let mut lines = Vec::with_capacity(diagnostic.len());
    for line in diagnostic {
        if let Some((indent, path)) = arrow(line) {
            // `path:line:col`: the position is dropped for another file, and the
            // toolchain's and the registry's folders are named as trybuild names them.
            let file = path.rsplitn(3, ':').last().unwrap_or(&path).to_owned();
            outside = file != case;
            let shown = if outside { portable(&file) } else { path };
            lines.push(format!("{}--> {shown}", " ".repeat(indent)));
            continue;
        }
        let number = line.get(..width).filter(|gutter| {
            gutter.trim_start().bytes().all(|b| b.is_ascii_digit()) && !gutter.trim().is_empty()
        });
        match number {
            Some(gutter) if line[width..].starts_with(" |") => {
                if outside {
                    lines.push(format!("{}{}", " ".repeat(width), &line[width..]));
                } else {
                    own_width = own_width.max(gutter.trim().len());
                    lines.push((*line).to_owned());
                }
            }
            _ => lines.push((*line).to_owned()),
        }
    }
    let cut = width.saturating_sub(own_width);
    lines
        .into_iter()
        .enumerate()
        .map(|(i, line)| {
            let indented = line.len() > cut && line.bytes().take(cut).all(|b| b == b' ');
            if i > 0 && indented {
                line[cut..].to_owned()
            } else {
                line
            }
        })
        .collect()
}

/// A path outside the workspace without this machine's folders: `$CARGO/serde-1.0.0/…`
/// for a crate of the registry, `$RUST/…` for the standard library.
fn portable(file: &str) -> String {
    if let Some((_, rest)) = file.split_once("/registry/src/") {
        let crate_path = rest.split_once('/').map_or(rest, |(_index, path)| path);
        return format!("$CARGO/{crate_path}");
    }
    if let Some((_, rest)) = file.split_once("/library/")
        && file.starts_with("/rustc/")
    {
        return format!("$RUST/{rest}");
    }
    file.to_owned()
}

/// `and 42 others` (a count that changes with the dependencies) as `and $N others`.
fn others(text: &str) -> String {
    text.lines()
        .map(|line| {
            let trimmed = line.trim_start();
            let count = trimmed
                .strip_prefix("and ")
                .and_then(|rest| rest.strip_suffix(" others"))
                .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            match count {
                Some(_) => format!("{}and $N others\n", &line[..line.len() - trimmed.len()]),
                None => format!("{line}\n"),
            }
        })
        .collect()
}

#[test]
fn ui() {
    let build = Build::of_workspace();
    let out = tempfile::tempdir().unwrap();
    // The files to link each crate name with: the first choice under which the pass cases
    // compile (a crate built twice, as for build scripts, is tried both ways).
    let mut choice = vec![0; EXTERNS.len()];
    let pass = cases("pass");
    let exe_of = |case: &Path| out.path().join(case.file_stem().unwrap());
    loop {
        let exe = exe_of(&pass[0]);
        let compiled = build
            .rustc(&pass[0], &choice)
            .arg("-o")
            .arg(&exe)
            .output()
            .unwrap();
        if compiled.status.success() {
            break;
        }
        let next = EXTERNS
            .iter()
            .zip(&mut choice)
            .find(|(name, i)| **i + 1 < build.libraries[**name].len());
        let Some((name, i)) = next else {
            panic!(
                "{} does not compile with any choice of libraries:\n{}",
                pass[0].display(),
                String::from_utf8_lossy(&compiled.stderr)
            );
        };
        *i += 1;
        eprintln!("trying the next `{name}`");
    }
    for (i, case) in pass.iter().enumerate() {
        let exe = exe_of(case);
        // The first was compiled while choosing the libraries.
        if i > 0 {
            let compiled = build
                .rustc(case, &choice)
                .arg("-o")
                .arg(&exe)
                .output()
                .unwrap();
            assert!(
                compiled.status.success(),
                "{} does not compile:\n{}",
                case.display(),
                String::from_utf8_lossy(&compiled.stderr)
            );
        }
        let ran = Command::new(&exe).output().unwrap();
        assert!(
            ran.status.success(),
            "{} fails when run:\n{}",
            case.display(),
            String::from_utf8_lossy(&ran.stderr)
        );
    }
    for case in cases("fail") {
        let compiled = build
            .rustc(&case, &choice)
            .arg("--emit=metadata")
            .arg("-o")
            .arg(out.path().join("check.rmeta"))
            .output()
            .unwrap();
        assert!(
            !compiled.status.success(),
            "{} compiles, but it should not",
            case.display()
        );
        let actual = normalise(&String::from_utf8_lossy(&compiled.stderr), &case);
        let name = format!("{}.stderr", case.file_stem().unwrap().to_string_lossy());
        snapshot::expect(&workspace().join("tests/ui/fail"), &name, &actual);
    }
}

#[test]
fn the_normalisation_is_trybuilds() {
    let rustc = "\
error[E0277]: `Greeting` is not a protege resolver
   --> tests/ui/fail/x.rs:6:13
    |
  6 |         use Greeting;
    |             ^^^^^^^^ this type does not implement `Resolver`
    |
    = help: the following other types implement trait `Resolver`:
              LoadText
            and 12 others
note: required by a bound in `resolver`
   --> protege-core/src/macros.rs:172:24
    |
172 |     pub fn resolver<R: crate::Resolver>(resolver: R) -> R {
    |                        ^^^^^^^^^^^^^^^ required by this bound in `resolver`

error: aborting due to 1 previous error

For more information about this error, try `rustc --explain E0277`.
";
    assert_eq!(
        normalise(rustc, Path::new("tests/ui/fail/x.rs")),
        "\
error[E0277]: `Greeting` is not a protege resolver
 --> tests/ui/fail/x.rs:6:13
  |
6 |         use Greeting;
  |             ^^^^^^^^ this type does not implement `Resolver`
  |
  = help: the following other types implement trait `Resolver`:
            LoadText
          and $N others
note: required by a bound in `resolver`
 --> protege-core/src/macros.rs
  |
  |     pub fn resolver<R: crate::Resolver>(resolver: R) -> R {
  |                        ^^^^^^^^^^^^^^^ required by this bound in `resolver`
"
    );
}

/// The pass case of the table's examples: one chain per built-in, one item per option.
fn builtin_options_case() -> String {
    let mut out = String::from(
        "//! Every option of every built-in, as the shared table (`protege-schema`) writes its\n\
         //! example; rendered by `tests/macro_ui.rs`.\n\
         use protege::{Chain, Context};\n\
         \n\
         /// A record of `load_accounts`.\n\
         #[derive(serde::Serialize)]\n\
         struct Account {\n    name: String,\n}\n\
         \n\
         async fn load_accounts(_ctx: Context) -> Result<Vec<Account>, String> {\n    \
         Ok(vec![Account { name: \"Alice\".into() }])\n}\n\
         \n\
         fn main() {\n",
    );
    for builtin in BUILTINS {
        out.push_str("    let chain = protege::resolvers! {\n");
        if let Some(positional) = builtin.positional {
            out.push_str(&format!(
                "        use {}({});\n",
                builtin.name, positional.rust
            ));
        }
        for option in builtin.options {
            out.push_str(&format!("        {}\n", builtin.rust_item(option)));
        }
        out.push_str("    };\n");
        out.push_str(&format!(
            "    assert_eq!(chain.names(), [{:?}; {}]);\n",
            builtin.name,
            builtin.options.len() + usize::from(builtin.positional.is_some())
        ));
    }
    out.push_str("}\n");
    out
}

#[test]
fn the_builtin_options_case_is_the_shared_tables_rendering() {
    let path = workspace().join("tests/ui/pass/builtin_options.rs");
    let expected = builtin_options_case();
    if std::env::var_os("PROTEGE_BLESS").is_some() {
        std::fs::write(&path, &expected).unwrap();
        return;
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        actual,
        expected,
        "run with PROTEGE_BLESS=1 to rewrite {}",
        path.display()
    );
}
