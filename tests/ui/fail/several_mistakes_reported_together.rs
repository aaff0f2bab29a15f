fn main() {
    let _chain = protege::resolvers! {
        use LoadText("Hello {{ persona.name }", role = sytem);
        use ThreadHistory(limt = 10, limt = 20);
        use LoadFile;
    };
}
