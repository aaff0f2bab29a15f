//! The largest chain: sixteen resolvers in one tuple.
use protege::Chain;

fn main() {
    let chain = protege::resolvers! {
        use LoadText("1"); use LoadText("2"); use LoadText("3"); use LoadText("4");
        use LoadText("5"); use LoadText("6"); use LoadText("7"); use LoadText("8");
        use LoadText("9"); use LoadText("10"); use LoadText("11"); use LoadText("12");
        use LoadText("13"); use LoadText("14"); use LoadText("15"); use ThreadHistory;
    };
    assert_eq!(chain.names().len(), 16);
    assert_eq!(chain.names()[15], "ThreadHistory");
}
