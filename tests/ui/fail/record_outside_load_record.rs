fn main() {
    let _chain = protege::resolvers! {
        use LoadText("Customer: {{ record.name }}");
    };
}
