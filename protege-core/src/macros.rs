//! The `resolvers!` macro (a forwarder to the proc macro that passes this crate's path)
//! and the hidden helpers its expansion calls.

/// Declares a chain of resolvers in Rust, checked at compile time and expanded to a
/// statically typed [`StaticChain`](crate::StaticChain) (a tuple, no boxing per resolver).
///
/// The chain runs through the same entry point as a TOML persona's chain,
/// [`Chain::resolve`](crate::Chain::resolve): resolvers run concurrently, their messages
/// come out in declaration order, and the first failure in declaration order is the error.
///
/// # Grammar
///
/// ```text
/// resolvers! { item+ }
/// item := use PATH ;
///       | use PATH ( [positional,]* [key = value,]* ) ;
///       | use PATH { [key = value,]* } ;
/// ```
///
/// Positional arguments come first, named options after them; a trailing comma is
/// allowed. Braces take named options only, as the keys of a TOML entry. `role = system | user | assistant | tool` takes a bare word (any other
/// expression of type [`Role`](crate::Role), such as `Role::User`, is passed as is).
/// `role` defaults to `system`. A chain holds 1 to 16 resolvers.
///
/// # Built-in resolvers
///
/// The one-segment names `LoadText`, `LoadFile`, `LoadRecord`, `ThreadHistory` and
/// `ThreadSummary` (and the
/// aliases `LoadTextResolver`, ...) are the built-ins; write a path such as
/// `self::LoadText` to use a type of your own with one of these names.
///
/// | written | expands to |
/// | --- | --- |
/// | `LoadText("...")` or `LoadText(template = EXPR)` | [`LoadText::template`](crate::LoadText::template) |
/// | `LoadText(closure)` (any positional that is not a string literal) | [`LoadText::from_fn`](crate::LoadText::from_fn) |
/// | `LoadFile("...")` or `LoadFile(path = EXPR)` | [`LoadFile::new`](crate::LoadFile::new) |
/// | `ThreadHistory` or `ThreadHistory(limit = 10, window = stable, step = 5, include_tool_calls = true, result_limit = 4000, max_tokens = 2000)` | [`ThreadHistory::new`](crate::ThreadHistory::new) then one builder call per option (`limit = None` means all; `window` takes the word `stable` or `sliding`, or the same as a string, and becomes [`Window`](crate::Window); `step` needs `window = stable`; `after_summary = true`) |
/// | `ThreadSummary` or `ThreadSummary(template = "Earlier: {{ summary }}", role = user)` | [`ThreadSummary::new`](crate::ThreadSummary::new), `.template_str("...")`, `.role(Role::User)` |
/// | `LoadRecord(loader, template = "...", render_with = closure)` | `LoadRecord::from_loader(loader).template_str("...").render_with(closure)`: `loader` is an async closure taking the `Context` and returning `Result` of an iterator of `Serialize` records |
/// | `LoadRecord(table = "...", where = { email = "{{ message.from }}", seats = 5 }, order_by = ["plan", "id desc"], limit = N, template = "...")` | [`LoadRecord::table`](crate::LoadRecord::table)`("...")`, per `where` column [`filter_str`](crate::LoadRecord::filter_str) for a string literal (a template, checked at compile time, bound as text) or [`filter_value`](crate::LoadRecord::filter_value) for an integer, float or boolean literal (bound with its type), one `.order_by(OrderBy { .. })` per entry (parsed at compile time), `.limit(N)`, `.template_str("...")` |
/// | `role = user` on any built-in but `ThreadHistory` | `.role(Role::User)` |
///
/// The option names, their defaults and an example of each in TOML and in `resolvers!` are
/// in the guide's table of built-in options (`docs/src/reference.md`): one table declares
/// them for both front ends.
///
/// # Resolvers of your own
///
/// Any other path is a type implementing [`Resolver`](crate::Resolver). The delimiter tells
/// the forms apart:
///
/// - `use my::Greeting;` uses the path as a value (a unit struct or a constant);
/// - `use my::OpenOrders { statuses = ["packing", "shipped"], heading = "Open:" };` sets
///   the options of a type that derives [`Options`](crate::Options) next to
///   `serde::Deserialize`: the names are serde's (`rename`, `rename_all`, `alias`; a `-` in
///   a name is written `_`), an option left out takes serde's default (`default`,
///   `default = "..."`, a container `default`, `None` for an `Option`), and a value is the
///   option's type or what the TOML entry would write for it ([`OptionValue`](crate::OptionValue):
///   a string literal for a `String` or `PathBuf`, an array for a `Vec` or a set; an
///   `Option<T>` option takes a `T`). So the entry of a persona file and the item of a
///   chain are the same declaration;
/// - `use my::Greeting(a, b, key = v);` expands to `my::Greeting::new(a, b).key(v)`: the
///   positional arguments go to `new`, each option is a builder method of that name.
///
/// # Compile-time checks
///
/// Besides what rustc checks (every option is a method call spanned at the option as
/// written, so a misspelt option or a wrong value type points at your code: for a type
/// deriving `Options`, ``no method named `statsues` `` with "there is a method `statuses`
/// with a similar name" at the option, ``option `limit` of `OpenOrders` takes `u32`, not
/// `&str` `` at the value, and `` `OpenOrders` needs the option `statuses` `` at the
/// resolver), the macro reports: an empty chain; duplicate options; a positional argument
/// after a named one or in braces; an unknown bare role; an unknown option of a built-in (with "did you mean"); a missing
/// or doubled template, path or loader; more than 16 resolvers; a string-literal template
/// (and a string-literal `LoadFile` path containing `{{` or `{%`) that minijinja cannot
/// parse, at the literal with the template line. A type that is not a resolver is
/// reported at its path. All problems of one invocation are reported together.
///
/// # Example
///
/// ```
/// use protege::{resolvers, message, Chain, Context, Message, Resolver, Result, Role};
///
/// /// A resolver of our own: a unit struct used as a value.
/// struct Signature;
///
/// impl Resolver for Signature {
///     type Output = Message;
///     async fn resolve(&self, ctx: &Context) -> Result<Message> {
///         Ok(message(Role::System, format!("Sign as {}.", ctx.persona().name)))
///     }
/// }
///
/// /// A record for `LoadRecord`: anything `Serialize`, SeaORM models included.
/// #[derive(serde::Serialize)]
/// struct Order { number: String, status: String }
///
/// async fn open_orders(_ctx: Context) -> std::result::Result<Vec<Order>, String> {
///     Ok(vec![Order { number: "A-1".into(), status: "shipped".into() }])
/// }
///
/// /// A resolver whose options a persona file sets too (`use = "Footer"`, `text = "..."`).
/// #[derive(serde::Deserialize, protege::Options)]
/// struct Footer {
///     text: String,
///     #[serde(default)]
///     role: Option<Role>,
/// }
///
/// impl Resolver for Footer {
///     type Output = Message;
///     async fn resolve(&self, _ctx: &Context) -> Result<Message> {
///         Ok(message(self.role.unwrap_or(Role::System), self.text.clone()))
///     }
/// }
///
/// let chain = resolvers! {
///     use LoadText("You are {{ persona.name }}.");
///     use LoadText(|ctx: &Context| Ok(format!("It is {}.", ctx.now().format("%Y"))), role = user);
///     use LoadRecord(open_orders, template = "Order {{ record.number }}: {{ record.status }}");
///     use LoadRecord(table = "accounts", order_by = ["plan", "id desc"], limit = 5);
///     use ThreadHistory(limit = 10, include_tool_calls = true);
///     use Signature;
///     use Footer { text = "Sign as the team.", role = user };
/// };
/// assert_eq!(
///     chain.names(),
///     ["LoadText", "LoadText", "LoadRecord", "LoadRecord", "ThreadHistory", "Signature", "Footer"]
/// );
/// ```
///
/// Mistakes are compile errors at the offending tokens:
///
/// ```compile_fail
/// let chain = protege::resolvers! {
///     use ThreadHistory(limt = 10); // unknown option `limt` for `ThreadHistory`, did you mean `limit`?
/// };
/// ```
///
/// ```compile_fail
/// let chain = protege::resolvers! {
///     use LoadText("Hello {{ persona.name }"); // LoadText template has a syntax error on line 1
/// };
/// ```
///
/// ```compile_fail,E0599
/// #[derive(serde::Deserialize, protege::Options)]
/// struct Footer { text: String }
/// # impl protege::Resolver for Footer {
/// #     type Output = ();
/// #     async fn resolve(&self, _: &protege::Context) -> protege::Result<()> { Ok(()) }
/// # }
/// let chain = protege::resolvers! {
///     use Footer { txet = "Regards" }; // no method named `txet`; there is a method `text`
/// };
/// ```
#[macro_export]
macro_rules! resolvers {
    ($($items:tt)*) => {
        $crate::__private::resolvers! { $crate; $($items)* }
    };
}

/// Helpers called by the `resolvers!` expansion; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::options::Unset;
    pub use protege_macros::resolvers;

    /// Passes `resolver` through, requiring it to be a [`Resolver`](crate::Resolver) at the
    /// user's span so the trait's own diagnostic is shown there.
    #[inline(always)]
    pub fn resolver<R: crate::Resolver>(resolver: R) -> R {
        resolver
    }
}
