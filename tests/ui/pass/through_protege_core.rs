//! The macro through `protege_core`, and the proc macro called directly (which generates
//! `::protege_core` paths).
use protege_core::Chain;

fn main() {
    let a = protege_core::resolvers! {
        use LoadText("You are {{ persona.name }}.");
    };
    let b = protege_macros::resolvers! {
        use LoadFile("prompts/agent.md", role = user);
    };
    assert_eq!(a.names(), ["LoadText"]);
    assert_eq!(b.names(), ["LoadFile"]);
    assert_eq!(format!("{a:?} {b:?}"), r#"["LoadText"] ["LoadFile"]"#);
}
