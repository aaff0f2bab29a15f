fn main() {
    let _chain = protege::resolvers! {
        use LoadText("Reply to {{ mesage.from }}.");
    };
}
