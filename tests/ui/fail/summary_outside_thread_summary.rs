fn main() {
    let _chain = protege::resolvers! {
        use LoadText("{{ summary }}");
    };
}
