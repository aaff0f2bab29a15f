//! The templates of one load, compiled and name-checked once per distinct text: personas
//! written from one skeleton repeat the same templates (`{{ persona.instructions }}`), and
//! each repeat shares the first one's compiled template, and its bytecode once rendered.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};

use foldhash::quality::RandomState;
use protege_core::Template;
use protege_schema::Provided;
use protege_schema::names::{Problem, Scope, Trigger};

/// Compiled templates by a hash of their name, text and scope. The cache holds no text of
/// its own: a template carries its name and source, against which a hit is checked.
#[derive(Default)]
pub(crate) struct Templates {
    seen: HashMap<u64, Seen>,
    keys: RandomState,
}

/// A template compiled and checked once, with what its check depended on.
struct Seen {
    template: Template,
    trigger: Trigger,
    provided: Option<Provided>,
    /// A hash of the persona's `[vars]` keys (`None` when they were unknown): equal keys,
    /// or two lists whose 64-bit hashes under random keys collide.
    vars: Option<u64>,
    problems: Vec<Problem>,
}

impl Templates {
    /// The template `text` compiled as `name`, with the problems of the names it uses in
    /// `scope`: compiled and checked at its first sight, shared afterwards. A template that
    /// does not compile is an error each time (and never kept).
    pub(crate) fn compile(
        &mut self,
        name: &str,
        text: &str,
        scope: &Scope<'_>,
    ) -> protege_core::Result<(Template, Vec<Problem>)> {
        let vars = scope.vars.map(|keys| self.keys.hash_one(keys));
        let mut hasher = self.keys.build_hasher();
        (name, text, scope.provided, vars).hash(&mut hasher);
        std::mem::discriminant(&scope.trigger).hash(&mut hasher);
        let key = hasher.finish();
        if let Some(seen) = self.seen.get(&key)
            && seen.template.name() == name
            && seen.template.source() == text
            && seen.trigger == scope.trigger
            && seen.provided == scope.provided
            && seen.vars == vars
        {
            return Ok((seen.template.clone(), seen.problems.clone()));
        }
        let (template, problems) = Template::compile_inspecting(name, text, |tree| {
            crate::names::problems(tree, text, scope)
        })?;
        // A colliding entry stays: the template is then compiled each time, still right.
        self.seen.entry(key).or_insert_with(|| Seen {
            template: template.clone(),
            trigger: scope.trigger,
            provided: scope.provided,
            vars,
            problems: problems.clone(),
        });
        Ok((template, problems))
    }
}
