//! The options table of the docs, rendered from the table of built-ins.

use crate::builtins::{Applies, BUILTINS, Default};

/// The Markdown table of every built-in option: resolver, option, a TOML example, a
/// `resolvers!` example, the default and what it does. The guide's table of built-in
/// options (`docs/src/reference.md`) is this text.
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| resolver | option | TOML | `resolvers!` | default | what |\n\
         | --- | --- | --- | --- | --- | --- |\n",
    );
    for b in BUILTINS {
        let resolver = format!("`{}`", b.name);
        if let Some(positional) = b.positional {
            out.push_str(&format!(
                "| {resolver} | (positional) | — | {} | | {} |\n",
                code(&format!("{}({}, ...)", b.name, positional.rust)),
                cell(positional.doc)
            ));
        }
        for o in b.options {
            let toml = o
                .toml
                .map_or_else(|| "—".to_owned(), |t| code(&format!("{} = {t}", o.name)));
            let rust = code(&format!("{} = {}", o.name, o.rust));
            let default = match o.default {
                Default::Required => "required".to_owned(),
                Default::Unset(what) => cell(what),
                Default::Count(n) => format!("`{n}`"),
                Default::Flag(b) => format!("`{b}`"),
                Default::Word(w) => format!("`{w}`"),
                Default::Text(t) => code(&format!("{t:?}")),
            };
            let form = match o.applies {
                Applies::Always => "",
                Applies::Table => " (table form)",
                Applies::Loader => " (loader form)",
            };
            out.push_str(&format!(
                "| {resolver} | `{}` | {toml} | {rust} | {default} | {}{form} |\n",
                o.name,
                cell(o.doc)
            ));
        }
    }
    out
}

/// Text in a table cell: `|` escaped.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// Code in a table cell: backticks around it, doubled when it holds one.
fn code(text: &str) -> String {
    let text = cell(text);
    if text.contains('`') {
        format!("`` {text} ``")
    } else {
        format!("`{text}`")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_row_per_option_and_positional_argument() {
        let table = super::markdown_table();
        let rows = table.lines().count();
        let options: usize = crate::BUILTINS.iter().map(|b| b.options.len()).sum();
        let positional = crate::BUILTINS
            .iter()
            .filter(|b| b.positional.is_some())
            .count();
        assert_eq!(rows, 2 + options + positional);
        assert!(table.contains(
            "| `ThreadHistory` | `window` | `window = \"stable\"` | `window = stable` | `sliding` |"
        ));
        assert!(table.contains(
            "| `LoadFile` | `path` | `path = \"prompts/{{ persona.name \\| slugify }}.md\"` |"
        ));
    }
}
