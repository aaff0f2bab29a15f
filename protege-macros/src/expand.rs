//! Generation: a `StaticChain` over a tuple of resolvers, every path absolute and every
//! user-written token keeping its span.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

use crate::ast::Invocation;
use crate::ctxt::Ctxt;
use crate::validate::{self, Call, CallArg, Ctor, Plan, Planned};

/// The whole of `resolvers!` after parsing: check the invocation, then expand its plan, or
/// every problem found as compile errors.
pub(crate) fn resolvers(invocation: Invocation) -> TokenStream {
    let krate = invocation.krate.clone();
    let ctxt = Ctxt::new();
    let plan = validate::check(&ctxt, invocation);
    match ctxt.check() {
        Ok(()) => expand(&krate, &plan),
        // A block, so several errors are several statements in expression position.
        Err(e) => {
            let errors = e.to_compile_error();
            quote!({ #errors })
        }
    }
}

/// Expands a checked chain into `<krate>::StaticChain::new((r1, r2, ...))`.
pub(crate) fn expand(krate: &TokenStream, plan: &Plan) -> TokenStream {
    let resolvers = plan.resolvers.iter().map(|r| resolver(krate, r));
    quote! {
        #krate::StaticChain::new((#(#resolvers,)*))
    }
}

/// One resolver expression, wrapped in the `Resolver` check at the user's path so a type
/// that is not a resolver is reported there with the trait's own message.
fn resolver(krate: &TokenStream, planned: &Planned) -> TokenStream {
    let span = planned.span;
    let mut expr = match &planned.ctor {
        Ctor::TextTemplate(ty, source) => quote_spanned!(span=> #krate::#ty::template(#source)),
        Ctor::TextFn(ty, closure) => quote_spanned!(span=> #krate::#ty::from_fn(#closure)),
        Ctor::File(ty, path) => quote_spanned!(span=> #krate::#ty::new(#path)),
        Ctor::New(ty) => quote_spanned!(span=> #krate::#ty::new()),
        Ctor::RecordLoader(ty, loader) => quote_spanned!(span=> #krate::#ty::from_loader(#loader)),
        Ctor::RecordTable(ty, table) => quote_spanned!(span=> #krate::#ty::table(#table)),
        Ctor::UserValue(path) => quote!(#path),
        Ctor::UserNew(path, args) => quote_spanned!(span=> #path::new(#(#args),*)),
        Ctor::UserOptions(ty) => quote_spanned!(span=> <#ty as #krate::Options>::__builder()),
    };
    for Call { method, arg } in &planned.calls {
        let arg = match arg {
            CallArg::Expr(e) => quote!(#e),
            CallArg::Role(variant) => quote!(#krate::Role::#variant),
            CallArg::Seconds(seconds, at) => {
                quote_spanned!(*at=> ::std::time::Duration::from_secs(#seconds))
            }
            CallArg::Word(ty, variant) => {
                let ty = proc_macro2::Ident::new(ty, variant.span());
                quote!(#krate::#ty::#variant)
            }
            CallArg::Filter { column, value } => quote!(#column, #value),
            CallArg::Order { column, desc } => quote! {
                #krate::OrderBy {
                    column: ::std::string::String::from(#column),
                    desc: #desc,
                }
            },
        };
        expr = quote!(#expr.#method(#arg));
    }
    if let Ctor::UserOptions(_) = planned.ctor {
        // The `__build` call's tokens all carry the path's span, so a missing required
        // option is reported at the resolver.
        expr = quote_spanned! {span=>
            {
                let options = #expr;
                options.__build()
            }
        };
    }
    quote_spanned! {span=>
        #krate::__private::resolver(#expr)
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    fn expand(input: proc_macro2::TokenStream) -> String {
        let invocation: crate::ast::Invocation = syn::parse2(input).unwrap();
        let krate = invocation.krate.clone();
        let ctxt = crate::ctxt::Ctxt::new();
        let plan = crate::validate::check(&ctxt, invocation);
        ctxt.check().unwrap_or_else(|e| panic!("{e}"));
        super::expand(&krate, &plan).to_string()
    }

    fn errors(input: proc_macro2::TokenStream) -> Vec<String> {
        let invocation: crate::ast::Invocation = syn::parse2(input).unwrap();
        let ctxt = crate::ctxt::Ctxt::new();
        crate::validate::check(&ctxt, invocation);
        match ctxt.check() {
            Ok(()) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn load_record_with_a_loader() {
        let out = expand(quote! {
            use LoadRecord(|ctx| async move { accounts(ctx).await }, template = "{{ record.name }}", role = user);
        });
        assert_eq!(
            out,
            ":: protege_core :: StaticChain :: new ((:: protege_core :: __private :: resolver \
             (:: protege_core :: LoadRecord :: from_loader (| ctx | async move { accounts (ctx) . await }) \
             . template_str (\"{{ record.name }}\") . role (:: protege_core :: Role :: User)) ,))"
        );
    }

    #[test]
    fn load_record_with_a_table() {
        let out = expand(quote! {
            use LoadRecordResolver(table = "accounts", order_by = ["plan", "id desc"], limit = 2, template = "{{ record.name }}");
        });
        assert_eq!(
            out,
            ":: protege_core :: StaticChain :: new ((:: protege_core :: __private :: resolver \
             (:: protege_core :: LoadRecord :: table (\"accounts\") \
             . order_by (:: protege_core :: OrderBy { column : :: std :: string :: String :: from (\"plan\") , desc : false , }) \
             . order_by (:: protege_core :: OrderBy { column : :: std :: string :: String :: from (\"id\") , desc : true , }) \
             . limit (2) . template_str (\"{{ record.name }}\")) ,))"
        );
    }

    #[test]
    fn load_record_where_binds_templates_as_text_and_literals_with_their_type() {
        let out = expand(quote! {
            use LoadRecord(table = "accounts", where = { email = "{{ message.from }}", seats = 5, active = true, ratio = -0.5 });
        });
        assert_eq!(
            out,
            ":: protege_core :: StaticChain :: new ((:: protege_core :: __private :: resolver \
             (:: protege_core :: LoadRecord :: table (\"accounts\") \
             . filter_str (\"email\" , \"{{ message.from }}\") \
             . filter_value (\"seats\" , { let value : i64 = 5 ; value }) \
             . filter_value (\"active\" , true) \
             . filter_value (\"ratio\" , { let value : f64 = - 0.5 ; value })) ,))"
        );
    }

    #[test]
    fn built_ins_and_user_types() {
        let out = expand(quote! {
            use LoadText("Hi {{ persona.name }}", role = assistant);
            use LoadText(|ctx| Ok(ctx.persona().name.clone()));
            use LoadFile(path = "a.md");
            use ThreadHistory(limit = None, max_tokens = 2000);
            use my::Greeting;
            use my::Repeat("x", 2, upper = true);
        });
        let r = ":: protege_core :: __private :: resolver";
        assert_eq!(
            out,
            format!(
                ":: protege_core :: StaticChain :: new ((\
                 {r} (:: protege_core :: LoadText :: template (\"Hi {{{{ persona.name }}}}\") . role (:: protege_core :: Role :: Assistant)) , \
                 {r} (:: protege_core :: LoadText :: from_fn (| ctx | Ok (ctx . persona () . name . clone ()))) , \
                 {r} (:: protege_core :: LoadFile :: new (\"a.md\")) , \
                 {r} (:: protege_core :: ThreadHistory :: new () . limit (None) . max_tokens (2000)) , \
                 {r} (my :: Greeting) , \
                 {r} (my :: Repeat :: new (\"x\" , 2) . upper (true)) ,))"
            )
        );
    }

    #[test]
    fn options_in_braces_go_through_the_options_builder() {
        let out = expand(quote! {
            use my::OpenOrders { statuses = ["packing"], role = user };
            use Quiet {};
        });
        let r = ":: protege_core :: __private :: resolver";
        assert_eq!(
            out,
            format!(
                ":: protege_core :: StaticChain :: new ((\
                 {r} ({{ let options = < my :: OpenOrders as :: protege_core :: Options > :: __builder () \
                 . statuses ([\"packing\"]) . role (:: protege_core :: Role :: User) ; options . __build () }}) , \
                 {r} ({{ let options = < Quiet as :: protege_core :: Options > :: __builder () ; options . __build () }}) ,))"
            )
        );
        assert_eq!(
            errors(quote! {
                use my::OpenOrders { "packing", heading = "Open:" };
                use ThreadHistory { 10 };
                use my::OpenOrders { role = usr };
            }),
            [
                "options in braces are named, as in a TOML entry: write `name = value`",
                "options in braces are named, as in a TOML entry: write `name = value`",
                "unknown role `usr`, did you mean `user`? (roles: `system`, `user`, `assistant`, `tool`)",
            ]
        );
        // Built-ins take their options in braces too.
        let out = expand(quote! { use ThreadHistory { limit = 10 }; });
        assert_eq!(
            out,
            ":: protege_core :: StaticChain :: new ((:: protege_core :: __private :: resolver \
             (:: protege_core :: ThreadHistory :: new () . limit (10)) ,))"
        );
    }

    #[test]
    fn stable_windows_take_a_word_or_a_string() {
        let out = expand(quote! {
            use ThreadHistory(limit = 20, window = stable, step = 5);
            use ThreadHistory(window = "sliding");
        });
        let r = ":: protege_core :: __private :: resolver";
        assert_eq!(
            out,
            format!(
                ":: protege_core :: StaticChain :: new ((\
                 {r} (:: protege_core :: ThreadHistory :: new () . window (:: protege_core :: Window :: Stable) . limit (20) . step (5)) , \
                 {r} (:: protege_core :: ThreadHistory :: new () . window (:: protege_core :: Window :: Sliding)) ,))"
            )
        );
    }

    #[test]
    fn thread_summary_and_after_summary() {
        let out = expand(quote! {
            use ThreadSummary;
            use ThreadSummary(template = "Earlier: {{ summary }}", role = user);
            use ThreadHistory(limit = 10, after_summary = true);
        });
        let r = ":: protege_core :: __private :: resolver";
        assert_eq!(
            out,
            format!(
                ":: protege_core :: StaticChain :: new ((\
                 {r} (:: protege_core :: ThreadSummary :: new ()) , \
                 {r} (:: protege_core :: ThreadSummary :: new () . template_str (\"Earlier: {{{{ summary }}}}\") . role (:: protege_core :: Role :: User)) , \
                 {r} (:: protege_core :: ThreadHistory :: new () . limit (10) . after_summary (true)) ,))"
            )
        );
        assert_eq!(
            errors(quote! {
                use ThreadSummary("x");
                use LoadText("{{ summary }}");
                use ThreadSummary(template = "{{ record.name }}");
            }),
            vec![
                "`ThreadSummary` takes no positional argument; use named options such as `template = \"Earlier: {{ summary }}\"`",
                "LoadText template line 1: `summary` exists only in the `template` of `ThreadSummary`",
                "ThreadSummary template line 1: `record` exists only in the per-record `template` of `LoadRecord`",
            ]
        );
    }

    #[test]
    fn correspondent_history_and_quoted() {
        let out = expand(quote! {
            use CorrespondentHistory;
            use CorrespondentHistory(threads = 5, messages = 2, template = "{{ thread.subject }}", role = user, quoted = strip);
            use ThreadHistory(limit = 20, quoted = "keep");
        });
        let r = ":: protege_core :: __private :: resolver";
        assert_eq!(
            out,
            format!(
                ":: protege_core :: StaticChain :: new ((\
                 {r} (:: protege_core :: CorrespondentHistory :: new ()) , \
                 {r} (:: protege_core :: CorrespondentHistory :: new () . threads (5) . messages (2) . template_str (\"{{{{ thread.subject }}}}\") . role (:: protege_core :: Role :: User) . quoted (:: protege_core :: Quoted :: Strip)) , \
                 {r} (:: protege_core :: ThreadHistory :: new () . limit (20) . quoted (:: protege_core :: Quoted :: Keep)) ,))"
            )
        );
        assert_eq!(
            errors(quote! {
                use CorrespondentHistory(3);
                use CorrespondentHistory(quoted = strp, tread = 1);
                use ThreadHistory(quoted = 1);
                use LoadText("{{ thread.subject }}");
                use CorrespondentHistory(template = "{{ thread.subjct }}");
            }),
            vec![
                "`CorrespondentHistory` takes no positional argument; use named options such as `threads = 5`",
                "unknown option `tread` for `CorrespondentHistory`, did you mean `threads`? (valid options: `threads`, `messages`, `template`, `role`, `quoted`)",
                "unknown `quoted` mode `strp`, did you mean `strip`? (modes: `keep`, `strip`)",
                "`quoted` takes `strip` or `keep`, e.g. `quoted = strip`",
                "LoadText template line 1: `thread` exists only in the `template` of `CorrespondentHistory` and of `OpenThreads`",
                "CorrespondentHistory template line 1: `thread` has no attribute `subjct`, did you mean `subject`?",
            ]
        );
    }

    #[test]
    fn open_threads_reads_its_window_at_compile_time() {
        let out = expand(quote! {
            use OpenThreads;
            use OpenThreads(within = "3d", limit = 5, template = "{{ thread.subject }} {{ thread.since }}", role = user);
            use OpenThreads(within = window());
        });
        let r = ":: protege_core :: __private :: resolver";
        assert_eq!(
            out,
            format!(
                ":: protege_core :: StaticChain :: new ((\
                 {r} (:: protege_core :: OpenThreads :: new ()) , \
                 {r} (:: protege_core :: OpenThreads :: new () . within (:: std :: time :: Duration :: from_secs (259200u64)) . limit (5) . template_str (\"{{{{ thread.subject }}}} {{{{ thread.since }}}}\") . role (:: protege_core :: Role :: User)) , \
                 {r} (:: protege_core :: OpenThreads :: new () . within (window ())) ,))"
            )
        );
        assert_eq!(
            errors(quote! {
                use OpenThreads(3);
                use OpenThreads(within = "1w", limt = 2);
                use OpenThreads(within = "400d");
                use OpenThreads(template = "{{ thread.summary }}");
            }),
            vec![
                "`OpenThreads` takes no positional argument; use named options such as `within = \"3d\"`",
                "unknown option `limt` for `OpenThreads`, did you mean `limit`? (valid options: `within`, `limit`, `template`, `role`)",
                "`within` must be a duration: a positive integer and a unit `s`, `m`, `h` or `d`, such as `\"90s\"` or `\"2d\"`; found `1w`",
                "`within` must be at most 365 days, found `400d`",
                "OpenThreads template line 1: `thread` has no attribute `summary`, expected one of `id`, `subject`, `messages`, `since`, `from`",
            ]
        );
    }

    #[test]
    fn window_mistakes() {
        assert_eq!(
            errors(quote! {
                use ThreadHistory(window = stabel);
                use ThreadHistory(limit = 10, step = 5);
                use ThreadHistory(window = sliding, step = 2);
                use ThreadHistory(window = stable, step = 0);
                use ThreadHistory(window = 3);
            }),
            vec![
                "unknown window `stabel`, did you mean `stable`? (windows: `sliding`, `stable`)",
                "`step` applies to a stable window: add `window = stable`",
                "`step` applies to a stable window: add `window = stable`",
                "`step` must be at least 1",
                "`window` takes `stable` or `sliding`, e.g. `window = stable`",
            ]
        );
    }

    #[test]
    fn load_record_options_that_do_not_fit_the_form() {
        assert_eq!(
            errors(quote! {
                use LoadRecord(load, order_by = "id");
                use LoadRecord(table = "t", render_with = |r| r.name.clone(), order_by = ["id sideways", name]);
                use LoadRecord(template = "{{ record.name }}");
            }),
            [
                "`order_by` applies to `LoadRecord(table = ...)`; a loader closure decides itself which records it returns",
                "`render_with` applies to `LoadRecord(loader)`; a table's records are rendered by `template`",
                "`order_by` entry `id sideways` is not `column`, `column asc` or `column desc`",
                "`order_by` takes a string literal such as `\"id desc\"` or an array of them",
                "`LoadRecord` needs a loader closure or a table, e.g. `LoadRecord(|ctx| async move { load(ctx).await }, template = \"{{ record.name }}\")`",
            ]
        );
    }

    #[test]
    fn a_load_record_template_is_parsed_at_compile_time() {
        assert_eq!(
            errors(quote! {
                use LoadRecord(load, template = "{% for x in record %}{{ x }}");
            }),
            [
                "LoadRecord template has a syntax error on line 1: unexpected end of input, expected end of block"
            ]
        );
    }
}
