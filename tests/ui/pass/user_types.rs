//! Resolvers of the user's own: a value, `new()` with positional arguments and options,
//! generic types, and a user type that shares a built-in's name.
use std::marker::PhantomData;

use protege::{Chain, Context, Message, Resolver, Result, Role, message};

mod app {
    use super::*;

    /// Used as a value.
    pub struct Greeting;

    impl Resolver for Greeting {
        type Output = Message;
        async fn resolve(&self, _ctx: &Context) -> Result<Message> {
            Ok(message(Role::System, "Hello."))
        }
    }

    /// Built with `new(text, times)` and the builder methods `role` and `upper`.
    pub struct Repeat {
        text: String,
        times: usize,
        role: Role,
        upper: bool,
    }

    impl Repeat {
        pub fn new(text: &str, times: usize) -> Self {
            Self {
                text: text.to_owned(),
                times,
                role: Role::System,
                upper: false,
            }
        }

        pub fn role(mut self, role: Role) -> Self {
            self.role = role;
            self
        }

        pub fn upper(mut self, yes: bool) -> Self {
            self.upper = yes;
            self
        }
    }

    impl Resolver for Repeat {
        type Output = Vec<Message>;
        async fn resolve(&self, _ctx: &Context) -> Result<Vec<Message>> {
            let text = if self.upper {
                self.text.to_uppercase()
            } else {
                self.text.clone()
            };
            Ok((0..self.times)
                .map(|_| message(self.role, text.clone()))
                .collect())
        }

        fn name(&self) -> &str {
            "Repeat"
        }
    }

    pub const QUIET: Quiet = Quiet;

    /// Contributes nothing; used through a constant.
    pub struct Quiet;

    impl Resolver for Quiet {
        type Output = ();
        async fn resolve(&self, _ctx: &Context) -> Result<()> {
            Ok(())
        }
    }
}

/// A generic resolver, built with `new()`.
struct Tagged<T>(PhantomData<T>);

impl<T: Send + Sync + 'static> Tagged<T> {
    fn new() -> Self {
        Self(PhantomData)
    }
}

impl<T: Send + Sync + 'static> Resolver for Tagged<T> {
    type Output = Option<Message>;
    async fn resolve(&self, _ctx: &Context) -> Result<Option<Message>> {
        Ok(None)
    }
}

/// A type of the user's named like a built-in: reached through a path.
struct LoadText;

impl Resolver for LoadText {
    type Output = ();
    async fn resolve(&self, _ctx: &Context) -> Result<()> {
        Ok(())
    }

    fn name(&self) -> &str {
        "MyLoadText"
    }
}

fn main() {
    let chain = protege::resolvers! {
        use app::Greeting;
        use app::Repeat("Hi.", 2);
        use crate::app::Repeat("Hey.", 1, role = user, upper = true);
        use app::QUIET;
        use Tagged::<u8>();
        use self::LoadText;
        use LoadText("The built-in.");
    };
    assert_eq!(
        chain.names(),
        [
            "Greeting",
            "Repeat",
            "Repeat",
            "Quiet",
            "Tagged",
            "MyLoadText",
            "LoadText"
        ]
    );
}
