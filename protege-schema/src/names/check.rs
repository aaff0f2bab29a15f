// Over 600 lines only with its unit tests, which exercise the walker case by case.
//! Walking a template's syntax tree (minijinja's own parser) to find the names it uses.
//!
//! The rule for "tested" versus "used": a name is only tested when it appears inside the
//! condition of an `{% if %}`/`{% elif %}` or of an inline `x if cond else y`, or as the
//! operand of a test (`message is defined`), or anywhere inside the branches of an `if` whose
//! condition mentions it (`{% if message %}{{ message.subject }}{% endif %}`). A tested name
//! may be one that does not exist in this chain; every other use of such a name is an error.
//! Misspelt names and attributes are errors everywhere, tested or not.

use std::ops::Range;

use minijinja::machinery::ast::{self, CallArg, Expr, Stmt};
use minijinja::machinery::{Span, parse};
use minijinja::syntax::SyntaxConfig;

use super::variables::{GLOBALS, VARIABLES, attributes};
use crate::builtins::{Provided, providers};

/// Which trigger the chain of a template runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// A reply run (`message_resolvers`): `message` exists, `responsibility` never does.
    Message,
    /// A scheduled run (`responsibility_resolvers`): `responsibility` exists, `message`
    /// never does.
    Responsibility,
    /// Not known where the template is written (the `resolvers!` macro): either may exist.
    Either,
}

/// Where a template is used: what exists when it renders.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// The chain's trigger.
    pub trigger: Trigger,
    /// The variable of the built-in whose `template` this is ([`Builtin::provides`]), e.g.
    /// `summary` in `ThreadSummary`'s; `None` elsewhere.
    ///
    /// [`Builtin::provides`]: crate::Builtin::provides
    pub provided: Option<Provided>,
    /// The keys of the persona's `[vars]`, when known; `None` skips the `persona.vars.X` check.
    pub vars: Option<&'a [&'a str]>,
}

/// One name a template uses but will not have, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The bytes of the name in the template source.
    pub range: Range<usize>,
    /// The 1-based line of the name in the template.
    pub line: usize,
    /// The 1-based column of the name in its line, in characters.
    pub column: usize,
    /// What is wrong: one lowercase sentence naming the name, with a suggestion or the
    /// valid choices.
    pub message: String,
}

/// Every name `source` uses that it will not have in `scope`, in the order written.
/// `suggest(name, candidates)` picks the likely intended candidate for a misspelt name.
/// A template that does not parse gives no problems: compiling it reports the syntax error.
pub fn check(
    source: &str,
    scope: &Scope<'_>,
    suggest: impl Fn(&str, &[&str]) -> Option<String>,
) -> Vec<Problem> {
    let Ok(tree) = parse(source, "<template>", SyntaxConfig::default()) else {
        return Vec::new();
    };
    check_tree(&tree, source, scope, suggest)
}

/// [`check`] on the syntax tree of `source` parsed already (by minijinja's
/// `machinery::parse`), so a caller that parses the template anyway parses it once.
pub fn check_tree(
    tree: &Stmt<'_>,
    source: &str,
    scope: &Scope<'_>,
    suggest: impl Fn(&str, &[&str]) -> Option<String>,
) -> Vec<Problem> {
    let mut walker = Walker {
        source,
        scope,
        suggest: &suggest,
        locals: vec!["self"],
        guards: Vec::new(),
        testing: 0,
        problems: Vec::new(),
    };
    walker.stmt(tree);
    let mut problems = walker.problems;
    problems.sort_by_key(|p| p.range.start);
    problems
}

/// One step of a dotted path: an attribute or a constant string subscript.
struct Step<'s> {
    name: &'s str,
    range: Range<usize>,
}

struct Walker<'s, 'a, F> {
    source: &'s str,
    scope: &'a Scope<'a>,
    suggest: &'a F,
    /// Names assigned by the template (`set`, `for`, macro arguments...), innermost scope
    /// last: a scope's names are dropped when it ends. A few names, so a list.
    locals: Vec<&'s str>,
    /// Names mentioned by the conditions of the enclosing `if`s.
    guards: Vec<Vec<&'s str>>,
    /// Above zero inside an `if` condition or a test's operand.
    testing: usize,
    problems: Vec<Problem>,
}

impl<'s, F: Fn(&str, &[&str]) -> Option<String>> Walker<'s, '_, F> {
    fn body(&mut self, stmts: &[Stmt<'s>]) {
        for s in stmts {
            self.stmt(s);
        }
    }

    fn scoped(&mut self, f: impl FnOnce(&mut Self)) {
        let outer = self.locals.len();
        f(self);
        self.locals.truncate(outer);
    }

    fn assign(&mut self, target: &Expr<'s>) {
        match target {
            Expr::Var(v) => self.locals.push(v.id),
            Expr::List(l) => l.items.iter().for_each(|x| self.assign(x)),
            Expr::Tuple(t) => t.items.iter().for_each(|x| self.assign(x)),
            // `{% set ns.attr = ... %}` reads `ns`.
            other => self.expr(other),
        }
    }

    fn assign_name(&mut self, name: &'s str) {
        self.locals.push(name);
    }

    fn stmt(&mut self, stmt: &Stmt<'s>) {
        match stmt {
            Stmt::Template(t) => self.body(&t.children),
            Stmt::EmitExpr(e) => self.expr(&e.expr),
            Stmt::EmitRaw(_) => {}
            Stmt::ForLoop(f) => {
                self.expr(&f.iter);
                self.scoped(|w| {
                    w.assign_name("loop");
                    w.assign(&f.target);
                    if let Some(filter) = &f.filter_expr {
                        w.expr(filter);
                    }
                    w.body(&f.body);
                });
                self.scoped(|w| w.body(&f.else_body));
            }
            Stmt::IfCond(i) => {
                self.test(&i.expr);
                let guard = mentioned(&i.expr);
                self.guards.push(guard);
                self.scoped(|w| w.body(&i.true_body));
                self.scoped(|w| w.body(&i.false_body));
                self.guards.pop();
            }
            Stmt::WithBlock(w) => self.scoped(|this| {
                for (target, value) in &w.assignments {
                    this.expr(value);
                    this.assign(target);
                }
                this.body(&w.body);
            }),
            Stmt::Set(s) => {
                self.expr(&s.expr);
                self.assign(&s.target);
            }
            Stmt::SetBlock(s) => {
                self.assign(&s.target);
                if let Some(filter) = &s.filter {
                    self.expr(filter);
                }
                self.scoped(|w| w.body(&s.body));
            }
            Stmt::AutoEscape(a) => {
                self.expr(&a.enabled);
                self.scoped(|w| w.body(&a.body));
            }
            Stmt::FilterBlock(f) => {
                self.expr(&f.filter);
                self.scoped(|w| w.body(&f.body));
            }
            Stmt::Block(b) => self.scoped(|w| {
                w.assign_name("super");
                w.body(&b.body);
            }),
            Stmt::Import(i) => {
                self.expr(&i.expr);
                self.assign(&i.name);
            }
            Stmt::FromImport(i) => {
                self.expr(&i.expr);
                for (name, alias) in &i.names {
                    self.assign(alias.as_ref().unwrap_or(name));
                }
            }
            Stmt::Extends(e) => self.expr(&e.name),
            Stmt::Include(i) => self.expr(&i.name),
            Stmt::Macro(m) => {
                self.assign_name(m.name);
                self.scoped(|w| w.macro_decl(m));
            }
            Stmt::CallBlock(c) => {
                self.call(&c.call);
                self.scoped(|w| w.macro_decl(&c.macro_decl));
            }
            Stmt::Continue(_) | Stmt::Break(_) => {}
            Stmt::Do(d) => self.call(&d.call),
        }
    }

    fn macro_decl(&mut self, m: &ast::Macro<'s>) {
        self.assign_name("caller");
        for d in &m.defaults {
            self.expr(d);
        }
        for a in &m.args {
            self.assign(a);
        }
        self.body(&m.body);
    }

    fn call(&mut self, call: &ast::Call<'s>) {
        match &call.expr {
            // A method call: check the object, not the method's name.
            Expr::GetAttr(g) => self.expr(&g.expr),
            other => self.expr(other),
        }
        self.args(&call.args);
    }

    fn args(&mut self, args: &[CallArg<'s>]) {
        for a in args {
            match a {
                CallArg::Pos(e) | CallArg::Kwarg(_, e) | CallArg::PosSplat(e) => self.expr(e),
                CallArg::KwargSplat(e) => self.expr(e),
            }
        }
    }

    /// Visits an expression whose names are only tested.
    fn test(&mut self, expr: &Expr<'s>) {
        self.testing += 1;
        self.expr(expr);
        self.testing -= 1;
    }

    fn expr(&mut self, expr: &Expr<'s>) {
        match expr {
            Expr::Var(_) | Expr::GetAttr(_) | Expr::GetItem(_) => self.path(expr),
            Expr::Const(_) => {}
            Expr::Slice(s) => {
                self.expr(&s.expr);
                for e in [&s.start, &s.stop, &s.step].into_iter().flatten() {
                    self.expr(e);
                }
            }
            Expr::UnaryOp(u) => self.expr(&u.expr),
            Expr::BinOp(b) => {
                self.expr(&b.left);
                self.expr(&b.right);
            }
            Expr::Compare(c) => {
                self.expr(&c.expr);
                for op in &c.ops {
                    self.expr(&op.expr);
                }
            }
            Expr::IfExpr(i) => {
                self.test(&i.test_expr);
                self.guards.push(mentioned(&i.test_expr));
                self.expr(&i.true_expr);
                if let Some(e) = &i.false_expr {
                    self.expr(e);
                }
                self.guards.pop();
            }
            Expr::Filter(f) => {
                if let Some(e) = &f.expr {
                    self.expr(e);
                }
                self.args(&f.args);
            }
            Expr::Test(t) => {
                self.test(&t.expr);
                self.args(&t.args);
            }
            Expr::Call(c) => self.call(c),
            Expr::List(l) => l.items.iter().for_each(|x| self.expr(x)),
            Expr::Tuple(t) => t.items.iter().for_each(|x| self.expr(x)),
            Expr::Map(m) => {
                for (k, v) in m.keys.iter().zip(m.values.iter()) {
                    self.expr(k);
                    self.expr(v);
                }
            }
        }
    }

    /// A variable followed by attributes and constant subscripts: `message.from`,
    /// `persona.vars["team"]`.
    fn path(&mut self, expr: &Expr<'s>) {
        let mut steps: Vec<Step<'s>> = Vec::new();
        let mut current = expr;
        loop {
            match current {
                Expr::GetAttr(g) => {
                    steps.push(Step {
                        name: g.name,
                        range: self.name_range(g.span(), g.name),
                    });
                    current = &g.expr;
                }
                Expr::GetItem(g) => {
                    match &g.subscript_expr {
                        Expr::Const(c) if c.value.as_str().is_some() => {
                            let name =
                                self.const_name(c.value.as_str().unwrap_or_default(), c.span());
                            steps.push(Step {
                                name,
                                range: offsets(c.span()),
                            });
                        }
                        other => {
                            // A computed subscript: what follows it is not checked.
                            self.expr(other);
                            steps.clear();
                        }
                    }
                    current = &g.expr;
                }
                Expr::Var(v) => {
                    steps.reverse();
                    self.variable(v.id, offsets(v.span()), &steps);
                    return;
                }
                other => {
                    self.expr(other);
                    return;
                }
            }
        }
    }

    /// The constant subscript as written in the source, so that it borrows from it;
    /// falls back to the empty name (never reported) when the source differs.
    fn const_name(&self, value: &str, span: Span) -> &'s str {
        let range = offsets(span);
        match self.source.get(range) {
            Some(raw) if raw.len() >= 2 && &raw[1..raw.len() - 1] == value => {
                &raw[1..raw.len() - 1]
            }
            _ => "",
        }
    }

    /// The bytes of `name` at the end of the attribute access spanning `span`.
    fn name_range(&self, span: Span, name: &str) -> Range<usize> {
        let whole = offsets(span);
        let start = whole.end.saturating_sub(name.len());
        if self.source.get(start..whole.end) == Some(name) {
            start..whole.end
        } else {
            whole
        }
    }

    fn is_local(&self, name: &str) -> bool {
        self.locals.contains(&name)
    }

    fn tested(&self, name: &str) -> bool {
        self.testing > 0 || self.guards.iter().any(|g| g.contains(&name))
    }

    fn variable(&mut self, name: &'s str, range: Range<usize>, steps: &[Step<'s>]) {
        if self.is_local(name) || GLOBALS.contains(&name) {
            return;
        }
        if !VARIABLES.contains(&name) {
            let available: Vec<&str> = VARIABLES
                .iter()
                .copied()
                .filter(|v| self.exists(v))
                .collect();
            let message = match (self.suggest)(name, VARIABLES) {
                Some(s) => format!("unknown template variable `{name}`, did you mean `{s}`?"),
                None => format!(
                    "unknown template variable `{name}`, expected one of {}",
                    list(&available)
                ),
            };
            self.report(range, message);
            return;
        }
        if !self.exists(name) && !self.tested(name) {
            let message = match name {
                "message" => "`message` never exists in a responsibility chain \
                              (it is the inbound message of a reply run); \
                              test it with `{% if message %}`"
                    .to_owned(),
                "responsibility" => "`responsibility` never exists in a message chain \
                                     (it is the task of a scheduled run); \
                                     test it with `{% if responsibility %}`"
                    .to_owned(),
                _ => elsewhere(name),
            };
            self.report(range, message);
            return;
        }
        let Some(first) = steps.first() else {
            return;
        };
        let known = match self.scope.provided {
            Some(p) if p.variable == name => p.attributes,
            _ => attributes(name),
        };
        let Some(known) = known else {
            return;
        };
        if known.is_empty() {
            let message = format!("`{name}` is a string and has no attribute `{}`", first.name);
            self.report(first.range.clone(), message);
            return;
        }
        if !known.contains(&first.name) {
            let message = match (self.suggest)(first.name, known) {
                Some(s) => format!(
                    "`{name}` has no attribute `{}`, did you mean `{s}`?",
                    first.name
                ),
                None => format!(
                    "`{name}` has no attribute `{}`, expected one of {}",
                    first.name,
                    list(known)
                ),
            };
            self.report(first.range.clone(), message);
            return;
        }
        if name == "persona"
            && first.name == "vars"
            && let (Some(key), Some(vars)) = (steps.get(1), self.scope.vars)
            && !vars.contains(&key.name)
        {
            let message = match (self.suggest)(key.name, vars) {
                Some(s) => format!(
                    "`persona.vars` has no key `{}`, did you mean `{s}`?",
                    key.name
                ),
                None if vars.is_empty() => format!(
                    "`persona.vars` has no key `{}`: the persona has no `[vars]`",
                    key.name
                ),
                None => format!(
                    "`persona.vars` has no key `{}`, expected one of {}",
                    key.name,
                    list(vars)
                ),
            };
            self.report(key.range.clone(), message);
        }
    }

    /// Whether the top-level variable `name` can exist where this template renders.
    fn exists(&self, name: &str) -> bool {
        match name {
            "message" => self.scope.trigger != Trigger::Responsibility,
            "responsibility" => self.scope.trigger != Trigger::Message,
            _ if self.scope.provided.is_some_and(|p| p.variable == name) => true,
            // A built-in's own variable exists in that built-in's template only.
            _ => providers(name).next().is_none(),
        }
    }

    fn report(&mut self, range: Range<usize>, message: String) {
        let before = self.source.get(..range.start).unwrap_or_default();
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        self.problems.push(Problem {
            range,
            line,
            column,
            message,
        });
    }
}

/// The top-level variables an expression mentions (the names an `if` guards).
fn mentioned<'s>(expr: &Expr<'s>) -> Vec<&'s str> {
    let mut out = Vec::new();
    collect(expr, &mut out);
    out
}

fn collect<'s>(expr: &Expr<'s>, out: &mut Vec<&'s str>) {
    match expr {
        Expr::Var(v) => out.push(v.id),
        Expr::GetAttr(g) => collect(&g.expr, out),
        Expr::GetItem(g) => {
            collect(&g.expr, out);
            collect(&g.subscript_expr, out);
        }
        Expr::UnaryOp(u) => collect(&u.expr, out),
        Expr::BinOp(b) => {
            collect(&b.left, out);
            collect(&b.right, out);
        }
        Expr::Compare(c) => {
            collect(&c.expr, out);
            c.ops.iter().for_each(|op| collect(&op.expr, out));
        }
        Expr::Test(t) => collect(&t.expr, out),
        Expr::Filter(f) => {
            if let Some(e) = &f.expr {
                collect(e, out);
            }
        }
        Expr::Call(c) => collect(&c.expr, out),
        _ => {}
    }
}

fn offsets(span: Span) -> Range<usize> {
    span.start_offset as usize..span.end_offset as usize
}

fn list(words: &[&str]) -> String {
    words
        .iter()
        .map(|w| format!("`{w}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where a built-in's own variable exists, for a template elsewhere that uses it: "`thread`
/// exists only in the `template` of `CorrespondentHistory` and of `OpenThreads`".
fn elsewhere(name: &str) -> String {
    let builtins: Vec<String> = providers(name).map(|b| format!("`{}`", b.name)).collect();
    let place = providers(name)
        .find_map(|b| b.provides)
        .map_or("the `template`", |p| p.place);
    format!(
        "`{name}` exists only in {place} of {}",
        builtins.join(" and of ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for the front ends' "did you mean": same first letter, length ±1.
    fn suggest(name: &str, candidates: &[&str]) -> Option<String> {
        candidates
            .iter()
            .find(|c| c.get(..1) == name.get(..1) && c.len().abs_diff(name.len()) <= 1)
            .map(|c| (*c).to_owned())
    }

    fn run(source: &str, trigger: Trigger, record: bool) -> Vec<String> {
        let scope = Scope {
            trigger,
            provided: if record {
                crate::LOAD_RECORD.provides
            } else {
                None
            },
            vars: Some(&["company", "team"]),
        };
        check(source, &scope, suggest)
            .into_iter()
            .map(|p| format!("{}:{}: {}", p.line, p.column, p.message))
            .collect()
    }

    fn reply(source: &str) -> Vec<String> {
        run(source, Trigger::Message, false)
    }

    #[test]
    fn known_names_pass() {
        let ok = "{{ persona.name }} {{ persona.instructions }} {{ persona.vars.company }} \
                  {{ message.from }} {{ message.to | join(', ') }} {{ message.to[0] }} \
                  {{ correlation_id }} {{ now }} {{ persona.vars['team'] | slugify }}";
        assert_eq!(reply(ok), Vec::<String>::new());
    }

    #[test]
    fn misspelt_variable_attribute_and_key() {
        assert_eq!(
            reply("Hi {{ mesage.from }}\n{{ message.form }} {{ persona.vars.compnay }}"),
            [
                "1:7: unknown template variable `mesage`, did you mean `message`?",
                "2:12: `message` has no attribute `form`, did you mean `from`?",
                "2:36: `persona.vars` has no key `compnay`, did you mean `company`?",
            ]
        );
        assert_eq!(
            reply("{{ persona.x }} {{ zzz }} {{ now.year }}"),
            [
                "1:12: `persona` has no attribute `x`, expected one of `name`, `instructions`, `vars`",
                "1:20: unknown template variable `zzz`, expected one of `persona`, `message`, `mail`, `correlation_id`, `now`",
                "1:34: `now` is a string and has no attribute `year`",
            ]
        );
    }

    #[test]
    fn locals_and_globals_are_not_errors() {
        let ok = "{% set greeting = 'hi' %}{{ greeting }}\
                  {% for name in message.to %}{{ loop.index }} {{ name }}{% endfor %}\
                  {% for i in range(3) %}{{ i }}{% endfor %}\
                  {% macro line(text, n=1) %}{{ text }}{{ n }}{% endmacro %}{{ line('x') }}\
                  {% with x = 1 %}{{ x }}{% endwith %}\
                  {% set ns = namespace(n=0) %}{% set ns.n = 1 %}{{ ns.n }}";
        assert_eq!(reply(ok), Vec::<String>::new());
        assert_eq!(
            reply("{% for x in message.to %}{% endfor %}{{ x }}"),
            [
                "1:41: unknown template variable `x`, expected one of `persona`, `message`, `mail`, `correlation_id`, `now`"
            ]
        );
    }

    #[test]
    fn names_that_never_exist_may_be_tested_not_printed() {
        let tested = "{% if message %}{{ message.subject }}{% else %}none{% endif %}\
                      {{ 'a' if message is defined else 'b' }}{% if not record %}x{% endif %}";
        assert_eq!(
            run(tested, Trigger::Responsibility, false),
            Vec::<String>::new()
        );
        assert_eq!(
            run("{{ message.subject }}", Trigger::Responsibility, false),
            [
                "1:4: `message` never exists in a responsibility chain (it is the inbound message of a reply run); test it with `{% if message %}`"
            ]
        );
        assert_eq!(
            run("{{ responsibility.name }}", Trigger::Message, false),
            [
                "1:4: `responsibility` never exists in a message chain (it is the task of a scheduled run); test it with `{% if responsibility %}`"
            ]
        );
        assert_eq!(
            reply("{{ record.name }}"),
            ["1:4: `record` exists only in the per-record `template` of `LoadRecord`"]
        );
        assert_eq!(
            run("{{ record.name }}", Trigger::Message, true),
            Vec::<String>::new()
        );
        assert_eq!(
            run(
                "{{ message.from }}{{ responsibility.name }}",
                Trigger::Either,
                false
            ),
            Vec::<String>::new()
        );
    }

    #[test]
    fn misspelt_names_are_errors_even_when_tested() {
        assert_eq!(
            reply("{% if mesage %}x{% endif %}"),
            ["1:7: unknown template variable `mesage`, did you mean `message`?"]
        );
    }

    #[test]
    fn unknown_vars_are_skipped_when_not_known() {
        let scope = Scope {
            trigger: Trigger::Either,
            provided: None,
            vars: None,
        };
        assert_eq!(check("{{ persona.vars.anything }}", &scope, suggest), []);
        let summary = Scope {
            provided: crate::THREAD_SUMMARY.provides,
            ..scope
        };
        assert_eq!(check("{{ summary }}", &summary, suggest), []);
        assert_eq!(
            check("{{ summary }}", &scope, suggest)
                .into_iter()
                .map(|p| p.message)
                .collect::<Vec<_>>(),
            ["`summary` exists only in the `template` of `ThreadSummary`"]
        );
        let thread = Scope {
            provided: crate::CORRESPONDENT_HISTORY.provides,
            ..scope
        };
        assert_eq!(
            check(
                "{{ thread.subject }}{% for m in thread.messages %}{{ m }}{% endfor %}",
                &thread,
                suggest
            ),
            []
        );
        assert_eq!(
            check("{{ thread.subjet }} {{ thread }}", &scope, suggest)
                .into_iter()
                .map(|p| p.message)
                .collect::<Vec<_>>(),
            [
                "`thread` exists only in the `template` of `CorrespondentHistory` and of `OpenThreads`",
                "`thread` exists only in the `template` of `CorrespondentHistory` and of `OpenThreads`"
            ]
        );
        assert_eq!(
            check("{{ thread.subjet }}", &thread, suggest)
                .into_iter()
                .map(|p| p.message)
                .collect::<Vec<_>>(),
            ["`thread` has no attribute `subjet`, did you mean `subject`?"]
        );
        // An open thread has its own attributes.
        let open_thread = Scope {
            provided: crate::OPEN_THREADS.provides,
            ..scope
        };
        assert_eq!(
            check(
                "{{ thread.id }} {{ thread.subject }} {{ thread.messages }} {{ thread.since }} {{ thread.from }}",
                &open_thread,
                suggest
            ),
            []
        );
        assert_eq!(
            check("{{ thread.summary }}", &open_thread, suggest)
                .into_iter()
                .map(|p| p.message)
                .collect::<Vec<_>>(),
            ["`thread` has no attribute `summary`, did you mean `subject`?"]
        );
    }

    #[test]
    fn a_syntax_error_gives_no_problems() {
        assert_eq!(reply("{{ mesage "), Vec::<String>::new());
    }
}
