fn main() {
    let _chain = protege::resolvers! {
        use LoadRecord(|_ctx| async move { Ok::<_, String>(Vec::<u8>::new()) }, limit = 5);
    };
}
