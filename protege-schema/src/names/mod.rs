//! The variables a protege template may use, and a check that finds, before anything runs,
//! the names a template uses but will never have.
//!
//! Both front ends share it: `protege-config` checks templates when a persona file loads and
//! maps each problem into the TOML string, and the `resolvers!` macro checks literal
//! templates at compile time. Each front end passes its own "did you mean" function, so the
//! wording of a suggestion is the same as in the rest of its messages.
//!
//! ```
//! use protege_schema::names::{Scope, Trigger, check};
//! let scope = Scope { trigger: Trigger::Message, provided: None, vars: Some(&["company"]) };
//! // The front end's own "did you mean"; here: the candidate with the same first three letters.
//! let suggest = |name: &str, candidates: &[&str]| {
//!     candidates.iter().find(|c| c.get(..3) == name.get(..3)).map(|c| c.to_string())
//! };
//! let problems = check("Hello {{ mesage.from }}", &scope, suggest);
//! assert_eq!(problems[0].message, "unknown template variable `mesage`, did you mean `message`?");
//! assert_eq!((problems[0].line, problems[0].column), (1, 10));
//! ```

mod check;
mod variables;

// The check: a template and what the run will have in, the problems out.
pub use check::{Problem, Scope, Trigger, check, check_tree};

// The variables and attributes a template may use.
pub use variables::{GLOBALS, MAIL, MESSAGE, PERSONA, RESPONSIBILITY, VARIABLES};

// The attributes of the variables built-ins provide, declared with them.
pub use crate::builtins::{OPEN_THREAD, THREAD};
