use protege::Chain;

fn main() {
    let chain = protege::resolvers! {
        use ThreadHistory(limt = 10);
    };
    let _names = chain.names();
}
